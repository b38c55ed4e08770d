//! Every `ldmatrix` form from IR text: `.x1`, `.x2` and `.x4`, each with and
//! without `.trans`, checked, lowered to exactly that instruction and
//! assembled by ptxas with `LDSM` in the SASS. `.x1` and `.x2` are
//! collective moves whose operands differ per thread (8 shared elements in,
//! 2 or 4 registers out), which the checker compares over the warp
//! (docs/language.md §5); the `.x2` kernels load the B fragment of one
//! `mma.m16n8k16` n8 tile.

mod ptx_support;
mod support;

use graphene::compile::{Options, compile};
use graphene::ptx::{Arch, Module};

/// The targets every kernel here is assembled for.
const ARCHS: [Arch; 2] = [Arch::Sm80, Arch::Sm90];

fn lower(name: &str, src: &str, arch: Option<Arch>) -> Module {
    let options = Options {
        arch,
        ..Options::default()
    };
    compile(name, src, &options)
        .unwrap_or_else(|d| panic!("{name}: {d:#?}"))
        .module
        .expect("PTX was asked for")
}

/// Lowers for each target, assembles, and requires the SASS opcodes.
fn assemble(name: &str, src: &str, sass: &[&str]) {
    if !ptx_support::tools_available() {
        return;
    }
    for arch in ARCHS {
        let module = lower(name, src, Some(arch));
        let expected = [(name, ptx_support::mnemonics(sass))];
        ptx_support::check_module(&module, arch, &expected);
    }
}

/// A warp loads `matrices` 8×8 fp16 matrices from a shared tile with one
/// `ldmatrix` and stores each lane's registers to its own row of `%out`.
/// Lane `8j + i` names the 16-byte memory row `i` of matrix `j`; the lanes
/// past the last matrix name the rows again. Each lane's packed pairs run
/// down mode 0 of `%r` (`[2, M]`, so that slots follow element order): the
/// memory rows run along mode 0 too without `trans` (a column-major tile,
/// `[8 * M, 8 : 1, 8 * M]`) and along mode 1 with it (row-major), which is
/// what makes the instruction `.trans`.
fn load_and_store(matrices: u32, trans: bool) -> (String, String) {
    let name = format!("ldmatrix_x{matrices}{}", if trans { "_trans" } else { "" });
    let (group, pattern) = if matrices == 4 {
        ("[8, 4]", "@i, @j")
    } else {
        ("[8, M, 4 / M]", "@i, @j, @again")
    };
    let matrix = if matrices == 1 { "0" } else { "@j" };
    let (tile, stage, row) = if trans {
        (
            "[8, 8 * M : 8 * M, 1]",
            "tile([1, 2 * M])[@row, @part]",
            format!("tile([8, 8])[0, {matrix}].tile([1, 8])[@i, 0]"),
        )
    } else {
        (
            "[8 * M, 8 : 1, 8 * M]",
            "tile([2 * M, 1])[@part, @row]",
            format!("tile([8, 8])[{matrix}, 0].tile([8, 1])[0, @i]"),
        )
    };
    let src = format!(
        "
const M = {matrices}
kernel {name} {{
    %in:{tile}.fp16.GL
    %out:[32, 2, M : 2 * M, 1, 2].fp16.GL
    #b:[1].block
    #w:[32].thread
    %out <- Spec<<<#b, #w>>>(%in) {{
        #one:[].block = #b.scalar()
        #me:[].thread = #w.scalar()
        @l = #w.indices()
        #quads:[8, 4].thread = #w.reshape([8, 4])
        @row, @part = #quads.indices()
        %s:{tile}.fp16.SH
        %s.{stage} <- Move<<<#one, #me>>>(%in.{stage})
        sync
        #lanes:{group}.thread = #w.reshape({group})
        {pattern} = #lanes.indices()
        %r:[2, M].fp16.RF
        %r.tile([2, 1]) <- Move<<<#one, #w>>>(%s.{row})
        %out[@l, _, _] <- Move<<<#one, #me>>>(%r)
    }}
}}
"
    );
    (name, src)
}

#[test]
fn every_form_lowers_to_its_ldmatrix_and_assembles() {
    for matrices in [1, 2, 4] {
        for trans in [false, true] {
            let (name, src) = load_and_store(matrices, trans);
            let text = lower(&name, &src, None).to_ptx().unwrap();
            let suffix = if trans { ".trans" } else { "" };
            let instruction = format!("ldmatrix.sync.aligned.m8n8.x{matrices}{suffix}.shared.b16");
            let lines: Vec<&str> = text
                .lines()
                .filter(|line| line.trim_start().starts_with("ldmatrix."))
                .collect();
            assert_eq!(lines.len(), 1, "{name}: one ldmatrix\n{text}");
            let emitted = lines[0].split_whitespace().next().unwrap();
            assert_eq!(emitted, instruction, "{name}\n{text}");
            let destinations = lines[0]
                .split('{')
                .nth(1)
                .unwrap()
                .split('}')
                .next()
                .unwrap();
            assert_eq!(
                destinations.split(',').count(),
                matrices as usize,
                "{name}: one register per matrix\n{text}"
            );
            assemble(&name, &src, &["LDSM", "STG"]);
        }
    }
}

