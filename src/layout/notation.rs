//! Stage 0, the algebra: the written forms of layouts and swizzled layouts,
//! both ways. Printing: CuTe notation through `Display`, the IR's bracket
//! notation through `.ir()`. Parsing: `parse_layout` / `FromStr` accept
//! either notation, built on the generic combinators of `text`.
//!
//! | value            | CuTe notation                 | IR notation                           |
//! |------------------|-------------------------------|---------------------------------------|
//! | layout           | `(4,(2,4)):(2,(1,8))`         | `[4,(2,4) : 2,(1,8)]`                 |
//! | swizzled layout  | `Sw<3,3,3> o (8,64):(64,1)`   | `[8,64 : 64,1].Swizzle<3,3,3>`        |
//! | … with an offset | `Sw<3,3,3> o 32 o (8,64):(64,1)` | `(32 + [8,64 : 64,1]).Swizzle<3,3,3>` |
//!
//! Strides left out (`(4,8)`, `[4,8]`) mean compact column-major.

use std::fmt;
use std::str::FromStr;

use nom::{
    IResult, Parser,
    character::complete::{char, digit1, multispace0, one_of},
    combinator::{opt, recognize},
    error::ErrorKind,
};
use nom_locate::LocatedSpan;
use thiserror::Error;

use super::error::LayoutError;
use super::int_tuple::IntTuple;
use super::layout_value::Layout;
use super::swizzle::{Swizzle, SwizzledLayout};
use super::text::{bracket_layout, cute_layout, swizzle_params};
use super::tuple::Tuple;

/// Why a text is not a layout.
///
/// Rule: `offset` is a byte offset into the parsed text; line and column are
/// the caller's to compute when it prints.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum LayoutParseError {
    /// The text does not follow either notation.
    #[error("at byte {offset}: expected {expected}, found {found}")]
    Syntax {
        /// Where the parse stopped.
        offset: usize,
        /// What would have been accepted there.
        expected: String,
        /// What is there instead (`end of input` at the end).
        found: String,
    },
    /// The text is well formed but its numbers do not make a valid layout
    /// (incongruent stride, zero size, invalid swizzle, overflow).
    #[error("at byte {offset}: {error}")]
    Invalid {
        /// Where the offending layout or swizzle starts.
        offset: usize,
        /// The rule it breaks.
        error: LayoutError,
    },
}

type Span<'a> = LocatedSpan<&'a str>;

/// The parser's internal error: keeps the furthest failure.
#[derive(Debug)]
enum TextError {
    Expected { offset: usize, expected: String },
    Invalid { offset: usize, error: LayoutError },
}

impl TextError {
    fn offset(&self) -> usize {
        match self {
            TextError::Expected { offset, .. } | TextError::Invalid { offset, .. } => *offset,
        }
    }

    fn expected(at: Span<'_>, expected: &str) -> TextError {
        TextError::Expected {
            offset: at.location_offset(),
            expected: expected.to_string(),
        }
    }
}

impl<'a> nom::error::ParseError<Span<'a>> for TextError {
    fn from_error_kind(input: Span<'a>, kind: ErrorKind) -> Self {
        let expected = match kind {
            ErrorKind::Count => "as many strides as dims",
            ErrorKind::Tag => "`Swizzle<B,M,S>` or `Sw<B,M,S>`",
            ErrorKind::Digit => "an integer",
            ErrorKind::Eof => "end of input",
            _ => "a layout",
        };
        TextError::expected(input, expected)
    }

    fn append(_: Span<'a>, _: ErrorKind, other: Self) -> Self {
        other
    }

    fn from_char(input: Span<'a>, c: char) -> Self {
        TextError::expected(input, &format!("`{c}`"))
    }

    fn or(self, other: Self) -> Self {
        if other.offset() > self.offset() {
            other
        } else {
            self
        }
    }
}

type PResult<'a, T> = IResult<Span<'a>, T, TextError>;

fn ws(input: Span<'_>) -> PResult<'_, Span<'_>> {
    multispace0(input)
}

