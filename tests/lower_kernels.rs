//! Kernels beyond the examples that exercise what a tensor-core GEMM needs
//! from the lowering — `ldmatrix.trans` into B fragments of two n-tiles, mma
//! fragments indexed out of wider register tensors, a run-time loop with a
//! symbolic bound whose addresses advance by a hoisted stride, alignment
//! proven from a dim's divisibility requirement — each checked in its PTX
//! and assembled by ptxas with its SASS; and the GEMM example's occupancy
//! request reaching ptxas, in the configurations docs/performance.md lists.

mod ptx_support;
mod support;

use graphene::compile::{Options, compile};
use graphene::ptx::{Arch, Module};

fn lower(name: &str, src: &str, arch: Option<Arch>) -> Module {
    let options = Options {
        arch,
        ..Options::default()
    };
    let compiled = compile(name, src, &options).unwrap_or_else(|d| panic!("{d:#?}"));
    compiled.module.expect("PTX was asked for")
}

/// C (16x16, fp32) = A (16x16) · B (16x16, row-major K x N): one
/// `ldmatrix.x4` for A, one `ldmatrix.x4.trans` for both B fragments, two
/// `mma.m16n8k16`.
const TWO_TILE_MMA: &str = "
kernel two_tile_mma {
    %A:[16, 16 : 16, 1].fp16.GL
    %B:[16, 16 : 16, 1].fp16.GL
    %C:[16, 16 : 16, 1].fp32.GL
    #b:[1].block
    #w:[32].thread
    %C <- MatMul<overwrite><<<#b, #w>>>(%A, %B) {
        #one:[].block = #b.scalar()
        #me:[].thread = #w.scalar()
        #quads:[4, 8].thread = #w.reshape([4, 8])
        @t, @g = #quads.indices()
        %As:[16, 16 : 16, 1].fp16.SH
        %Bs:[16, 16 : 16, 1].fp16.SH
        #rows:[16, 2].thread = #w.reshape([16, 2])
        @r, @h = #rows.indices()
        %As.tile([1, 8])[@r, @h] <- Move<<<#one, #me>>>(%A.tile([1, 8])[@r, @h])
        %Bs.tile([1, 8])[@r, @h] <- Move<<<#one, #me>>>(%B.tile([1, 8])[@r, @h])
        sync
        #quarters:[8, 2, 2].thread = #w.reshape([8, 2, 2])
        @i, @x, @y = #quarters.indices()
        %a:[2, 4 : 4, 1].fp16.RF
        %a.tile([1, 2]) <- Move<<<#one, #w>>>(%As.tile([8, 8])[@x, @y].tile([1, 8])[@i, 0])
        %b:[4, 2 : 1, 4].fp16.RF
        %b.tile([2, 1]) <- Move<<<#one, #w>>>(%Bs.tile([8, 8])[@x, @y].tile([1, 8])[@i, 0])
        %c:[2, 2, 2 : 2, 1, 4].fp32.RF
        %c <- Init<0.0><<<#one, #me>>>()
        for (n = 0; n < 2; n += 1) {
            %c[_, _, n].tile([1, 2]) <- MatMul<<<#one, #w>>>(%a.tile([1, 2]), %b.tile([2, 1])[_, n])
        }
        %C_pairs:[2, 8].[8, 2].fp32.GL = %C.tile([8, 2])
        for (n = 0; n < 2; n += 1) {
            for (m = 0; m < 2; m += 1) {
                %C_pairs[m, 4 * n + @t, @g, _] <- Move<<<#one, #me>>>(%c[m, _, n])
            }
        }
    }
}
";

#[test]
fn b_fragments_of_two_tiles_come_from_one_transposed_ldmatrix() {
    let module = lower("two_tile_mma.gph", TWO_TILE_MMA, None);
    let text = module.to_ptx().unwrap();
    assert_eq!(
        text.matches("ldmatrix.sync.aligned.m8n8.x4.shared.b16")
            .count(),
        1,
        "{text}"
    );
    assert_eq!(
        text.matches("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16")
            .count(),
        1,
        "{text}"
    );
    assert_eq!(
        text.matches("mma.sync.aligned.m16n8k16").count(),
        2,
        "{text}"
    );
    // The two mma take the two halves of the transposed load.
    let b_regs: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("mma.sync"))
        .map(|line| line.split('{').nth(3).unwrap().split('}').next().unwrap())
        .collect();
    let trans = text.lines().find(|line| line.contains(".trans")).unwrap();
    let loaded = trans.split('{').nth(1).unwrap().split('}').next().unwrap();
    assert_eq!(format!("{}, {}", b_regs[0], b_regs[1]), loaded, "{text}");
    if ptx_support::tools_available() {
        let expected = [(
            "two_tile_mma",
            ptx_support::mnemonics(&["LDSM", "HMMA", "STG"]),
        )];
        ptx_support::check_module(&module, Arch::Sm80, &expected);
    }
}

