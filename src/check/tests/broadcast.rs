//! Broadcast views: `.broadcast(i, n)` on global, shared and register
//! tensors, its composition with `.tile`, indexing and `.reshape`, and what
//! it refuses.

use pretty_assertions::assert_eq;

use super::{attempt, eval_with, run, session, shown_text};
use crate::check::{Shown, codes};
use crate::ir::Requirement;

#[test]
fn a_bias_row_over_the_rows_and_a_mean_over_the_columns() {
    let mut s = session(&["%x:[M, N].fp32.GL", "%b:[N].fp32.GL", "%mean:[M].fp32.GL"]);
    assert_eq!(
        shown_text(&mut s, "%b.broadcast(0, M)"),
        "[M,N : 0,1].fp32.GL"
    );
    assert_eq!(
        shown_text(&mut s, "%mean.broadcast(1, N)"),
        "[M,N : 1,0].fp32.GL"
    );
}

#[test]
fn indexing_a_broadcast_mode_moves_nothing() {
    let mut s = session(&["%b:[64].fp32.GL", "#t:[64].thread", "@c = #t.indices()"]);
    for row in [0, 5, 31] {
        // Element (row, c) is offset c of the bias, whatever the row.
        let line = format!("%b.broadcast(0, 32)[{row}, @c]");
        let Shown::Tensor { view, .. } = run(&mut s, &line) else {
            panic!("a tensor")
        };
        assert_eq!(shown_text(&mut s, &line), "[].fp32.GL");
        for tid in [0, 7, 63] {
            assert_eq!(eval_with(&view.base, tid, 0, &[]), tid, "row {row}");
        }
    }
}

#[test]
fn positions_run_from_before_the_first_mode_to_after_the_last() {
    let mut s = session(&["%r:[4,2 : 1,4].fp16.RF", "%one:[].fp32.SH"]);
    for (line, expected) in [
        ("%r.broadcast(0, 2)", "[2,4,2 : 0,1,4].fp16.RF"),
        ("%r.broadcast(1, 3)", "[4,3,2 : 1,0,4].fp16.RF"),
        ("%r.broadcast(2, 8)", "[4,2,8 : 1,4,0].fp16.RF"),
        // A scalar becomes a vector of copies of itself.
        ("%one.broadcast(0, 16)", "[16 : 0].fp32.SH"),
        (
            "%one.broadcast(0, 4).broadcast(1, 2)",
            "[4,2 : 0,0].fp32.SH",
        ),
    ] {
        assert_eq!(shown_text(&mut s, line), expected, "{line}");
    }
}

#[test]
fn broadcast_works_on_the_innermost_level_and_composes_with_tile() {
    let mut s = session(&["%b:[32].fp32.SH", "%t:[2].[4].fp32.RF"]);
    assert_eq!(
        shown_text(&mut s, "%b.broadcast(0, 64).tile([16, 8])"),
        "[4,4 : 0,8].[16,8 : 0,1].fp32.SH"
    );
    // A strided tile of the stride-0 mode is still stride 0.
    assert_eq!(
        shown_text(&mut s, "%b.broadcast(0, 64).tile([4:2], _)"),
        "[(2,8),1 : (0,0),0].[4,32 : 0,1].fp32.SH"
    );
    assert_eq!(
        shown_text(&mut s, "%t.broadcast(0, 2)"),
        "[2 : 4].[2,4 : 0,1].fp32.RF"
    );
    assert_eq!(
        shown_text(&mut s, "%b.tile(8).broadcast(1, 4)[1, _, _]"),
        "[8,4 : 1,0].fp32.SH"
    );
}

#[test]
fn symbolic_broadcasts_tile_like_any_symbolic_mode() {
    let mut s = session(&["%x:[M, N].fp32.GL", "%b:[N].fp32.GL"]);
    assert_eq!(
        shown_text(&mut s, "%b.broadcast(0, M).tile([128, 32])"),
        "[M/128,N/32 : 0,32].[128,32 : 0,1].fp32.GL"
    );
    let kernel = super::check(
        "bias.gph",
        "%b:[N].fp32.GL\n%x:[M, N].fp32.GL\n#g:[M/128].block\n#t:[128].thread\n\
         %x <- Spec<<<#g, #t>>>() {\n  %r = %b.broadcast(0, M - 1).tile([128, _])\n}\n",
    )
    .unwrap_or_else(|d| panic!("{d:#?}"));
    let requirements = &kernel.kernels[0].requirements;
    assert!(
        requirements
            .iter()
            .any(|r| matches!(r, Requirement::Positive { .. })),
        "M - 1 must be at least 1: {requirements:?}"
    );
    assert!(
        requirements
            .iter()
            .any(|r| matches!(r, Requirement::Divisible { divisor, .. } if divisor.as_const() == Some(128))),
        "(M - 1) % 128 == 0: {requirements:?}"
    );
}

