//! Stage 1, syntax: unit tests of the entry points — the shapes of parsed
//! trees, spans, precedence, the REPL entry points and error recovery.

use super::*;
use crate::diag::Span;

fn stmt(src: &str) -> Stmt {
    parse_statement(src).unwrap_or_else(|d| panic!("{src}: {d:?}"))
}

fn int(src: &str) -> IntExpr {
    match stmt(&format!("async_wait({src})")).kind {
        StmtKind::Wait(_, value) => value,
        other => panic!("{other:?}"),
    }
}

fn codes_of(result: Result<File, Vec<crate::diag::Diagnostic>>) -> Vec<&'static str> {
    result
        .err()
        .unwrap_or_default()
        .iter()
        .map(|d| d.code)
        .collect()
}

#[test]
fn precedence_and_associativity_shape_the_tree() {
    assert_eq!(int("a+b*c").to_string(), "a+b*c");
    let IntExprKind::Binary(IntOp::Add, _, rhs) = int("a+b*c").kind else {
        panic!()
    };
    assert!(matches!(rhs.kind, IntExprKind::Binary(IntOp::Mul, _, _)));
    let IntExprKind::Binary(IntOp::Sub, lhs, _) = int("a-b-c").kind else {
        panic!()
    };
    assert!(matches!(lhs.kind, IntExprKind::Binary(IntOp::Sub, _, _)));
    assert_eq!(int("(a+b)*c").to_string(), "(a+b)*c");
    assert_eq!(int("a-(b-c)").to_string(), "a-(b-c)");
    assert_eq!(int("((K))/2").to_string(), "K/2");
    assert_eq!(int("k % 2").to_string(), "k % 2");
    assert_eq!(int("-(a+1)*@i").to_string(), "-(a+1)*@i");
}

#[test]
fn spans_cover_exactly_their_text() {
    let src = "  %7:[2,2].[8,8].fp16.SH = %1.tile([8,8]) // c";
    let s = stmt(src);
    assert_eq!(
        &src[s.span.range()],
        "%7:[2,2].[8,8].fp16.SH = %1.tile([8,8])"
    );
    let StmtKind::Tensor(def) = &s.kind else {
        panic!()
    };
    assert_eq!(&src[def.name.span.range()], "%7");
    let ty = def.ty.as_ref().expect("annotated");
    assert_eq!(&src[ty.span.range()], "[2,2].[8,8].fp16.SH");
    assert_eq!(&src[ty.levels[1].span.range()], "[8,8]");
    let value = def.value.as_ref().expect("defined");
    assert_eq!(&src[value.span.range()], "%1.tile([8,8])");
}

#[test]
fn tile_arguments_keep_their_written_form() {
    let s = stmt("%6 = %1.tile([128, _], _, 8, [2:2])");
    let StmtKind::Tensor(TensorDef {
        value: Some(value), ..
    }) = s.kind
    else {
        panic!()
    };
    let ExprKind::Tile(_, args, _) = value.kind else {
        panic!()
    };
    assert!(
        matches!(&args[0], TileArg::Layout(l) if matches!(l.dims[1], Tuple::Leaf(TileDim::Whole(_))))
    );
    assert!(matches!(args[1], TileArg::Whole(_)));
    assert!(matches!(args[2], TileArg::Size(_)));
    let TileArg::Layout(strided) = &args[3] else {
        panic!()
    };
    assert_eq!(strided.strides.as_ref().map(Vec::len), Some(1));
}

#[test]
fn broadcast_takes_a_position_and_an_extent() {
    let s = stmt("%bb = %b.broadcast(0, M/2).tile([8, 8])[@i, _]");
    assert_eq!(
        print_stmt(&s),
        "%bb = %b.broadcast(0, M/2).tile([8,8])[@i, _]"
    );
    let StmtKind::Tensor(TensorDef {
        value: Some(value), ..
    }) = s.kind
    else {
        panic!()
    };
    let ExprKind::Index(tiled, _) = value.kind else {
        panic!()
    };
    let ExprKind::Tile(broadcast, _, _) = tiled.kind else {
        panic!()
    };
    let ExprKind::Broadcast(_, position, extent) = broadcast.kind else {
        panic!()
    };
    assert_eq!(
        (position.to_string(), extent.to_string()),
        ("0".into(), "M/2".into())
    );
    for wrong in [
        "%x = %b.broadcast(0)",
        "%x = %b.broadcast()",
        "%x = %b.broadcast(0, _)",
    ] {
        assert!(parse_statement(wrong).is_err(), "{wrong}");
    }
    let misspelt = parse_statement("%x = %b.broadcst(0, 4)").expect_err("unknown operation");
    assert_eq!(misspelt[0].code, error::codes::UNKNOWN_OPERATION);
    assert!(
        misspelt[0]
            .help
            .as_deref()
            .is_some_and(|h| h.contains("`.broadcast`")),
        "{misspelt:?}"
    );
}

