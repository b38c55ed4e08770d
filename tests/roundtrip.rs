//! Round trips of the front end: for generated trees and for every example,
//! parsing the printed text gives back the same tree (spans aside), and
//! printing is a fixed point.

use graphene::syntax::ast::*;
use graphene::syntax::{parse_file, print_file, strip_spans};
use pretty_assertions::assert_eq;
use proptest::prelude::*;

const D: Span = Span::DUMMY;

fn name(text: &str) -> Name {
    Name {
        text: text.to_string(),
        span: D,
    }
}

fn word() -> BoxedStrategy<String> {
    word_unboxed().boxed()
}

fn word_unboxed() -> impl Strategy<Value = String> {
    "[a-zA-Z][a-zA-Z0-9_]{0,5}"
}

fn sigil_text() -> BoxedStrategy<String> {
    sigil_text_unboxed().boxed()
}

fn sigil_text_unboxed() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_]{1,5}"
}

fn int_expr() -> BoxedStrategy<IntExpr> {
    int_expr_unboxed().boxed()
}

fn int_expr_unboxed() -> impl Strategy<Value = IntExpr> {
    let leaf = prop_oneof![
        (0i64..5000).prop_map(IntExprKind::Literal),
        Just(IntExprKind::Literal(i64::MAX)),
        word().prop_map(|text| IntExprKind::Var(name(&text))),
        sigil_text().prop_map(|text| IntExprKind::Index(name(&text))),
    ]
    .prop_map(|kind| IntExpr { kind, span: D });
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|e| IntExprKind::Neg(Box::new(e))),
            (
                prop_oneof![
                    Just(IntOp::Add),
                    Just(IntOp::Sub),
                    Just(IntOp::Mul),
                    Just(IntOp::Div),
                    Just(IntOp::Rem),
                    Just(IntOp::CeilDiv)
                ],
                inner.clone(),
                inner.clone()
            )
                .prop_map(|(op, a, b)| IntExprKind::Binary(
                    op,
                    Box::new(a),
                    Box::new(b)
                )),
            (inner.clone(), inner.clone(), inner.clone(), inner).prop_map(|(x, y, a, b)| {
                let cond = Cond {
                    kind: CondKind::Compare(CompareOp::Eq, x, y),
                    span: D,
                };
                IntExprKind::Select(Box::new(cond), Box::new(a), Box::new(b))
            }),
        ]
        .prop_map(|kind| IntExpr { kind, span: D })
    })
}

/// Inside a layout `(` opens a tuple, so a leaf may not start with one
/// (docs/grammar.md, "Layouts").
fn dim_expr() -> BoxedStrategy<IntExpr> {
    dim_expr_unboxed().boxed()
}

fn dim_expr_unboxed() -> impl Strategy<Value = IntExpr> {
    int_expr().prop_filter("a dim does not start with `(`", |e| {
        !e.to_string().starts_with('(')
    })
}

fn tuple_of<L: std::fmt::Debug + Clone + 'static>(
    leaf: impl Strategy<Value = L> + Clone + 'static,
) -> impl Strategy<Value = Tuple<L>> {
    leaf.prop_map(Tuple::Leaf).prop_recursive(2, 8, 3, |inner| {
        prop::collection::vec(inner, 0..3).prop_map(Tuple::Node)
    })
}

fn layout() -> BoxedStrategy<Layout> {
    layout_unboxed().boxed()
}

fn layout_unboxed() -> impl Strategy<Value = Layout> {
    (0usize..4, any::<bool>()).prop_flat_map(|(rank, strided)| {
        let dims = prop::collection::vec(tuple_of(dim_expr()), rank);
        let strides = prop::collection::vec(tuple_of(dim_expr()), rank);
        (dims, strides).prop_map(move |(dims, strides)| Layout {
            dims,
            strides: strided.then_some(strides),
            span: D,
        })
    })
}

fn tile_layout() -> BoxedStrategy<Layout<TileDim>> {
    tile_layout_unboxed().boxed()
}