/// Row sums of a 128 x K fp32 matrix, K symbolic: a run-time loop over
/// 16-byte pieces, each thread its own row.
const ROW_SUMS: &str = "
kernel row_sums {
    %X:[128, K : K, 1].fp32.GL
    %Y:[128].fp32.GL
    #b:[1].block
    #t:[128].thread
    %Y <- Reduction<add, [1]><<<#b, #t>>>(%X) {
        #one:[].block = #b.scalar()
        #me:[].thread = #t.scalar()
        @r = #t.indices()
        %acc:[].fp32.RF
        %v:[1, 4].fp32.RF
        %part:[].fp32.RF
        %pieces:[128, K / 4].[1, 4].fp32.GL = %X.tile([1, 4])
        %acc <- Init<0.0><<<#one, #me>>>()
        for (k = 0; k < K / 4; k += 1) {
            %v <- Move<<<#one, #me>>>(%pieces[@r, k])
            %part <- Reduction<add, [0, 1]><<<#one, #me>>>(%v)
            %acc <- BinaryPointwise<add><<<#one, #me>>>(%acc, %part)
        }
        %Y[@r] <- Move<<<#one, #me>>>(%acc)
    }
}
";

#[test]
fn a_symbolic_loop_bound_is_loaded_once_and_its_stride_hoisted() {
    let module = lower("row_sums.gph", ROW_SUMS, Some(Arch::Sm80));
    let text = module.to_ptx().unwrap();
    // K is the .u32 parameter after the buffers, read once.
    assert!(text.contains(".param .u32 K"), "{text}");
    assert_eq!(text.matches("ld.param.u32").count(), 1, "{text}");
    // K % 4 == 0 is a launch requirement, so each piece is 16-byte aligned.
    assert!(text.contains("ld.global.v4.f32"), "{text}");
    // K ≥ 1 and K % 4 == 0 prove K / 4 ≥ 1: the loop runs, no guard; its
    // branch is uniform (the bound does not depend on the thread).
    assert!(!text.contains("setp.ge.u32"), "{text}");
    assert!(text.contains("bra.uni $L"), "{text}");
    // Inside the loop: one address step, the load, three adds for the
    // piece, one for the accumulator, and the latch.
    let head = text.lines().position(|l| l.ends_with("_loop:")).unwrap();
    let body: Vec<&str> = text
        .lines()
        .skip(head + 1)
        .take_while(|l| !l.contains("bra.uni $L") || !l.contains("_loop"))
        .collect();
    assert_eq!(
        body.iter().filter(|l| l.contains("add.f32")).count(),
        4,
        "{text}"
    );
    assert_eq!(
        body.iter().filter(|l| l.contains("mad.wide.u32")).count(),
        1,
        "{text}"
    );
    assert!(
        !body
            .iter()
            .any(|l| l.contains("%tid.x") || l.contains("ld.param")),
        "{text}"
    );
    if ptx_support::tools_available() {
        let expected = [("row_sums", ptx_support::mnemonics(&["LDG", "FADD"]))];
        ptx_support::check_module(&module, Arch::Sm80, &expected);
    }
}

#[test]
fn a_loop_that_may_not_run_is_guarded() {
    let src = ROW_SUMS.replace("for (k = 0;", "for (k = 1;");
    let module = lower("row_sums.gph", &src, Some(Arch::Sm80));
    let text = module.to_ptx().unwrap();
    let guard = text
        .lines()
        .position(|l| l.contains("setp.ge.u32"))
        .expect("a guard");
    let skip = text.lines().nth(guard + 1).unwrap();
    assert!(
        skip.contains("bra.uni $L") && skip.contains("loop_exit"),
        "{text}"
    );
    assert!(text.lines().any(|l| l.ends_with("_loop_exit:")), "{text}");
    if ptx_support::tools_available() {
        ptx_support::check_module(&module, Arch::Sm80, &[]);
    }
}

