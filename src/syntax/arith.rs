//! Stage 1, syntax: integer expressions (with precedence), conditions, the
//! bracket form of layouts (through `layout::text`), and the floating
//! values of `Init`.
//!
//! Every recursive form reports its depth, and a form deeper than
//! `MAX_EXPR_DEPTH` is refused: together with the delimiter bound checked
//! before parsing, this keeps every tree shallow enough to build, print,
//! compare and drop without exhausting the stack.

use nom::{Err, Input as _, Parser};

use super::ast::{CompareOp, Cond, CondKind, IntExpr, IntExprKind, IntOp, Layout, TileDim};
use super::error::{Expected, SyntaxError, codes};
use super::lexeme::{
    Input, PResult, at, cut, expect, fail, ident, int_literal, is_backtrack, offset, peek,
    sigil_name, skip, span_to, sym,
};
use super::token;
use crate::diag::{Diagnostic, Span};
use crate::layout::Tuple;
use crate::layout::text::bracket_layout;

/// The deepest expression tree the parser builds.
pub const MAX_EXPR_DEPTH: u32 = 100;

fn too_deep<T>(span: Span) -> Result<T, Err<SyntaxError>> {
    fail(
        Diagnostic::error(codes::TOO_DEEP, "expression nested too deeply", span)
            .with_label(format!("more than {MAX_EXPR_DEPTH} levels"))
            .with_help("split the expression: give parts of it names with `const`"),
    )
}

/// An integer expression: `+ -` over `* / %` over unary `-` over literals,
/// names, `@indices` and parentheses.
pub(crate) fn int_expr(input: Input) -> PResult<IntExpr> {
    let (rest, (expr, _)) = sum(input)?;
    Ok((rest, expr))
}

fn sum(input: Input) -> PResult<(IntExpr, u32)> {
    let (mut rest, (mut lhs, mut depth)) = product(input)?;
    loop {
        let op = if at(&rest, "+=") {
            break;
        } else if at(&rest, "+") {
            IntOp::Add
        } else if at(&rest, "-") {
            IntOp::Sub
        } else {
            break;
        };
        let (after, _) = sym(op.symbol()).parse(rest)?;
        let (after, (rhs, rhs_depth)) = operand(op, product, after)?;
        (lhs, depth) = binary(op, lhs, rhs, depth, rhs_depth)?;
        rest = after;
    }
    Ok((rest, (lhs, depth)))
}

fn product(input: Input) -> PResult<(IntExpr, u32)> {
    let (mut rest, (mut lhs, mut depth)) = unary(input)?;
    loop {
        let next = skip(rest);
        let text = *next.fragment();
        let op = if text.starts_with('*') {
            IntOp::Mul
        } else if text.starts_with('/') && !text.starts_with("//") {
            IntOp::Div
        } else if text.starts_with('%') && !text[1..].starts_with(super::lexeme::is_name_char) {
            // `%x` is always a tensor name: the remainder operator is
            // followed by a space or a parenthesis.
            IntOp::Rem
        } else {
            break;
        };
        let (after, _) = sym(op.symbol()).parse(rest)?;
        let (after, (rhs, rhs_depth)) = operand(op, unary, after)?;
        (lhs, depth) = binary(op, lhs, rhs, depth, rhs_depth)?;
        rest = after;
    }
    Ok((rest, (lhs, depth)))
}

fn binary(
    op: IntOp,
    lhs: IntExpr,
    rhs: IntExpr,
    lhs_depth: u32,
    rhs_depth: u32,
) -> Result<(IntExpr, u32), Err<SyntaxError>> {
    let span = lhs.span.join(rhs.span);
    let depth = 1 + lhs_depth.max(rhs_depth);
    if depth > MAX_EXPR_DEPTH {
        return too_deep(span);
    }
    let kind = IntExprKind::Binary(op, Box::new(lhs), Box::new(rhs));
    Ok((IntExpr { kind, span }, depth))
}