fn tile_layout_unboxed() -> impl Strategy<Value = Layout<TileDim>> {
    let plain = layout().prop_map(|l| Layout {
        dims: l
            .dims
            .iter()
            .map(|d| d.map(&mut |e| TileDim::Size(e.clone())))
            .collect(),
        strides: l.strides.map(|s| {
            s.iter()
                .map(|d| d.map(&mut |e| TileDim::Size(e.clone())))
                .collect()
        }),
        span: D,
    });
    let with_wholes = prop::collection::vec(
        prop_oneof![
            dim_expr().prop_map(|e| Tuple::Leaf(TileDim::Size(e))),
            Just(Tuple::Leaf(TileDim::Whole(D)))
        ],
        1..4,
    )
    .prop_map(|dims| Layout {
        dims,
        strides: None,
        span: D,
    });
    prop_oneof![plain, with_wholes]
}

fn cond() -> BoxedStrategy<Cond> {
    cond_unboxed().boxed()
}

fn cond_unboxed() -> impl Strategy<Value = Cond> {
    let cmp = prop_oneof![
        Just(CompareOp::Eq),
        Just(CompareOp::Ne),
        Just(CompareOp::Lt),
        Just(CompareOp::Le),
        Just(CompareOp::Gt),
        Just(CompareOp::Ge)
    ];
    let leaf = (cmp, int_expr(), int_expr()).prop_map(|(op, a, b)| Cond {
        kind: CondKind::Compare(op, a, b),
        span: D,
    });
    leaf.prop_recursive(3, 8, 2, |inner| {
        (any::<bool>(), inner.clone(), inner).prop_map(|(and, a, b)| Cond {
            kind: if and {
                CondKind::And(Box::new(a), Box::new(b))
            } else {
                CondKind::Or(Box::new(a), Box::new(b))
            },
            span: D,
        })
    })
}

fn coord() -> BoxedStrategy<Coord> {
    coord_unboxed().boxed()
}

fn coord_unboxed() -> impl Strategy<Value = Coord> {
    let leaf = prop_oneof![int_expr().prop_map(CoordKind::Int), Just(CoordKind::Keep),]
        .prop_map(|kind| Coord { kind, span: D });
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop::collection::vec(inner, 2..4).prop_map(|items| Coord {
            kind: CoordKind::Tuple(items),
            span: D,
        })
    })
}

fn tile_arg() -> BoxedStrategy<TileArg> {
    tile_arg_unboxed().boxed()
}

fn tile_arg_unboxed() -> impl Strategy<Value = TileArg> {
    prop_oneof![
        tile_layout().prop_map(TileArg::Layout),
        int_expr().prop_map(TileArg::Size),
        Just(TileArg::Whole(D)),
    ]
}

/// An expression rooted at a tensor (`%`) or a group (`#`).
fn expr(rooted_at: char) -> impl Strategy<Value = Expr> {
    let root = sigil_text().prop_map(move |text| Expr {
        kind: if rooted_at == '%' {
            ExprKind::Tensor(name(&text))
        } else {
            ExprKind::Group(name(&text))
        },
        span: D,
    });
    let root = if rooted_at == '%' {
        prop_oneof![4 => root, 1 => Just(Expr { kind: ExprKind::Allocate, span: D })].boxed()
    } else {
        root.boxed()
    };
    root.prop_recursive(3, 6, 1, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::collection::vec(tile_arg(), 1..3),
                any::<bool>()
            )
                .prop_map(|(b, args, partial)| {
                    let tiling = if partial {
                        Tiling::Partial
                    } else {
                        Tiling::Exact
                    };
                    ExprKind::Tile(Box::new(b), args, tiling)
                }),
            (inner.clone(), prop::option::of(int_expr()), layout())
                .prop_map(|(b, d, l)| ExprKind::Reshape(Box::new(b), d, l)),
            (inner.clone(), int_expr(), int_expr()).prop_map(|(b, i, n)| ExprKind::Broadcast(
                Box::new(b),
                i,
                n
            )),
            inner.clone().prop_map(|b| ExprKind::Scalar(Box::new(b))),
            inner.clone().prop_map(|b| ExprKind::Indices(Box::new(b))),
            (inner, prop::collection::vec(coord(), 1..4))
                .prop_map(|(b, c)| ExprKind::Index(Box::new(b), c)),
        ]
        .prop_map(|kind| Expr { kind, span: D })
    })
}

