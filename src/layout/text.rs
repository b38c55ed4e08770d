//! Stage 0, the algebra: nom combinators for the two written forms of a
//! layout, generic over the input type, the error type and the leaf parser.
//!
//! - CuTe notation: `(4,(2,4)):(2,(1,8))`, or a shape alone `(4,8)`.
//! - The IR's bracket form: `[4,(2,4) : 2,(1,8)]`, or dims alone `[4,8]`.
//! - A swizzle functor: `Swizzle<3,3,3>` (IR) or `Sw<3,3,3>` (CuTe).
//!
//! The IR parser plugs in a leaf parser for symbolic dimensions (`M`, `K/2`)
//! and `nom_locate` spans; the layout parser plugs in plain integers. Both see
//! the same grammar. Whitespace (spaces, tabs, newlines) is allowed between
//! tokens; comments are the caller's business.

use nom::{
    AsChar, Compare, IResult, Input, Parser,
    bytes::complete::tag,
    character::complete::{char, multispace0},
    error::ParseError,
};

use super::Tuple;

/// A layout as written in the IR's bracket form, before any meaning is given
/// to it: the top-level dims and, if a `:` was written, the top-level strides.
///
/// Rule: when `strides` is present it has as many modes as `dims` (checked by
/// the parser); congruence inside each mode is the caller's to check.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct BracketLayout<T> {
    /// The modes before the `:`; empty for `[]`.
    pub dims: Vec<Tuple<T>>,
    /// The modes after the `:`, if any.
    pub strides: Option<Vec<Tuple<T>>>,
}

fn ws<I, E>(input: I) -> IResult<I, I, E>
where
    I: Input,
    <I as Input>::Item: AsChar,
    E: ParseError<I>,
{
    multispace0(input)
}

fn tuple_rec<I, T, E, L>(input: I, leaf: &mut L) -> IResult<I, Tuple<T>, E>
where
    I: Input + Clone,
    <I as Input>::Item: AsChar,
    E: ParseError<I>,
    L: Parser<I, Output = T, Error = E>,
{
    let (rest, _) = ws(input.clone())?;
    if let Ok((rest, _)) = char::<I, E>('(').parse(rest.clone()) {
        let (rest, modes) = mode_list(rest, leaf)?;
        let (rest, _) = ws(rest)?;
        let (rest, _) = char(')').parse(rest)?;
        return Ok((rest, Tuple::Node(modes)));
    }
    let (rest, value) = leaf.parse(rest)?;
    Ok((rest, Tuple::Leaf(value)))
}

/// Comma-separated tuples, possibly none (for `()` and `[]`).
fn mode_list<I, T, E, L>(input: I, leaf: &mut L) -> IResult<I, Vec<Tuple<T>>, E>
where
    I: Input + Clone,
    <I as Input>::Item: AsChar,
    E: ParseError<I>,
    L: Parser<I, Output = T, Error = E>,
{
    let mut modes = Vec::new();
    let (mut rest, _) = ws(input)?;
    // An empty list ends at the closing bracket or at the `:` of `[ : ]`.
    match tuple_rec(rest.clone(), leaf) {
        Ok((after, first)) => {
            modes.push(first);
            rest = after;
        }
        Err(nom::Err::Error(_)) => return Ok((rest, modes)),
        Err(other) => return Err(other),
    }
    loop {
        let (after_ws, _) = ws(rest.clone())?;
        match char::<I, E>(',').parse(after_ws) {
            Ok((after_comma, _)) => {
                let (after, mode) = tuple_rec(after_comma, leaf)?;
                modes.push(mode);
                rest = after;
            }
            Err(_) => return Ok((rest, modes)),
        }
    }
}

/// A hierarchical tuple in CuTe notation: a leaf, or `(t, t, ...)`.
///
/// ```
/// use graphene::layout::{text::tuple, Tuple};
/// use nom::{Parser, character::complete::i64};
/// let (_, t) = tuple::<_, _, nom::error::Error<&str>, _>(i64).parse("(4,(2,4))").unwrap();
/// assert_eq!(t.to_string(), "(4,(2,4))");
/// ```
pub fn tuple<I, T, E, L>(mut leaf: L) -> impl Parser<I, Output = Tuple<T>, Error = E>
where
    I: Input + Clone,
    <I as Input>::Item: AsChar,
    E: ParseError<I>,
    L: Parser<I, Output = T, Error = E>,
{
    move |input: I| tuple_rec(input, &mut leaf)
}

