//! Collective moves: a `Move` executed by more than one lane whose operands
//! hold different numbers of elements per thread is compared over the lanes
//! of one instance, a memory view counting the distinct elements its lanes
//! name (docs/language.md §5). What it accepts (`ldmatrix.x1`/`.x2` shapes)
//! and what it still rejects.

use super::{check, codes_of};
use crate::check::codes;

/// A kernel of `threads` threads whose spec body is `body`, after the
/// kernel-scope declarations `decls`: a 16×16 row-major shared tile `%s`
/// and a column-major 16×8 one `%cols` are always declared. Thread 0
/// zeroes the shared tiles first (`%stages` too, where `decls` has it), so
/// that the moves read written elements.
fn kernel(threads: u32, decls: &str, body: &str) -> String {
    let stages = if decls.contains("%stages") {
        "%stages <- Init<0.0><<<#b, #t.scalar()>>>()\n"
    } else {
        ""
    };
    format!(
        "%s:[16, 16 : 16, 1].fp16.SH\n%cols:[16, 8 : 1, 16].fp16.SH\n{decls}\n\
         #b:[1].block\n#t:[{threads}].thread\n%out:[1].fp32.GL\n\
         %out <- Spec<<<#b, #t>>>() {{\n@thread = #t.indices()\nif (@thread == 0) {{\n\
         %s <- Init<0.0><<<#b, #t.scalar()>>>()\n%cols <- Init<0.0><<<#b, #t.scalar()>>>()\n\
         {stages}}}\nsync\n{body}\n}}\n"
    )
}

/// Lanes `8j + i` name row `i` of the 8×8 matrix `j` of `%s`'s top half
/// (`@i`, `@j`); `@again` repeats the pattern over the rest of the warp.
const ROWS: &str =
    "#lanes:[8, 2, 2].thread = #t.reshape([8, 2, 2])\n@i, @j, @again = #lanes.indices()";

#[test]
fn ldmatrix_shaped_moves_check() {
    for (what, threads, decls, body) in [
        (
            "x2: 16 rows named by lanes 0-15 and again by 16-31, 4 registers per lane",
            32,
            "%r:[4, 1].fp16.RF",
            format!(
                "{ROWS}\n%r.tile([2, 1]) <- Move<<<#b, #t>>>(%cols.tile([8, 8])[@j, 0].tile([8, 1])[0, @i])"
            ),
        ),
        (
            "x2 transposed: rows of a row-major tile, pairs down the columns",
            32,
            "%r:[4, 1].fp16.RF",
            format!(
                "{ROWS}\n%r.tile([2, 1]) <- Move<<<#b, #t>>>(%s.tile([8, 8])[@j, 0].tile([1, 8])[@i, 0])"
            ),
        ),
        (
            "x1: 8 rows, each named by four lanes, 2 registers per lane",
            32,
            "%r:[1, 2].fp16.RF",
            format!("{ROWS}\n%r <- Move<<<#b, #t>>>(%s.tile([8, 8])[0, 0].tile([1, 8])[@i, 0])"),
        ),
        (
            "x2 by each warp of a 64-thread block, compared warp by warp",
            64,
            "%r:[4, 1].fp16.RF",
            "#warps:[2].[32].thread = #t.tile(32)\n\
             #lanes:[2].[8, 2, 2].thread = #warps.reshape(1, [8, 2, 2])\n\
             @w, (@i, @j, @again) = #lanes.indices()\n\
             %r.tile([2, 1]) <- Move<<<#b, #warps>>>(%s.tile([8, 8])[@j, @w].tile([1, 8])[@i, 0])"
                .to_string(),
        ),
        (
            "x2 from the stage a loop variable picks: the stage moves every lane alike",
            32,
            "%stages:[2].[16, 8 : 1, 16].fp16.SH\n%r:[4, 1].fp16.RF",
            format!(
                "{ROWS}\nfor (k = 0; k < 4; k += 1) {{\n\
                 %r.tile([2, 1]) <- Move<<<#b, #t>>>(%stages[k % 2, _, _].tile([8, 8])[@j, 0].tile([8, 1])[0, @i])\n}}"
            ),
        ),
    ] {
        let src = kernel(threads, decls, &body);
        let result = check("collective.gph", &src);
        assert!(result.is_ok(), "{what}:\n{src}\n{:#?}", result.err());
    }
}