fn tensor_expr() -> BoxedStrategy<Expr> {
    tensor_expr_unboxed().boxed()
}

fn tensor_expr_unboxed() -> impl Strategy<Value = Expr> {
    // A spec's first output starts the statement, so it is a tensor.
    expr('%').prop_filter("rooted at a name", |e| {
        !e.to_string().starts_with("Allocate")
    })
}

fn tensor_type() -> BoxedStrategy<TensorType> {
    tensor_type_unboxed().boxed()
}

fn tensor_type_unboxed() -> impl Strategy<Value = TensorType> {
    let scalar = prop::sample::select(SCALAR_NAMES.iter().map(|(_, s)| *s).collect::<Vec<_>>());
    let memory = prop::sample::select(MEMORY_NAMES.iter().map(|(_, m)| *m).collect::<Vec<_>>());
    let swizzle = prop::option::of((int_expr(), int_expr(), int_expr()).prop_map(
        |(bits, base, shift)| Swizzle {
            bits,
            base,
            shift,
            span: D,
        },
    ));
    let choice = prop_oneof![
        scalar.clone().prop_map(ScalarChoice::Named),
        (cond(), scalar.clone(), scalar).prop_map(|(cond, yes, no)| ScalarChoice::Select(
            Box::new(cond),
            Box::new(ScalarChoice::Named(yes)),
            Box::new(ScalarChoice::Named(no))
        )),
    ];
    (
        prop::collection::vec(layout(), 1..3),
        choice,
        memory,
        swizzle,
    )
        .prop_map(|(levels, scalar, memory, swizzle)| TensorType {
            levels,
            scalar,
            memory,
            swizzle,
            span: D,
        })
}

fn group_type() -> BoxedStrategy<GroupType> {
    group_type_unboxed().boxed()
}

fn group_type_unboxed() -> impl Strategy<Value = GroupType> {
    (prop::collection::vec(layout(), 1..3), any::<bool>()).prop_map(|(levels, thread)| GroupType {
        levels,
        kind: if thread {
            GroupKind::Thread
        } else {
            GroupKind::Block
        },
        span: D,
    })
}

fn pattern() -> BoxedStrategy<IndexPattern> {
    pattern_unboxed().boxed()
}

fn pattern_unboxed() -> impl Strategy<Value = IndexPattern> {
    let leaf = prop_oneof![
        sigil_text().prop_map(|t| IndexPatternKind::Bind(name(&t))),
        Just(IndexPatternKind::Ignore)
    ]
    .prop_map(|kind| IndexPattern { kind, span: D });
    leaf.prop_recursive(2, 6, 3, |inner| {
        prop::collection::vec(inner, 1..3).prop_map(|items| IndexPattern {
            kind: IndexPatternKind::Tuple(items),
            span: D,
        })
    })
}

fn spec_kind() -> BoxedStrategy<SpecKind> {
    spec_kind_unboxed().boxed()
}

