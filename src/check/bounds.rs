//! Stage 2, check: partial tiles (docs/language.md, "Partial tiles"): the
//! bounds a view of `.tile_partial` carries through later tiles, indexing,
//! reshapes and broadcasts, and the rule that an atomic spec's operand
//! which may reach past them is masked (`Move<masked>`) or guarded.
//!
//! A bound is a second view of the same shape whose strides count the
//! coordinates of one tiled mode (`ir::Bound`). Every view operation is
//! linear in the strides, so the checker applies each operation to the
//! bound's view exactly as to the tensor's, silently (its diagnostics
//! would repeat the tensor's), and compares the shapes.

use crate::diag::{Diagnostic, Span};
use crate::expr::Expr;
use crate::ir::{Bound, Level, SpecKind, View};
use crate::syntax::ast::{self, Coord, IntExpr, TileArg, Tiling};

use super::codes;
use super::env::{Binding, Checked, Checker, Namespace, Poisoned};
use super::symbolic::{self, Sign};

impl Checker {
    /// `view.tile(args)` or `view.tile_partial(args)`: the tensor's levels
    /// tiled, its bounds followed, and a new bound for each mode whose last
    /// tile may reach past the mode's end.
    pub(super) fn tile_view(
        &mut self,
        view: View,
        args: &[TileArg],
        tiling: Tiling,
        span: Span,
    ) -> Checked<View> {
        let before = view.clone();
        let tiled = self.tile_levels(&view.ty.levels, args, span, tiling)?;
        let mut result = view;
        result.ty.levels = tiled.levels;
        result.span = span;
        result.bounds = self.follow_bounds(&before, &result, |checker, shadow| {
            let levels = checker.tile_levels(&shadow.ty.levels, args, span, tiling)?;
            Ok(with_levels(shadow, levels.levels, span))
        })?;
        for (mode, extent) in tiled.passed {
            let Some(start) = unit_coordinates(&before.ty.levels, mode) else {
                return Err(self.cannot_follow(span, "tile a hierarchical mode partially"));
            };
            let shadow = with_levels(before.clone(), start, span);
            let levels = self
                .silently(|checker| checker.tile_levels(&shadow.ty.levels, args, span, tiling))
                .filter(|levels| same_shapes(&levels.levels, &result.ty.levels))
                .ok_or_else(|| self.cannot_follow(span, "tile this mode partially"))?;
            result.bounds.push(Bound {
                extent,
                mode,
                origin: Expr::Const(0),
                levels: levels.levels,
            });
        }
        Ok(result)
    }

    /// `view[coords]`, its bounds' origins moved by the same coordinates.
    pub(super) fn index_view(&mut self, view: View, coords: &[Coord], span: Span) -> Checked<View> {
        let before = view.clone();
        let mut result = self.index_view_levels(view, coords, span)?;
        result.bounds = self.follow_bounds(&before, &result, |checker, shadow| {
            checker.index_view_levels(shadow, coords, span)
        })?;
        Ok(result)
    }

    /// `view.reshape(depth, layout)`, its bounds reshaped alike.
    pub(super) fn reshape_view(
        &mut self,
        view: View,
        depth: Option<&IntExpr>,
        layout: &ast::Layout,
        span: Span,
    ) -> Checked<View> {
        let before = view.clone();
        let levels = self.reshape_levels(&view.ty.levels, depth, layout)?;
        let result = with_levels(view, levels, span);
        let bounds = self.follow_bounds(&before, &result, |checker, shadow| {
            let levels = checker.reshape_levels(&shadow.ty.levels, depth, layout)?;
            Ok(with_levels(shadow, levels, span))
        })?;
        Ok(View { bounds, ..result })
    }

    /// `view.broadcast(position, extent)`; a broadcast mode adds nothing to
    /// any coordinate, so its bounds get the same stride-0 mode.
    pub(super) fn broadcast_view(
        &mut self,
        view: View,
        position: &IntExpr,
        extent: &IntExpr,
        span: Span,
    ) -> Checked<View> {
        let before = view.clone();
        let mut result = self.broadcast_view_levels(view, position, extent, span)?;
        result.bounds = self.follow_bounds(&before, &result, |checker, shadow| {
            checker.broadcast_view_levels(shadow, position, extent, span)
        })?;
        Ok(result)
    }

