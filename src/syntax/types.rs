//! Stage 1, syntax: tensor types (`[2,2].[8,8].fp16.SH.Swizzle<3,3,3>`)
//! and thread-group types (`[2,2].[8].thread`), with targeted diagnostics
//! for the usual slips: a missing scalar, an unknown memory, a group kind on
//! a tensor.

use nom::{Err, Parser};

use super::arith::{cond, int_expr, layout};
use super::ast::{
    GroupKind, GroupType, Layout, MEMORY_NAMES, Memory, SCALAR_NAMES, Scalar, ScalarChoice,
    Swizzle, TensorType,
};
use super::error::{SyntaxError, codes, suggest};
use super::lexeme::{
    Input, PResult, at, at_keyword, cut, expect, fail, keyword, offset, skip, span_to, sym, word,
};
use crate::diag::{Diagnostic, Span};

const TENSOR_TYPE_HELP: &str =
    "a tensor type is levels, a scalar type and a memory, e.g. `[16,16].fp16.SH`";
const GROUP_TYPE_HELP: &str = "a thread-group type is levels and a kind, e.g. `[32].thread`";

/// `(c, a, b)` after `select` in a scalar's place: two scalar names.
fn scalar_select(input: Input) -> PResult<ScalarChoice> {
    let help = Some("a scalar chosen by a define reads `select(BF16 == 1, bf16, fp16)`");
    let (rest, _) = sym("(").parse(input)?;
    let (rest, cond) = cut(expect("a condition", help, cond)).parse(rest)?;
    let (rest, _) = cut(expect("`,` and a scalar type", help, sym(","))).parse(rest)?;
    let (rest, yes) = scalar_word(rest)?;
    let (rest, _) = cut(expect("`,` and a scalar type", help, sym(","))).parse(rest)?;
    let (rest, no) = scalar_word(rest)?;
    let (rest, _) = cut(expect("`)`", help, sym(")"))).parse(rest)?;
    Ok((
        rest,
        ScalarChoice::Select(Box::new(cond), Box::new(yes), Box::new(no)),
    ))
}

/// One scalar type's name, or a `select` of two.
fn scalar_word(input: Input) -> PResult<ScalarChoice> {
    let help = Some("the scalar types are fp16, bf16, fp32, i32 and u32");
    let (rest, (name, span)) = cut(expect("a scalar type", help, word)).parse(input)?;
    if name == "select" && at(&rest, "(") {
        return scalar_select(rest);
    }
    match scalar(name) {
        Some(scalar) => Ok((rest, ScalarChoice::Named(scalar))),
        None => fail(not_a_scalar(name, span)),
    }
}

/// `Level (. Level)* . Scalar . Memory (. Swizzle<B,M,S>)?`.
pub(crate) fn tensor_type(input: Input) -> PResult<TensorType> {
    let input = skip(input);
    let start = offset(&input);
    let (rest, (levels, (name, name_span))) =
        levels_then_word(input, "`.` and a scalar type", TENSOR_TYPE_HELP)?;
    let (rest, scalar) = if name == "select" && at(&rest, "(") {
        scalar_select(rest)?
    } else {
        match scalar(name) {
            Some(scalar) => (rest, ScalarChoice::Named(scalar)),
            None => return fail(not_a_scalar(name, name_span)),
        }
    };
    let (rest, _) = cut(expect(
        "`.` and a memory (`GL`, `SH` or `RF`)",
        Some(TENSOR_TYPE_HELP),
        sym("."),
    ))
    .parse(rest)
    .map_err(|error| error.map(|error| error.code_override(codes::BAD_TYPE)))?;
    let (rest, (name, name_span)) = cut(expect(
        "a memory (`GL`, `SH` or `RF`)",
        Some(TENSOR_TYPE_HELP),
        word,
    ))
    .parse(rest)
    .map_err(|error| error.map(|error| error.code_override(codes::BAD_MEMORY)))?;
    let memory = memory(name, name_span)?;
    let (rest, swizzle) = if at(&rest, ".") {
        let (after, _) = sym(".").parse(rest)?;
        let (after, swizzle) = swizzle(after)?;
        (after, Some(swizzle))
    } else {
        (rest, None)
    };
    let span = span_to(start, &rest);
    Ok((
        rest,
        TensorType {
            levels,
            scalar,
            memory,
            swizzle,
            span,
        },
    ))
}

/// `Level (. Level)* . (thread | block)`.
pub(crate) fn group_type(input: Input) -> PResult<GroupType> {
    let input = skip(input);
    let start = offset(&input);
    let (rest, (levels, (name, name_span))) =
        levels_then_word(input, "`.` and `thread` or `block`", GROUP_TYPE_HELP)?;
    let kind = match name {
        "thread" => GroupKind::Thread,
        "block" => GroupKind::Block,
        other if scalar(other).is_some() || is_memory_name(other) => {
            return fail(
                Diagnostic::error(
                    codes::TYPE_KIND,
                    format!("a thread group's type ends with `.thread` or `.block`, not `{other}`"),
                    name_span,
                )
                .with_label("this is part of a tensor type")
                .with_help("tensors are named `%x`: write `%x:[…].fp16.SH`, or end a group's type with `.thread` or `.block`"),
            );
        }
        other => {
            let diagnostic = Diagnostic::error(
                codes::BAD_TYPE,
                format!("expected `thread` or `block`, found `{other}`"),
                name_span,
            )
            .with_label("not a kind of thread group");
            let help = match suggest(other, &["thread", "block"]) {
                Some(close) => format!("did you mean `{close}`?"),
                None => GROUP_TYPE_HELP.to_string(),
            };
            return fail(diagnostic.with_help(help));
        }
    };
    let span = span_to(start, &rest);
    Ok((rest, GroupType { levels, kind, span }))
}

