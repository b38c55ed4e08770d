//! Stage 2, check: broadcast views (docs/language.md §3, `.broadcast`) — the
//! operation `X.broadcast(i, n)`, which inserts a mode of `n` elements with
//! stride 0 into the innermost level (every coordinate of the new mode
//! names the same elements); the rule that a view with a stride-0 mode of
//! more than one element is read only (a spec's input, never its output);
//! and the `.broadcast` call that the size-mismatch diagnostic of
//! elementwise kinds suggests.

use crate::diag::{Diagnostic, Span};
use crate::expr::{Expr, Var};
use crate::ir::{Level, Memory, Requirement, SpecKind, View};
use crate::layout::Tuple;
use crate::syntax::ast::{self, IntExpr};

use super::codes;
use super::env::{Checked, Checker, Poisoned};
use super::ints::IntContext;
use super::symbolic::{level_from_modes, modes, needs_positive_check, same_tuple};

/// A stride-0 leaf of a view that names one element several times.
#[derive(Clone, PartialEq, Debug)]
pub(crate) struct BroadcastMode {
    /// The level holding it, 0 the outermost.
    pub depth: usize,
    /// Its top-level mode in that level.
    pub mode: usize,
    /// Its extent (more than 1, or symbolic).
    pub extent: Expr,
}

/// The first stride-0 leaf of `levels` whose extent is not 1, outermost
/// level first. A symbolic extent counts: nothing keeps it at 1.
pub(crate) fn broadcast_mode(levels: &[Level]) -> Option<BroadcastMode> {
    levels.iter().enumerate().find_map(|(depth, level)| {
        modes(level)
            .iter()
            .enumerate()
            .find_map(|(mode, (shape, stride))| {
                shape
                    .leaves()
                    .into_iter()
                    .zip(stride.leaves())
                    .find(|(extent, stride)| {
                        stride.as_const() == Some(0) && extent.as_const() != Some(1)
                    })
                    .map(|(extent, _)| BroadcastMode {
                        depth,
                        mode,
                        extent: extent.clone(),
                    })
            })
    })
}

/// The `(position, extent)` of a `.broadcast` that turns `smaller` into
/// `larger`, level by level: both have the same levels but the innermost,
/// where `larger` has one more top-level mode, and the other modes' extents
/// agree. The first position that works is given.
fn broadcast_between(smaller: &[Level], larger: &[Level]) -> Option<(usize, Expr)> {
    let (small_inner, small_outer) = smaller.split_last()?;
    let (large_inner, large_outer) = larger.split_last()?;
    if small_outer.len() != large_outer.len()
        || small_outer
            .iter()
            .zip(large_outer)
            .any(|(a, b)| !same_tuple(&a.shape, &b.shape))
    {
        return None;
    }
    let small = modes(small_inner);
    let large = modes(large_inner);
    if large.len() != small.len() + 1 {
        return None;
    }
    (0..large.len()).find_map(|position| {
        let (inserted, _) = &large[position];
        let Tuple::Leaf(extent) = inserted else {
            return None;
        };
        let others = large[..position].iter().chain(&large[position + 1..]);
        others
            .zip(&small)
            .all(|((a, _), (b, _))| same_tuple(a, b))
            .then(|| (position, extent.clone()))
    })
}