/// The right operand of `op`: committed, since an operator needs one.
fn operand<'s>(
    op: IntOp,
    mut parser: impl FnMut(Input<'s>) -> PResult<'s, (IntExpr, u32)>,
    input: Input<'s>,
) -> PResult<'s, (IntExpr, u32)> {
    let start = offset(&skip(input));
    match parser(input) {
        Err(Err::Error(error)) if error.offset <= start && error.custom.is_none() => {
            Err(Err::Failure(operand_error(op, start)))
        }
        Err(Err::Error(error)) => Err(Err::Failure(error)),
        other => other,
    }
}

fn operand_error(op: IntOp, at_offset: u32) -> SyntaxError {
    let mut error = SyntaxError::expected(at_offset, "an operand");
    error.help = Some(match op {
        IntOp::Add | IntOp::Sub => {
            "an operator needs a number, a name or a parenthesised expression on each side, e.g. `k+1`"
        }
        IntOp::Mul | IntOp::Div | IntOp::Rem | IntOp::CeilDiv => {
            "an operator needs a number, a name or a parenthesised expression on each side, e.g. `K/2`"
        }
    });
    error.expected = vec![Expected::Label(match op {
        IntOp::Add => "an operand after `+`",
        IntOp::Sub => "an operand after `-`",
        IntOp::Mul => "an operand after `*`",
        IntOp::Div => "an operand after `/`",
        IntOp::Rem => "an operand after `%`",
        IntOp::CeilDiv => "an operand of `ceil_div`",
    })];
    error.code_override(codes::BAD_INT)
}

fn unary(input: Input) -> PResult<(IntExpr, u32)> {
    let mut minus_spans = Vec::new();
    let mut rest = input;
    while at(&rest, "-") {
        let (after, span) = sym("-").parse(rest)?;
        minus_spans.push(span);
        rest = after;
    }
    let (rest, (mut expr, mut depth)) = if minus_spans.is_empty() {
        atom(rest)?
    } else {
        let start = offset(&skip(rest));
        match atom(rest) {
            Err(Err::Error(error)) if error.offset <= start => {
                return Err(Err::Failure(operand_error(IntOp::Sub, start)));
            }
            other => other?,
        }
    };
    for minus in minus_spans.into_iter().rev() {
        depth += 1;
        let span = minus.join(expr.span);
        if depth > MAX_EXPR_DEPTH {
            return too_deep(span);
        }
        expr = IntExpr {
            kind: IntExprKind::Neg(Box::new(expr)),
            span,
        };
    }
    Ok((rest, (expr, depth)))
}

fn atom(input: Input) -> PResult<(IntExpr, u32)> {
    let input = skip(input);
    let start = offset(&input);
    match peek(&input) {
        Some(c) if c.is_ascii_digit() => {
            let (rest, (value, span)) = int_literal(input)?;
            Ok((rest, (literal(value, span), 0)))
        }
        Some('@') => {
            let (rest, name) = sigil_name('@', "an index `@i`").parse(input)?;
            let span = name.span;
            Ok((
                rest,
                (
                    IntExpr {
                        kind: IntExprKind::Index(name),
                        span,
                    },
                    0,
                ),
            ))
        }
        Some('(') => {
            let (rest, _) = sym("(").parse(input)?;
            let (rest, (inner, depth)) = sum(rest)?;
            let (rest, _) = sym(")").parse(rest)?;
            Ok((rest, (inner, depth)))
        }
        Some(c) if c.is_ascii_alphabetic() || c == '_' => match ident(input) {
            Ok((rest, name)) if name.text == "ceil_div" && at(&rest, "(") => ceil_div(start, rest),
            Ok((rest, name)) if name.text == "select" && at(&rest, "(") => select(start, rest),
            Ok((rest, name)) => {
                let span = name.span;
                Ok((
                    rest,
                    (
                        IntExpr {
                            kind: IntExprKind::Var(name),
                            span,
                        },
                        0,
                    ),
                ))
            }
            Err(_) => Err(Err::Error(SyntaxError::expected(
                start,
                "an integer expression",
            ))),
        },
        _ => Err(Err::Error(SyntaxError::expected(
            start,
            "an integer expression",
        ))),
    }
}

