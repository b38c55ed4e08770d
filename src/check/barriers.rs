//! Stage 2, check: a `sync` — or a block reduction, which holds one — is
//! reached by every thread of the block or by none (docs/language.md §4,
//! `sync`; §5, "Block reductions").
//!
//! `bar.sync` waits for all the threads of the block; a thread that skips
//! it — because an enclosing `if` is false for it, or an enclosing loop
//! runs fewer times for it — leaves the others waiting forever (or, on
//! Volta and later, pairs barriers that were never meant to meet). So a
//! `sync` under an `if` whose condition, or a `for` whose bounds, name the
//! thread id is an error. Conditions on the block id, the loop variables
//! and the dims are the same for every thread of a block and are accepted.
//! This is a rule on the program's text, decided without the dims' values:
//! a condition that names the thread id but happens to hold for every
//! thread is rejected too, and is better written without it.
//!
//! A `grid_sync` waits for every thread of every block: it must not be
//! under a condition or loop bound that names the thread id or the block
//! id (a block that skips it leaves the grid waiting).
//!
//! A `setmaxnreg` is `.sync.aligned` over its warpgroup (128 consecutive
//! threads from a multiple of 128): every thread of the warpgroup executes
//! it, or none. So a condition or loop bound above it may name the thread
//! id only through `tid / d` with d a multiple of 128 — the warpgroup's
//! number, as `#block.tile(128)`'s outer index is — and not through a
//! thread's place inside its warpgroup (`tid % 128`, a lane, a warp).
//!
//! A collective instruction — an atomic spec executed by several threads
//! together, such as `ldmatrix`, `mma`, a shuffle, `wgmma` or a warp's row
//! store — is likewise executed by every thread of its unit or by none: a
//! lane that skips it leaves its part undone (a warp's row store then
//! leaves chunks of the row unwritten) or, for the `.sync.aligned` forms,
//! is undefined. A condition or loop bound above it may name the thread id
//! only through `tid / d` with `d` a multiple of the unit: 32 for a unit
//! inside one warp, 128 for a warpgroup.

use crate::diag::{Diagnostic, Span};
use crate::expr::{Expr, Var};
use crate::ir::{BarrierScope, Kernel, Stmt};

use super::blockwide::is_block_reduction;
use super::codes;
use super::enumerate::cond_names;
use super::symbolic::{levels_size, normalize};

/// A `sync` under thread-dependent control flow, one diagnostic each.
pub(super) fn check_barriers(kernel: &Kernel) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    if let Some(body) = &kernel.root.body {
        walk(body, Divergence::default(), &mut found);
    }
    found
}

fn names_thread(expr: &Expr) -> bool {
    expr.vars().contains(&Var::ThreadId)
}

fn names_block(expr: &Expr) -> bool {
    let vars = expr.vars();
    vars.contains(&Var::ThreadId) || vars.contains(&Var::BlockId)
}

/// Threads of a warpgroup, over which `setmaxnreg` is aligned.
const WARPGROUP_THREADS: i64 = 128;

/// Threads of a warp.
const WARP_THREADS: i64 = 32;

/// Whether `expr` may differ between the threads of one aligned unit of
/// `unit` threads: it names the thread id other than as `tid / d`, d a
/// multiple of `unit`. Each such quotient is replaced by the block id (the
/// same for the unit's threads) and the thread ids that remain are the
/// answer.
fn names_lane_of(expr: &Expr, unit: i64) -> bool {
    fn per_unit(expr: &Expr, unit: i64) -> Expr {
        if tid_divisor(expr).is_some_and(|d| d % unit == 0) {
            Expr::var(Var::BlockId)
        } else {
            expr.map_operands(&mut |operand| per_unit(operand, unit))
        }
    }
    names_thread(&per_unit(expr, unit))
}

fn names_lane_of_warpgroup(expr: &Expr) -> bool {
    names_lane_of(expr, WARPGROUP_THREADS)
}

fn names_lane_of_warp(expr: &Expr) -> bool {
    names_lane_of(expr, WARP_THREADS)
}