    /// The bounds of `before` carried to `after` by `op`, the operation
    /// that made `after` from `before`.
    fn follow_bounds(
        &mut self,
        before: &View,
        after: &View,
        op: impl Fn(&mut Checker, View) -> Checked<View>,
    ) -> Checked<Vec<Bound>> {
        let mut bounds = Vec::with_capacity(before.bounds.len());
        for bound in &before.bounds {
            let shadow = View {
                base: bound.origin.clone(),
                bounds: Vec::new(),
                ..with_levels(before.clone(), bound.levels.clone(), after.span)
            };
            let followed = self
                .silently(|checker| op(checker, shadow))
                .filter(|shadow| same_shapes(&shadow.ty.levels, &after.ty.levels))
                .ok_or_else(|| self.cannot_follow(after.span, "follow this operation"))?;
            bounds.push(Bound {
                extent: bound.extent.clone(),
                mode: bound.mode,
                origin: followed.base,
                levels: followed.ty.levels,
            });
        }
        Ok(bounds)
    }

    /// Runs `op` with its diagnostics and launch requirements dropped: the
    /// operation on a bound's view repeats the one on the tensor's.
    fn silently<T>(&mut self, op: impl FnOnce(&mut Checker) -> Checked<T>) -> Option<T> {
        let diagnostics = self.diags.len();
        let requirements = self.kernel.requirements.len();
        let result = op(self);
        self.diags.truncate(diagnostics);
        self.kernel.requirements.truncate(requirements);
        result.ok()
    }

    fn cannot_follow(&mut self, span: Span, what: &str) -> Poisoned {
        self.fail(
            Diagnostic::error(
                codes::SYMBOLIC_UNSUPPORTED,
                format!("cannot {what} on a view with partial tiles"),
                span,
            )
            .with_label("the view's bounds do not follow this operation")
            .with_note("a view of `.tile_partial` knows where its tensor ends only through tiles of flat modes, indexing, broadcasts and reshapes of constant levels")
            .with_help("partially tile flat modes, then tile and index the tiles"),
        )
    }

    /// An atomic spec's operands that may reach past a partial tile: each
    /// must be masked (`Move<masked>`) or guarded by an `if` that keeps its
    /// last coordinate below the mode's extent (E0272).
    pub(super) fn check_reach(&mut self, kind: &SpecKind, kind_span: Span, operands: &[View]) {
        if kind.masked() {
            return;
        }
        for view in operands {
            for bound in &view.bounds {
                let last = last_coordinate(bound);
                if self.stays_below(&last, &bound.extent) {
                    continue;
                }
                let name = self.kernel.buffers[view.buffer.0 as usize].name.clone();
                let last_text = self.source_text(&symbolic::normalize(&last));
                let extent_text = self.expr_text(&bound.extent);
                let help = match kind {
                    SpecKind::Move { add: true, .. } => format!(
                        "mask it, `Move<masked, add>`: elements past the end are not added into; or guard it: `if ({last_text} < {extent_text}) {{ … }}`"
                    ),
                    SpecKind::Move { add: false, .. } => format!(
                        "mask it, `Move<masked>` (or `Move<async, masked>`): elements past the end read as zero and are not written; or guard it: `if ({last_text} < {extent_text}) {{ … }}`"
                    ),
                    SpecKind::MatMul { .. }
                    | SpecKind::Unary(_)
                    | SpecKind::Binary(_)
                    | SpecKind::Ternary(_)
                    | SpecKind::Select(_)
                    | SpecKind::Reduction { .. }
                    | SpecKind::Shfl { .. }
                    | SpecKind::Init { .. }
                    | SpecKind::Generic => format!(
                        "move the operand through registers with `Move<masked>`, or guard the spec: `if ({last_text} < {extent_text}) {{ … }}`"
                    ),
                };
                self.report(
                    Diagnostic::error(
                        codes::ACCESS_PAST_END,
                        format!("this access may reach past the end of `%{name}`"),
                        view.span,
                    )
                    .with_label(format!(
                        "its last element is at `{last_text}` along a mode of extent `{extent_text}`"
                    ))
                    .with_secondary(kind_span, "an unmasked access")
                    .with_note("a partial tile's last tile reaches past its mode; an access that may leave the tensor must say what happens there")
                    .with_help(help),
                );
            }
        }
    }