/// The GEMM example with its constants overridden, for sm_90.
fn gemm_example(defines: &[(&str, i64)]) -> String {
    example_for("gemm_f16.gph", defines, Arch::Sm90)
}

/// Example `file` with its constants overridden, for `arch`.
fn example_for(file: &str, defines: &[(&str, i64)], arch: Arch) -> String {
    example_kernels(file, defines, arch, &[])
}

/// Example `file` with its constants overridden, for `arch`, only the
/// kernels named in `kernels` (all if empty).
fn example_kernels(file: &str, defines: &[(&str, i64)], arch: Arch, kernels: &[&str]) -> String {
    let path = format!("{}/examples/{file}", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(path).expect("the example");
    let options = Options {
        arch: Some(arch),
        defines: defines
            .iter()
            .map(|(name, value)| (name.to_string(), *value))
            .collect(),
        kernels: kernels.iter().map(|name| name.to_string()).collect(),
        ..Options::default()
    };
    compile(file, &src, &options)
        .unwrap_or_else(|d| panic!("{d:#?}"))
        .text
}

/// ptxas's report of each entry for sm_90.
fn reports(text: &str) -> Vec<graphene::ptx::tools::FunctionReport> {
    reports_for(text, Arch::Sm90)
}

/// ptxas's report of each entry for `arch`.
fn reports_for(text: &str, arch: Arch) -> Vec<graphene::ptx::tools::FunctionReport> {
    graphene::ptx::tools::assemble(text, arch)
        .unwrap_or_else(|e| panic!("{e}"))
        .entries
}

/// Registers per thread of each entry, as ptxas allocates them for sm_90.
fn registers(text: &str) -> Vec<u32> {
    reports(text).iter().map(|entry| entry.registers).collect()
}

#[test]
fn an_occupancy_request_reaches_the_entry_header_and_ptxas() {
    let one = gemm_example(&[]);
    let two = gemm_example(&[("MIN_BLOCKS", 2)]);
    assert_eq!(
        two.matches(".maxntid 256, 1, 1\n.minnctapersm 2\n{")
            .count(),
        two.matches(".visible .entry").count(),
        "{two}"
    );
    assert!(!two.contains(".maxnreg"), "{two}");
    if ptx_support::tools_available() {
        // Two 256-thread blocks per SM leave 65536 / 512 = 128 registers a
        // thread; one block leaves the kernel its natural count, above that.
        assert!(
            registers(&two).iter().all(|&r| r <= 128),
            "{:?}",
            registers(&two)
        );
        assert!(
            registers(&one).iter().all(|&r| r > 128),
            "{:?}",
            registers(&one)
        );
    }
}

/// The GEMM configurations docs/performance.md offers for more warps per
/// SM fit their occupancy request without spilling: 16 warps (two
/// 256-thread blocks, at most 128 registers) and 12 warps (three 128-thread
/// blocks, at most 168). The first holds for the K-major kernels only: the
/// variants with an M- or N-contiguous operand need a few more address
/// registers and spill 4 to 16 bytes there (docs/performance.md says so).
#[test]
fn the_documented_higher_occupancy_gemm_configurations_do_not_spill() {
    if !ptx_support::tools_available() {
        return;
    }
    let k_major: &[&str] = &["gemm_f16", "gemm_f16_f16out", "gemm_bf16_bf16out"];
    /// Defines, and the kernels that must fit (all if `None`).
    type Configuration<'a> = (&'a [(&'a str, i64)], Option<&'a [&'a str]>);
    let configurations: [Configuration; 3] = [
        (
            &[("BN", 128), ("WN", 32), ("FRAGS", 1), ("MIN_BLOCKS", 2)],
            Some(k_major),
        ),
        (
            &[
                ("BN", 128),
                ("WN", 32),
                ("BK", 32),
                ("SWIZZLE_BITS", 2),
                ("STAGES", 4),
                ("FRAGS", 1),
                ("MIN_BLOCKS", 2),
            ],
            None,
        ),
        (&[("BN", 64), ("WN", 32), ("MIN_BLOCKS", 3)], None),
    ];
    for (defines, only) in configurations {
        let text = gemm_example(defines);
        let reports = reports(&text);
        assert!(
            reports.len() >= 7,
            "every variant is assembled: {reports:?}"
        );
        for report in reports {
            if only.is_some_and(|names| !names.contains(&report.name.as_str())) {
                continue;
            }
            assert!(
                report.stack_frame_bytes == 0 && report.spill_store_bytes == 0,
                "{defines:?}: {report:?}"
            );
        }
    }
}

/// The warpgroup GEMM's configuration that docs/performance.md gives for
/// 5120×5120×2048 — 128×160 blocks, two per SM — fits two 256-thread blocks
/// (at most 128 registers) without spilling, as its defaults fit one. The
/// split-K kernel's any-K version (`ALIGN = 1`, the default) does not fit
/// 128 registers: with two blocks per SM it takes `ALIGN = 8`.
#[test]
fn the_documented_warpgroup_gemm_configurations_do_not_spill() {
    if !ptx_support::tools_available() {
        return;
    }
    let two_per_sm: &[(&str, i64)] = &[
        ("BN", 160),
        ("STAGES", 3),
        ("MIN_BLOCKS", 2),
        ("MMA_PENDING", 0),
        ("STAGED", 0),
    ];
    // BN = 160 is not a whole number of the 64-wide atoms an N-major B
    // needs: that configuration is for the K-major kernels.
    let k_major: &[&str] = &[
        "gemm_f16_sm90",
        "gemm_f16_sm90_f16out",
        "gemm_bf16_sm90",
        "gemm_f16_sm90_batched",
    ];
    let split_k_two_per_sm = [two_per_sm, &[("ALIGN", 8)]].concat();
    for (defines, kernels, most_registers) in [
        (&[][..], &[][..], 255),
        (two_per_sm, k_major, 128),
        (&split_k_two_per_sm[..], &["gemm_f16_sm90_splitk"][..], 128),
    ] {
        let text = example_kernels("gemm_f16_sm90.gph", defines, Arch::Sm90a, kernels);
        assert!(
            text.contains("wgmma.mma_async.sync.aligned.m64n"),
            "{defines:?}"
        );
        for report in reports_for(&text, Arch::Sm90a) {
            assert!(
                report.stack_frame_bytes == 0 && report.spill_store_bytes == 0,
                "{defines:?}: {report:?}"
            );
            assert!(
                report.registers <= most_registers,
                "{defines:?}: {report:?}"
            );
        }
    }
}

/// A split K over two blocks: each thread adds its row's four partial sums
/// into C with `Move<add>`.
const SPLIT_ROWS: &str = "
kernel split_rows {
    %a:[4, 4 : 4, 1].fp32.GL
    %b:[4, 4 : 4, 1].fp32.GL
    %c:[4, 4 : 4, 1].fp32.GL
    #g:[2].block
    #t:[4].thread
    %c <- MatMul<<<#g, #t>>>(%a, %b) {
        @z = #g.indices()
        @i = #t.indices()
        #one:[].block = #g.scalar()
        #me:[].thread = #t.scalar()
        %acc:[1, 4].fp32.RF
        %acc <- Init<0.0><<<#one, #me>>>()
        for (k = 0; k < 2; k += 1) {
            for (n = 0; n < 4; n += 1) {
                %acc[0, n] <- MatMul<<<#one, #me>>>(%a[@i, 2 * @z + k], %b[2 * @z + k, n])
            }
        }
        %c[@i, _] <- Move<add><<<#one, #me>>>(%acc)
    }
}
";

#[test]
fn an_accumulating_store_is_one_vector_red_on_hopper_and_one_per_element_before() {
    let count = |text: &str, op: &str| text.lines().filter(|l| l.contains(op)).count();
    let hopper = lower("split_rows.gph", SPLIT_ROWS, Some(Arch::Sm90));
    let hopper = hopper.to_ptx().unwrap();
    assert_eq!(count(&hopper, "red.global.add.v4.f32"), 1, "{hopper}");
    assert!(hopper.contains(".version 8.1"), "{hopper}");
    let ampere = lower("split_rows.gph", SPLIT_ROWS, Some(Arch::Sm80));
    let ampere = ampere.to_ptx().unwrap();
    assert_eq!(count(&ampere, "red.global.add.f32"), 4, "{ampere}");
    assert_eq!(count(&ampere, ".v4"), 0, "{ampere}");
}

/// The any-K copies (`-D ALIGN=1`: a `Move<async, masked>` whose alignment
/// is tested at run time) take both paths under predicates — the
/// `cp.async` under "whole and aligned", the element loads and one 16-byte
/// shared store under its negation — with no branch in between, so that
/// ptxas can put the loads of all of a k-tile's chunks in flight together
/// (docs/lowering.md, "Masked moves"). Each of the main loop's copies has
/// its guarded `cp.async` and its guarded `st.shared.v4`.
#[test]
fn the_any_k_copies_of_the_warpgroup_gemm_do_not_branch() {
    let text = example_kernels(
        "gemm_f16_sm90.gph",
        &[("ALIGN", 1)],
        Arch::Sm90a,
        &["gemm_f16_sm90_f16out"],
    );
    assert!(
        !text.contains("masked_else"),
        "a masked copy still branches"
    );
    let guarded = |needle: &str| {
        text.lines()
            .filter(|l| l.trim_start().starts_with('@') && l.contains(needle))
            .count()
    };
    let copies = guarded("cp.async.cg.shared.global");
    assert!(copies > 0, "no guarded cp.async:\n{text}");
    assert_eq!(guarded("st.shared.v4.b32"), copies, "{text}");
    assert!(guarded("ld.global.b16") >= 8 * copies, "{text}");
}

/// `specialize K % 8 == 0` (docs/lowering.md, "Specialized versions"):
/// with `ALIGN = 1` the kernel is its body twice behind one branch on the
/// dims, the first version with whole, aligned copies only (no run-time
/// alignment test, no element loads), the second the any-K copies; with
/// `ALIGN = 8` the requirement implies the condition and there is one body.
#[test]
fn a_specialization_adds_a_version_with_the_aligned_copies() {
    let text = example_kernels(
        "gemm_f16_sm90.gph",
        &[("ALIGN", 1)],
        Arch::Sm90a,
        &["gemm_f16_sm90_f16out"],
    );
    let (specialized, general) = text
        .split_once("_specialized_else:")
        .unwrap_or_else(|| panic!("no second version:\n{text}"));
    assert!(
        specialized.contains("_specialized_else;") && specialized.contains("_specialized_end;"),
        "{specialized}"
    );
    assert!(specialized.contains("cp.async.cg.shared.global"));
    assert!(!specialized.contains("ld.global.b16"), "{specialized}");
    assert!(general.contains("ld.global.b16"), "{general}");
    let single = example_kernels(
        "gemm_f16_sm90.gph",
        &[("ALIGN", 8)],
        Arch::Sm90a,
        &["gemm_f16_sm90_f16out"],
    );
    assert!(!single.contains("specialized"), "{single}");
}

/// Runs the only kernel of `compiled` on the CPU executor with `run
/// --check`: it matches its contract, and the executor finds nothing (no
/// register read before a write, no divergent `bra.uni`).
fn passes_on_the_cpu(compiled: &graphene::compile::Compiled, dims: &[graphene::launch::DimArg]) {
    let chosen = graphene::launch::select(compiled, None, dims).expect("selects");
    let run = graphene::launch::run_kernel_cpu(
        &compiled.text,
        &chosen[0].plan,
        &chosen[0].contract,
        7,
        true,
    )
    .expect("runs");
    assert!(run.exec.findings.is_empty(), "{:#?}", run.exec.findings);
    assert!(run.line().starts_with("PASS"), "{}", run.line());
}

/// Each thread moves its two fp16 elements into one register pair, one
/// element per `Move` (in the order `ORDER` gives), then stores the pair.
fn halves_one_at_a_time(order: [u32; 2]) -> String {
    let writes: String = order
        .iter()
        .map(|e| format!("        %r[{e}] <- Move<<<#one, #me>>>(%x[{e}])\n"))
        .collect();
    format!(
        "kernel halves {{
    %X:[64].fp16.GL
    %Y:[64].fp16.GL
    #grid:[1].block
    #block:[32].thread
    %Y <- Move<<<#grid, #block>>>(%X) {{
        #one:[].block = #grid.scalar()
        #me:[].thread = #block.scalar()
        @t = #block.indices()
        %r:[2].fp16.RF
        %x = %X.tile([2])[@t]
{writes}        %Y.tile([2])[@t] <- Move<<<#one, #me>>>(%r)
    }}
}}"
    )
}