/// `d` where `expr` is `tid / d` (nested divisions by constants
/// multiplied out; `tid` itself is `d = 1`).
fn tid_divisor(expr: &Expr) -> Option<i64> {
    match expr {
        Expr::Var(var) => (*var == Var::ThreadId).then_some(1),
        Expr::Div(a, b) => match b.as_const() {
            Some(c) if c > 0 => tid_divisor(a)?.checked_mul(c),
            Some(_) | None => None,
        },
        Expr::Const(_)
        | Expr::Add(..)
        | Expr::Sub(..)
        | Expr::Mul(..)
        | Expr::Rem(..)
        | Expr::And(..)
        | Expr::Xor(..)
        | Expr::Shr(..)
        | Expr::Shl(..) => None,
    }
}

/// The innermost enclosing statement whose condition or bounds name the
/// thread id (`thread`), the thread or block id (`grid`), a thread's place
/// inside its warpgroup (`warpgroup`) or inside its warp (`warp`), with
/// what it is: a `sync` must not be under the first, a `grid_sync` under
/// the first two, a `setmaxnreg` (or a warpgroup's collective) under the
/// third, a collective of a warp or of lanes of one under the fourth.
#[derive(Clone, Copy, Default)]
struct Divergence {
    thread: Option<(Span, &'static str)>,
    grid: Option<(Span, &'static str)>,
    warpgroup: Option<(Span, &'static str)>,
    warp: Option<(Span, &'static str)>,
}

impl Divergence {
    fn inside(
        self,
        span: Span,
        names: impl Fn(&dyn Fn(&Expr) -> bool) -> bool,
        what: [&'static str; 4],
    ) -> Self {
        Divergence {
            thread: names(&names_thread)
                .then_some((span, what[0]))
                .or(self.thread),
            grid: names(&names_block).then_some((span, what[1])).or(self.grid),
            warpgroup: names(&names_lane_of_warpgroup)
                .then_some((span, what[2]))
                .or(self.warpgroup),
            warp: names(&names_lane_of_warp)
                .then_some((span, what[3]))
                .or(self.warp),
        }
    }
}

fn walk(stmts: &[Stmt], divergent: Divergence, found: &mut Vec<Diagnostic>) {
    for stmt in stmts {
        match stmt {
            Stmt::Spec(spec) => {
                if let Some(body) = &spec.body {
                    walk(body, divergent, found);
                }
                if let Some(around) = divergent.thread.filter(|_| is_block_reduction(spec)) {
                    found.push(divergent_barrier(
                        "a block `Reduction` where some threads of the block may not reach it",
                        spec.span,
                        "it waits at a barrier for every thread of the block",
                        around,
                        "put the reduction where every thread of the block executes it, and \
                         narrow only what is done with its result",
                    ));
                } else if spec.body.is_none()
                    && let Some(found_here) = divergent_collective(spec, divergent)
                {
                    found.push(found_here);
                }
            }
            Stmt::For(for_stmt) => {
                let bounds = [&for_stmt.lo, &for_stmt.hi, &for_stmt.step];
                let here = divergent.inside(
                    for_stmt.span,
                    |names| bounds.iter().any(|bound| names(bound)),
                    [
                        "a loop whose bounds depend on the thread id",
                        "a loop whose bounds depend on the thread or block id",
                        "a loop whose bounds differ between threads of a warpgroup",
                        "a loop whose bounds differ between lanes of a warp",
                    ],
                );
                walk(&for_stmt.body, here, found);
            }
            Stmt::If(if_stmt) => {
                let here = divergent.inside(
                    if_stmt.span,
                    |names| cond_names(&if_stmt.cond, names),
                    [
                        "an `if` whose condition depends on the thread id",
                        "an `if` whose condition depends on the thread or block id",
                        "an `if` whose condition differs between threads of a warpgroup",
                        "an `if` whose condition differs between lanes of a warp",
                    ],
                );
                walk(&if_stmt.then_body, here, found);
                walk(&if_stmt.else_body, here, found);
            }
            Stmt::Sync { scope, span } => {
                let around = match scope {
                    BarrierScope::Block => divergent.thread,
                    BarrierScope::Grid => divergent.grid,
                };
                if let Some(around) = around {
                    let keyword = scope.keyword();
                    let who = match scope {
                        BarrierScope::Block => "threads of the block",
                        BarrierScope::Grid => "blocks of the grid",
                    };
                    found.push(divergent_barrier(
                        &format!("`{keyword}` where some {who} may not reach it"),
                        *span,
                        &format!("a barrier for {}", scope.waits_for()),
                        around,
                        &format!(
                            "move the `{keyword}` out of the condition, where every thread reaches it"
                        ),
                    ));
                }
            }
            Stmt::SetMaxRegisters { span, .. } => {
                if let Some((around, what)) = divergent.warpgroup {
                    found.push(
                        Diagnostic::error(
                            codes::SETMAXNREG,
                            "`setmaxnreg` where some threads of a warpgroup may not reach it",
                            *span,
                        )
                        .with_label("every thread of the warpgroup executes it, or none (`.sync.aligned`)")
                        .with_secondary(around, format!("inside {what}"))
                        .with_note(
                            "a condition above it may name the thread id only as the warpgroup's \
                             number, `tid / 128` (the outer index of `#block.tile(128)`)",
                        )
                        .with_help(
                            "test the warpgroup (`if (@wg == 2)`) around `setmaxnreg`, and narrow to \
                             single threads inside, after it",
                        ),
                    );
                }
            }
            Stmt::Commit { .. }
            | Stmt::Wait { .. }
            | Stmt::Arrive { .. }
            | Stmt::WaitPhase { .. } => {}
        }
    }
}

/// The diagnostic for an atomic spec executed by a unit of several threads
/// under control flow that may differ between them.
fn divergent_collective(spec: &crate::ir::SpecStmt, divergent: Divergence) -> Option<Diagnostic> {
    let innermost = spec.threads.levels.last()?;
    let unit = normalize(&levels_size(std::slice::from_ref(innermost))).as_const()?;
    if unit <= 1 {
        return None;
    }
    let (around, what) = if unit <= WARP_THREADS {
        divergent.warp?
    } else if unit <= WARPGROUP_THREADS {
        divergent.warpgroup?
    } else {
        divergent.thread?
    };
    let unit_name = if unit <= WARP_THREADS {
        "lanes of its warp"
    } else if unit <= WARPGROUP_THREADS {
        "threads of its warpgroup"
    } else {
        "threads of its unit"
    };
    Some(
        Diagnostic::error(
            codes::DIVERGENT_COLLECTIVE,
            format!(
                "a collective `{}` where some {unit_name} may not reach it",
                spec.kind
            ),
            spec.span,
        )
        .with_label(format!("executed by {unit} threads together"))
        .with_secondary(around, format!("inside {what}"))
        .with_note(
            "a collective instruction is executed by every thread of its unit or by none: \
             a thread that skips it leaves its part undone",
        )
        .with_help(
            "test the warp or warpgroup (`tid / 32`, `tid / 128`: the outer index of \
             `#block.tile(32)`) around the spec, or narrow what is done with its result",
        ),
    )
}

/// The diagnostic for a barrier at `span` inside `around`, thread-dependent
/// control flow.
fn divergent_barrier(
    message: &str,
    span: Span,
    label: &str,
    (around, what): (Span, &'static str),
    help: &str,
) -> Diagnostic {
    Diagnostic::error(codes::DIVERGENT_SYNC, message, span)
        .with_label(label)
        .with_secondary(around, format!("inside {what}"))
        .with_note(
            "a barrier waits for all the threads it names: \
             threads that skip it leave the others waiting (a deadlock)",
        )
        .with_help(help)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tid() -> Expr {
        Expr::var(Var::ThreadId)
    }

    #[test]
    fn the_warpgroup_number_is_uniform_and_a_place_inside_it_is_not() {
        let number = Expr::rem(Expr::div(tid(), Expr::Const(128)), Expr::Const(3));
        let pair = Expr::div(Expr::div(tid(), Expr::Const(64)), Expr::Const(4));
        assert!(!names_lane_of_warpgroup(&number));
        assert!(!names_lane_of_warpgroup(&pair));
        assert!(!names_lane_of_warpgroup(&Expr::var(Var::BlockId)));
        let lane = Expr::rem(tid(), Expr::Const(128));
        let warp = Expr::rem(Expr::div(tid(), Expr::Const(32)), Expr::Const(4));
        let sum = Expr::add(number, Expr::rem(tid(), Expr::Const(2)));
        assert!(names_lane_of_warpgroup(&lane));
        assert!(names_lane_of_warpgroup(&warp));
        assert!(names_lane_of_warpgroup(&sum));
        assert!(names_lane_of_warpgroup(&tid()));
    }
}