/// `ceil_div(a, b)` after its name: the two operands in parentheses.
fn ceil_div(start: u32, input: Input) -> PResult<(IntExpr, u32)> {
    let help = "write `ceil_div(a, b)`, e.g. `ceil_div(M, 128)` for the tiles of 128 covering M";
    let (rest, _) = sym("(").parse(input)?;
    let (rest, (lhs, lhs_depth)) =
        cut(expect("an integer expression", Some(help), sum)).parse(rest)?;
    let (rest, _) = cut(expect("`,` and the divisor", Some(help), sym(","))).parse(rest)?;
    let (rest, (rhs, rhs_depth)) =
        cut(expect("an integer expression", Some(help), sum)).parse(rest)?;
    let (rest, _) = cut(expect("`)`", Some(help), sym(")"))).parse(rest)?;
    let (mut expr, depth) = binary(IntOp::CeilDiv, lhs, rhs, lhs_depth, rhs_depth)?;
    expr.span = span_to(start, &rest);
    Ok((rest, (expr, depth)))
}

/// `select(c, a, b)` after its name: a condition and two operands.
fn select(start: u32, input: Input) -> PResult<(IntExpr, u32)> {
    let help = "write `select(condition, a, b)`, e.g. `select(A_ROW == 1, K, 1)` for a stride \
                that a define picks";
    let (rest, _) = sym("(").parse(input)?;
    let (rest, (cond, cond_depth)) =
        cut(expect("a condition", Some(help), disjunction)).parse(rest)?;
    let (rest, _) = cut(expect(
        "`,` and the value if it holds",
        Some(help),
        sym(","),
    ))
    .parse(rest)?;
    let (rest, (lhs, lhs_depth)) =
        cut(expect("an integer expression", Some(help), sum)).parse(rest)?;
    let (rest, _) = cut(expect("`,` and the value if not", Some(help), sym(","))).parse(rest)?;
    let (rest, (rhs, rhs_depth)) =
        cut(expect("an integer expression", Some(help), sum)).parse(rest)?;
    let (rest, _) = cut(expect("`)`", Some(help), sym(")"))).parse(rest)?;
    let depth = 1 + cond_depth.max(lhs_depth).max(rhs_depth);
    let span = span_to(start, &rest);
    if depth > MAX_EXPR_DEPTH {
        return too_deep(span);
    }
    let expr = IntExpr {
        kind: IntExprKind::Select(Box::new(cond), Box::new(lhs), Box::new(rhs)),
        span,
    };
    Ok((rest, (expr, depth)))
}

fn literal(value: i64, span: Span) -> IntExpr {
    IntExpr {
        kind: IntExprKind::Literal(value),
        span,
    }
}

/// A condition: comparisons joined by `&&` (tighter) and `||`, with
/// parentheses.
pub(crate) fn cond(input: Input) -> PResult<Cond> {
    let (rest, (cond, _)) = disjunction(input)?;
    Ok((rest, cond))
}

fn disjunction(input: Input) -> PResult<(Cond, u32)> {
    chain(input, "||", conjunction, CondKind::Or)
}

fn conjunction(input: Input) -> PResult<(Cond, u32)> {
    chain(input, "&&", cond_atom, CondKind::And)
}

fn chain<'s>(
    input: Input<'s>,
    op: &'static str,
    mut part: impl FnMut(Input<'s>) -> PResult<'s, (Cond, u32)>,
    join: impl Fn(Box<Cond>, Box<Cond>) -> CondKind,
) -> PResult<'s, (Cond, u32)> {
    let (mut rest, (mut lhs, mut depth)) = part(input)?;
    while at(&rest, op) {
        let (after, _) = sym(op).parse(rest)?;
        let (after, (rhs, rhs_depth)) = cut(&mut part).parse(after)?;
        let span = lhs.span.join(rhs.span);
        depth = 1 + depth.max(rhs_depth);
        if depth > MAX_EXPR_DEPTH {
            return too_deep(span);
        }
        lhs = Cond {
            kind: join(Box::new(lhs), Box::new(rhs)),
            span,
        };
        rest = after;
    }
    Ok((rest, (lhs, depth)))
}

