//! Type computations with the numbers of docs/language.md and seed 000:
//! the tiles of §3.3, the warp groupings of §4, indexing level by level,
//! and symbolic shapes.

use pretty_assertions::assert_eq;

use super::{eval_with, run, session, shown_text};
use crate::check::Shown;
use crate::expr::{Expr, Var};
use crate::ir::Requirement;

#[test]
fn tiles_of_section_3_3() {
    let mut s = session(&["%A:[4,8 : 1,4].fp32.GL"]);
    for (tiling, expected) in [
        ("%A.tile([2:1],[4:1])", "[2,2 : 2,16].[2,4 : 1,4].fp32.GL"),
        ("%A.tile([2:2],[4:1])", "[2,2 : 1,16].[2,4 : 2,4].fp32.GL"),
        (
            "%A.tile([2:2],[2,2 : 1,4])",
            "[2,2 : 1,8].[2,(2,2) : 2,(4,16)].fp32.GL",
        ),
        // `[2,4]` lists one tile per mode; `2, 4` are bare sizes.
        ("%A.tile([2,4])", "[2,2 : 2,16].[2,4 : 1,4].fp32.GL"),
        ("%A.tile(2, 4)", "[2,2 : 2,16].[2,4 : 1,4].fp32.GL"),
    ] {
        assert_eq!(shown_text(&mut s, tiling), expected, "{tiling}");
    }
}

#[test]
fn warp_groupings_of_section_4() {
    let mut s = session(&[
        "#warp:[32 : 1].thread",
        "#groups = #warp.tile([8:1])",
        "#groups2d = #groups.reshape(0, [2,2 : 2,1])",
        "#quad_pairs = #warp.tile([4,2 : 1,16])",
    ]);
    assert_eq!(shown_text(&mut s, "#groups"), "[4 : 8].[8 : 1].thread");
    assert_eq!(
        shown_text(&mut s, "#groups2d"),
        "[2,2 : 16,8].[8 : 1].thread"
    );
    assert_eq!(
        shown_text(&mut s, "#quad_pairs"),
        "[4 : 4].[(4,2) : (1,16)].thread"
    );
    assert_eq!(
        shown_text(&mut s, "#warp.tile(8)"),
        "[4 : 8].[8 : 1].thread"
    );

    // int grp_m = (threadIdx.x / 16) % 2; grp_n = (threadIdx.x / 8) % 2; tidx = threadIdx.x % 8
    run(&mut s, "(@grp_m, @grp_n), @tidx = #groups2d.indices()");
    // int qp_idx = (threadIdx.x / 4) % 4; quad_idx = threadIdx.x % 4; qp_hi_lo = (threadIdx.x / 16) % 2
    run(
        &mut s,
        "@qp_idx, (@quad_idx, @qp_hi_lo) = #quad_pairs.indices()",
    );
    type Formula = fn(i64) -> i64;
    let cases: [(&str, Formula); 6] = [
        ("grp_m", |t| (t / 16) % 2),
        ("grp_n", |t| (t / 8) % 2),
        ("tidx", |t| t % 8),
        ("qp_idx", |t| (t / 4) % 4),
        ("quad_idx", |t| t % 4),
        ("qp_hi_lo", |t| (t / 16) % 2),
    ];
    for (name, expected) in cases {
        let index = s
            .index(name)
            .unwrap_or_else(|| panic!("@{name} unbound"))
            .clone();
        for t in 0..32 {
            assert_eq!(
                eval_with(&index, t, 0, &[]),
                expected(t),
                "@{name} at thread {t}"
            );
        }
    }
    assert_eq!(
        s.index("grp_m"),
        Some(&Expr::rem(
            Expr::div(Expr::var(Var::ThreadId), 16.into()),
            2.into()
        ))
    );
}

#[test]
fn a_name_binds_the_linear_index_of_a_hierarchical_mode() {
    let mut s = session(&["#warp:[32].thread", "#qp = #warp.tile([4,2 : 1,16])"]);
    // The quad pair's mode (4,2):(1,16) as one index: quad_idx + 4·qp_hi_lo.
    run(&mut s, "@qp, @lane = #qp.indices()");
    let lane = s.index("lane").unwrap().clone();
    for t in 0..32 {
        assert_eq!(eval_with(&lane, t, 0, &[]), t % 4 + 4 * ((t / 16) % 2));
    }
    // A one-level group of rank 2 with a single pattern: the level's linear index.
    run(&mut s, "#g:[4,8].thread");
    run(&mut s, "@all = #g.indices()");
    let all = s.index("all").unwrap().clone();
    for t in 0..32 {
        assert_eq!(eval_with(&all, t, 0, &[]), t);
    }
}