#[test]
fn coordinates_and_patterns_nest() {
    let s = stmt("%z = %x[(0, _), k+1, _, @i]");
    assert_eq!(print_stmt(&s), "%z = %x[(0, _), k+1, _, @i]");
    let s = stmt("(@m, @n), _, @i = #6.indices()");
    let StmtKind::Indices(def) = s.kind else {
        panic!()
    };
    assert_eq!(def.patterns.len(), 3);
    assert!(matches!(&def.patterns[0].kind, IndexPatternKind::Tuple(items) if items.len() == 2));
}

#[test]
fn every_spec_kind_and_its_parameters() {
    let cases = [
        (
            "%a <- Move<async><<<#b, #t>>>(%x)",
            SpecKind::Move {
                asynchronous: true,
                masked: false,
                tma: false,
                add: false,
            },
        ),
        (
            "%a <- MatMul<overwrite><<<#b, #t>>>(%x, %y)",
            SpecKind::MatMul {
                overwrite: true,
                asynchronous: false,
            },
        ),
        (
            "%a <- MatMul<async><<<#b, #t>>>(%x, %y)",
            SpecKind::MatMul {
                overwrite: false,
                asynchronous: true,
            },
        ),
        (
            "%a <- UnaryPointwise<rsqrt><<<#b, #t>>>(%x)",
            SpecKind::UnaryPointwise(UnaryOp::Rsqrt),
        ),
        (
            "%a <- BinaryPointwise<max><<<#b, #t>>>(%x, %y)",
            SpecKind::BinaryPointwise(BinaryOp::Max),
        ),
        (
            "%a <- BinaryPointwise<div><<<#b, #t>>>(%x, %y)",
            SpecKind::BinaryPointwise(BinaryOp::Div),
        ),
        (
            "%a <- UnaryPointwise<gelu><<<#b, #t>>>(%x)",
            SpecKind::UnaryPointwise(UnaryOp::Gelu),
        ),
        (
            "%a <- TernaryPointwise<fma><<<#b, #t>>>(%x, %y, %z)",
            SpecKind::TernaryPointwise(TernaryOp::Fma),
        ),
        (
            "%a <- Select<ge><<<#b, #t>>>(%p, %q, %x, %y)",
            SpecKind::Select(CompareOp::Ge),
        ),
        (
            "%a <- Init<-0.0015><<<#b, #t>>>()",
            SpecKind::Init(InitValue::Number(-1.5e-3)),
        ),
        ("%a <- Spec<<<#b, #t>>>(%x) {}", SpecKind::Generic),
    ];
    for (src, kind) in cases {
        let StmtKind::Spec(spec) = stmt(src).kind else {
            panic!("{src}")
        };
        assert_eq!(spec.kind, kind, "{src}");
        assert_eq!(print_stmt(&stmt(src)), src);
    }
    let StmtKind::Spec(spec) = stmt("%y <- Reduction<add, [1, 2]><<<#b, #t>>>(%x)").kind else {
        panic!()
    };
    assert!(matches!(&spec.kind, SpecKind::Reduction(ReduceOp::Add, axes) if axes.len() == 2));
    let StmtKind::Spec(spec) = stmt("%y <- Shfl<bfly, 16><<<#b, #t>>>(%x)").kind else {
        panic!()
    };
    assert!(matches!(&spec.kind, SpecKind::Shfl(ShflMode::Bfly, _)));
    let StmtKind::Spec(spec) = stmt("%y <- Init<inf><<<#b, #t>>>()").kind else {
        panic!()
    };
    assert_eq!(spec.kind, SpecKind::Init(InitValue::Number(f64::INFINITY)));
}

#[test]
fn scalar_types_are_case_insensitive_and_memories_are_not() {
    let StmtKind::Tensor(def) = stmt("%a:[4,8 : 1,4].FP32.GL").kind else {
        panic!()
    };
    assert_eq!(
        def.ty.expect("typed").scalar,
        crate::syntax::ast::ScalarChoice::Named(Scalar::Fp32)
    );
    assert!(parse_statement("%a:[4].fp32.gl").is_err());
}