/// A layout in CuTe notation: `shape` or `shape:stride`.
///
/// ```
/// use graphene::layout::text::cute_layout;
/// use nom::{Parser, character::complete::i64};
/// let (_, (shape, stride)) =
///     cute_layout::<_, _, nom::error::Error<&str>, _>(i64).parse("(4,8):(1,4)").unwrap();
/// assert_eq!(shape.to_string(), "(4,8)");
/// assert_eq!(stride.unwrap().to_string(), "(1,4)");
/// ```
#[allow(clippy::type_complexity)]
pub fn cute_layout<I, T, E, L>(
    mut leaf: L,
) -> impl Parser<I, Output = (Tuple<T>, Option<Tuple<T>>), Error = E>
where
    I: Input + Clone,
    <I as Input>::Item: AsChar,
    E: ParseError<I>,
    L: Parser<I, Output = T, Error = E>,
{
    move |input: I| {
        let (rest, shape) = tuple_rec(input, &mut leaf)?;
        let (after_ws, _) = ws(rest.clone())?;
        match char::<I, E>(':').parse(after_ws) {
            Ok((after_colon, _)) => {
                let (rest, stride) = tuple_rec(after_colon, &mut leaf)?;
                Ok((rest, (shape, Some(stride))))
            }
            Err(_) => Ok((rest, (shape, None))),
        }
    }
}

/// A layout in the IR's bracket form: `[dims]` or `[dims : strides]`.
///
/// ```
/// use graphene::layout::text::bracket_layout;
/// use nom::{Parser, character::complete::i64};
/// let (_, l) = bracket_layout::<_, _, nom::error::Error<&str>, _>(i64)
///     .parse("[4,(2,4) : 2,(1,8)]")
///     .unwrap();
/// assert_eq!(l.dims.len(), 2);
/// assert_eq!(l.strides.unwrap()[1].to_string(), "(1,8)");
/// ```
pub fn bracket_layout<I, T, E, L>(
    mut leaf: L,
) -> impl Parser<I, Output = BracketLayout<T>, Error = E>
where
    I: Input + Clone,
    <I as Input>::Item: AsChar,
    E: ParseError<I>,
    L: Parser<I, Output = T, Error = E>,
{
    move |input: I| {
        let (rest, _) = ws(input)?;
        let (rest, _) = char('[').parse(rest)?;
        let (rest, dims) = mode_list(rest, &mut leaf)?;
        let (rest, _) = ws(rest)?;
        let (rest, strides) = match char::<I, E>(':').parse(rest.clone()) {
            Ok((after_colon, _)) => {
                let (after, strides) = mode_list(after_colon, &mut leaf)?;
                if strides.len() != dims.len() {
                    return Err(nom::Err::Failure(E::from_error_kind(
                        after,
                        nom::error::ErrorKind::Count,
                    )));
                }
                (after, Some(strides))
            }
            Err(_) => (rest, None),
        };
        let (rest, _) = ws(rest)?;
        let (rest, _) = char(']').parse(rest)?;
        Ok((rest, BracketLayout { dims, strides }))
    }
}

