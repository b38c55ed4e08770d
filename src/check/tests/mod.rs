//! Stage 2, check: tests of the checker — the paper's examples end to end,
//! type computations with the numbers of docs/language.md, the rules, and
//! the REPL session.

mod examples;

use crate::diag::Diagnostic;
use crate::ir::Program;
use crate::syntax::parse_file;

/// Parses and checks `src` (as file `name`), panicking on syntax errors.
pub(super) fn check(name: &str, src: &str) -> Result<Program, Vec<Diagnostic>> {
    let file = parse_file(name, src).unwrap_or_else(|d| panic!("syntax errors: {d:#?}"));
    super::check_file(&file, &[])
}

/// The codes of the diagnostics of a rejected program.
pub(super) fn codes_of(src: &str) -> Vec<&'static str> {
    match check("test.gph", src) {
        Ok(_) => Vec::new(),
        Err(diags) => diags.iter().map(|d| d.code).collect(),
    }
}
