//! A warp's row store realigned to its destination (docs/lowering.md,
//! "Rows realigned to their destination"), run on the CPU executor: a copy
//! of an R×N matrix through shared memory, each row written back by one
//! collective store of a warp, for 16- and 32-bit elements and N that puts
//! the rows at every offset modulo 16 bytes; every element compared, none
//! unwritten, nothing out of bounds. The PTX takes the aligned 16-byte store
//! and, for a misaligned row, the element stores under their branch.

use graphene::compile::{self, Options};
use graphene::launch::{DimArg, run_kernel_cpu, select};

/// `TYPE` elements, `PER` of them per lane and piece (16 or 8 bytes), in
/// `PIECES` pieces: 32 lanes fill the shared row of `32·PER·PIECES`
/// elements a warp stores (512 bytes: its 32 chunks fill one turn of the
/// warp, a misaligned row's 33rd riding with its first; 256 bytes: 17 chunks
/// in one turn; 1024 bytes: two turns, the 65th chunk riding along).
const SOURCE: &str = "\
kernel rows {
    %src:[R, N : N, 1].TYPE.GL
    %dst:[R, N : N, 1].TYPE.GL
    #grid:[ceil_div(R, 2), ceil_div(N, LANES_PER)].block
    #block:[64].thread
    %dst <- Move<<<#grid, #block>>>(%src) {
        @br, @bc = #grid.indices()
        #one:[].block = #grid.scalar()
        #me:[].thread = #block.scalar()
        #warps = #block.tile(32)
        @w, @l = #warps.indices()
        %rows:[2, LANES_PER : LANES_PER, 1].TYPE.SH
        %gsrc = %src.tile_partial([2, LANES_PER])[@br, @bc]
        %gdst = %dst.tile_partial([2, LANES_PER])[@br, @bc]
        for (p = 0; p < PIECES; p += 1) {
            %v:[PER].TYPE.RF
            %v <- Move<masked><<<#one, #me>>>(%gsrc[@w, _].tile([PER])[@l + 32 * p])
            %rows[@w, _].tile([PER])[@l + 32 * p] <- Move<<<#one, #me>>>(%v)
        }
        sync
        %gdst[@w, _] <- Move<masked><<<#one, #warps>>>(%rows[@w, _])
    }
}
";

fn source(ty: &str, per: usize, pieces: usize) -> String {
    SOURCE
        .replace("LANES_PER", &(32 * per * pieces).to_string())
        .replace("TYPE", ty)
        .replace("PIECES", &pieces.to_string())
        .replace("PER", &per.to_string())
}

fn runs_at(ty: &str, per: usize, rows: u32, columns: u32) {
    runs_in_pieces(ty, per, 1, rows, columns);
}

fn runs_in_pieces(ty: &str, per: usize, pieces: usize, rows: u32, columns: u32) {
    let text = source(ty, per, pieces);
    let compiled = compile::compile("rows.gph", &text, &Options::default())
        .unwrap_or_else(|d| panic!("{d:?}"));
    assert!(
        compiled.text.contains("st.global.v4.b32"),
        "{}",
        compiled.text
    );
    let dims = [
        DimArg {
            name: "R".into(),
            value: rows,
        },
        DimArg {
            name: "N".into(),
            value: columns,
        },
    ];
    let chosen = select(&compiled, None, &dims).expect("selects");
    let run = run_kernel_cpu(
        &compiled.text,
        &chosen[0].plan,
        &chosen[0].contract,
        7,
        true,
    )
    .expect("runs");
    assert!(
        run.passed(),
        "{ty} ×{pieces} {rows}×{columns}: {}",
        run.line()
    );
}

#[test]
fn rows_at_every_offset_are_stored_whole_and_only_their_own() {
    // Odd N: row r starts 2·r·N bytes in, every even offset modulo 16
    // within eight rows; N = 8 and 16 are aligned; 1 and 7 end in the
    // first chunk; 300 and 129 have a partial second tile.
    for columns in [1, 7, 8, 9, 129, 255, 300] {
        runs_at("fp16", 8, 9, columns);
    }
    // fp32: offsets of 4, 8 and 12 bytes.
    for columns in [1, 3, 5, 4, 130, 257] {
        runs_at("fp32", 4, 5, columns);
    }
}

/// Rows of 256 bytes (17 chunks when misaligned: one turn, nothing to fold)
/// and of 1024 bytes (64 chunks: two turns, the 65th folded into the first),
/// at every offset, with partial tiles.
#[test]
fn rows_of_half_and_two_turns_are_stored_whole_and_only_their_own() {
    for columns in [1, 7, 9, 130, 255, 300] {
        runs_at("fp16", 4, 9, columns);
    }
    for columns in [1, 9, 511, 600, 1025, 1100] {
        runs_in_pieces("fp16", 8, 2, 9, columns);
    }
    for columns in [3, 257, 300] {
        runs_in_pieces("fp32", 4, 2, 5, columns);
    }
}