/// An integer leaf, optionally marked `_` as CuTe prints static integers.
fn integer(input: Span<'_>) -> PResult<'_, i64> {
    let (rest, _) = opt(char('_')).parse(input)?;
    let (rest, digits) =
        recognize((opt(one_of("+-")), digit1))
            .parse(rest)
            .map_err(|_: nom::Err<TextError>| {
                nom::Err::Error(TextError::expected(input, "an integer or `(`"))
            })?;
    match digits.fragment().parse::<i64>() {
        Ok(value) => Ok((rest, value)),
        Err(_) => Err(nom::Err::Failure(TextError::expected(
            digits,
            "an integer that fits in 64 bits",
        ))),
    }
}

fn invalid(at: Span<'_>, error: LayoutError) -> nom::Err<TextError> {
    nom::Err::Failure(TextError::Invalid {
        offset: at.location_offset(),
        error,
    })
}

/// Builds a layout; omitted strides mean compact column-major.
fn make_layout(
    at: Span<'_>,
    shape: IntTuple,
    stride: Option<IntTuple>,
) -> Result<Layout, nom::Err<TextError>> {
    match stride {
        Some(stride) => Layout::new(shape, stride),
        None => Layout::col_major(shape),
    }
    .map_err(|error| invalid(at, error))
}

/// A layout in either notation.
fn layout_term(input: Span<'_>) -> PResult<'_, Layout> {
    let (start, _) = ws(input)?;
    if start.fragment().starts_with('[') {
        let (rest, bracket) = bracket_layout(integer).parse(start)?;
        let shape = Tuple::Node(bracket.dims);
        let stride = bracket.strides.map(Tuple::Node);
        Ok((rest, make_layout(start, shape, stride)?))
    } else {
        let (rest, (shape, stride)) = cute_layout(integer).parse(start)?;
        Ok((rest, make_layout(start, shape, stride)?))
    }
}

fn swizzle_term(input: Span<'_>) -> PResult<'_, Swizzle> {
    let (start, _) = ws(input)?;
    let (rest, (b, m, s)) = swizzle_params(integer).parse(start)?;
    let swizzle = Swizzle::new(b, m, s).map_err(|error| invalid(start, error))?;
    Ok((rest, swizzle))
}

/// `Sw<B,M,S> o [offset o] layout` (CuTe's composed-layout notation).
fn cute_swizzled(input: Span<'_>) -> PResult<'_, SwizzledLayout> {
    let (rest, swizzle) = swizzle_term(input)?;
    let (rest, _) = ws(rest)?;
    let (rest, _) = char('o').parse(rest)?;
    let with_offset = (ws, integer, ws, char('o')).parse(rest);
    let (rest, offset) = match with_offset {
        Ok((after, (_, offset, _, _))) => (after, offset),
        Err(_) => (rest, 0),
    };
    let (rest, layout) = layout_term(rest)?;
    Ok((rest, SwizzledLayout::new(swizzle, offset, layout)))
}

/// `layout[.Swizzle<B,M,S>]` or `(offset + layout).Swizzle<B,M,S>` (IR).
fn ir_swizzled(input: Span<'_>) -> PResult<'_, SwizzledLayout> {
    let (start, _) = ws(input)?;
    let offset_prefix = (char('('), ws, integer, ws, char('+')).parse(start);
    if let Ok((rest, (_, _, offset, _, _))) = offset_prefix {
        let (rest, layout) = layout_term(rest).map_err(commit)?;
        let (rest, _) = ws(rest)?;
        let (rest, _) = char(')').parse(rest).map_err(commit)?;
        let (rest, _) = ws(rest)?;
        let (rest, _) = char('.').parse(rest).map_err(commit)?;
        let (rest, swizzle) = swizzle_term(rest).map_err(commit)?;
        return Ok((rest, SwizzledLayout::new(swizzle, offset, layout)));
    }
    let (rest, layout) = layout_term(start)?;
    let suffix = (ws, char('.')).parse(rest);
    match suffix {
        Ok((after_dot, _)) => {
            let (rest, swizzle) = swizzle_term(after_dot).map_err(commit)?;
            Ok((rest, SwizzledLayout::new(swizzle, 0, layout)))
        }
        Err(_) => Ok((rest, SwizzledLayout::new(Swizzle::identity(), 0, layout))),
    }
}

/// Turns a recoverable error into a failure once a form is recognised.
fn commit(error: nom::Err<TextError>) -> nom::Err<TextError> {
    match error {
        nom::Err::Error(e) => nom::Err::Failure(e),
        other => other,
    }
}

fn swizzled_term(input: Span<'_>) -> PResult<'_, SwizzledLayout> {
    let (start, _) = ws(input)?;
    if start.fragment().starts_with("Sw") {
        cute_swizzled(start)
    } else {
        ir_swizzled(start)
    }
}

/// Runs `parser` over the whole of `text` (surrounding whitespace allowed).
fn parse_all<T>(
    text: &str,
    parser: impl Fn(Span<'_>) -> PResult<'_, T>,
) -> Result<T, LayoutParseError> {
    let to_public = |error: TextError| match error {
        TextError::Expected { offset, expected } => LayoutParseError::Syntax {
            offset,
            expected,
            found: found_at(text, offset),
        },
        TextError::Invalid { offset, error } => LayoutParseError::Invalid { offset, error },
    };
    match parser(Span::new(text)) {
        Ok((rest, value)) => {
            let (rest, _) = ws(rest).map_err(|_| LayoutParseError::Syntax {
                offset: rest.location_offset(),
                expected: "end of input".to_string(),
                found: found_at(text, rest.location_offset()),
            })?;
            if rest.fragment().is_empty() {
                Ok(value)
            } else {
                let offset = rest.location_offset();
                Err(LayoutParseError::Syntax {
                    offset,
                    expected: "end of input".to_string(),
                    found: found_at(text, offset),
                })
            }
        }
        Err(nom::Err::Error(e) | nom::Err::Failure(e)) => Err(to_public(e)),
        Err(nom::Err::Incomplete(_)) => Err(LayoutParseError::Syntax {
            offset: text.len(),
            expected: "more input".to_string(),
            found: "end of input".to_string(),
        }),
    }
}

/// A short quote of the text at `offset`, for error messages.
fn found_at(text: &str, offset: usize) -> String {
    match text.get(offset..) {
        Some(rest) if !rest.trim().is_empty() => {
            let token: String = rest
                .chars()
                .take_while(|c| !c.is_whitespace())
                .take(12)
                .collect();
            format!("`{token}`")
        }
        Some(_) | None => "end of input".to_string(),
    }
}

/// Parses a layout written in CuTe notation (`(4,(2,4)):(2,(1,8))`, `8:1`,
/// `(4,8)`) or in the IR's bracket notation (`[4,(2,4) : 2,(1,8)]`, `[4,8]`).
/// Omitted strides mean compact column-major; CuTe's `_` mark on static
/// integers (`_8`) is accepted and ignored.
///
/// ```
/// use graphene::layout::{parse_layout, LayoutParseError};
/// let a = parse_layout("[4,(2,4) : 2,(1,8)]").unwrap();
/// assert_eq!(a, parse_layout("(4,(2,4)):(2,(1,8))").unwrap());
/// assert_eq!(parse_layout("[4,8]").unwrap().to_string(), "(4,8):(1,4)");
/// let error = parse_layout("(4,8):(1,)").unwrap_err();
/// assert!(matches!(error, LayoutParseError::Syntax { offset: 9, .. }));
/// ```
pub fn parse_layout(text: &str) -> Result<Layout, LayoutParseError> {
    parse_all(text, layout_term)
}

/// Parses a swizzled layout: CuTe's `Sw<3,3,3> o (8,64):(64,1)` (an offset
/// may sit between: `Sw<3,3,3> o 32 o …`), or the IR's
/// `[8,64 : 64,1].Swizzle<3,3,3>` and `(32 + [8,64 : 64,1]).Swizzle<3,3,3>`.
/// A plain layout parses with the identity swizzle.
///
/// ```
/// use graphene::layout::parse_swizzled_layout;
/// let s = parse_swizzled_layout("[8,64 : 64,1].Swizzle<3,3,3>").unwrap();
/// assert_eq!(s.to_string(), "Sw<3,3,3> o (8,64):(64,1)");
/// assert_eq!(s, parse_swizzled_layout("Sw<3,3,3> o (8,64):(64,1)").unwrap());
/// ```
pub fn parse_swizzled_layout(text: &str) -> Result<SwizzledLayout, LayoutParseError> {
    parse_all(text, swizzled_term)
}

impl FromStr for Layout {
    type Err = LayoutParseError;

    fn from_str(text: &str) -> Result<Layout, LayoutParseError> {
        parse_layout(text)
    }
}

impl FromStr for SwizzledLayout {
    type Err = LayoutParseError;

    fn from_str(text: &str) -> Result<SwizzledLayout, LayoutParseError> {
        parse_swizzled_layout(text)
    }
}

impl FromStr for Swizzle {
    type Err = LayoutParseError;

    fn from_str(text: &str) -> Result<Swizzle, LayoutParseError> {
        parse_all(text, swizzle_term)
    }
}

/// CuTe notation: `shape:stride`, e.g. `(4,(2,4)):(2,(1,8))`.
impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.shape(), self.stride())
    }
}

/// CuTe notation: `Sw<B,M,S>`.
impl fmt::Display for Swizzle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sw<{},{},{}>", self.bits(), self.base(), self.shift())
    }
}

/// CuTe notation: `Sw<B,M,S> o L`, or `Sw<B,M,S> o offset o L`.
impl fmt::Display for SwizzledLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} o ", self.swizzle())?;
        if self.offset() != 0 {
            write!(f, "{} o ", self.offset())?;
        }
        write!(f, "{}", self.layout())
    }
}

