//! Diagnostics, shared by every stage: our own `Diagnostic` (severity, code,
//! message, labelled spans, notes, help) and its rendering through
//! `codespan-reporting` (`render`). A stage builds diagnostics with byte spans
//! only; lines and columns are computed when a diagnostic is printed.
//! `suggest` finds the "did you mean" candidate every stage offers.

mod display;
mod render;
pub mod suggest;

pub use render::{ColorChoice, FileId, SourceFile, SourceMap};

use std::fmt;
use std::ops::Range;

/// A byte range `start..end` in one source file.
///
/// Rule: `start <= end`; both are byte offsets at UTF-8 character boundaries
/// of the text the span was taken from. An empty span (`start == end`) points
/// between two characters, e.g. at the end of the input.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct Span {
    /// First byte of the range.
    pub start: u32,
    /// One past the last byte of the range.
    pub end: u32,
}

impl Span {
    /// The span every node gets after span stripping, and what generated
    /// nodes carry before they are printed and parsed.
    pub const DUMMY: Span = Span { start: 0, end: 0 };

    /// The span `start..end`; the ends are swapped if given in reverse.
    pub fn new(start: u32, end: u32) -> Span {
        Span {
            start: start.min(end),
            end: start.max(end),
        }
    }

    /// The empty span at `offset`.
    pub fn at(offset: u32) -> Span {
        Span {
            start: offset,
            end: offset,
        }
    }

    /// The smallest span covering both `self` and `other`.
    pub fn join(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// Length in bytes.
    pub fn len(self) -> u32 {
        self.end - self.start
    }

    /// Whether the span covers no byte.
    pub fn is_empty(self) -> bool {
        self.start == self.end
    }

    /// The byte range, for slicing the source text.
    pub fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// How bad a diagnostic is. Only `Error` stops a compilation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Severity {
    /// The input is rejected.
    Error,
    /// The input is accepted, but probably not what was meant.
    Warning,
    /// Extra information attached to the run, not a problem.
    Note,
}

/// A span with a short message, drawn under the source line.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Label {
    /// What the label points at.
    pub span: Span,
    /// Said beside the underline; may be empty.
    pub message: String,
}

impl Label {
    /// A label on `span` saying `message`.
    pub fn new(span: Span, message: impl Into<String>) -> Label {
        Label {
            span,
            message: message.into(),
        }
    }
}

/// One problem found in a source file, with everything needed to explain it.
///
/// Rule: `code` is a stable identifier such as `E0101` listed in
/// `docs/diagnostics.md`; `primary` is the place the problem is (underlined
/// with `^`); `secondary` labels point at related places (underlined with
/// `-`); `notes` explain, `help` suggests a concrete fix. Spans are byte
/// offsets into the one file the diagnostic is about (see `SourceMap`).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Diagnostic {
    /// Error, warning or note.
    pub severity: Severity,
    /// Stable code, e.g. `E0101`.
    pub code: &'static str,
    /// One line saying what is wrong, lower case, no final period.
    pub message: String,
    /// Where the problem is.
    pub primary: Label,
    /// Related places.
    pub secondary: Vec<Label>,
    /// Explanations, each rendered as `= note: …`.
    pub notes: Vec<String>,
    /// A concrete suggestion, rendered as `= help: …`.
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error with code `code` saying `message`, pointing at `span`.
    pub fn error(code: &'static str, message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic::new(Severity::Error, code, message, span)
    }

    /// A warning with code `code` saying `message`, pointing at `span`.
    pub fn warning(code: &'static str, message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic::new(Severity::Warning, code, message, span)
    }

    /// A diagnostic of any severity; the primary label has no message yet.
    pub fn new(
        severity: Severity,
        code: &'static str,
        message: impl Into<String>,
        span: Span,
    ) -> Diagnostic {
        Diagnostic {
            severity,
            code,
            message: message.into(),
            primary: Label::new(span, ""),
            secondary: Vec::new(),
            notes: Vec::new(),
            help: None,
        }
    }

    /// Sets the message written beside the primary underline.
    pub fn with_label(mut self, message: impl Into<String>) -> Diagnostic {
        self.primary.message = message.into();
        self
    }

    /// Adds a secondary label on a related span.
    pub fn with_secondary(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.secondary.push(Label::new(span, message));
        self
    }

    /// Adds a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    /// Sets the help line (a concrete suggestion).
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Whether this diagnostic rejects the input.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Every span the diagnostic mentions, primary first.
    pub fn spans(&self) -> impl Iterator<Item = Span> + '_ {
        std::iter::once(self.primary.span).chain(self.secondary.iter().map(|label| label.span))
    }
}

/// A one-line form for logs and test failures: `error[E0101] at 3..4: message`.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        };
        write!(
            f,
            "{severity}[{}] at {}: {}",
            self.code, self.primary.span, self.message
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_join_and_order_their_ends() {
        assert_eq!(Span::new(9, 3), Span { start: 3, end: 9 });
        assert_eq!(Span::new(3, 5).join(Span::new(8, 9)), Span::new(3, 9));
        assert_eq!(Span::new(3, 5).len(), 2);
        assert!(Span::at(4).is_empty());
        assert_eq!(Span::new(2, 6).range(), 2..6);
    }

    #[test]
    fn builder_fills_every_part() {
        let diagnostic = Diagnostic::error("E0101", "unclosed `{`", Span::new(4, 5))
            .with_label("opened here")
            .with_secondary(Span::new(0, 3), "in this kernel")
            .with_note("blocks must be closed")
            .with_help("add `}`");
        assert!(diagnostic.is_error());
        assert_eq!(diagnostic.primary.message, "opened here");
        assert_eq!(
            diagnostic.spans().collect::<Vec<_>>(),
            [Span::new(4, 5), Span::new(0, 3)]
        );
        assert_eq!(diagnostic.help.as_deref(), Some("add `}`"));
        assert_eq!(diagnostic.to_string(), "error[E0101] at 4..5: unclosed `{`");
    }
}
