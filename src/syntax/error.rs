//! Stage 1, syntax: the parser's error type and the syntax error codes.
//!
//! A `SyntaxError` is what nom passes around while parsing: the offset of a
//! failure, what was expected there, and optionally a help line, a related
//! span, or a complete diagnostic built by the parser for a case it knows
//! well. Combining two errors keeps the one that got further into the input
//! (merging their expectations on a tie), so the message points at the real
//! problem rather than at the last alternative tried.

use nom::error::{ErrorKind, ParseError};
use nom_locate::LocatedSpan;

use super::token::{self, Token, TokenKind};
use crate::diag::{Diagnostic, Span, suggest};

/// The syntax error codes; `docs/diagnostics.md` gives each its meaning.
pub mod codes {
    /// Something other than what the grammar allows here.
    pub const UNEXPECTED: &str = "E0100";
    /// An opening delimiter is never closed.
    pub const UNCLOSED: &str = "E0101";
    /// A closing delimiter with no opening one.
    pub const UNOPENED: &str = "E0102";
    /// A character that starts no token, or a sigil without a name.
    pub const BAD_SIGIL: &str = "E0103";
    /// A tensor type is malformed (missing levels, scalar or memory).
    pub const BAD_TYPE: &str = "E0104";
    /// An unknown scalar type.
    pub const BAD_SCALAR: &str = "E0105";
    /// An unknown memory.
    pub const BAD_MEMORY: &str = "E0106";
    /// A layout with a different number of strides than dims.
    pub const STRIDE_COUNT: &str = "E0107";
    /// A tensor type on a group or a group type on a tensor.
    pub const TYPE_KIND: &str = "E0108";
    /// An unknown spec kind.
    pub const UNKNOWN_SPEC: &str = "E0109";
    /// Wrong, missing or extra spec parameters.
    pub const SPEC_PARAMS: &str = "E0110";
    /// A malformed launch configuration `<<<#blocks, #threads>>>`.
    pub const BAD_LAUNCH: &str = "E0111";
    /// A spec without outputs or without a kind around `<-`.
    pub const SPEC_OPERAND: &str = "E0112";
    /// A malformed `for` header.
    pub const BAD_FOR: &str = "E0113";
    /// A malformed integer expression or literal.
    pub const BAD_INT: &str = "E0114";
    /// `_` where a whole mode cannot be taken.
    pub const BAD_WILDCARD: &str = "E0115";
    /// An index pattern not bound to `.indices()`.
    pub const BAD_PATTERN: &str = "E0116";
    /// An unknown operation after `.`.
    pub const UNKNOWN_OPERATION: &str = "E0117";
    /// A statement or item where it cannot stand.
    pub const MISPLACED: &str = "E0118";
    /// Input nested deeper than the parser accepts.
    pub const TOO_DEEP: &str = "E0119";
    /// A source file larger than 4 GiB.
    pub const TOO_LARGE: &str = "E0120";
    /// A tensor or group named alone, with nothing done to it.
    pub const BARE_NAME: &str = "E0121";
    /// A malformed value of `Init`.
    pub const BAD_FLOAT: &str = "E0122";
    /// A malformed kernel attribute list: an unknown or repeated attribute.
    pub const BAD_ATTRIBUTE: &str = "E0123";
    /// A source file that is not UTF-8.
    pub const INVALID_UTF8: &str = "E0124";
    /// A warning: a file with no kernel compiles to an empty module.
    pub const NO_KERNEL: &str = "W0125";

    /// Every syntax code, in order.
    pub const ALL: [&str; 26] = [
        UNEXPECTED,
        UNCLOSED,
        UNOPENED,
        BAD_SIGIL,
        BAD_TYPE,
        BAD_SCALAR,
        BAD_MEMORY,
        STRIDE_COUNT,
        TYPE_KIND,
        UNKNOWN_SPEC,
        SPEC_PARAMS,
        BAD_LAUNCH,
        SPEC_OPERAND,
        BAD_FOR,
        BAD_INT,
        BAD_WILDCARD,
        BAD_PATTERN,
        UNKNOWN_OPERATION,
        MISPLACED,
        TOO_DEEP,
        TOO_LARGE,
        BARE_NAME,
        BAD_FLOAT,
        BAD_ATTRIBUTE,
        INVALID_UTF8,
        NO_KERNEL,
    ];
}

