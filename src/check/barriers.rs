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

use crate::diag::{Diagnostic, Span};
use crate::expr::{Expr, Var};
use crate::ir::{Kernel, Stmt};

use super::blockwide::is_block_reduction;
use super::codes;
use super::enumerate::cond_names;

/// A `sync` under thread-dependent control flow, one diagnostic each.
pub(super) fn check_barriers(kernel: &Kernel) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    if let Some(body) = &kernel.root.body {
        walk(body, None, &mut found);
    }
    found
}

fn names_thread(expr: &Expr) -> bool {
    expr.vars().contains(&Var::ThreadId)
}

/// `divergent`: the innermost enclosing statement whose condition or bounds
/// name the thread id, with what it is.
fn walk(stmts: &[Stmt], divergent: Option<(Span, &'static str)>, found: &mut Vec<Diagnostic>) {
    for stmt in stmts {
        match stmt {
            Stmt::Spec(spec) => {
                if let Some(body) = &spec.body {
                    walk(body, divergent, found);
                }
                if let Some(around) = divergent.filter(|_| is_block_reduction(spec)) {
                    found.push(divergent_barrier(
                        "a block `Reduction` where some threads of the block may not reach it",
                        spec.span,
                        "it waits at a barrier for every thread of the block",
                        around,
                        "put the reduction where every thread of the block executes it, and \
                         narrow only what is done with its result",
                    ));
                }
            }
            Stmt::For(for_stmt) => {
                let here = [&for_stmt.lo, &for_stmt.hi, &for_stmt.step]
                    .into_iter()
                    .any(names_thread)
                    .then_some((for_stmt.span, "a loop whose bounds depend on the thread id"));
                walk(&for_stmt.body, here.or(divergent), found);
            }
            Stmt::If(if_stmt) => {
                let here = cond_names(&if_stmt.cond, &names_thread).then_some((
                    if_stmt.span,
                    "an `if` whose condition depends on the thread id",
                ));
                walk(&if_stmt.then_body, here.or(divergent), found);
                walk(&if_stmt.else_body, here.or(divergent), found);
            }
            Stmt::Sync(span) => {
                if let Some(around) = divergent {
                    found.push(divergent_barrier(
                        "`sync` where some threads of the block may not reach it",
                        *span,
                        "a barrier for every thread of the block",
                        around,
                        "move the `sync` out of the condition, where every thread reaches it",
                    ));
                }
            }
            Stmt::Commit { .. } | Stmt::Wait { .. } => {}
        }
    }
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
            "`bar.sync` waits for all the threads of the block: \
             threads that skip it leave the others waiting (a deadlock)",
        )
        .with_help(help)
}
