//! Stage 1, syntax: the parser's input type and its smallest pieces —
//! whitespace and comments, symbols, keywords, words, sigil names, integer
//! literals — plus the combinators that label failures with what was
//! expected and a help line, and the one comma-separated list.
//!
//! Convention: every parser skips the whitespace and comments *before* its
//! text, never after, so a parser's span runs from its first character to
//! the offset of the input it returns.

use std::cell::RefCell;

use nom::{Err, IResult, Input as _, Parser};
use nom_locate::LocatedSpan;

use super::error::{Expected, SyntaxError, codes};
use super::token::Token;
use crate::diag::{Diagnostic, Span};

/// What every parser can see besides its input: the whole text, its tokens
/// (to describe what was found and to recover), and the diagnostics of
/// statements already skipped by error recovery.
pub(crate) struct State<'s> {
    pub(crate) src: &'s str,
    pub(crate) tokens: Vec<Token>,
    pub(crate) diagnostics: RefCell<Vec<Diagnostic>>,
    /// Whether the parser is inside a `contract { … }` block, whose specs
    /// have no launch groups.
    pub(crate) in_contract: std::cell::Cell<bool>,
}

impl<'s> State<'s> {
    pub(crate) fn new(src: &'s str, tokens: Vec<Token>) -> State<'s> {
        State {
            src,
            tokens,
            diagnostics: RefCell::new(Vec::new()),
            in_contract: std::cell::Cell::new(false),
        }
    }

    /// Records a diagnostic for input the parser has skipped.
    pub(crate) fn report(&self, error: SyntaxError) {
        let diagnostic = error.into_diagnostic(self.src, &self.tokens);
        self.diagnostics.borrow_mut().push(diagnostic);
    }
}

/// The parser's input: text with its offset, and the shared state.
pub(crate) type Input<'s> = LocatedSpan<&'s str, &'s State<'s>>;

/// What every parser returns.
pub(crate) type PResult<'s, T> = IResult<Input<'s>, T, SyntaxError>;

/// The byte offset of `input` in the whole text.
pub(crate) fn offset(input: &Input) -> u32 {
    input.location_offset() as u32
}

/// The span from `start` to where `rest` begins.
pub(crate) fn span_to(start: u32, rest: &Input) -> Span {
    Span::new(start, offset(rest))
}

/// Skips whitespace and `//` comments; never fails.
pub(crate) fn skip(input: Input) -> Input {
    let text = *input.fragment();
    let skipped = text.len() - skip_str(text).len();
    input.take_from(skipped)
}

/// `text` without its leading whitespace and comments.
pub(crate) fn skip_str(text: &str) -> &str {
    let mut rest = text;
    loop {
        let trimmed = rest.trim_start();
        if trimmed.starts_with("//") {
            // A comment ends at LF, CR or CRLF: CR-only files have lines too.
            rest = &trimmed[trimmed.find(['\n', '\r']).unwrap_or(trimmed.len())..];
        } else {
            return trimmed;
        }
    }
}

/// The next character after whitespace and comments.
pub(crate) fn peek(input: &Input) -> Option<char> {
    skip(*input).fragment().chars().next()
}

/// Whether the text after whitespace starts with `text`.
pub(crate) fn at(input: &Input, text: &str) -> bool {
    skip(*input).fragment().starts_with(text)
}

/// Whether the text after whitespace starts with the word `word`.
pub(crate) fn at_keyword(input: &Input, word: &str) -> bool {
    let input = skip(*input);
    let text = input.fragment();
    text.starts_with(word) && !text[word.len()..].starts_with(is_name_char)
}

pub(crate) fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Exactly `text` (after whitespace); its span.
pub(crate) fn sym<'s>(
    text: &'static str,
) -> impl Parser<Input<'s>, Output = Span, Error = SyntaxError> {
    move |input: Input<'s>| {
        let input = skip(input);
        if input.fragment().starts_with(text) {
            let start = offset(&input);
            let rest = input.take_from(text.len());
            let span = span_to(start, &rest);
            Ok((rest, span))
        } else {
            Err(Err::Error(SyntaxError::expecting(
                offset(&input),
                Expected::Token(text),
            )))
        }
    }
}

/// `=` that is not the start of `==`.
pub(crate) fn equals(input: Input) -> PResult<Span> {
    if at(&input, "==") {
        let input = skip(input);
        return Err(Err::Error(SyntaxError::expecting(
            offset(&input),
            Expected::Token("="),
        )));
    }
    sym("=").parse(input)
}

/// The keyword `word`, not followed by a name character.
pub(crate) fn keyword<'s>(
    word: &'static str,
) -> impl Parser<Input<'s>, Output = Span, Error = SyntaxError> {
    move |input: Input<'s>| {
        if at_keyword(&input, word) {
            sym(word).parse(input)
        } else {
            let input = skip(input);
            Err(Err::Error(SyntaxError::expecting(
                offset(&input),
                Expected::Token(word),
            )))
        }
    }
}

/// A word `[A-Za-z_][A-Za-z0-9_]*` (including `_` alone), with its span.
pub(crate) fn word<'s>(input: Input<'s>) -> PResult<'s, (&'s str, Span)> {
    let input = skip(input);
    let text = input.fragment();
    let starts = text.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    if !starts {
        return Err(Err::Error(SyntaxError::expected(offset(&input), "a name")));
    }
    let len = text.find(|c: char| !is_name_char(c)).unwrap_or(text.len());
    let start = offset(&input);
    let (rest, taken) = input.take_split(len);
    Ok((
        rest,
        (*taken.fragment(), Span::new(start, start + len as u32)),
    ))
}