#[test]
fn control_flow_statements() {
    let src = "for (k = 0; k < K/32; k += 1) {\n    if (@i < 4 && k != 0) {\n        sync\n    } else if (k == 1) {\n        async_commit\n    } else {\n        async_wait(1)\n    }\n}";
    assert_eq!(print_stmt(&stmt(src)), src);
}

#[test]
fn a_file_of_bare_statements_is_one_kernel_named_after_the_file() {
    let file = parse_file(
        "kernels/simple-gemm.gph",
        "const N = 4\n%1:[N].fp32.GL\nsync\n",
    )
    .expect("parses");
    assert!(matches!(&file.items[0], Item::Const(_)));
    let Item::Kernel(kernel) = &file.items[1] else {
        panic!()
    };
    assert!(kernel.implicit);
    assert_eq!(kernel.name.text, "simple_gemm");
    assert_eq!(kernel.body.stmts.len(), 2);
    assert_eq!(kernel_name_from_path("000.gph"), "_000");
    assert_eq!(
        codes_of(parse_file("f.gph", "sync\nconst N = 4\n")),
        ["E0118"]
    );
    assert_eq!(
        parse_file("f.gph", "// only a comment\n")
            .expect("parses")
            .items
            .len(),
        0
    );
}

#[test]
fn recovery_reports_independent_errors_in_order() {
    let src = "kernel k {\n    %1:[4].fp61.SH\n    for (k = 0; k < 4; k += 1) {\n        %2 = %1.tiel(2)\n    }\n    %3:[4].fp32.XX\n}\nsync\n";
    let codes = codes_of(parse_file("f.gph", src));
    assert_eq!(codes, ["E0105", "E0117", "E0106", "E0118"]);
    // A failed loop header skips the loop's body as a whole.
    let src = "kernel k {\n    for (k = 0 k < 4; k += 1) {\n        %2 = %1.tiel(2)\n    }\n    sync\n}\n";
    assert_eq!(codes_of(parse_file("f.gph", src)), ["E0113"]);
}

#[test]
fn repl_lines_are_statements_expressions_or_items() {
    assert!(matches!(parse_line("  // nothing\n"), Ok(Line::Empty)));
    assert!(matches!(parse_line("#4.tile(8)"), Ok(Line::Expr(_))));
    assert!(matches!(parse_line("%1"), Ok(Line::Expr(_))));
    assert!(matches!(parse_line("#4:[32].thread"), Ok(Line::Stmt(_))));
    assert!(matches!(parse_line("const BM = 64"), Ok(Line::Const(_))));
    assert!(matches!(
        parse_line("kernel k { sync }"),
        Ok(Line::Kernel(_))
    ));
    let errors = parse_line("%1:[16].fp16.XY").expect_err("bad memory");
    assert_eq!(errors[0].code, codes::BAD_MEMORY);
    let errors = parse_line("sync sync").expect_err("two statements");
    assert_eq!(errors[0].primary.span, Span::new(5, 9));
    assert!(parse_expr("%1.tile([8,8])[0, @i]").is_ok());
    assert!(parse_expr("%1 <- Move").is_err());
}

#[test]
fn unfinished_repl_input_is_incomplete_not_wrong() {
    assert!(is_incomplete(
        "%2 <- Move<<<#3, #4>>>(%1) {\n    #5 = #4.tile(8)"
    ));
    assert!(!is_incomplete("%2 <- Move<<<#3, #4>>>(%1) {\n}"));
    let partial = "kernel k {";
    assert!(is_incomplete(partial));
    let errors = parse_file("f.gph", partial).expect_err("unclosed");
    assert_eq!(errors[0].code, codes::UNCLOSED);
}

#[test]
fn nesting_beyond_the_bound_is_one_diagnostic() {
    let src = format!("%1:[{}1{}].fp32.GL", "(".repeat(200), ")".repeat(200));
    let errors = parse_file("f.gph", &src).expect_err("too deep");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].code, codes::TOO_DEEP);
    let long = format!("const X = 1{}", "*2".repeat(MAX_EXPR_DEPTH as usize + 1));
    assert_eq!(codes_of(parse_file("f.gph", &long)), [codes::TOO_DEEP]);
}

#[test]
fn comments_may_sit_inside_layouts() {
    let src = "%1:[ // rows\n 4, // then columns\n 8 // done\n ].fp32.GL";
    let StmtKind::Tensor(def) = stmt(src).kind else {
        panic!()
    };
    assert_eq!(def.ty.expect("typed").to_string(), "[4,8].fp32.GL");
    assert_eq!(int("M/(2*BM)").to_string(), "M/(2*BM)");
}