/// A swizzle functor's parameters `<B, M, S>`, written `Swizzle<B,M,S>` (the
/// IR's spelling) or `Sw<B,M,S>` (CuTe's). The leaf parser reads each number;
/// their meaning (and validity) is the caller's business.
///
/// ```
/// use graphene::layout::text::swizzle_params;
/// use nom::{Parser, character::complete::i64};
/// let (_, p) = swizzle_params::<_, _, nom::error::Error<&str>, _>(i64)
///     .parse("Swizzle<3, 3, 3>")
///     .unwrap();
/// assert_eq!(p, (3, 3, 3));
/// ```
pub fn swizzle_params<I, T, E, L>(mut leaf: L) -> impl Parser<I, Output = (T, T, T), Error = E>
where
    I: Input + Clone + for<'a> Compare<&'a str>,
    <I as Input>::Item: AsChar,
    E: ParseError<I>,
    L: Parser<I, Output = T, Error = E>,
{
    move |input: I| {
        let (rest, _) = ws(input)?;
        let (rest, _) = match tag::<_, I, E>("Swizzle").parse(rest.clone()) {
            Ok(done) => done,
            Err(_) => tag("Sw").parse(rest)?,
        };
        let (rest, _) = ws(rest)?;
        let (rest, _) = char('<').parse(rest)?;
        let mut numbers = Vec::with_capacity(3);
        let mut rest = rest;
        for i in 0..3 {
            if i > 0 {
                let (after, _) = ws(rest)?;
                let (after, _) = char(',').parse(after)?;
                rest = after;
            }
            let (after, _) = ws(rest)?;
            let (after, value) = leaf.parse(after)?;
            numbers.push(value);
            rest = after;
        }
        let (rest, _) = ws(rest)?;
        let (rest, _) = char('>').parse(rest)?;
        let mut values = numbers.into_iter();
        match (values.next(), values.next(), values.next()) {
            (Some(b), Some(m), Some(s)) => Ok((rest, (b, m, s))),
            _ => Err(nom::Err::Error(E::from_error_kind(
                rest,
                nom::error::ErrorKind::Count,
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nom::character::complete::i64 as int;
    use nom_locate::LocatedSpan;

    type E<'a> = nom::error::Error<&'a str>;

    #[test]
    fn bracket_form_with_and_without_strides() {
        let (rest, l) = bracket_layout::<_, _, E, _>(int)
            .parse("[ 4, (2,4) : 2, (1,8) ] tail")
            .unwrap();
        assert_eq!(rest, " tail");
        assert_eq!(
            l.dims.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
            ["4", "(2,4)"]
        );
        let strides = l.strides.unwrap();
        assert_eq!(
            strides.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
            ["2", "(1,8)"]
        );

        let (_, l) = bracket_layout::<_, _, E, _>(int).parse("[16,16]").unwrap();
        assert_eq!(l.dims.len(), 2);
        assert!(l.strides.is_none());

        let (_, l) = bracket_layout::<_, _, E, _>(int).parse("[]").unwrap();
        assert!(l.dims.is_empty());
    }

    #[test]
    fn bracket_form_rejects_stride_count_mismatch() {
        let result = bracket_layout::<_, _, E, _>(int).parse("[4,8 : 1]");
        assert!(matches!(result, Err(nom::Err::Failure(_))));
    }

    #[test]
    fn cute_form() {
        let (_, (shape, stride)) = cute_layout::<_, _, E, _>(int)
            .parse("(4,(2,4)):(2,(1,8))")
            .unwrap();
        assert_eq!(shape.to_string(), "(4,(2,4))");
        assert_eq!(stride.unwrap().to_string(), "(2,(1,8))");
        let (_, (shape, stride)) = cute_layout::<_, _, E, _>(int).parse("8:1").unwrap();
        assert_eq!(shape, Tuple::Leaf(8));
        assert_eq!(stride, Some(Tuple::Leaf(1)));
        let (_, (shape, _)) = cute_layout::<_, _, E, _>(int).parse("()").unwrap();
        assert_eq!(shape, Tuple::Node(vec![]));
    }

    #[test]
    fn swizzle_spellings() {
        let (rest, p) = swizzle_params::<_, _, E, _>(int)
            .parse("Sw<2,4,-3> o")
            .unwrap();
        assert_eq!(p, (2, 4, -3));
        assert_eq!(rest, " o");
        assert!(
            swizzle_params::<_, _, E, _>(int)
                .parse("Swizzle<1,2>")
                .is_err()
        );
        assert!(
            swizzle_params::<_, _, E, _>(int)
                .parse("Swiz<1,2,3>")
                .is_err()
        );
    }

    #[test]
    fn works_over_located_spans() {
        type Span<'a> = LocatedSpan<&'a str>;
        let input = Span::new("[2,2 : 1,8]");
        let (rest, l) = bracket_layout::<_, _, nom::error::Error<Span>, _>(int)
            .parse(input)
            .unwrap();
        assert_eq!(rest.location_offset(), 11);
        assert_eq!(l.dims.len(), 2);
    }
}