#[test]
fn mismatches_are_still_rejected() {
    for (what, threads, decls, body) in [
        (
            "32 lanes naming 32 different rows: 256 elements into 128 registers",
            32,
            "%r:[4, 1].fp16.RF",
            "#rows:[16, 2].thread = #t.reshape([16, 2])\n@row, @half = #rows.indices()\n\
             %r.tile([2, 1]) <- Move<<<#b, #t>>>(%s.tile([1, 8])[@row, @half])"
                .to_string(),
        ),
        (
            "x1's rows into x2's registers: 64 elements into 128",
            32,
            "%r:[4, 1].fp16.RF",
            format!(
                "{ROWS}\n%r.tile([2, 1]) <- Move<<<#b, #t>>>(%s.tile([8, 8])[0, 0].tile([1, 8])[@i, 0])"
            ),
        ),
        (
            "not a move: pointwise kinds pair elements thread by thread",
            32,
            "%r:[4, 1].fp16.RF",
            format!(
                "{ROWS}\n%r.tile([2, 1]) <- UnaryPointwise<neg><<<#b, #t>>>(%cols.tile([8, 8])[@j, 0].tile([8, 1])[0, @i])"
            ),
        ),
        (
            "one thread alone: nothing to share",
            32,
            "%r:[4, 1].fp16.RF",
            format!(
                "{ROWS}\n%r.tile([2, 1]) <- Move<<<#b, #t.scalar()>>>(%cols.tile([8, 8])[@j, 0].tile([8, 1])[0, @i])"
            ),
        ),
        (
            "registers only: per thread 16 into 8",
            32,
            "%r:[8].fp32.RF\n%q:[16].fp32.RF",
            "%r <- Move<<<#b, #t>>>(%q)".to_string(),
        ),
    ] {
        let src = kernel(threads, decls, &body);
        assert_eq!(codes_of(&src), vec![codes::SIZE_MISMATCH], "{what}:\n{src}");
    }
}

/// The labels count the operands over the warp, the shared rows once.
#[test]
fn a_collective_mismatch_shows_the_totals() {
    let src = kernel(
        32,
        "%r:[4, 1].fp16.RF",
        &format!(
            "{ROWS}\n%r.tile([2, 1]) <- Move<<<#b, #t>>>(%s.tile([8, 8])[0, 0].tile([1, 8])[@i, 0])"
        ),
    );
    let diags = check("collective.gph", &src).expect_err("64 elements into 128");
    let diag = &diags[0];
    assert_eq!(
        diag.primary.message,
        "64 distinct elements: 8 per thread ([1,8 : 16,1].fp16.SH) over 32 threads"
    );
    assert_eq!(
        diag.secondary[0].message,
        "128 elements: 4 per thread ([2,1 : 2,0].[2,1 : 1,4].fp16.RF) over 32 threads"
    );
    assert!(diag.notes[0].contains("collective"), "{:#?}", diag.notes);
}

/// Where the base mixes the thread with a loop variable, which rows the
/// lanes share depends on the iteration: the lanes count as disjoint, and
/// the diagnostic says so.
#[test]
fn an_unknown_sharing_counts_as_disjoint_and_says_so() {
    let src = kernel(
        32,
        "%r:[4, 1].fp16.RF",
        &format!(
            "{ROWS}\nfor (k = 0; k < 4; k += 1) {{\n\
             %r.tile([2, 1]) <- Move<<<#b, #t>>>(%cols.tile([8, 8])[@j, 0].tile([8, 1])[0, (@i + k) % 8])\n}}"
        ),
    );
    let diags = check("collective.gph", &src).expect_err("counted as 256 elements");
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(diags[0].code, codes::SIZE_MISMATCH);
    assert!(
        diags[0]
            .primary
            .message
            .starts_with("256 elements: 8 per thread"),
        "{:#?}",
        diags[0]
    );
    assert!(
        diags[0]
            .notes
            .iter()
            .any(|note| note.contains("counted as naming different elements")),
        "{:#?}",
        diags[0].notes
    );
}