fn spec_kind_unboxed() -> impl Strategy<Value = SpecKind> {
    prop_oneof![
        (any::<bool>(), any::<bool>()).prop_map(|(asynchronous, masked)| SpecKind::Move {
            asynchronous,
            masked,
            tma: false,
            add: false
        }),
        // `Move<add>` combines with `masked` only.
        any::<bool>().prop_map(|masked| SpecKind::Move {
            asynchronous: false,
            masked,
            tma: false,
            add: true
        }),
        // `Move<tma>` takes no other flag.
        Just(SpecKind::Move {
            asynchronous: false,
            masked: false,
            tma: true,
            add: false
        }),
        // One flag at most: `MatMul`, `MatMul<overwrite>`, `MatMul<async>`.
        prop_oneof![
            Just((false, false)),
            Just((true, false)),
            Just((false, true))
        ]
        .prop_map(|(overwrite, asynchronous)| SpecKind::MatMul {
            overwrite,
            asynchronous,
        }),
        prop::sample::select(UnaryOp::ALL.iter().map(|(_, op)| *op).collect::<Vec<_>>())
            .prop_map(SpecKind::UnaryPointwise),
        prop::sample::select(BinaryOp::ALL.iter().map(|(_, op)| *op).collect::<Vec<_>>())
            .prop_map(SpecKind::BinaryPointwise),
        prop::sample::select(TernaryOp::ALL.iter().map(|(_, op)| *op).collect::<Vec<_>>())
            .prop_map(SpecKind::TernaryPointwise),
        prop::sample::select(CompareOp::ALL.iter().map(|(_, op)| *op).collect::<Vec<_>>())
            .prop_map(SpecKind::Select),
        (any::<bool>(), prop::collection::vec(int_expr(), 0..3)).prop_map(|(add, axes)| {
            SpecKind::Reduction(if add { ReduceOp::Add } else { ReduceOp::Max }, axes)
        }),
        int_expr().prop_map(|mask| SpecKind::Shfl(ShflMode::Bfly, mask)),
        prop_oneof![
            any::<f64>().prop_filter("finite", |v| v.is_finite()),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(0.0),
            Just(-1.5)
        ]
        .prop_map(|value| SpecKind::Init(InitValue::Number(value))),
        int_expr().prop_map(|value| SpecKind::Init(InitValue::Constant(value))),
        Just(SpecKind::Generic),
    ]
}

fn block(inner: impl Strategy<Value = Stmt> + Clone) -> impl Strategy<Value = Block> {
    prop::collection::vec(inner, 0..3).prop_map(|stmts| Block { stmts, span: D })
}

fn simple_stmt() -> BoxedStrategy<StmtKind> {
    simple_stmt_unboxed().boxed()
}

fn simple_stmt_unboxed() -> impl Strategy<Value = StmtKind> {
    prop_oneof![
        (
            sigil_text(),
            prop::option::of(tensor_type()),
            prop::option::of(expr('%'))
        )
            .prop_filter("typed or valued", |(_, t, v)| t.is_some() || v.is_some())
            .prop_map(|(n, ty, value)| StmtKind::Tensor(TensorDef {
                name: name(&n),
                ty,
                value
            })),
        (
            sigil_text(),
            prop::option::of(group_type()),
            prop::option::of(expr('#'))
        )
            .prop_filter("typed or valued", |(_, t, v)| t.is_some() || v.is_some())
            .prop_map(|(n, ty, value)| StmtKind::Group(GroupDef {
                name: name(&n),
                ty,
                value
            })),
        (prop::collection::vec(pattern(), 1..3), expr('#')).prop_map(|(patterns, g)| {
            StmtKind::Indices(IndicesDef {
                patterns,
                value: Expr {
                    span: D,
                    kind: ExprKind::Indices(Box::new(g)),
                },
            })
        }),
        prop::sample::select(BarrierScope::ALL.to_vec()).prop_map(StmtKind::Sync),
        prop::sample::select(AsyncQueue::ALL.to_vec()).prop_map(StmtKind::Commit),
        (prop::sample::select(AsyncQueue::ALL.to_vec()), int_expr())
            .prop_map(|(queue, count)| StmtKind::Wait(queue, count)),
        tensor_expr().prop_map(StmtKind::Arrive),
        (tensor_expr(), int_expr())
            .prop_map(|(barrier, parity)| StmtKind::WaitPhase(barrier, parity)),
        int_expr().prop_map(StmtKind::SetMaxRegisters),
    ]
}

fn stmt() -> BoxedStrategy<Stmt> {
    stmt_unboxed().boxed()
}