#[test]
fn reshape_keeps_the_size_of_a_broadcast_view() {
    let mut s = session(&["%r:[4].fp16.RF"]);
    assert_eq!(
        shown_text(&mut s, "%r.broadcast(0, 2).reshape([2,2,2])"),
        "[2,2,2 : 0,1,2].fp16.RF"
    );
    assert_eq!(
        attempt(&mut s, "%r.broadcast(0, 2).reshape([16])"),
        Err(vec![codes::BAD_RESHAPE])
    );
}

#[test]
fn what_broadcast_refuses() {
    let mut s = session(&[
        "%g:[N].fp32.GL",
        "%s:[8].fp32.SH",
        "#t:[32].thread",
        "@i = #t.indices()",
    ]);
    for (line, code) in [
        ("%s.broadcast(2, 4)", codes::BAD_BROADCAST),
        ("%s.broadcast(-1, 4)", codes::BAD_BROADCAST),
        ("%s.broadcast(0, 0)", codes::BAD_BROADCAST),
        ("%s.broadcast(N, 4)", codes::NOT_CONSTANT),
        // Shared and register layouts are constant.
        ("%s.broadcast(0, N)", codes::NOT_CONSTANT),
        ("%g.broadcast(0, @i)", codes::WRONG_KIND),
        ("%g.broadcast(0, P)", codes::UNDEFINED),
        ("#t.broadcast(0, 2)", codes::BAD_OPERATION),
    ] {
        assert_eq!(attempt(&mut s, line), Err(vec![code]), "{line}");
    }
    let annotated = run(&mut s, "%bb:[N, 4 : 1, 0].fp32.GL = %g.broadcast(1, 4)");
    assert!(matches!(annotated, Shown::Tensor { .. }));
    assert_eq!(
        attempt(&mut s, "%bc:[N, 4 : 1, 1].fp32.GL = %g.broadcast(1, 4)"),
        Err(vec![codes::TYPE_MISMATCH])
    );
}

/// A kernel with a 32-thread block and a generic root whose body is `body`,
/// after the declarations `decls`.
fn kernel_with(decls: &str, body: &str) -> String {
    format!(
        "{decls}\n#b:[1].block\n#t:[32].thread\n%out:[32].fp32.GL\n\
         %out <- Spec<<<#b, #t>>>() {{\n#one = #b.scalar()\n#me = #t.scalar()\n{body}\n}}\n"
    )
}

#[test]
fn broadcast_views_are_inputs_of_every_reading_kind() {
    let decls = "%r:[4].fp32.RF\n%m:[4,4].fp32.RF\n%s:[4].fp32.SH\n%one_value:[].fp32.RF";
    for body in [
        "%m <- Move<<<#one, #me>>>(%r.broadcast(0, 4))",
        "%m <- UnaryPointwise<exp><<<#one, #me>>>(%r.broadcast(1, 4))",
        "%m <- BinaryPointwise<add><<<#one, #me>>>(%m, %r.broadcast(0, 4))",
        "%m <- TernaryPointwise<fma><<<#one, #me>>>(%m, %one_value.broadcast(0, 16), %m)",
        "%m <- Select<lt><<<#one, #me>>>(%m, %r.broadcast(0, 4), %m, %r.broadcast(1, 4))",
        "%r <- Reduction<add, [1]><<<#one, #me>>>(%s.broadcast(1, 8))",
        "%m <- MatMul<<<#one, #me>>>(%r.broadcast(1, 1), %r.broadcast(0, 1)) {}",
    ] {
        // The register tensors hold values before they are read (E0296),
        // and so does the shared one, written by thread 0 (E0298).
        let written = "%r <- Init<1.0><<<#one, #me>>>()\n%m <- Init<1.0><<<#one, #me>>>()\n\
                       %one_value <- Init<1.0><<<#one, #me>>>()\n@lane = #t.indices()\n\
                       if (@lane == 0) {\n%s <- Init<1.0><<<#one, #me>>>()\n}\nsync";
        let src = kernel_with(decls, &format!("{written}\n{body}"));
        assert_eq!(super::codes_of(&src), Vec::<&str>::new(), "{body}");
    }
}