/// A write of one half of a packed register keeps the other half, so it
/// reads the register; before the first write nothing has, so the
/// register is set to zero at the kernel's entry, once: the executor finds
/// no read of an unwritten register (a `run --check` failure before) and
/// the output is the input. A pair written whole gets no such zero.
#[test]
fn a_register_pair_written_a_half_at_a_time_is_defined_from_the_entry() {
    for order in [[0, 1], [1, 0]] {
        let source = halves_one_at_a_time(order);
        let compiled = compile("halves.gph", &source, &Options::default())
            .unwrap_or_else(|d| panic!("{d:#?}"));
        let body = &compiled.text[compiled.text.find('{').expect("an entry")..];
        let first = body
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('{') && !l.starts_with(".reg"))
            .expect("an instruction");
        assert!(
            first.starts_with("mov.b32 %r") && first.ends_with(", 0;"),
            "{first}"
        );
        assert_eq!(
            compiled.text.matches(", 0;").count(),
            1,
            "{}",
            compiled.text
        );
        passes_on_the_cpu(&compiled, &[]);
    }
    let whole = halves_one_at_a_time([0, 1]).replace(
        "        %r[0] <- Move<<<#one, #me>>>(%x[0])\n        %r[1] <- Move<<<#one, #me>>>(%x[1])\n",
        "        %r <- Move<<<#one, #me>>>(%x)\n",
    );
    let compiled =
        compile("whole.gph", &whole, &Options::default()).unwrap_or_else(|d| panic!("{d:#?}"));
    assert!(!compiled.text.contains(", 0;"), "{}", compiled.text);
}

