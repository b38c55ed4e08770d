//! Stage 2, check: tests of the checker — the paper's examples end to end,
//! type computations with the numbers of docs/language.md, the rules,
//! broadcast views, partial tiles, and the REPL session.

mod broadcast;
mod collective;
mod contract;
mod coverage;
mod examples;
mod partial;
mod races;
mod rules;
mod session;
mod types;
mod unwritten;
mod variants;

use crate::check::{Names, Session, Shown, group_type_text, tensor_type_text};
use crate::diag::Diagnostic;
use crate::expr::{Expr, Var};
use crate::ir::{Program, TensorType};
use crate::syntax::{parse_file, parse_line};

/// Parses and checks `src` (as file `name`), panicking on syntax errors.
pub(super) fn check(name: &str, src: &str) -> Result<Program, Vec<Diagnostic>> {
    let file = parse_file(name, src).unwrap_or_else(|d| panic!("syntax errors: {d:#?}"));
    super::check_file(&file, &[])
}

/// The codes of the diagnostics of a rejected program (none if accepted).
pub(super) fn codes_of(src: &str) -> Vec<&'static str> {
    match check("test.gph", src) {
        Ok(_) => Vec::new(),
        Err(diags) => diags.iter().map(|d| d.code).collect(),
    }
}

/// Runs one REPL line that must succeed.
pub(super) fn run(session: &mut Session, line: &str) -> Shown {
    let parsed = parse_line(line).unwrap_or_else(|d| panic!("{line}: syntax errors {d:#?}"));
    session
        .line(&parsed)
        .unwrap_or_else(|d| panic!("{line}: {d:#?}"))
}

/// Runs one REPL line: what it shows, or the codes of its diagnostics.
pub(super) fn attempt(s: &mut Session, line: &str) -> Result<Shown, Vec<&'static str>> {
    let parsed = parse_line(line).unwrap_or_else(|d| panic!("{line}: {d:#?}"));
    s.line(&parsed)
        .map_err(|diags| diags.iter().map(|d| d.code).collect())
}

/// A session after the given lines.
pub(super) fn session(lines: &[&str]) -> Session {
    let mut s = Session::new();
    for line in lines {
        run(&mut s, line);
    }
    s
}

/// A tensor type's text with the session's names.
pub(super) fn text(session: &Session, ty: &TensorType) -> String {
    tensor_type_text(ty, &session.names())
}

/// The type text of the tensor or group a line shows.
pub(super) fn shown_text(session: &mut Session, line: &str) -> String {
    match run(session, line) {
        Shown::Tensor { view, .. } => tensor_type_text(&view.ty, &session.names()),
        Shown::Group { ty, .. } => group_type_text(&ty, &session.names()),
        other => panic!("{line} shows {other:?}"),
    }
}

/// Evaluates `expr` for a thread, a block, dims (`(number, value)`) and
/// loop variables (by number, in `loops`).
pub(super) fn eval_loops(
    expr: &Expr,
    tid: i64,
    bid: i64,
    dims: &[(u32, i64)],
    loops: &[i64],
) -> i64 {
    expr.eval(&|var| match var {
        Var::ThreadId => Some(tid),
        Var::BlockId => Some(bid),
        Var::Dim(i) => dims.iter().find(|(d, _)| *d == i).map(|(_, v)| *v),
        Var::Loop(i) => loops.get(i as usize).copied(),
    })
    .unwrap_or_else(|e| panic!("{}: {e}", crate::check::expr_text(expr, &Names::NONE)))
}

/// Evaluates `expr` for a thread, a block and dims.
pub(super) fn eval_with(expr: &Expr, tid: i64, bid: i64, dims: &[(u32, i64)]) -> i64 {
    eval_loops(expr, tid, bid, dims, &[])
}
