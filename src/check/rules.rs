//! Stage 2, check: the rules of each spec kind (docs/language.md §5) — the
//! number of outputs and inputs, element counts of elementwise kinds,
//! `MatMul`'s M×K·K×N→M×N, `Reduction`'s axes, `Shfl`'s warp, `Move<async>`'s
//! and `Move<add>`'s memories, and which kinds must be decomposed.
//!
//! Element counts are compared over the lanes of the executing group; how
//! each operand counts there (per lane, shared, or collectively) is
//! [`super::lanes`].

use crate::diag::{Diagnostic, Span};
use crate::expr::Expr;
use crate::ir::{InitValue, Level, Memory, Scalar, SpecKind, View};
use crate::syntax::ast;

use super::codes;
use super::env::{Checker, GroupVal};
use super::lanes::{Lanes, UnitCount};
use super::symbolic::{constant_layout, levels_size, modes, normalize, same, size};

/// `(outputs, inputs)` a kind takes; `None` for any number.
fn arity(kind: &SpecKind) -> Option<(usize, usize)> {
    match kind {
        SpecKind::Move { tma: true, .. } => Some((1, 2)),
        SpecKind::Move { .. }
        | SpecKind::Unary(_)
        | SpecKind::Reduction { .. }
        | SpecKind::Shfl { .. } => Some((1, 1)),
        SpecKind::MatMul { .. } | SpecKind::Binary(_) => Some((1, 2)),
        SpecKind::Ternary(_) => Some((1, 3)),
        SpecKind::Select(_) => Some((1, 4)),
        SpecKind::Init { .. } => Some((1, 0)),
        SpecKind::Generic => None,
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// The example shape of a spec of each kind, for help lines.
fn example(kind: &SpecKind) -> &'static str {
    match kind {
        SpecKind::Move { tma: true, .. } => "%tile <- Move<tma><<<#b, #t>>>(%in, %bar[s])",
        SpecKind::Move { .. } => "%out <- Move<<<#b, #t>>>(%in)",
        SpecKind::MatMul { .. } => "%c <- MatMul<<<#b, #t>>>(%a, %b)",
        SpecKind::Unary(_) => "%y <- UnaryPointwise<exp><<<#b, #t>>>(%x)",
        SpecKind::Binary(_) => "%z <- BinaryPointwise<add><<<#b, #t>>>(%x, %y)",
        SpecKind::Ternary(_) => "%w <- TernaryPointwise<fma><<<#b, #t>>>(%x, %y, %z)",
        SpecKind::Select(_) => "%w <- Select<lt><<<#b, #t>>>(%a, %b, %x, %y)",
        SpecKind::Reduction { .. } => "%y <- Reduction<add, [1]><<<#b, #t>>>(%x)",
        SpecKind::Shfl { .. } => "%y <- Shfl<bfly, 16><<<#b, #warp>>>(%x)",
        SpecKind::Init { .. } => "%x <- Init<0.0><<<#b, #t>>>()",
        SpecKind::Generic => "%out <- Spec<<<#b, #t>>>(%in) { … }",
    }
}

/// A tensor's logical extents per mode: the product over its levels of
/// that mode's size, when every level has the same rank (`[2,2].[8,8]` is
/// 16×16); a scalar has none.
fn logical_extents(levels: &[Level]) -> Option<Vec<Expr>> {
    let per_level: Vec<Vec<Expr>> = levels
        .iter()
        .map(|level| modes(level).iter().map(|(shape, _)| size(shape)).collect())
        .collect();
    let rank = per_level.first()?.len();
    if per_level.iter().any(|extents| extents.len() != rank) {
        return None;
    }
    Some(
        (0..rank)
            .map(|i| {
                per_level
                    .iter()
                    .fold(Expr::Const(1), |acc, e| Expr::mul(acc, e[i].clone()))
            })
            .collect(),
    )
}

/// `(rows, columns, batch)` of a matrix operand: a scalar is 1×1, a
/// third mode is a batch of matrices (batch 1 without one).
fn matrix(levels: &[Level]) -> Option<(Expr, Expr, Expr)> {
    match logical_extents(levels)?.as_slice() {
        [] => Some((Expr::Const(1), Expr::Const(1), Expr::Const(1))),
        [rows, columns] => Some((rows.clone(), columns.clone(), Expr::Const(1))),
        [rows, columns, batch] => Some((rows.clone(), columns.clone(), batch.clone())),
        [_] | [_, _, _, _, ..] => None,
    }
}

impl Checker {
    /// Checks the rules of `kind` on a spec whose operands and groups were
    /// all computed.
    pub(crate) fn spec_rules(
        &mut self,
        spec: &ast::SpecStmt,
        kind: &SpecKind,
        outputs: &[View],
        inputs: &[View],
        threads: &GroupVal,
    ) {
        let wrong = arity(kind).filter(|&(outs, ins)| outputs.len() != outs || inputs.len() != ins);
        if let Some((outs, ins)) = wrong {
            self.report(
                Diagnostic::error(
                    codes::ARITY,
                    format!(
                        "`{}` takes {} and {}",
                        spec.kind.name(),
                        plural(outs, "output"),
                        plural(ins, "input")
                    ),
                    spec.kind_span,
                )
                .with_label(format!(
                    "given {} and {}",
                    plural(outputs.len(), "output"),
                    plural(inputs.len(), "input")
                ))
                .with_help(format!("write it as `{}`", example(kind))),
            );
            return;
        }
        // A contract's steps have no body and are no instructions: they are
        // checked as the whole-tensor specs a decomposed spec states.
        let atomic = spec.body.is_none() && !self.in_contract;
        if atomic {
            let operands: Vec<View> = outputs.iter().chain(inputs).cloned().collect();
            self.check_reach(kind, spec.kind_span, &operands);
        }
        if !atomic
            && matches!(
                kind,
                SpecKind::MatMul {
                    asynchronous: true,
                    ..
                }
            )
        {
            self.report(
                Diagnostic::error(
                    codes::ASYNC_DECOMPOSED,
                    "`MatMul<async>` with a body",
                    spec.kind_span,
                )
                .with_label("a decomposed spec has finished when its body ends")
                .with_note("`MatMul<async>` is one warpgroup matrix multiply (`wgmma`), issued now and waited for with `mma_commit` and `mma_wait(N)`")
                .with_help("drop `<async>` here, or write the spec without a body and executed by a warpgroup"),
            );
        }
        if atomic
            && matches!(
                kind,
                SpecKind::Generic
                    | SpecKind::MatMul {
                        accumulate: false,
                        ..
                    }
            )
        {
            self.report(
                Diagnostic::error(
                    codes::MUST_DECOMPOSE,
                    format!("`{}` without a body", spec.kind.name()),
                    spec.kind_span,
                )
                .with_label("no instruction computes this kind on its own")
                .with_note("a generic `Spec` and `MatMul<overwrite>` state a contract; their body is the implementation")
                .with_help("give the spec a body `{ … }`, or use a built-in kind that an instruction implements"),
            );
        }
        self.broadcast_outputs(kind, outputs);
        self.barrier_operands(kind, outputs, inputs);
        let lanes = self.lanes(threads);
        match kind {
            SpecKind::Move { tma: true, .. } => {
                self.bulk_copy_rules(spec, &outputs[0], inputs);
            }
            SpecKind::Move { asynchronous, .. } => {
                if *asynchronous {
                    self.async_memories(&outputs[0], &inputs[0], spec.kind_span);
                }
                self.equal_counts(spec, kind, outputs, inputs, lanes.as_ref());
            }
            SpecKind::Unary(_)
            | SpecKind::Binary(_)
            | SpecKind::Ternary(_)
            | SpecKind::Select(_) => {
                self.equal_counts(spec, kind, outputs, inputs, lanes.as_ref());
            }
            SpecKind::Shfl { mask } => {
                self.shfl(spec, *mask, &outputs[0], &inputs[0], threads);
                self.equal_counts(spec, kind, outputs, inputs, lanes.as_ref());
            }
            SpecKind::MatMul { .. } => {
                let any_per_lane = lanes.as_ref().is_none_or(|lanes| {
                    outputs
                        .iter()
                        .chain(inputs)
                        .any(|v| self.per_lane(v, lanes))
                });
                if !atomic && !any_per_lane {
                    self.matmul_shapes(&outputs[0], &inputs[0], &inputs[1]);
                }
            }
            SpecKind::Reduction { axes, .. } => {
                self.reduction(spec, axes, &outputs[0], &inputs[0], lanes.as_ref());
                self.block_reduction_group(spec, threads, lanes.as_ref());
            }
            SpecKind::Init {
                value: InitValue::Number(value),
            } => self.init_value(*value, &outputs[0], spec.kind_span),
            SpecKind::Init {
                value: InitValue::Index(axis),
            } => self.init_index(*axis, &outputs[0], spec.kind_span),
            SpecKind::Generic => {}
        }
    }

    /// An `Init` value must be one the output's elements hold as written:
    /// a finite value past the type's largest would become infinity (or
    /// wrap), a fraction in an integer would be cut. `inf` is meant.
    /// `Init<index(i)>`: mode `i` must be a logical mode of the output.
    fn init_index(&mut self, axis: u32, output: &View, span: Span) {
        let rank = logical_extents(&output.ty.levels).map(|extents| extents.len());
        if rank.is_some_and(|rank| (axis as usize) < rank) {
            return;
        }
        let what = match rank {
            Some(rank) => format!("an output with {rank} modes"),
            None => "an output whose levels have different ranks".to_string(),
        };
        self.report(
            Diagnostic::error(
                codes::INIT_OUT_OF_RANGE,
                format!("`Init<index({axis})>` names mode {axis} of {what}"),
                span,
            )
            .with_label("each element gets its coordinate along this mode")
            .with_help("name a mode of the output, counted from 0"),
        );
    }

    fn init_value(&mut self, value: f64, output: &View, span: Span) {
        let scalar = output.ty.scalar;
        let name = scalar.name();
        let (low, high, integral) = match scalar {
            Scalar::Fp16 => (-65504.0, 65504.0, false),
            Scalar::Bf16 => (-3.389_531_389_251_535e38, 3.389_531_389_251_535e38, false),
            Scalar::Fp32 => (f64::from(f32::MIN), f64::from(f32::MAX), false),
            Scalar::I32 => (f64::from(i32::MIN), f64::from(i32::MAX), true),
            Scalar::U32 => (0.0, f64::from(u32::MAX), true),
            // `Init<count>` of a barrier: an arrival count (1 to 2^20 - 1, `mbarrier.init`).
            Scalar::Mbarrier => (1.0, f64::from((1u32 << 20) - 1), true),
        };
        let fits = if value.is_infinite() {
            !integral
        } else {
            (low..=high).contains(&value) && (!integral || value.fract() == 0.0)
        };
        if fits {
            return;
        }
        self.report(
            Diagnostic::error(
                codes::INIT_OUT_OF_RANGE,
                format!("`Init<{value}>` does not fit the output's {name} elements"),
                span,
            )
            .with_label(if integral {
                format!("{name} holds the integers {low} to {high}")
            } else {
                format!("finite {name} values lie within ±{high}")
            })
            .with_help("write a value the type holds, `inf` for infinity, or a wider element type"),
        );
    }

    fn async_memories(&mut self, output: &View, input: &View, span: Span) {
        if input.ty.memory == Memory::Global && output.ty.memory == Memory::Shared {
            return;
        }
        self.report(
            Diagnostic::error(
                codes::ASYNC_MOVE_MEMORY,
                format!(
                    "`Move<async>` from {} to {}",
                    input.ty.memory.name(),
                    output.ty.memory.name()
                ),
                span,
            )
            .with_label("asynchronous copies go from global to shared memory only")
            .with_secondary(input.span, format!("in {}", input.ty.memory.name()))
            .with_secondary(output.span, format!("in {}", output.ty.memory.name()))
            .with_note(
                "`Move<async>` becomes `cp.async`, which reads global and writes shared memory",
            )
            .with_help("use a plain `Move` here"),
        );
    }

    /// `Move<add>`: one accumulating store per element
    /// (`red.global.add.f32`) — an atomic spec inside a decomposition,
    /// whose output is global memory of fp32 elements.
    pub(crate) fn add_move_rules(&mut self, spec: &ast::SpecStmt, output: &View, outermost: bool) {
        let (message, span, label, help) = if outermost {
            (
                "`Move<add>` as the outermost spec".to_string(),
                spec.kind_span,
                "an accumulating store is one instruction of a body".to_string(),
                "state what the kernel computes (an accumulating `MatMul`), and add the partial results with `Move<add>` inside its body",
            )
        } else if let Some(body) = &spec.body {
            (
                "`Move<add>` with a body".to_string(),
                body.span,
                "an accumulating store is one instruction per element".to_string(),
                "drop the body: `Move<add>` is atomic",
            )
        } else if output.ty.memory != Memory::Global {
            (
                format!("`Move<add>` into {}", output.ty.memory.name()),
                output.span,
                format!("in {}", output.ty.memory.name()),
                "add into registers or shared memory with `BinaryPointwise<add>`; `Move<add>` is for partial sums that several blocks add into one global tensor",
            )
        } else if output.ty.scalar != Scalar::Fp32 {
            (
                format!("`Move<add>` into {} elements", output.ty.scalar.name()),
                output.span,
                format!("{} elements", output.ty.scalar.name()),
                "add into an fp32 tensor; round it to 16 bits afterwards if needed",
            )
        } else {
            return;
        };
        self.report(
            Diagnostic::error(codes::ADD_MOVE, message, span)
                .with_label(label)
                .with_note(
                    "`Move<add>` adds each element into global memory with one atomic \
                     `red.global.add.f32`, so that several blocks may add into one element",
                )
                .with_help(help),
        );
    }

    /// Elementwise kinds: every operand holds as many elements. The
    /// diagnostic names both operands' shapes and, where a `.broadcast` of
    /// the smaller input gives it the other's shape, suggests that call.
    fn equal_counts(
        &mut self,
        spec: &ast::SpecStmt,
        kind: &SpecKind,
        outputs: &[View],
        inputs: &[View],
        lanes: Option<&Lanes>,
    ) {
        let Some(lanes) = lanes else {
            return;
        };
        let operands: Vec<&View> = outputs.iter().chain(inputs).collect();
        let written: Vec<&ast::Expr> = spec.outputs.iter().chain(&spec.inputs).collect();
        let Some(first) = operands.first() else {
            return;
        };
        if is_collective(kind, &operands, lanes) {
            let counts: Vec<UnitCount> = operands
                .iter()
                .map(|view| self.unit_count(view, lanes))
                .collect();
            // Registers and shared views count as in any spec; only a
            // memory view that moves with the lane counts differently.
            if counts.iter().any(|count| count.spread.is_memory_per_lane()) {
                self.collective_counts(kind, &operands, &counts, lanes);
                return;
            }
        }
        let expected = self.lane_count(first, lanes);
        for (index, other) in operands.iter().enumerate().skip(1) {
            let count = self.lane_count(other, lanes);
            if same(&count, &expected) {
                continue;
            }
            let scaled = self.per_lane(first, lanes) != self.per_lane(other, lanes);
            // The first operand is an input only in a spec without outputs.
            let sides = [
                (*first, written[0], outputs.is_empty()),
                (*other, written[index], index >= outputs.len()),
            ];
            let help = if scaled {
                None
            } else {
                self.broadcast_help(sides[0], sides[1].0)
                    .or_else(|| self.broadcast_help(sides[1], sides[0].0))
            };
            let mut diagnostic = Diagnostic::error(
                codes::SIZE_MISMATCH,
                format!(
                    "the operands of `{}` hold different numbers of elements: `{}` is {} but `{}` is {}",
                    kind_name(kind),
                    written[0],
                    self.shape_text(&first.ty.levels),
                    written[index],
                    self.shape_text(&other.ty.levels),
                ),
                other.span,
            )
            .with_label(self.count_label(other, lanes, scaled))
            .with_secondary(first.span, self.count_label(first, lanes, scaled))
            .with_help(help.unwrap_or_else(|| {
                "tile or index the operands so that each holds the same number of elements"
                    .to_string()
            }));
            if scaled {
                diagnostic = diagnostic.with_note(format!(
                    "per-thread operands count once per thread of the group's innermost level ({} threads)",
                    lanes.len()
                ));
            }
            self.report(diagnostic);
            return;
        }
    }

    /// A collective move: every operand counted over the whole instance
    /// (`Checker::unit_count`), and all the totals equal.
    fn collective_counts(
        &mut self,
        kind: &SpecKind,
        operands: &[&View],
        counts: &[UnitCount],
        lanes: &Lanes,
    ) {
        let Some(differs) = (1..counts.len()).find(|&i| !same(&counts[i].total, &counts[0].total))
        else {
            return;
        };
        let (first, other) = (operands[0], operands[differs]);
        let diagnostic = Diagnostic::error(
            codes::SIZE_MISMATCH,
            format!(
                "the operands of `{}` hold different numbers of elements",
                kind_name(kind)
            ),
            other.span,
        )
        .with_label(self.unit_label(other, &counts[differs], lanes))
        .with_secondary(first.span, self.unit_label(first, &counts[0], lanes))
        .with_help(
            "tile or index the operands so that the threads together hold as many elements \
             on each side; threads whose addresses an instruction ignores may name rows \
             that other threads name",
        );
        let diagnostic = self.unit_notes(diagnostic, &[&counts[0], &counts[differs]], lanes);
        self.report(diagnostic);
    }

    fn matmul_shapes(&mut self, c: &View, a: &View, b: &View) {
        let operands = [("C", c), ("A", a), ("B", b)];
        let mut shapes = Vec::new();
        for (name, view) in operands {
            match matrix(&view.ty.levels) {
                Some(shape) => shapes.push(shape),
                None => {
                    let text = self.tensor_text(&view.ty);
                    self.report(
                        Diagnostic::error(
                            codes::MATMUL_SHAPES,
                            format!("the `MatMul` operand {name} is not a matrix"),
                            view.span,
                        )
                        .with_label(format!("of type {text}"))
                        .with_note("a MatMul operand has two modes at every level (rows, columns), three for a batch of matrices (rows, columns, batch), or is a scalar")
                        .with_help("tile or index the operand down to rows × columns"),
                    );
                    return;
                }
            }
        }
        let [(m_c, n_c, l_c), (m_a, k_a, l_a), (k_b, n_b, l_b)] =
            [&shapes[0], &shapes[1], &shapes[2]];
        let checks = [
            (same(m_a, m_c), "A and C must have as many rows (M)"),
            (same(k_a, k_b), "A's columns and B's rows must agree (K)"),
            (same(n_b, n_c), "B and C must have as many columns (N)"),
            (
                same(l_a, l_c) && same(l_b, l_c),
                "A, B and C must hold as many matrices (their third mode, the batch)",
            ),
        ];
        if let Some((_, why)) = checks.iter().find(|(ok, _)| !ok) {
            let show = |(rows, columns, batch): &(Expr, Expr, Expr)| match batch.as_const() {
                Some(1) => format!("{}×{}", self.expr_text(rows), self.expr_text(columns)),
                _ => format!(
                    "{}×{}×{}",
                    self.expr_text(rows),
                    self.expr_text(columns),
                    self.expr_text(batch)
                ),
            };
            let (tc, ta, tb) = (show(&shapes[0]), show(&shapes[1]), show(&shapes[2]));
            self.report(
                Diagnostic::error(
                    codes::MATMUL_SHAPES,
                    format!("`MatMul` of {ta} by {tb} into {tc}"),
                    a.span.join(b.span),
                )
                .with_label(why.to_string())
                .with_secondary(c.span, format!("C is {tc}"))
                .with_note("C += A·B needs A: M×K, B: K×N, C: M×N")
                .with_help("tile A, B and C so that their extents agree"),
            );
        }
    }

    fn reduction(
        &mut self,
        spec: &ast::SpecStmt,
        axes: &[u32],
        y: &View,
        x: &View,
        lanes: Option<&Lanes>,
    ) {
        let Some(extents) = logical_extents(&x.ty.levels) else {
            let text = self.tensor_text(&x.ty);
            self.report(
                Diagnostic::error(codes::REDUCTION_AXES, "the input's levels have different ranks", x.span)
                    .with_label(format!("of type {text}"))
                    .with_note("axes name modes; a mode exists across levels only when every level has the same rank")
                    .with_help("index the input down to levels of one rank"),
            );
            return;
        };
        let mut seen = Vec::new();
        for &axis in axes {
            if axis as usize >= extents.len() || seen.contains(&axis) {
                let problem = if seen.contains(&axis) {
                    format!("axis {axis} is listed twice")
                } else {
                    format!("axis {axis} of an input with {} modes", extents.len())
                };
                let text = self.tensor_text(&x.ty);
                self.report(
                    Diagnostic::error(codes::REDUCTION_AXES, problem, spec.kind_span)
                        .with_label("the axes of this reduction")
                        .with_secondary(x.span, format!("of type {text}"))
                        .with_help(format!(
                            "list distinct axes from 0 to {}",
                            extents.len().saturating_sub(1)
                        )),
                );
                return;
            }
            seen.push(axis);
        }
        let Some(lanes) = lanes else {
            return;
        };
        let kept = extents
            .iter()
            .enumerate()
            .filter(|(i, _)| !axes.contains(&(*i as u32)))
            .fold(Expr::Const(1), |acc, (_, e)| Expr::mul(acc, e.clone()));
        let scale = |per_lane: bool| if per_lane { lanes.len() as i64 } else { 1 };
        let expected = Expr::mul(kept.clone(), Expr::Const(scale(self.per_lane(x, lanes))));
        let found = self.lane_count(y, lanes);
        if !same(&expected, &found) {
            let scaled = self.per_lane(x, lanes) != self.per_lane(y, lanes);
            let shown = if scaled { &expected } else { &kept };
            let (expected_text, found_label) = (
                self.expr_text(&normalize(shown)),
                self.count_label(y, lanes, scaled),
            );
            self.report(
                Diagnostic::error(
                    codes::SIZE_MISMATCH,
                    format!("the output of this reduction must hold {expected_text} elements"),
                    y.span,
                )
                .with_label(found_label)
                .with_secondary(x.span, "the modes not reduced give the output's elements")
                .with_help("declare the output with the input's modes minus the reduced axes"),
            );
        }
    }

    fn shfl(&mut self, spec: &ast::SpecStmt, mask: u32, y: &View, x: &View, threads: &GroupVal) {
        if mask > 31 {
            self.report(
                Diagnostic::error(
                    codes::SHFL,
                    format!("butterfly mask {mask}"),
                    spec.kind_span,
                )
                .with_label("lanes are 0 to 31, so masks are too")
                .with_help("use a mask below 32, e.g. 16, 8, 4, 2, 1 for a reduction"),
            );
        }
        for view in [y, x] {
            if view.ty.memory != Memory::Registers {
                self.report(
                    Diagnostic::error(
                        codes::SHFL,
                        format!("`Shfl` on a tensor in {}", view.ty.memory.name()),
                        view.span,
                    )
                    .with_label("not registers")
                    .with_note("a shuffle exchanges registers between the lanes of a warp")
                    .with_help("move the data into registers (`.RF`) first"),
                );
            }
        }
        let warp = threads
            .ty
            .levels
            .last()
            .and_then(constant_layout)
            .filter(|lanes| lanes.size() == 32)
            .filter(|lanes| {
                let mut ids: Vec<i64> = lanes.offsets().collect();
                ids.sort_unstable();
                ids == (0..32).collect::<Vec<_>>()
            });
        let outer_aligned = threads.ty.levels[..threads.ty.levels.len().saturating_sub(1)]
            .iter()
            .flat_map(|level| level.stride.leaves())
            .all(|stride| stride.as_const().is_some_and(|d| d % 32 == 0));
        if warp.is_none() || !outer_aligned {
            let text = self.group_text(&threads.ty);
            self.report(
                Diagnostic::error(codes::SHFL, "`Shfl` needs a warp-sized group", spec.threads_span())
                    .with_label(format!("of type {text}"))
                    .with_note("the innermost level must be the 32 lanes of a hardware warp (ids 0 to 31 of each instance)")
                    .with_help("execute it with the warps of the block, e.g. `#t.tile(32)`"),
            );
        }
    }
}

/// Whether a spec is a collective move: a `Move` executed by more than one
/// lane whose operands hold different numbers of elements per thread (an
/// instruction such as `ldmatrix.x2` then defines which lane delivers what).
fn is_collective(kind: &SpecKind, operands: &[&View], lanes: &Lanes) -> bool {
    let is_move = match kind {
        SpecKind::Move { .. } => true,
        SpecKind::MatMul { .. }
        | SpecKind::Unary(_)
        | SpecKind::Binary(_)
        | SpecKind::Ternary(_)
        | SpecKind::Select(_)
        | SpecKind::Reduction { .. }
        | SpecKind::Shfl { .. }
        | SpecKind::Init { .. }
        | SpecKind::Generic => false,
    };
    let sizes: Vec<Expr> = operands
        .iter()
        .map(|view| levels_size(&view.ty.levels))
        .collect();
    is_move && lanes.len() > 1 && sizes.iter().any(|size| !same(size, &sizes[0]))
}

fn kind_name(kind: &SpecKind) -> &'static str {
    match kind {
        SpecKind::Move { .. } => "Move",
        SpecKind::MatMul { .. } => "MatMul",
        SpecKind::Unary(_) => "UnaryPointwise",
        SpecKind::Binary(_) => "BinaryPointwise",
        SpecKind::Ternary(_) => "TernaryPointwise",
        SpecKind::Select(_) => "Select",
        SpecKind::Reduction { .. } => "Reduction",
        SpecKind::Shfl { .. } => "Shfl",
        SpecKind::Init { .. } => "Init",
        SpecKind::Generic => "Spec",
    }
}