#[test]
fn indexing_consumes_levels_from_the_outermost() {
    let mut s = session(&[
        "%x:[2,1].[8,4].[1,2].fp16.RF",
        "%c:[4,(2,4) : 2,(1,8)].fp32.SH",
    ]);
    // CuTe's inner partition: keep level 0, index level 1, keep level 2.
    assert_eq!(
        shown_text(&mut s, "%x[_, _, 3, 1]"),
        "[2,1 : 64,128].[1,2 : 1,1].fp16.RF"
    );
    let Ok(Shown::Tensor { view, .. }) =
        s.line(&crate::syntax::parse_line("%x[_, _, 3, 1]").unwrap())
    else {
        panic!("not a tensor")
    };
    // Omitted strides number the innermost level first: [8,4] starts at 2.
    assert_eq!(view.base, Expr::Const(3 * 2 + 16));
    assert_eq!(
        shown_text(&mut s, "%x[1, 0]"),
        "[8,4 : 2,16].[1,2 : 1,1].fp16.RF"
    );
    assert_eq!(shown_text(&mut s, "%x[1, 0, 7, 3, 0, 1]"), "[].fp16.RF");

    // C[0,3] = C[0,(1,1)] = 9: a linear index into a hierarchical mode, or a tuple.
    for coords in ["[0, 3]", "[0, (1, 1)]"] {
        let line = format!("%c{coords}");
        let Ok(Shown::Tensor { view, .. }) = s.line(&crate::syntax::parse_line(&line).unwrap())
        else {
            panic!("{line}")
        };
        assert_eq!(view.base, Expr::Const(9), "{line}");
        assert_eq!(super::text(&s, &view.ty), "[].fp32.SH");
    }
    // `_` inside a tuple keeps that sub-mode.
    assert_eq!(shown_text(&mut s, "%c[2, (_, 3)]"), "[2 : 1].fp32.SH");
}

#[test]
fn tiling_with_whole_modes_and_a_tiled_tile() {
    let mut s = session(&["%g:[1024,1024].fp16.GL"]);
    assert_eq!(
        shown_text(&mut s, "%g.tile([128, _])"),
        "[8,1 : 128,0].[128,1024 : 1,1024].fp16.GL"
    );
    run(&mut s, "%t = %g.tile([128,128])");
    assert_eq!(
        shown_text(&mut s, "%t.tile([8,8])"),
        "[8,8 : 128,131072].[16,16 : 8,8192].[8,8 : 1,1024].fp16.GL"
    );
}

#[test]
fn symbolic_shapes_tile_and_record_requirements() {
    let mut s = session(&["%a:[M, K].fp16.GL"]);
    assert_eq!(
        shown_text(&mut s, "%a.tile([128, 32])"),
        "[M/128,K/32 : 128,32*M].[128,32 : 1,M].fp16.GL"
    );
    let Ok(Shown::Tensor { view, .. }) =
        s.line(&crate::syntax::parse_line("%a.tile([128, 32])[2, 3]").unwrap())
    else {
        panic!("not a tensor")
    };
    // base = 2·128 + 3·32·M.
    assert_eq!(eval_with(&view.base, 0, 0, &[(0, 1024)]), 256 + 96 * 1024);

    // Row-major with a symbolic stride, strided tile of a symbolic mode.
    let mut s = session(&["%b:[K, N : N, 1].fp32.GL"]);
    assert_eq!(
        shown_text(&mut s, "%b.tile([2:2], _)"),
        "[(2,K/4),1 : (N,4*N),0].[2,N : 2*N,1].fp32.GL"
    );
    let kernel = super::check(
        "req.gph",
        "%a:[M, K].fp16.GL\n#b:[M/128].block\n#t:[128].thread\n%a <- Spec<<<#b, #t>>>() {\n  @i = #b.indices()\n  %r = %a.tile([128, 64])\n}\n",
    )
    .unwrap_or_else(|d| panic!("{d:#?}"));
    let kernel = &kernel.kernels[0];
    let names: Vec<&str> = kernel.dims.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["M", "K"]);
    let divisions: Vec<(Expr, Expr)> = kernel
        .requirements
        .iter()
        .filter_map(|r| match r {
            Requirement::Divisible { value, divisor, .. } => Some((value.clone(), divisor.clone())),
            Requirement::Positive { .. } => None,
        })
        .collect();
    let dim = |i| Expr::var(Var::Dim(i));
    assert_eq!(divisions, [(dim(0), 128.into()), (dim(1), 64.into())]);
}