/// C (16×8, fp32) = A (16×16) · B (16×8): A from one `ldmatrix.x4`, B's
/// fragment from one `ldmatrix.x2` — `.trans` when B is stored row-major
/// (each 16-byte row holds one k and eight n), plain when column-major
/// (eight k of one n). Lanes 0–7 name the rows of the first k-half, lanes
/// 8–15 of the second; lanes 16–31 name the same rows again.
fn mma_with_b_from_ldmatrix_x2(b_row_major: bool) -> (String, String) {
    let name = format!(
        "mma_b_x2_{}",
        if b_row_major {
            "row_major"
        } else {
            "col_major"
        }
    );
    let (b_layout, b_stage, b_row) = if b_row_major {
        (
            "[16, 8 : 8, 1]",
            "%Bs.tile([1, 4])[@r, @h] <- Move<<<#one, #me>>>(%B.tile([1, 4])[@r, @h])",
            "%Bs.tile([8, 8])[@kh, 0].tile([1, 8])[@row, 0]",
        )
    } else {
        (
            "[16, 8 : 1, 16]",
            "%Bs.tile([4, 1])[@t, @g] <- Move<<<#one, #me>>>(%B.tile([4, 1])[@t, @g])",
            "%Bs.tile([8, 8])[@kh, 0].tile([8, 1])[0, @row]",
        )
    };
    let src = format!(
        "
kernel {name} {{
    %A:[16, 16 : 16, 1].fp16.GL
    %B:{b_layout}.fp16.GL
    %C:[16, 8 : 8, 1].fp32.GL
    #b:[1].block
    #w:[32].thread
    %C <- MatMul<overwrite><<<#b, #w>>>(%A, %B) {{
        #one:[].block = #b.scalar()
        #me:[].thread = #w.scalar()
        #quads:[4, 8].thread = #w.reshape([4, 8])
        @t, @g = #quads.indices()
        #rows:[16, 2].thread = #w.reshape([16, 2])
        @r, @h = #rows.indices()
        %As:[16, 16 : 16, 1].fp16.SH
        %Bs:{b_layout}.fp16.SH
        %As.tile([1, 8])[@r, @h] <- Move<<<#one, #me>>>(%A.tile([1, 8])[@r, @h])
        {b_stage}
        sync
        #matrices:[8, 2, 2].thread = #w.reshape([8, 2, 2])
        @i, @x, @y = #matrices.indices()
        %a:[2, 4 : 4, 1].fp16.RF
        %a.tile([1, 2]) <- Move<<<#one, #w>>>(%As.tile([8, 8])[@x, @y].tile([1, 8])[@i, 0])
        #halves:[8, 2, 2].thread = #w.reshape([8, 2, 2])
        @row, @kh, @again = #halves.indices()
        %b:[4, 1].fp16.RF
        %b.tile([2, 1]) <- Move<<<#one, #w>>>({b_row})
        %c:[2, 2 : 2, 1].fp32.RF
        %c <- Init<0.0><<<#one, #me>>>()
        %c.tile([1, 2]) <- MatMul<<<#one, #w>>>(%a.tile([1, 2]), %b.tile([2, 1]))
        %C_pairs:[2, 4].[8, 2].fp32.GL = %C.tile([8, 2])
        for (m = 0; m < 2; m += 1) {{
            %C_pairs[m, @t, @g, _] <- Move<<<#one, #me>>>(%c.tile([1, 2])[m, 0])
        }}
    }}
}}
",
    );
    (name, src)
}

#[test]
fn the_b_fragment_of_one_n8_tile_comes_from_ldmatrix_x2() {
    for b_row_major in [false, true] {
        let (name, src) = mma_with_b_from_ldmatrix_x2(b_row_major);
        let text = lower(&name, &src, None).to_ptx().unwrap();
        let suffix = if b_row_major { ".trans" } else { "" };
        let x2 = format!("ldmatrix.sync.aligned.m8n8.x2{suffix}.shared.b16");
        let loads: Vec<&str> = text.lines().filter(|line| line.contains(&x2)).collect();
        assert_eq!(loads.len(), 1, "{name}: one {x2}\n{text}");
        assert_eq!(
            text.matches("ldmatrix.sync.aligned.m8n8.x4.shared.b16")
                .count(),
            1,
            "{name}: A by one ldmatrix.x4\n{text}"
        );
        // The mma's B operand (its third brace group) is what the x2 loaded.
        let mma = text
            .lines()
            .find(|line| line.contains("mma.sync.aligned.m16n8k16"))
            .unwrap_or_else(|| panic!("{name}: no mma\n{text}"));
        let b_operand = mma.split('{').nth(3).unwrap().split('}').next().unwrap();
        let loaded = loads[0]
            .split('{')
            .nth(1)
            .unwrap()
            .split('}')
            .next()
            .unwrap();
        assert_eq!(b_operand, loaded, "{name}\n{text}");
        assemble(&name, &src, &["LDSM", "HMMA", "STG"]);
    }
}