fn stmt_unboxed() -> impl Strategy<Value = Stmt> {
    let leaf = simple_stmt().prop_map(|kind| Stmt { kind, span: D });
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            (
                tensor_expr(),
                prop::collection::vec(expr('%'), 0..2),
                spec_kind(),
                expr('#'),
                expr('#'),
                prop::collection::vec(expr('%'), 0..3),
                prop::option::of(block(inner.clone()))
            )
                .prop_map(|(first, more, kind, blocks, threads, inputs, body)| {
                    let mut outputs = vec![first];
                    outputs.extend(more);
                    StmtKind::Spec(SpecStmt {
                        outputs,
                        kind,
                        kind_span: D,
                        launch: Some(LaunchGroups { blocks, threads }),
                        inputs,
                        body,
                    })
                }),
            (
                word(),
                int_expr(),
                int_expr(),
                int_expr(),
                block(inner.clone())
            )
                .prop_map(|(v, init, bound, step, body)| StmtKind::For(ForLoop {
                    var: name(&v),
                    init,
                    bound,
                    step,
                    body
                })),
            (
                prop::collection::vec((cond(), block(inner.clone())), 1..3),
                prop::option::of(block(inner))
            )
                .prop_map(|(branches, otherwise)| StmtKind::If(IfStmt {
                    branches,
                    otherwise
                })),
        ]
        .prop_map(|kind| Stmt { kind, span: D })
    })
}

fn const_def() -> BoxedStrategy<Item> {
    const_def_unboxed().boxed()
}

fn const_def_unboxed() -> impl Strategy<Value = Item> {
    let tune = prop::option::of(prop::collection::btree_set(0i64..1 << 20, 1..5));
    (word(), int_expr(), tune).prop_map(|(n, value, tune)| {
        Item::Const(ConstDef {
            name: name(&n),
            value,
            tune: tune.map(|values| TuneValues {
                values: values.into_iter().map(|v| (v, D)).collect(),
                span: D,
            }),
            span: D,
        })
    })
}

/// Any subset of the kernel attributes, in any order, each with a value.
fn kernel_attributes() -> BoxedStrategy<Vec<KernelAttribute>> {
    let kinds: Vec<KernelAttributeKind> = KernelAttributeKind::ALL
        .iter()
        .map(|(_, kind)| *kind)
        .collect();
    let count = kinds.len();
    (
        Just(kinds).prop_shuffle(),
        0..=count,
        prop::collection::vec(int_expr(), count),
    )
        .prop_map(|(kinds, taken, values)| {
            kinds
                .into_iter()
                .take(taken)
                .zip(values)
                .map(|(kind, value)| KernelAttribute {
                    kind,
                    name: D,
                    value,
                    span: D,
                })
                .collect()
        })
        .boxed()
}

fn file() -> BoxedStrategy<File> {
    file_unboxed().boxed()
}

fn file_unboxed() -> impl Strategy<Value = File> {
    let kernel = (word(), kernel_attributes(), block(stmt())).prop_map(|(n, attributes, body)| {
        Item::Kernel(Kernel {
            name: name(&n),
            implicit: false,
            attributes,
            body,
            span: D,
        })
    });
    let variant = (
        word(),
        word(),
        prop::collection::btree_map(word(), int_expr(), 1..3),
    )
        .prop_map(|(n, base, settings)| {
            Item::Variant(KernelVariant {
                name: name(&n),
                base: name(&base),
                overrides: settings
                    .into_iter()
                    .map(|(constant, value)| ConstDef {
                        name: name(&constant),
                        value,
                        tune: None,
                        span: D,
                    })
                    .collect(),
                span: D,
            })
        });
    let explicit = prop::collection::vec(prop_oneof![const_def(), kernel, variant], 0..4);
    let implicit = (
        prop::collection::vec(const_def(), 0..2),
        prop::collection::vec(stmt(), 1..4),
    )
        .prop_map(|(mut items, stmts)| {
            items.push(Item::Kernel(Kernel {
                name: name("gen"),
                implicit: true,
                attributes: Vec::new(),
                body: Block { stmts, span: D },
                span: D,
            }));
            items
        });
    prop_oneof![explicit, implicit].prop_map(|items| File { items, span: D })
}