/// The levels of a type and the first word after them.
fn levels_then_word<'s>(
    input: Input<'s>,
    next: &'static str,
    help: &'static str,
) -> PResult<'s, (Vec<Layout>, (&'s str, Span))> {
    let (mut rest, first) = expect("a layout `[dims]`", Some(help), layout).parse(input)?;
    let mut levels = vec![first];
    loop {
        let (after, _) = cut(expect(next, Some(help), sym(".")))
            .parse(rest)
            .map_err(|error| error.map(|error| error.code_override(codes::BAD_TYPE)))?;
        if at(&after, "[") {
            let (after, level) = cut(layout).parse(after)?;
            levels.push(level);
            rest = after;
            continue;
        }
        let (after, found) = cut(expect(
            "a scalar type or a level `[dims]`",
            Some(help),
            word,
        ))
        .parse(after)
        .map_err(|error| error.map(|error| error.code_override(codes::BAD_TYPE)))?;
        return Ok((after, (levels, found)));
    }
}

fn scalar(name: &str) -> Option<Scalar> {
    SCALAR_NAMES
        .iter()
        .find(|(written, _)| written.eq_ignore_ascii_case(name))
        .map(|(_, scalar)| *scalar)
}

fn is_memory_name(name: &str) -> bool {
    MEMORY_NAMES
        .iter()
        .any(|(written, _)| written.eq_ignore_ascii_case(name))
}

fn not_a_scalar(name: &str, span: Span) -> Diagnostic {
    if is_memory_name(name) {
        return Diagnostic::error(
            codes::BAD_TYPE,
            format!("missing scalar type before the memory `{name}`"),
            span,
        )
        .with_label("expected a scalar type here")
        .with_help(format!(
            "write the element type first, e.g. `.fp16.{}`",
            name.to_ascii_uppercase()
        ));
    }
    if name == "thread" || name == "block" {
        return Diagnostic::error(
            codes::TYPE_KIND,
            format!("a tensor's type ends with a scalar type and a memory, not `{name}`"),
            span,
        )
        .with_label("this is part of a thread-group type")
        .with_help("thread groups are named `#t`: write `#t:[32].thread`, or give a tensor a type such as `[16].fp16.RF`");
    }
    let names: Vec<&str> = SCALAR_NAMES.iter().map(|(written, _)| *written).collect();
    let diagnostic = Diagnostic::error(
        codes::BAD_SCALAR,
        format!("unknown scalar type `{name}`"),
        span,
    )
    .with_label("not a scalar type");
    match suggest(name, &names) {
        Some(close) => diagnostic.with_help(format!("did you mean `{close}`?")),
        None => {
            diagnostic.with_help("the scalar types are `fp16`, `bf16`, `fp32`, `i32` and `u32`")
        }
    }
}

fn memory(name: &str, span: Span) -> Result<Memory, Err<SyntaxError>> {
    if let Some((_, memory)) = MEMORY_NAMES.iter().find(|(written, _)| *written == name) {
        return Ok(*memory);
    }
    let diagnostic = Diagnostic::error(codes::BAD_MEMORY, format!("unknown memory `{name}`"), span)
        .with_label("not a memory");
    let names: Vec<&str> = MEMORY_NAMES.iter().map(|(written, _)| *written).collect();
    let help = match MEMORY_NAMES
        .iter()
        .find(|(written, _)| written.eq_ignore_ascii_case(name))
    {
        Some((written, _)) => format!("memories are written in capitals: `{written}`"),
        None => match suggest(name, &names) {
            Some(close) => format!("did you mean `{close}`?"),
            None => {
                "the memories are `GL` (global), `SH` (shared) and `RF` (registers)".to_string()
            }
        },
    };
    fail(diagnostic.with_help(help))
}

/// `Swizzle<B,M,S>`, after the `.` that precedes it.
fn swizzle(input: Input) -> PResult<Swizzle> {
    let input = skip(input);
    let start = offset(&input);
    if !at_keyword(&input, "Swizzle") {
        let found = word(input)
            .ok()
            .map(|(_, (text, span))| (text.to_string(), span));
        let span = found.as_ref().map_or(Span::at(start), |(_, span)| *span);
        let text = found.map_or_else(|| "this".to_string(), |(text, _)| format!("`.{text}`"));
        return fail(
            Diagnostic::error(
                codes::BAD_TYPE,
                format!("unexpected {text} after the memory"),
                span,
            )
            .with_label("a type ends with its memory")
            .with_help(
                "only a swizzle may follow the memory, as in `[8,64].fp16.SH.Swizzle<3,3,3>`",
            ),
        );
    }
    let (rest, _) = keyword("Swizzle").parse(input)?;
    let help = Some("write the three parameters as `Swizzle<B,M,S>`, e.g. `Swizzle<3,3,3>`");
    let (rest, _) = cut(expect("`<`", help, sym("<"))).parse(rest)?;
    let (rest, bits) = cut(expect("the swizzle's B", help, int_expr)).parse(rest)?;
    let (rest, _) = cut(expect("`,`", help, sym(","))).parse(rest)?;
    let (rest, base) = cut(expect("the swizzle's M", help, int_expr)).parse(rest)?;
    let (rest, _) = cut(expect("`,`", help, sym(","))).parse(rest)?;
    let (rest, shift) = cut(expect("the swizzle's S", help, int_expr)).parse(rest)?;
    let (rest, _) = cut(expect("`>`", help, sym(">"))).parse(rest)?;
    let span = span_to(start, &rest);
    Ok((
        rest,
        Swizzle {
            bits,
            base,
            shift,
            span,
        },
    ))
}
