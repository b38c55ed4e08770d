//! Stage 2, check: broadcast views (docs/language.md §3, `.broadcast`) — the
//! operation `X.broadcast(i, n)`, which inserts a mode of `n` elements with
//! stride 0 into the innermost level: every coordinate of the new mode
//! names the same elements.

use crate::diag::{Diagnostic, Span};
use crate::expr::{Expr, Var};
use crate::ir::{Memory, Requirement, View};
use crate::layout::Tuple;
use crate::syntax::ast::IntExpr;

use super::codes;
use super::env::{Checked, Checker, Poisoned};
use super::ints::IntContext;
use super::symbolic::{level_from_modes, modes, needs_positive_check};

impl Checker {
    /// `view.broadcast(position, extent)`: a mode of `extent` elements and
    /// stride 0 inserted before mode `position` of the innermost level
    /// (`position` = its rank appends it). The base does not move.
    pub(crate) fn broadcast_view(
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
}