/// A layout printed in the IR's bracket notation (see [`Layout::ir`]).
#[derive(Clone, Copy, Debug)]
pub struct IrLayout<'a>(&'a Layout);

/// A swizzled layout printed in the IR's notation (see [`SwizzledLayout::ir`]).
#[derive(Clone, Copy, Debug)]
pub struct IrSwizzledLayout<'a>(&'a SwizzledLayout);

impl Layout {
    /// The IR's bracket notation: the top-level modes' shapes, ` : `, their
    /// strides — `[4,(2,4) : 2,(1,8)]`; a leaf layout is one mode, `[8 : 1]`;
    /// the empty layout is `[]`.
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// let l: Layout = "((4,2)):((1,16))".parse().unwrap();
    /// assert_eq!(l.ir().to_string(), "[(4,2) : (1,16)]");
    /// ```
    pub fn ir(&self) -> IrLayout<'_> {
        IrLayout(self)
    }
}

impl SwizzledLayout {
    /// The IR's notation: `[8,64 : 64,1].Swizzle<3,3,3>`, or with an offset
    /// `(32 + [8,64 : 64,1]).Swizzle<3,3,3>`; an identity swizzle prints the
    /// layout alone.
    ///
    /// ```
    /// use graphene::layout::{Layout, Swizzle, SwizzledLayout};
    /// let l: Layout = "(8,64):(64,1)".parse().unwrap();
    /// let s = SwizzledLayout::new(Swizzle::new(3, 3, 3).unwrap(), 0, l);
    /// assert_eq!(s.ir().to_string(), "[8,64 : 64,1].Swizzle<3,3,3>");
    /// ```
    pub fn ir(&self) -> IrSwizzledLayout<'_> {
        IrSwizzledLayout(self)
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, modes: &[IntTuple]) -> fmt::Result {
    for (i, mode) in modes.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write!(f, "{mode}")?;
    }
    Ok(())
}