fn reparse(text: &str) -> File {
    match parse_file("gen.gph", text) {
        Ok(file) => strip_spans(file),
        Err(diagnostics) => panic!(
            "printed text does not parse:\n{text}\n{}",
            diagnostics
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn printed_files_parse_back_to_the_same_tree(tree in file()) {
        let text = print_file(&tree);
        let parsed = reparse(&text);
        prop_assert_eq!(&parsed, &tree, "text:\n{}", text);
        prop_assert_eq!(print_file(&parsed), text);
    }
}

fn example_paths() -> Vec<std::path::PathBuf> {
    let mut paths: Vec<_> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples"))
        .expect("examples/ exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "gph"))
        .collect();
    paths.sort();
    paths
}

#[test]
fn every_example_round_trips() {
    let paths = example_paths();
    assert!(paths.len() >= 2, "the paper's two listings are there");
    for path in paths {
        let src = std::fs::read_to_string(&path).expect("readable example");
        let name = path.display().to_string();
        let tree = strip_spans(parse_file(&name, &src).unwrap_or_else(|d| panic!("{name}: {d:?}")));
        let text = print_file(&tree);
        let again = strip_spans(
            parse_file(&name, &text).unwrap_or_else(|d| panic!("{name} printed: {d:?}")),
        );
        assert_eq!(again, tree, "{name}");
        assert_eq!(
            print_file(&again),
            text,
            "{name}: printing is a fixed point"
        );
    }
}

/// The listings also parse as the paper writes them: bare statements, one
/// kernel named after the file. (Only a one-kernel file without kernel
/// attributes or variants can be written so.)
#[test]
fn examples_parse_as_bare_statements_too() {
    let mut single_kernel_files = 0;
    for path in example_paths() {
        let src = std::fs::read_to_string(&path).expect("readable example");
        let wrapped = strip_spans(parse_file("x.gph", &src).expect("parses"));
        let kernels = wrapped
            .items
            .iter()
            .filter(|item| matches!(item, Item::Kernel(_) | Item::Variant(_)));
        if kernels.count() != 1 {
            continue;
        }
        single_kernel_files += 1;
        let Some(Item::Kernel(kernel)) = wrapped.items.last() else {
            panic!("a kernel")
        };
        if !kernel.attributes.is_empty() {
            continue;
        }
        let header = format!("\nkernel {} {{", kernel.name.text);
        let open = src.find(&header).expect("kernel header at a line start") + 1;
        let body_start = src[open..].find('{').expect("brace") + open + 1;
        let body_end = src.rfind('}').expect("closing brace");
        let bare = format!("{}\n{}", &src[..open], &src[body_start..body_end]);
        let file =
            strip_spans(parse_file("listing.gph", &bare).unwrap_or_else(|d| panic!("{d:?}")));
        let Some(Item::Kernel(implicit)) = file.items.last() else {
            panic!("a kernel")
        };
        assert!(implicit.implicit);
        assert_eq!(implicit.name.text, "listing");
        assert_eq!(implicit.body.stmts, kernel.body.stmts);
    }
    assert!(
        single_kernel_files >= 2,
        "the two paper listings are one-kernel files"
    );
}

#[test]
fn move_flags_print_in_one_order_and_add_combines_with_masked_only() {
    let spec = |flags: &str| format!("%o <- Move<{flags}><<<#b, #t>>>(%i)\n");
    for (written, printed) in [
        ("add", "Move<add>"),
        ("add, masked", "Move<masked, add>"),
        ("masked, add", "Move<masked, add>"),
    ] {
        let tree = strip_spans(parse_file("m.gph", &spec(written)).expect("parses"));
        let text = print_file(&tree);
        assert!(text.contains(printed), "{written}: {text}");
        let again = strip_spans(parse_file("m.gph", &text).expect("reparses"));
        assert_eq!(again, tree, "{written}");
    }
    for refused in ["async, add", "add, tma", "add, add"] {
        let errors = parse_file("m.gph", &spec(refused)).expect_err(refused);
        assert_eq!(errors[0].code, "E0110", "{refused}");
    }
}
