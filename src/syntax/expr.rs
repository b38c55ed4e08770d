//! Stage 1, syntax: tensor and group expressions (a name, `Allocate()`, and
//! the operations `.tile`, `.reshape`, `.broadcast`, `.indices`, `.scalar`,
//! `[…]`), their
//! coordinates, and the index patterns bound by `.indices()`.

use nom::{Err, Parser};

use super::arith::{MAX_EXPR_DEPTH, at_wildcard, int_expr, layout, tile_layout};
use super::ast::{
    Coord, CoordKind, Expr, ExprKind, IndexPattern, IndexPatternKind, TileArg, Tiling,
};
use super::error::{SyntaxError, codes, suggest};
use super::lexeme::{
    Input, PResult, at, at_keyword, comma_list, cut, expect, fail, is_backtrack, keyword, offset,
    peek, sigil_name, skip, span_to, sym, word,
};
use crate::diag::{Diagnostic, Span};

const OPERATIONS: [&str; 6] = [
    "tile",
    "tile_partial",
    "reshape",
    "broadcast",
    "indices",
    "scalar",
];

/// A tensor or group expression: a primary followed by operations.
pub(crate) fn expr(input: Input) -> PResult<Expr> {
    let input = skip(input);
    let start = offset(&input);
    let (mut rest, mut current) = primary(input)?;
    let mut depth = 0;
    loop {
        if at(&rest, ".") {
            let (after, _) = sym(".").parse(rest)?;
            let (after, kind) = operation(after, current)?;
            current = Expr {
                kind,
                span: span_to(start, &after),
            };
            rest = after;
        } else if at(&rest, "[") {
            let (after, coords) = coordinates(rest)?;
            let kind = ExprKind::Index(Box::new(current), coords);
            current = Expr {
                kind,
                span: span_to(start, &after),
            };
            rest = after;
        } else {
            return Ok((rest, current));
        }
        depth += 1;
        if depth > MAX_EXPR_DEPTH {
            return fail(
                Diagnostic::error(
                    codes::TOO_DEEP,
                    "too many operations in a row",
                    current.span,
                )
                .with_label(format!("more than {MAX_EXPR_DEPTH} operations"))
                .with_help("name intermediate results: `%t = …` and continue from `%t`"),
            );
        }
    }
}

fn primary(input: Input) -> PResult<Expr> {
    let input = skip(input);
    let start = offset(&input);
    match peek(&input) {
        Some('%') => {
            let (rest, name) = sigil_name('%', "a tensor `%x`").parse(input)?;
            let span = name.span;
            Ok((
                rest,
                Expr {
                    kind: ExprKind::Tensor(name),
                    span,
                },
            ))
        }
        Some('#') => {
            let (rest, name) = sigil_name('#', "a thread group `#g`").parse(input)?;
            let span = name.span;
            Ok((
                rest,
                Expr {
                    kind: ExprKind::Group(name),
                    span,
                },
            ))
        }
        _ if at_keyword(&input, "Allocate") => {
            let (rest, _) = keyword("Allocate").parse(input)?;
            let (rest, _) = cut(with_call_help(sym("("))).parse(rest)?;
            let (rest, _) = cut(sym(")")).parse(rest)?;
            Ok((
                rest,
                Expr {
                    kind: ExprKind::Allocate,
                    span: span_to(start, &rest),
                },
            ))
        }
        _ => Err(Err::Error(SyntaxError::expected(
            start,
            "a tensor `%x` or a thread group `#g`",
        ))),
    }
}

fn with_call_help<'s>(
    parser: impl Parser<Input<'s>, Output = Span, Error = SyntaxError>,
) -> impl Parser<Input<'s>, Output = Span, Error = SyntaxError> {
    super::lexeme::with_help(
        "operations are called with parentheses, e.g. `.indices()`",
        parser,
    )
}

/// The operation after a `.`, applied to `base`.
fn operation(input: Input, base: Expr) -> PResult<ExprKind> {
    let (rest, (name, name_span)) = cut(expect(
        "an operation (`tile`, `tile_partial`, `reshape`, `broadcast`, `indices` or `scalar`)",
        None,
        word,
    ))
    .parse(input)?;
    let base = Box::new(base);
    let (rest, open) = match name {
        "tile" | "tile_partial" | "reshape" | "broadcast" | "indices" | "scalar" => {
            cut(with_call_help(sym("("))).parse(rest)?
        }
        unknown => return fail(unknown_operation(unknown, name_span)),
    };
    let (rest, kind) = match name {
        "tile" | "tile_partial" => {
            let (rest, args) = cut(comma_list(tile_arg)).parse(rest)?;
            let tiling = if name == "tile" {
                Tiling::Exact
            } else {
                Tiling::Partial
            };
            (rest, ExprKind::Tile(base, args, tiling))
        }
        "reshape" => {
            if at(&rest, "[") {
                let (rest, shape) = cut(layout).parse(rest)?;
                (rest, ExprKind::Reshape(base, None, shape))
            } else {
                let (rest, depth) = cut(expect(
                    "a depth or a layout",
                    Some("write `.reshape(depth, [dims])`, e.g. `.reshape(0, [2,2])`"),
                    int_expr,
                ))
                .parse(rest)?;
                let (rest, _) = cut(sym(",")).parse(rest)?;
                let (rest, shape) = cut(layout).parse(rest)?;
                (rest, ExprKind::Reshape(base, Some(depth), shape))
            }
        }
        "broadcast" => {
            let help = "write `.broadcast(position, extent)`, e.g. `.broadcast(0, M)`";
            let (rest, position) =
                cut(expect("a mode position", Some(help), int_expr)).parse(rest)?;
            let (rest, _) = cut(sym(",")).parse(rest)?;
            let (rest, extent) = cut(expect("an extent", Some(help), int_expr)).parse(rest)?;
            (rest, ExprKind::Broadcast(base, position, extent))
        }
        "indices" => (rest, ExprKind::Indices(base)),
        _ => (rest, ExprKind::Scalar(base)),
    };
    let (rest, _) = cut(closing(")", open)).parse(rest)?;
    Ok((rest, kind))
}