/// One thing the parser would have accepted at the failure point.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) enum Expected {
    /// A literal character, e.g. `]`.
    Char(char),
    /// A literal token, shown in backticks, e.g. `<-`.
    Token(&'static str),
    /// A described construct or a literal token, already formatted.
    Label(&'static str),
}

/// The error nom threads through the parser.
///
/// Rule: `offset` is a byte offset into the parsed text; `custom`, when
/// present, is the whole diagnostic and the other fields are ignored.
#[derive(Clone, Debug)]
pub struct SyntaxError {
    pub(crate) offset: u32,
    pub(crate) expected: Vec<Expected>,
    pub(crate) help: Option<&'static str>,
    pub(crate) related: Option<(Span, &'static str)>,
    pub(crate) kind: Option<ErrorKind>,
    pub(crate) code: &'static str,
    pub(crate) custom: Option<Box<Diagnostic>>,
}

impl SyntaxError {
    /// An error at `offset` expecting `label`.
    pub(crate) fn expected(offset: u32, label: &'static str) -> SyntaxError {
        SyntaxError::expecting(offset, Expected::Label(label))
    }

    /// An error at `offset` expecting `what`.
    pub(crate) fn expecting(offset: u32, what: Expected) -> SyntaxError {
        SyntaxError {
            offset,
            expected: vec![what],
            help: None,
            related: None,
            kind: None,
            code: codes::UNEXPECTED,
            custom: None,
        }
    }

    /// An error that is a complete diagnostic; its offset is its primary
    /// span's start.
    pub(crate) fn custom(diagnostic: Diagnostic) -> SyntaxError {
        SyntaxError {
            offset: diagnostic.primary.span.start,
            expected: Vec::new(),
            help: None,
            related: None,
            kind: None,
            code: codes::UNEXPECTED,
            custom: Some(Box::new(diagnostic)),
        }
    }

    /// The same error reported under `code` instead of the generic one.
    pub(crate) fn code_override(mut self, code: &'static str) -> SyntaxError {
        self.code = code;
        self
    }

    /// Turns the error into a diagnostic about `src`, whose tokens are
    /// `tokens`: `expected …, found …` at the token where parsing stopped.
    pub(crate) fn into_diagnostic(self, src: &str, tokens: &[Token]) -> Diagnostic {
        if let Some(custom) = self.custom {
            return *custom;
        }
        let (found, span) = found_at(src, tokens, self.offset);
        let expected = describe_expected(&self.expected);
        let mut diagnostic = Diagnostic::error(
            self.code,
            format!("expected {expected}, found {found}"),
            span,
        )
        .with_label(format!("expected {expected}"));
        if let Some((related, message)) = self.related {
            diagnostic = diagnostic.with_secondary(related, message);
        }
        let help = match self.help {
            Some(help) => help.to_string(),
            None => format!("write {expected} here"),
        };
        diagnostic.with_help(help)
    }
}

/// What was found at `offset`: a description and the span to underline.
pub(crate) fn found_at(src: &str, tokens: &[Token], offset: u32) -> (String, Span) {
    match token::token_at(tokens, offset) {
        Some(token) => {
            let text = token.text(src);
            let description = match token.kind {
                TokenKind::Unknown if text.chars().all(char::is_control) => {
                    let code = text.chars().next().map_or(0, u32::from);
                    format!("character U+{code:04X}")
                }
                _ if text.chars().count() > 24 => {
                    let short: String = text.chars().take(20).collect();
                    format!("`{short}…`")
                }
                _ => format!("`{text}`"),
            };
            (description, token.span)
        }
        // Point just after the last token, not at a blank last line.
        None => {
            let end = tokens.last().map_or(0, |last| last.span.end);
            ("end of input".to_string(), Span::at(end))
        }
    }
}

/// `a`, `a or b`, `a, b or c`, without repeats, in the order first seen.
fn describe_expected(expected: &[Expected]) -> String {
    let mut items: Vec<String> = Vec::new();
    for item in expected {
        let text = match item {
            Expected::Char(c) => format!("`{c}`"),
            Expected::Token(text) => format!("`{text}`"),
            Expected::Label(label) => (*label).to_string(),
        };
        if !items.contains(&text) {
            items.push(text);
        }
    }
    match items.as_slice() {
        [] => "something else".to_string(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

impl<T: AsRef<str>, X> ParseError<LocatedSpan<T, X>> for SyntaxError {
    fn from_error_kind(input: LocatedSpan<T, X>, kind: ErrorKind) -> SyntaxError {
        SyntaxError {
            offset: input.location_offset() as u32,
            expected: Vec::new(),
            help: None,
            related: None,
            kind: Some(kind),
            code: codes::UNEXPECTED,
            custom: None,
        }
    }

    fn append(_: LocatedSpan<T, X>, _: ErrorKind, other: SyntaxError) -> SyntaxError {
        other
    }

    fn from_char(input: LocatedSpan<T, X>, c: char) -> SyntaxError {
        let mut error = Self::from_error_kind(input, ErrorKind::Char);
        error.expected.push(Expected::Char(c));
        error
    }

    fn or(self, other: SyntaxError) -> SyntaxError {
        self.furthest(other)
    }
}

impl SyntaxError {
    /// The error that got further; on a tie, a custom diagnostic wins, else
    /// the expectations are merged.
    pub(crate) fn furthest(self, other: SyntaxError) -> SyntaxError {
        use std::cmp::Ordering;
        match self.offset.cmp(&other.offset) {
            Ordering::Greater => self,
            Ordering::Less => other,
            Ordering::Equal => {
                if self.custom.is_some() {
                    return self;
                }
                if other.custom.is_some() {
                    return other;
                }
                let mut merged = self;
                for item in other.expected {
                    if !merged.expected.contains(&item) {
                        merged.expected.push(item);
                    }
                }
                merged.help = merged.help.or(other.help);
                merged.related = merged.related.or(other.related);
                merged
            }
        }
    }
}

/// The candidate closest to `word`, if close enough to be a likely typo
/// (distance at most a third of the longer word, at least 1), comparing
/// case-insensitively.
pub(crate) fn suggest<'c>(word: &str, candidates: &[&'c str]) -> Option<&'c str> {
    suggest::closest(
        word,
        candidates.iter().copied(),
        suggest::Case::Insensitive,
        |candidate| (word.len().max(candidate.len()) / 3).max(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn furthest_error_wins_and_ties_merge() {
        let near = SyntaxError::expected(3, "a layout");
        let far = SyntaxError::expected(7, "`]`");
        assert_eq!(near.clone().furthest(far.clone()).offset, 7);
        assert_eq!(far.clone().furthest(near).offset, 7);
        let other = SyntaxError::expected(7, "`,`");
        let merged = far.furthest(other);
        assert_eq!(describe_expected(&merged.expected), "`]` or `,`");
    }

    #[test]
    fn suggestions_are_close_words_only() {
        let kinds = ["Move", "MatMul", "Shfl"];
        assert_eq!(suggest("Mvoe", &kinds), Some("Move"));
        assert_eq!(suggest("move", &kinds), Some("Move"));
        assert_eq!(suggest("Transpose", &kinds), None);
        assert_eq!(suggest("fp61", &["fp16", "fp32"]), Some("fp16"));
        assert_eq!(suggest("tiel", &["tile", "reshape"]), Some("tile"));
    }

    #[test]
    fn message_names_what_was_found() {
        let src = "[16, 16.fp16";
        let tokens = token::tokenize(src);
        let mut error = SyntaxError::expected(7, "`,`");
        error.expected.push(Expected::Char(']'));
        let diagnostic = error.into_diagnostic(src, &tokens);
        assert_eq!(diagnostic.message, "expected `,` or `]`, found `.`");
        assert_eq!(diagnostic.primary.span, Span::new(7, 8));
        let diagnostic =
            SyntaxError::expected(13, "`]`").into_diagnostic("[16, 16.fp16\n", &tokens);
        assert_eq!(diagnostic.message, "expected `]`, found end of input");
        assert_eq!(diagnostic.primary.span, Span::at(12));
    }
}
