//! The REPL's errors: diagnostics with codes of their own (`E09xx`), spans
//! into the line typed, and the shifting that places the diagnostics of a
//! part of the line (a command's argument) where that part sits in it.

use graphene::diag::{Diagnostic, Span, suggest};

/// The REPL's diagnostic codes; `docs/repl.md` lists them.
pub mod codes {
    /// A command that does not exist (`:shwo`).
    pub const UNKNOWN_COMMAND: &str = "E0900";
    /// A command's arguments are missing, extra or malformed.
    pub const BAD_ARGUMENTS: &str = "E0901";
    /// A layout expression that does not follow its grammar.
    pub const LAYOUT_SYNTAX: &str = "E0902";
    /// A layout name or algebra function that is not known.
    pub const UNKNOWN_NAME: &str = "E0903";
    /// An algebra function given the wrong number or kind of arguments.
    pub const BAD_CALL: &str = "E0904";
    /// The layout algebra has no result for these operands.
    pub const ALGEBRA: &str = "E0905";
    /// A value that cannot be drawn as asked (symbolic, in registers, too large).
    pub const CANNOT_DRAW: &str = "E0906";
    /// `let` of a name that is reserved or already a constant.
    pub const BAD_NAME: &str = "E0907";
    /// A shared-memory access that the bank model cannot serve as asked.
    pub const BAD_ACCESS: &str = "E0908";
}

/// Why a line produced no result: one or more diagnostics about it.
///
/// Rule: every span is a byte range of the whole line as typed.
#[derive(Clone, Debug)]
pub struct Failure(pub Vec<Diagnostic>);

impl From<Vec<Diagnostic>> for Failure {
    fn from(diagnostics: Vec<Diagnostic>) -> Failure {
        Failure(diagnostics)
    }
}

impl Failure {
    /// One error diagnostic.
    pub fn new(code: &'static str, message: impl Into<String>, span: Span) -> Failure {
        Failure(vec![Diagnostic::error(code, message, span)])
    }

    /// Sets the primary label of the first diagnostic.
    pub fn label(mut self, text: impl Into<String>) -> Failure {
        if let Some(first) = self.0.first_mut() {
            first.primary.message = text.into();
        }
        self
    }

    /// Sets the help line of the first diagnostic.
    pub fn help(mut self, text: impl Into<String>) -> Failure {
        if let Some(first) = self.0.first_mut() {
            first.help = Some(text.into());
        }
        self
    }

    /// Adds a note to the first diagnostic.
    pub fn note(mut self, text: impl Into<String>) -> Failure {
        if let Some(first) = self.0.first_mut() {
            first.notes.push(text.into());
        }
        self
    }

    /// Diagnostics about a part of the line that starts at byte `offset`,
    /// moved to where that part sits in the line.
    pub fn shifted(diagnostics: Vec<Diagnostic>, offset: usize) -> Failure {
        Failure(
            diagnostics
                .into_iter()
                .map(|d| shift(d, offset as u32))
                .collect(),
        )
    }
}

/// The diagnostic with every span moved `by` bytes to the right.
pub fn shift(mut diagnostic: Diagnostic, by: u32) -> Diagnostic {
    let moved = |span: Span| Span::new(span.start.saturating_add(by), span.end.saturating_add(by));
    diagnostic.primary.span = moved(diagnostic.primary.span);
    for label in &mut diagnostic.secondary {
        label.span = moved(label.span);
    }
    diagnostic
}

/// The span of `len` bytes at `start`.
pub fn span(start: usize, len: usize) -> Span {
    Span::new(start as u32, (start + len) as u32)
}

/// Up to three names of `candidates` that look like `wanted` (starting
/// with it, or a few edits apart), for "did you mean".
pub fn similar<'a>(wanted: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut found: Vec<&str> = candidates
        .into_iter()
        .filter(|c| *c != wanted && close(wanted, c))
        .collect();
    found.sort_unstable();
    found.dedup();
    found.truncate(3);
    found
}

fn close(wanted: &str, candidate: &str) -> bool {
    (wanted.len() >= 2 && candidate.starts_with(wanted))
        || suggest::distance(wanted, candidate, 1 + wanted.len() / 4).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shifting_moves_every_span() {
        let d =
            Diagnostic::error("E0900", "x", Span::new(1, 3)).with_secondary(Span::new(0, 1), "y");
        let moved = shift(d, 10);
        assert_eq!(moved.primary.span, Span::new(11, 13));
        assert_eq!(moved.secondary[0].span, Span::new(10, 11));
    }

    #[test]
    fn similar_names_are_suggested() {
        let names = ["coalesce", "composition", "complement", "size"];
        assert_eq!(similar("coalsce", names), ["coalesce"]);
        assert_eq!(similar("compos", names), ["composition"]);
        assert!(similar("zzz", names).is_empty());
    }
}