fn cond_atom(input: Input) -> PResult<(Cond, u32)> {
    if at(&input, "(") {
        let grouped = (|input| {
            let (rest, _) = sym("(").parse(input)?;
            let (rest, inner) = disjunction(rest)?;
            let (rest, _) = sym(")").parse(rest)?;
            Ok((rest, inner))
        })(input);
        if !is_backtrack(&grouped) {
            return grouped;
        }
        let compared = comparison(input);
        return match (grouped, compared) {
            (Err(Err::Error(first)), Err(Err::Error(second))) => {
                Err(Err::Error(first.furthest(second)))
            }
            (_, compared) => compared,
        };
    }
    comparison(input)
}

const COMPARISONS: [(&str, CompareOp); 6] = [
    ("==", CompareOp::Eq),
    ("!=", CompareOp::Ne),
    ("<=", CompareOp::Le),
    (">=", CompareOp::Ge),
    ("<", CompareOp::Lt),
    (">", CompareOp::Gt),
];

fn comparison(input: Input) -> PResult<(Cond, u32)> {
    let (rest, lhs) = int_expr(input)?;
    let Some((symbol, op)) = COMPARISONS.iter().find(|(symbol, _)| at(&rest, symbol)) else {
        let mut error = SyntaxError::expected(offset(&skip(rest)), "a comparison (`<`, `==`, …)");
        error.help = Some("a condition compares two integers, e.g. `@i < 4` or `k == 0`");
        return Err(Err::Error(error));
    };
    let (rest, _) = sym(symbol).parse(rest)?;
    let (rest, rhs) = cut(int_expr).parse(rest)?;
    let span = lhs.span.join(rhs.span);
    let kind = CondKind::Compare(*op, lhs, rhs);
    Ok((rest, (Cond { kind, span }, 0)))
}

/// A layout in bracket form whose leaves are integer expressions.
pub(crate) fn layout(input: Input) -> PResult<Layout> {
    bracketed(input, |input| {
        let (rest, expr) = int_expr(input)?;
        Ok((skip(rest), expr))
    })
}

/// A layout as a tile argument: leaves may also be `_` (whole mode); `_`
/// is accepted only as a top-level dim of a layout without strides.
pub(crate) fn tile_layout(input: Input) -> PResult<Layout<TileDim>> {
    let (rest, layout) = bracketed(input, |input| {
        if at_wildcard(&input) {
            let (rest, span) = sym("_").parse(input)?;
            return Ok((skip(rest), TileDim::Whole(span)));
        }
        let (rest, expr) = int_expr(input)?;
        Ok((skip(rest), TileDim::Size(expr)))
    })?;
    let misplaced = layout
        .strides
        .iter()
        .flatten()
        .chain(
            layout
                .dims
                .iter()
                .filter(|dim| matches!(dim, Tuple::Node(_))),
        )
        .flat_map(|tuple| tuple.leaves())
        .find_map(|leaf| match leaf {
            TileDim::Whole(span) => Some(*span),
            TileDim::Size(_) => None,
        });
    let strided_whole = layout.strides.as_ref().and_then(|_| {
        layout.dims.iter().find_map(|dim| match dim {
            Tuple::Leaf(TileDim::Whole(span)) => Some(*span),
            Tuple::Leaf(TileDim::Size(_)) | Tuple::Node(_) => None,
        })
    });
    if let Some(span) = misplaced.or(strided_whole) {
        return fail(
            Diagnostic::error(codes::BAD_WILDCARD, "`_` cannot stand here", span)
                .with_label("`_` takes a whole mode")
                .with_note("`_` may only be a top-level dim of a tile written without strides")
                .with_help(
                    "write `[128, _]` to tile the first mode by 128 and keep the second whole",
                ),
        );
    }
    Ok((rest, layout))
}