/// A plain identifier: a word other than `_`.
pub(crate) fn ident(input: Input) -> PResult<super::ast::Name> {
    let start = offset(&skip(input));
    match word(input) {
        Ok((rest, (text, span))) if text != "_" => Ok((
            rest,
            super::ast::Name {
                text: text.to_string(),
                span,
            },
        )),
        Ok(_) | Err(Err::Error(_)) => Err(Err::Error(SyntaxError::expected(start, "a name"))),
        Err(other) => Err(other),
    }
}

/// A sigil (`%`, `#` or `@`) directly followed by name characters.
pub(crate) fn sigil_name<'s>(
    sigil: char,
    label: &'static str,
) -> impl Parser<Input<'s>, Output = super::ast::Name, Error = SyntaxError> {
    move |input: Input<'s>| {
        let input = skip(input);
        let start = offset(&input);
        let text = input.fragment();
        let len = if text.starts_with(sigil) {
            text[1..]
                .find(|c: char| !is_name_char(c))
                .unwrap_or(text.len() - 1)
        } else {
            0
        };
        if len == 0 {
            return Err(Err::Error(SyntaxError::expected(start, label)));
        }
        let (rest, taken) = input.take_split(1 + len);
        let name = super::ast::Name {
            text: taken.fragment()[1..].to_string(),
            span: Span::new(start, start + 1 + len as u32),
        };
        Ok((rest, name))
    }
}

/// A decimal integer literal that fits in an `i64`.
pub(crate) fn int_literal(input: Input) -> PResult<(i64, Span)> {
    let input = skip(input);
    let start = offset(&input);
    let text = input.fragment();
    let len = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    if len == 0 {
        return Err(Err::Error(SyntaxError::expected(start, "an integer")));
    }
    let span = Span::new(start, start + len as u32);
    let Ok(value) = text[..len].parse::<i64>() else {
        let diagnostic = Diagnostic::error(codes::BAD_INT, "integer literal too large", span)
            .with_label("does not fit in 64 bits")
            .with_help(format!("integers range up to {}", i64::MAX));
        return Err(Err::Failure(SyntaxError::custom(diagnostic)));
    };
    Ok((input.take_from(len), (value, span)))
}

/// Runs `parser`; if it fails without getting past its first token, the
/// failure says `label` was expected (and `help`, if given, is its help).
pub(crate) fn expect<'s, O>(
    label: &'static str,
    help: Option<&'static str>,
    mut parser: impl Parser<Input<'s>, Output = O, Error = SyntaxError>,
) -> impl Parser<Input<'s>, Output = O, Error = SyntaxError> {
    move |input: Input<'s>| {
        let start = offset(&skip(input));
        match parser.parse(input) {
            Err(Err::Error(error)) if error.offset <= start && error.custom.is_none() => {
                let mut error = SyntaxError::expected(start, label);
                error.help = help;
                Err(Err::Error(error))
            }
            other => other,
        }
    }
}

/// Adds `help` to a failure of `parser` that has none.
pub(crate) fn with_help<'s, O>(
    help: &'static str,
    mut parser: impl Parser<Input<'s>, Output = O, Error = SyntaxError>,
) -> impl Parser<Input<'s>, Output = O, Error = SyntaxError> {
    move |input: Input<'s>| {
        parser.parse(input).map_err(|error| {
            error.map(|mut error| {
                error.help = error.help.or(Some(help));
                error
            })
        })
    }
}

/// Turns a recoverable failure of `parser` into a committed one.
pub(crate) fn cut<'s, O>(
    mut parser: impl Parser<Input<'s>, Output = O, Error = SyntaxError>,
) -> impl Parser<Input<'s>, Output = O, Error = SyntaxError> {
    move |input: Input<'s>| match parser.parse(input) {
        Err(Err::Error(error)) => Err(Err::Failure(error)),
        other => other,
    }
}

/// `item, item, …`: one item, then every `, item` after it. An item after a
/// comma is committed (a comma promises one); the first is not, so a caller
/// that commits to the list wraps it in [`cut`].
pub(crate) fn comma_list<'s, O>(
    mut item: impl Parser<Input<'s>, Output = O, Error = SyntaxError>,
) -> impl Parser<Input<'s>, Output = Vec<O>, Error = SyntaxError> {
    move |input: Input<'s>| {
        let (rest, first) = item.parse(input)?;
        commas_after(rest, first, |input| item.parse(input))
    }
}

/// The rest of a comma-separated list whose `first` item is already parsed
/// (by a parser of its own, e.g. with another label): every `, item` after
/// it, each committed, as [`comma_list`] does.
pub(crate) fn commas_after<'s, O>(
    input: Input<'s>,
    first: O,
    mut item: impl Parser<Input<'s>, Output = O, Error = SyntaxError>,
) -> PResult<'s, Vec<O>> {
    let mut items = vec![first];
    let mut rest = input;
    while at(&rest, ",") {
        let (after, _) = sym(",").parse(rest)?;
        let (after, next) = cut(|input| item.parse(input)).parse(after)?;
        items.push(next);
        rest = after;
    }
    Ok((rest, items))
}

/// A committed failure carrying a complete diagnostic.
pub(crate) fn fail<T>(diagnostic: Diagnostic) -> Result<T, Err<SyntaxError>> {
    Err(Err::Failure(SyntaxError::custom(diagnostic)))
}

/// Whether a parse result is a recoverable failure (so an alternative may
/// be tried).
pub(crate) fn is_backtrack<T>(result: &Result<T, Err<SyntaxError>>) -> bool {
    matches!(result, Err(Err::Error(_)))
}