/// A loop whose variable starts at the thread id gives each lane its own
/// value, so an `if` on that variable (and a loop inside it bounded by it)
/// may go different ways in one warp: their branches are plain `bra`, never
/// `bra.uni`, whose promise of agreement the CPU executor holds every lane
/// to (before, the `if` was `bra.uni` and the executor refused the run).
/// The same `if` on a loop variable that is the same in every lane stays
/// uniform.
#[test]
fn a_branch_on_a_loop_variable_that_starts_at_the_lane_is_not_uniform() {
    use graphene::launch::DimArg;
    let source = |start: &str| {
        format!(
            "kernel lanes {{
    %X:[N].fp32.GL
    %Y:[N].fp32.GL
    #grid:[1].block
    #block:[32].thread
    %Y <- Move<<<#grid, #block>>>(%X) {{
        #one:[].block = #grid.scalar()
        #me:[].thread = #block.scalar()
        @t = #block.indices()
        for (i = {start}; i < N; i += 32) {{
            if (i < 40) {{
                for (j = i; j < 40; j += 64) {{
                    %Y[j] <- Move<<<#one, #me>>>(%X[j])
                }}
            }} else {{
                %Y[i] <- Move<<<#one, #me>>>(%X[i])
            }}
        }}
    }}
}}"
        )
    };
    let lines = |text: &str, what: &str| -> Vec<String> {
        text.lines()
            .map(str::trim)
            .filter(|l| l.contains(what))
            .map(String::from)
            .collect()
    };
    let compiled = compile("lanes.gph", &source("@t"), &Options::default())
        .unwrap_or_else(|d| panic!("{d:#?}"));
    assert!(
        lines(&compiled.text, "bra.uni").is_empty(),
        "{}",
        compiled.text
    );
    assert!(
        lines(&compiled.text, "bra ").len() >= 4,
        "{}",
        compiled.text
    );
    let dims = [DimArg {
        name: "N".into(),
        value: 64,
    }];
    passes_on_the_cpu(&compiled, &dims);

    let compiled =
        compile("same.gph", &source("0"), &Options::default()).unwrap_or_else(|d| panic!("{d:#?}"));
    assert!(
        !lines(&compiled.text, "bra.uni").is_empty(),
        "{}",
        compiled.text
    );
}