    /// `e` as the source would write it: the expressions the visible
    /// indices stand for replaced by their names (`tid % 256` by `@t`).
    fn source_text(&self, e: &Expr) -> String {
        let mut text = self.expr_text(e);
        let mut indices: Vec<(String, String)> = self
            .visible(Namespace::Index)
            .into_iter()
            .filter_map(|(name, entry)| match entry.binding {
                Binding::Index(Some(value)) => Some((self.expr_text(&value), name)),
                Binding::Index(None)
                | Binding::Tensor(_)
                | Binding::Group(_)
                | Binding::Loop(_)
                | Binding::Unrolled(_)
                | Binding::Let(_) => None,
            })
            .filter(|(value, _)| value.contains(' ') || value.contains('%'))
            .collect();
        indices.sort_by_key(|(value, _)| std::cmp::Reverse(value.len()));
        for (value, name) in indices {
            text = text
                .replace(&format!("({value})"), &format!("@{name}"))
                .replace(&value, &format!("@{name}"));
        }
        text
    }

    /// Whether `last < extent` for every run of the kernel: by the form of
    /// its upper bound (thread and block ids by their groups, loop
    /// variables by their bounds, enclosing `if`s by what they guard).
    fn stays_below(&self, last: &Expr, extent: &Expr) -> bool {
        let Some(top) = self.upper_bound(last) else {
            return false;
        };
        let slack = Expr::sub(Expr::sub(extent.clone(), Expr::Const(1)), top);
        matches!(symbolic::sign(&slack), Sign::NonNegative)
    }
}

/// The coordinate of a bound's last element: its origin plus, per leaf,
/// `(extent − 1) · stride` (strides of coordinates are never negative).
pub(crate) fn last_coordinate(bound: &Bound) -> Expr {
    bound
        .levels
        .iter()
        .fold(bound.origin.clone(), |sum, level| {
            level
                .shape
                .leaves()
                .into_iter()
                .zip(level.stride.leaves())
                .fold(sum, |sum, (extent, stride)| {
                    let steps = Expr::sub(extent.clone(), Expr::Const(1));
                    Expr::add(sum, Expr::mul(steps, stride.clone()))
                })
        })
}

fn with_levels(mut view: View, levels: Vec<Level>, span: Span) -> View {
    view.ty.levels = levels;
    view.span = span;
    view
}

/// `levels` with strides that count the coordinates of mode `mode` of the
/// innermost level: 1 there, 0 everywhere else; `None` when that mode is
/// hierarchical.
fn unit_coordinates(levels: &[Level], mode: usize) -> Option<Vec<Level>> {
    let zero = |level: &Level| Level {
        shape: level.shape.clone(),
        stride: level.stride.map(&mut |_| Expr::Const(0)),
    };
    let mut out: Vec<Level> = levels.iter().map(zero).collect();
    let innermost = out.last_mut()?;
    let modes = symbolic::modes(innermost);
    let (shape, _) = modes.get(mode)?;
    if !matches!(shape, crate::layout::Tuple::Leaf(_)) {
        return None;
    }
    let strides: Vec<(crate::layout::Tuple<Expr>, crate::layout::Tuple<Expr>)> = modes
        .iter()
        .enumerate()
        .map(|(i, (shape, stride))| {
            if i == mode {
                (shape.clone(), crate::layout::Tuple::Leaf(Expr::Const(1)))
            } else {
                (shape.clone(), stride.clone())
            }
        })
        .collect();
    *innermost = symbolic::level_from_modes(strides);
    Some(out)
}

fn same_shapes(a: &[Level], b: &[Level]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.shape == y.shape)
}