fn unknown_operation(name: &str, span: Span) -> Diagnostic {
    let diagnostic = Diagnostic::error(
        codes::UNKNOWN_OPERATION,
        format!("unknown operation `.{name}`"),
        span,
    )
    .with_label("not an operation on tensors or groups");
    match suggest(name, &OPERATIONS) {
        Some(close) => diagnostic.with_help(format!("did you mean `.{close}`?")),
        None => diagnostic.with_help(
            "the operations are `.tile`, `.tile_partial`, `.reshape`, `.broadcast`, `.indices` and `.scalar`",
        ),
    }
}

/// The closing delimiter `text` of the list opened at `open`.
pub(crate) fn closing<'s>(
    text: &'static str,
    open: Span,
) -> impl Parser<Input<'s>, Output = Span, Error = SyntaxError> {
    move |input: Input<'s>| {
        sym(text).parse(input).map_err(|error| {
            error.map(|mut error| {
                error.expected.insert(0, super::error::Expected::Char(','));
                error.related = Some((open, "opened here"));
                error.help = Some(match text {
                    ")" => "close the list opened here with `)`",
                    "]" => "close the list opened here with `]`",
                    _ => "close the list opened here",
                });
                error
            })
        })
    }
}

fn tile_arg(input: Input) -> PResult<TileArg> {
    if at_wildcard(&input) {
        let (rest, span) = sym("_").parse(input)?;
        return Ok((rest, TileArg::Whole(span)));
    }
    if at(&input, "[") {
        let (rest, shape) = tile_layout(input)?;
        return Ok((rest, TileArg::Layout(shape)));
    }
    let (rest, size) = expect(
        "a tile (a layout `[8,8]`, a size or `_`)",
        Some("tile with a layout such as `[8,8]` or `[2:2]`, a size such as `8`, or `_` for a whole mode"),
        int_expr,
    )
    .parse(input)?;
    Ok((rest, TileArg::Size(size)))
}

/// `[c0, c1, …]`: at least one coordinate.
fn coordinates(input: Input) -> PResult<Vec<Coord>> {
    let (rest, open) = sym("[").parse(input)?;
    let (rest, coords) = cut(comma_list(coord)).parse(rest)?;
    let (rest, _) = cut(closing("]", open)).parse(rest)?;
    Ok((rest, coords))
}

fn coord(input: Input) -> PResult<Coord> {
    let input = skip(input);
    let start = offset(&input);
    if at_wildcard(&input) {
        let (rest, span) = sym("_").parse(input)?;
        return Ok((
            rest,
            Coord {
                kind: CoordKind::Keep,
                span,
            },
        ));
    }
    let as_int = int_expr(input);
    if !is_backtrack(&as_int) || !at(&input, "(") {
        let (rest, value) = expect(
            "a coordinate (an integer, `@i`, `_` or a tuple)",
            Some("index with integers, indices such as `@i`, `_` to keep a mode, or `(a, b)`"),
            |_| as_int.clone(),
        )
        .parse(input)?;
        let span = value.span;
        return Ok((
            rest,
            Coord {
                kind: CoordKind::Int(value),
                span,
            },
        ));
    }
    let as_tuple = (|input| {
        let (rest, open) = sym("(").parse(input)?;
        let (rest, items) = comma_list(coord).parse(rest)?;
        let (rest, _) = closing(")", open).parse(rest)?;
        Ok((rest, items))
    })(input);
    match (as_int, as_tuple) {
        (_, Ok((rest, items))) => {
            let span = span_to(start, &rest);
            Ok((
                rest,
                Coord {
                    kind: CoordKind::Tuple(items),
                    span,
                },
            ))
        }
        (Err(Err::Error(int_error)), Err(Err::Error(tuple_error))) => {
            Err(Err::Error(int_error.furthest(tuple_error)))
        }
        (_, Err(error)) => Err(error),
    }
}

/// An index pattern: `@i`, `_`, or `(p, q, …)`.
pub(crate) fn pattern(input: Input) -> PResult<IndexPattern> {
    let input = skip(input);
    let start = offset(&input);
    if at_wildcard(&input) {
        let (rest, span) = sym("_").parse(input)?;
        return Ok((
            rest,
            IndexPattern {
                kind: IndexPatternKind::Ignore,
                span,
            },
        ));
    }
    if at(&input, "(") {
        let (rest, open) = sym("(").parse(input)?;
        let (rest, items) = cut(comma_list(pattern)).parse(rest)?;
        let (rest, _) = cut(closing(")", open)).parse(rest)?;
        let span = span_to(start, &rest);
        return Ok((
            rest,
            IndexPattern {
                kind: IndexPatternKind::Tuple(items),
                span,
            },
        ));
    }
    let (rest, name) = expect(
        "an index `@i`, `_` or `(`",
        Some("indices are named with `@`, e.g. `@m, @n = #g.indices()`"),
        sigil_name('@', "an index `@i`"),
    )
    .parse(input)?;
    let span = name.span;
    Ok((
        rest,
        IndexPattern {
            kind: IndexPatternKind::Bind(name),
            span,
        },
    ))
}