/// Whether the next token is `_` alone (not the start of a name).
pub(crate) fn at_wildcard(input: &Input) -> bool {
    super::lexeme::at_keyword(input, "_")
}

fn bracketed<'s, L>(
    input: Input<'s>,
    leaf: impl Parser<Input<'s>, Output = L, Error = SyntaxError>,
) -> PResult<'s, Layout<L>> {
    let input = skip(input);
    let start = offset(&input);
    if !input.fragment().starts_with('[') {
        return Err(Err::Error(SyntaxError::expected(
            start,
            "a layout `[dims]`",
        )));
    }
    let first_dim = offset(&skip(input.take_from(1)));
    match bracket_layout(leaf).parse(input) {
        Ok((rest, parsed)) => {
            let span = span_to(start, &rest);
            Ok((
                rest,
                Layout {
                    dims: parsed.dims,
                    strides: parsed.strides,
                    span,
                },
            ))
        }
        Err(Err::Failure(error)) | Err(Err::Error(error))
            if error.kind == Some(nom::error::ErrorKind::Count) =>
        {
            fail(stride_count_error(input.extra.src, start, error.offset))
        }
        Err(Err::Error(mut error)) if error.expected == [Expected::Char(']')] => {
            error.expected = if error.offset == first_dim {
                vec![Expected::Label("a dim"), Expected::Char(']')]
            } else {
                vec![Expected::Char(','), Expected::Char(']')]
            };
            error.related = Some((Span::new(start, start + 1), "layout opened here"));
            Err(Err::Error(error))
        }
        Err(other) => Err(other),
    }
}

/// The diagnostic for `[dims : strides]` with unequal counts, counting the
/// top-level commas of both parts in the text.
fn stride_count_error(src: &str, start: u32, end: u32) -> Diagnostic {
    let text = &src[start as usize..end as usize];
    let tokens = token::tokenize(text);
    let (mut depth, mut dims, mut strides, mut after_colon) = (0i32, 1usize, 1usize, false);
    for token in &tokens {
        match token.text(text) {
            "(" => depth += 1,
            ")" => depth -= 1,
            ":" if depth == 0 => after_colon = true,
            "," if depth == 1 || (depth == 0) => {
                if after_colon {
                    strides += 1;
                } else {
                    dims += 1;
                }
            }
            _ => {}
        }
    }
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let message = format!(
        "this layout has {} but {}",
        plural(dims, "dim"),
        plural(strides, "stride")
    );
    Diagnostic::error(codes::STRIDE_COUNT, message, Span::new(start, end))
        .with_label("every dim needs one stride")
        .with_help("write one stride per dim, as in `[4,8 : 1,4]`, or leave the strides out for column-major")
}

/// The value of `Init`: an optionally negative decimal number or `inf`.
pub(crate) fn float_value(input: Input) -> PResult<(f64, Span)> {
    let input = skip(input);
    let start = offset(&input);
    let (negative, input) = match sym("-").parse(input) {
        Ok((rest, _)) => (true, skip(rest)),
        Err(_) => (false, input),
    };
    let text = *input.fragment();
    let len = if text.starts_with("inf") && !text[3..].starts_with(super::lexeme::is_name_char) {
        3
    } else if text.starts_with(|c: char| c.is_ascii_digit()) {
        token::number(text).1
    } else {
        0
    };
    let value = match &text[..len] {
        "inf" => Some(f64::INFINITY),
        "" => None,
        digits => digits.parse::<f64>().ok(),
    };
    let Some(value) = value else {
        let found = offset(&input);
        let mut error = SyntaxError::expected(found, "a number");
        error.help = Some(
            "`Init` takes a value such as `0.0`, `1`, `-1.5e-3` or `-inf`, or a constant such as `N`",
        );
        return Err(Err::Failure(error.code_override(codes::BAD_FLOAT)));
    };
    let rest = input.take_from(len);
    let value = if negative { -value } else { value };
    Ok((rest, (value, span_to(start, &rest))))
}