impl Checker {
    /// `view.broadcast(position, extent)`: a mode of `extent` elements and
    /// stride 0 inserted before mode `position` of the innermost level
    /// (`position` = its rank appends it). The base does not move.
    pub(crate) fn broadcast_view_levels(
        &mut self,
        mut view: View,
        position: &IntExpr,
        extent: &IntExpr,
        span: Span,
    ) -> Checked<View> {
        let at = self.constant(position, "the position of a broadcast mode");
        let extent_value = self.broadcast_extent(view.ty.memory, extent);
        let (at, extent_value) = (at?, extent_value?);
        let Some(innermost) = view.ty.levels.last() else {
            return Err(Poisoned);
        };
        let mut level_modes = modes(innermost);
        let rank = level_modes.len();
        if at < 0 || at as usize > rank {
            let level = self.level_text(innermost);
            return Err(self.fail(
                Diagnostic::error(
                    codes::BAD_BROADCAST,
                    format!(
                        "no position {at} in a level of {rank} mode{}",
                        if rank == 1 { "" } else { "s" }
                    ),
                    position.span,
                )
                .with_label(format!("inserts a mode into the innermost level {level}"))
                .with_help(format!(
                    "give a position from 0 (before the first mode) to {rank} (after the last)"
                )),
            ));
        }
        match extent_value.as_const() {
            Some(value) if value < 1 => {
                return Err(self.fail(
                    Diagnostic::error(
                        codes::BAD_BROADCAST,
                        format!("a broadcast mode of extent {value}"),
                        extent.span,
                    )
                    .with_label("every extent must be at least 1")
                    .with_help("broadcast over at least one element, e.g. `.broadcast(0, 4)`"),
                ));
            }
            Some(_) => {}
            None if needs_positive_check(&extent_value) => self.require(Requirement::Positive {
                value: extent_value.clone(),
                span: extent.span,
            }),
            None => {}
        }
        level_modes.insert(
            at as usize,
            (Tuple::Leaf(extent_value), Tuple::Leaf(Expr::Const(0))),
        );
        if let Some(last) = view.ty.levels.last_mut() {
            *last = level_from_modes(level_modes);
        }
        view.span = span;
        Ok(view)
    }

    /// The extent of a broadcast mode: a type's extent (constants and dims
    /// already known) for a global view, a constant for a shared or
    /// register one, whose layouts are constant.
    fn broadcast_extent(&mut self, memory: Memory, extent: &IntExpr) -> Checked<Expr> {
        match memory {
            Memory::Shared | Memory::Registers => self
                .constant(
                    extent,
                    "the extent of a broadcast of a shared or register tensor",
                )
                .map(Expr::Const),
            Memory::Global => {
                let value = self.int(extent, IntContext::Runtime)?;
                let varying = value.vars().into_iter().find(|var| match var {
                    Var::Dim(_) => false,
                    Var::ThreadId | Var::BlockId | Var::Loop(_) => true,
                });
                match varying {
                    None => Ok(value),
                    Some(_) => Err(self.fail(
                        Diagnostic::error(
                            codes::WRONG_KIND,
                            "a broadcast extent that changes while the kernel runs",
                            extent.span,
                        )
                        .with_label("names an index or a loop variable")
                        .with_note("the extent is part of the view's type, which is the same for every thread and iteration")
                        .with_help("broadcast over constants and symbolic dimensions, e.g. `.broadcast(0, M)`"),
                    )),
                }
            }
        }
    }

    /// A spec's outputs may not be broadcast views: a stride-0 mode would
    /// write one element once per coordinate of the mode.
    pub(crate) fn broadcast_outputs(&mut self, kind: &SpecKind, outputs: &[View]) {
        for output in outputs {
            let Some(found) = broadcast_mode(&output.ty.levels) else {
                continue;
            };
            let level = self.level_text(&output.ty.levels[found.depth]);
            let extent = self.expr_text(&found.extent);
            let which = if output.ty.levels.len() == 1 {
                format!("mode {}", found.mode)
            } else {
                format!("mode {} of level {}", found.mode, found.depth)
            };
            self.report(
                Diagnostic::error(
                    codes::BROADCAST_OUTPUT,
                    format!("a broadcast view as the output of `{kind}`"),
                    output.span,
                )
                .with_label(format!(
                    "{which} of {level} has stride 0: it names one element {extent} times"
                ))
                .with_note("a stride-0 mode repeats an element; reading it is harmless, writing it writes that element once per coordinate")
                .with_help("write into a view without stride-0 modes, and broadcast the inputs instead"),
            );
        }
    }

    /// The help line of a size mismatch between elementwise operands: the
    /// `.broadcast` call (on `smaller`, an operand as written and whether it
    /// is an input) that gives it `larger`'s shape, when one does. Outputs
    /// get none: a broadcast output is refused.
    pub(crate) fn broadcast_help(
        &self,
        smaller: (&View, &ast::Expr, bool),
        larger: &View,
    ) -> Option<String> {
        let (view, written, is_input) = smaller;
        if !is_input {
            return None;
        }
        let (position, extent) = broadcast_between(&view.ty.levels, &larger.ty.levels)?;
        Some(format!(
            "broadcast the smaller operand: `{written}.broadcast({position}, {})`",
            self.expr_text(&extent)
        ))
    }
}