impl fmt::Display for IrLayout<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let layout = self.0;
        let (shapes, strides) = match (layout.shape(), layout.stride()) {
            (Tuple::Node(s), Tuple::Node(d)) => (s.clone(), d.clone()),
            (shape, stride) => (vec![shape.clone()], vec![stride.clone()]),
        };
        if shapes.is_empty() {
            return f.write_str("[]");
        }
        f.write_str("[")?;
        write_list(f, &shapes)?;
        f.write_str(" : ")?;
        write_list(f, &strides)?;
        f.write_str("]")
    }
}

impl fmt::Display for IrSwizzledLayout<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        let sw = s.swizzle();
        match (s.offset(), sw.is_identity()) {
            (0, true) => write!(f, "{}", s.layout().ir()),
            (0, false) => write!(
                f,
                "{}.Swizzle<{},{},{}>",
                s.layout().ir(),
                sw.bits(),
                sw.base(),
                sw.shift()
            ),
            (offset, _) => write!(
                f,
                "({offset} + {}).Swizzle<{},{},{}>",
                s.layout().ir(),
                sw.bits(),
                sw.base(),
                sw.shift()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_both_notations() {
        let c = parse_layout("[4,(2,4) : 2,(1,8)]").unwrap();
        assert_eq!(c.to_string(), "(4,(2,4)):(2,(1,8))");
        assert_eq!(c.ir().to_string(), "[4,(2,4) : 2,(1,8)]");
        assert_eq!(Layout::leaf(8, 1).unwrap().ir().to_string(), "[8 : 1]");
        assert_eq!(Layout::empty().ir().to_string(), "[]");
        assert_eq!(Layout::empty().to_string(), "():()");
    }

    #[test]
    fn single_mode_brackets() {
        assert_eq!(
            parse_layout("[32:1]").unwrap(),
            Layout::leaf(32, 1).unwrap()
        );
        let nested = parse_layout("[(4,2) : (1,16)]").unwrap();
        assert_eq!(nested.rank(), 1);
        assert_eq!(nested.to_string(), "((4,2)):((1,16))");
        assert_eq!(parse_layout("[ : ]").unwrap(), Layout::empty());
        assert_eq!(parse_layout("()").unwrap(), Layout::empty());
    }

    #[test]
    fn cute_static_marks_are_accepted() {
        assert_eq!(
            parse_layout("(_4,(_2,4)):(_2,(_1,8))").unwrap(),
            parse_layout("(4,(2,4)):(2,(1,8))").unwrap()
        );
        assert_eq!(parse_layout("8:-2").unwrap().to_string(), "8:-2");
    }

    #[test]
    fn syntax_errors_say_where_and_what() {
        let cases = [
            ("(4,8):", 6, "an integer or `(`"),
            ("[4,8 : 1]", 8, "as many strides as dims"),
            ("(4,8) x", 6, "end of input"),
            ("[4,8", 4, "`]`"),
            (
                "(4,99999999999999999999)",
                3,
                "an integer that fits in 64 bits",
            ),
            ("Sw<3,3> o 8:1", 6, "`,`"),
            ("(8 + [4:1]).Swizzle<3,3,3", 25, "`>`"),
        ];
        for (text, offset, expected) in cases {
            match parse_layout(text)
                .or_else(|_| parse_swizzled_layout(text).map(|_| Layout::empty()))
            {
                Err(LayoutParseError::Syntax {
                    offset: o,
                    expected: e,
                    ..
                }) => {
                    assert_eq!((o, e.as_str()), (offset, expected), "{text}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn invalid_layouts_are_reported_with_their_position() {
        let error = parse_layout("  (4,8):(1,(2,3))").unwrap_err();
        assert!(matches!(
            error,
            LayoutParseError::Invalid {
                offset: 2,
                error: LayoutError::Incongruent { .. }
            }
        ));
        let error = parse_layout("[4,0]").unwrap_err();
        assert!(matches!(error, LayoutParseError::Invalid { .. }));
        let error = parse_swizzled_layout("Sw<3,3,1> o 8:1").unwrap_err();
        assert!(matches!(
            error,
            LayoutParseError::Invalid {
                offset: 0,
                error: LayoutError::InvalidSwizzle { .. }
            }
        ));
    }

    #[test]
    fn swizzled_forms_round_trip() {
        for text in [
            "Sw<3,3,3> o (8,64):(64,1)",
            "Sw<2,4,-3> o 32 o (8,(2,4)):(64,(1,8))",
            "Sw<0,0,0> o 8:1",
        ] {
            let s = parse_swizzled_layout(text).unwrap();
            assert_eq!(s.to_string(), text);
            let ir = s.ir().to_string();
            assert_eq!(parse_swizzled_layout(&ir).unwrap(), s, "{ir}");
        }
        let s = parse_swizzled_layout("Sw<3,3,3> o _0 o (_8,_64):(_64,_1)").unwrap();
        assert_eq!(s.ir().to_string(), "[8,64 : 64,1].Swizzle<3,3,3>");
        let s = parse_swizzled_layout("(32 + [8,64 : 64,1]).Swizzle<3,3,3>").unwrap();
        assert_eq!(s.offset(), 32);
        assert_eq!(
            "Sw<1,2,3>".parse::<Swizzle>().unwrap().to_string(),
            "Sw<1,2,3>"
        );
    }
}