/// The positivity requirements of a checked one-kernel program, printed
/// with the kernel's dim names, except the index width's (every offset
/// below 2^32).
fn positive_requirements(source: &str) -> Vec<String> {
    let program = super::check("strides.gph", source).unwrap_or_else(|d| panic!("{d:#?}"));
    let kernel = &program.kernels[0];
    let names: Vec<&str> = kernel.dims.iter().map(|d| d.name.as_str()).collect();
    kernel
        .requirements
        .iter()
        .filter_map(|r| match r {
            Requirement::Positive { value, .. } => Some(value.to_string()),
            Requirement::Divisible { .. } => None,
        })
        .filter(|text| !text.contains("4294967296"))
        .map(|text| {
            (0..names.len())
                .rev()
                .fold(text, |text, i| text.replace(&format!("d{i}"), names[i]))
        })
        .collect()
}

#[test]
fn a_leading_dimension_must_pass_the_row_it_leads() {
    // Rows LD apart, N long: LD ≥ N at launch, whichever side is written.
    let copy = "%s:[R, N : N, 1].fp16.GL\n%d:[R, N : LD, 1].fp16.GL\n#b:[1].block\n#t:[32].thread\n%d <- Move<<<#b, #t>>>(%s)\n";
    let required = positive_requirements(copy);
    assert!(
        required.iter().any(|r| r.contains("LD") && r.contains("N")),
        "{required:?}"
    );
    // Compact strides, batched strides and broadcasts need nothing.
    let compact = "%s:[M, K, L : K, 1, M*K].fp16.GL\n%d:[M, K, L : K, 1, K*M].fp16.GL\n#b:[1].block\n#t:[32].thread\n%d <- Move<<<#b, #t>>>(%s)\n";
    assert_eq!(positive_requirements(compact), Vec::<String>::new());
    let broadcast = "%s:[M, K : 0, 1].fp16.GL\n%d:[M, K : K, 1].fp16.GL\n#b:[1].block\n#t:[32].thread\n%d <- Move<<<#b, #t>>>(%s)\n";
    assert_eq!(positive_requirements(broadcast), Vec::<String>::new());
}

#[test]
fn subtracted_extents_must_be_positive_at_launch() {
    let program = super::check(
        "pos.gph",
        "%a:[N - 1].fp32.GL\n#b:[1].block\n#t:[32].thread\n%a <- Init<1.0><<<#b, #t>>>()\n",
    )
    .unwrap_or_else(|d| panic!("{d:#?}"));
    let requirements = &program.kernels[0].requirements;
    assert!(
        matches!(&requirements[..], [Requirement::Positive { value, .. }] if *value == Expr::sub(Expr::var(Var::Dim(0)), 1.into())),
        "{requirements:?}"
    );
}

#[test]
fn reshape_composes_and_keeps_the_size() {
    let mut s = session(&["#w:[32].thread", "%r:[8].fp32.RF"]);
    assert_eq!(
        shown_text(&mut s, "#w.reshape([4,8])"),
        "[4,8 : 1,4].thread"
    );
    assert_eq!(
        shown_text(&mut s, "#w.tile(8).reshape(1, [2,4 : 4,1])"),
        "[4 : 8].[2,4 : 4,1].thread"
    );
    assert_eq!(
        shown_text(&mut s, "%r.reshape([2,4 : 4,1])"),
        "[2,4 : 4,1].fp32.RF"
    );
    assert_eq!(shown_text(&mut s, "#w.scalar()"), "[].thread");
}

#[test]
fn declared_buffers_have_the_layouts_cosize() {
    let mut s = session(&[
        "%s:[2,2].[8,8].fp16.SH",
        "%p:[64, 32 : 40, 1].fp16.SH.Swizzle<3,3,3>",
    ]);
    let view = s.tensor("s").unwrap().clone();
    assert_eq!(
        super::text(&s, &view.ty),
        "[2,2 : 64,128].[8,8 : 1,8].fp16.SH"
    );
    assert_eq!(s.buffer(view.buffer).unwrap().elements, Expr::Const(256));
    // A padded row-major tile reserves up to its last element: 63·40 + 31 + 1.
    let padded = s.tensor("p").unwrap().clone();
    assert_eq!(
        s.buffer(padded.buffer).unwrap().elements,
        Expr::Const(63 * 40 + 32)
    );
    assert_eq!(
        shown_text(&mut s, "%p.tile([8, 8])"),
        "[8,4 : 320,8].[8,8 : 40,1].fp16.SH.Swizzle<3,3,3>"
    );
}