#[test]
fn broadcast_views_are_no_outputs() {
    let decls = "%r:[4].fp32.RF\n%m:[4,4].fp32.RF\n%twice:[2,2 : 0,1].fp32.RF\n%g:[M].fp32.GL";
    for body in [
        "%r.broadcast(0, 4) <- Move<<<#one, #me>>>(%m)",
        "%r.broadcast(1, 4) <- BinaryPointwise<add><<<#one, #me>>>(%m, %m)",
        "%r.broadcast(0, 4) <- Init<0.0><<<#one, #me>>>()",
        // A written layout with a stride-0 mode is a broadcast view too.
        "%twice <- Init<1.0><<<#one, #me>>>()",
        // A symbolic extent may be more than 1.
        "%g.broadcast(0, M)[_, 0] <- Move<<<#one, #me>>>(%g)",
    ] {
        let src = kernel_with(decls, body);
        assert_eq!(
            super::codes_of(&src),
            vec![codes::BROADCAST_OUTPUT],
            "{body}"
        );
    }
    // Stride 0 over a single element names it once: the rest of a whole
    // mode kept by `.tile` is such a mode.
    let src = kernel_with(
        "%m:[4,4].fp32.RF\n%one_slot:[1,4 : 0,1].fp32.RF",
        "%m <- Init<1.0><<<#one, #me>>>()\n%one_slot <- Move<<<#one, #me>>>(%m[0, _])\n\
         %m.tile([2, _])[0, _, _, _] <- Init<0.0><<<#one, #me>>>()",
    );
    assert_eq!(super::codes_of(&src), Vec::<&str>::new());
}

/// The help line of the one diagnostic of `body`.
fn mismatch_help(decls: &str, body: &str) -> String {
    let src = kernel_with(decls, body);
    let diagnostics = super::check("mismatch.gph", &src).expect_err("a size mismatch");
    assert_eq!(diagnostics.len(), 1, "{diagnostics:#?}");
    assert_eq!(diagnostics[0].code, codes::SIZE_MISMATCH);
    diagnostics[0].help.clone().unwrap_or_default()
}

#[test]
fn a_size_mismatch_suggests_the_broadcast_that_fixes_it() {
    let decls = "%x:[M, N].fp32.GL\n%b:[N].fp32.GL\n%mean:[M].fp32.GL\n%y:[M, N].fp32.GL";
    assert_eq!(
        mismatch_help(
            decls,
            "%y <- BinaryPointwise<add><<<#one, #me>>>(%x, %b) {}"
        ),
        "broadcast the smaller operand: `%b.broadcast(0, M)`"
    );
    // Either operand may be the smaller one, and the mode may go last.
    assert_eq!(
        mismatch_help(
            decls,
            "%y <- BinaryPointwise<sub><<<#one, #me>>>(%mean, %x) {}"
        ),
        "broadcast the smaller operand: `%mean.broadcast(1, N)`"
    );
    // The call is written on the operand as written.
    let tiles = "%x:[64, 32].fp32.SH\n%b:[8, 32].fp32.SH\n%y:[16, 32].fp32.SH";
    assert_eq!(
        mismatch_help(tiles, "%y <- Move<<<#one, #me>>>(%b[0, _]) {}"),
        "broadcast the smaller operand: `%b[0, _].broadcast(0, 16)`"
    );
    // No broadcast makes [48] into [M, N], and an output is never broadcast.
    let plain = "tile or index the operands so that each holds the same number of elements";
    assert_eq!(
        mismatch_help(
            "%x:[64, 32].fp32.GL\n%c:[48].fp32.GL\n%y:[64, 32].fp32.GL",
            "%y <- BinaryPointwise<add><<<#one, #me>>>(%x, %c) {}"
        ),
        plain
    );
    assert_eq!(
        mismatch_help(decls, "%b <- Move<<<#one, #me>>>(%x) {}"),
        plain
    );
}
