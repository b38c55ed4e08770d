//! Stage 1, syntax: the part of a spec statement after `<-` — the kind and
//! its parameters, the launch configuration `<<<#blocks, #threads>>>`, the
//! inputs and the optional decomposition.

use nom::{Err, Parser};

use super::arith::{float_value, int_expr};
use super::ast::{
    BinaryOp, CompareOp, Expr, InitValue, LaunchGroups, ReduceOp, SPEC_KIND_NAMES, ShflMode,
    SpecKind, SpecStmt, TernaryOp, UnaryOp,
};
use super::error::{SyntaxError, codes, suggest};
use super::expr::{closing, expr};
use super::lexeme::{
    Input, PResult, at, comma_list, commas_after, cut, expect, fail, int_literal, offset, peek,
    skip, span_to, sym, word,
};
use super::stmt::block;
use crate::diag::{Diagnostic, Span};

const LAUNCH_HELP: &str =
    "a launch configuration names two thread groups: `<<<#blocks, #threads>>>`";

/// Everything after `outs <-`, where `arrow` is the span of `<-`.
pub(crate) fn spec_after_arrow(input: Input, outputs: Vec<Expr>, arrow: Span) -> PResult<SpecStmt> {
    let input = skip(input);
    let start = offset(&input);
    if !peek(&input).is_some_and(|c| c.is_ascii_alphabetic()) {
        let mut error = SyntaxError::expected(start, "a spec kind such as `Move`");
        error.related = Some((arrow, "a spec's kind follows `<-`"));
        error.help = Some("name the computation after `<-`, e.g. `%out <- Move<<<#b, #t>>>(%in)`");
        return Err(Err::Failure(error.code_override(codes::SPEC_OPERAND)));
    }
    let (rest, (name, name_span)) = word(input)?;
    let (rest, kind) = match name {
        "Move" => {
            let (rest, flags) = flag_parameters(rest, "Move", &["async", "masked", "tma", "add"])?;
            if flags.contains(&"tma") && flags.len() > 1 {
                return fail(
                    Diagnostic::error(
                        codes::SPEC_PARAMS,
                        "`Move<tma>` takes no other parameter",
                        span_to(offset(&skip(rest)), &rest),
                    )
                    .with_label("a bulk tensor copy is asynchronous and masked by itself")
                    .with_help("write `Move<tma>`: it lands on its barrier, and elements past the tensor land as zero"),
                );
            }
            if flags.contains(&"add") && flags.contains(&"async") {
                return fail(
                    Diagnostic::error(
                        codes::SPEC_PARAMS,
                        "`Move<add>` combines with `masked` only",
                        span_to(offset(&skip(rest)), &rest),
                    )
                    .with_label("an accumulating store adds registers into global memory")
                    .with_help("write `Move<add>` or `Move<masked, add>`; `cp.async` only copies"),
                );
            }
            (
                rest,
                SpecKind::Move {
                    asynchronous: flags.contains(&"async"),
                    masked: flags.contains(&"masked"),
                    tma: flags.contains(&"tma"),
                    add: flags.contains(&"add"),
                },
            )
        }
        "MatMul" => {
            let (rest, flags) = flag_parameters(rest, "MatMul", &["overwrite", "async"])?;
            if flags.len() > 1 {
                return fail(
                    Diagnostic::error(
                        codes::SPEC_PARAMS,
                        "`MatMul` takes one parameter, `<overwrite>` or `<async>`",
                        span_to(offset(&skip(rest)), &rest),
                    )
                    .with_label("two parameters")
                    .with_help("an asynchronous MatMul accumulates; write `MatMul<async>` and zero the accumulators first"),
                );
            }
            (
                rest,
                SpecKind::MatMul {
                    overwrite: flags.contains(&"overwrite"),
                    asynchronous: flags.contains(&"async"),
                },
            )
        }
        "UnaryPointwise" => {
            let (rest, op) = operator_parameter(rest, name, name_span, &UnaryOp::ALL)?;
            (rest, SpecKind::UnaryPointwise(op))
        }
        "BinaryPointwise" => {
            let (rest, op) = operator_parameter(rest, name, name_span, &BinaryOp::ALL)?;
            (rest, SpecKind::BinaryPointwise(op))
        }
        "TernaryPointwise" => {
            let (rest, op) = operator_parameter(rest, name, name_span, &TernaryOp::ALL)?;
            (rest, SpecKind::TernaryPointwise(op))
        }
        "Select" => {
            let (rest, op) = operator_parameter(rest, name, name_span, &CompareOp::ALL)?;
            (rest, SpecKind::Select(op))
        }
        "Reduction" => reduction(rest, name_span)?,
        "Shfl" => shuffle(rest, name_span)?,
        "Init" => {
            let help = Some("`Init` takes the value to store, e.g. `Init<0.0>`");
            let (rest, _) = cut(expect("`<` and a value", help, params_open))
                .parse(rest)
                .map_err(params_code)?;
            let (rest, value) = init_value(rest)?;
            let (rest, _) = cut(expect("`>`", help, sym(">")))
                .parse(rest)
                .map_err(params_code)?;
            (rest, SpecKind::Init(value))
        }
        "Spec" => {
            if at_params(&rest) {
                return fail(
                    Diagnostic::error(
                        codes::SPEC_PARAMS,
                        "the generic `Spec` takes no parameters",
                        name_span,
                    )
                    .with_label("a generic spec")
                    .with_help("write `Spec<<<#b, #t>>>(…) { … }`; the body says what it computes"),
                );
            }
            (rest, SpecKind::Generic)
        }
        unknown => return fail(unknown_kind(unknown, name_span)),
    };
    let kind_span = span_to(start, &rest);
    let in_contract = input.extra.in_contract.get();
    let (rest, launch) = if in_contract && !at(&rest, "<<<") {
        (rest, None)
    } else {
        let (rest, (blocks, threads)) = launch(rest)?;
        (rest, Some(LaunchGroups { blocks, threads }))
    };
    let (rest, open) = cut(expect(
        "`(` and the inputs",
        Some("a spec lists its inputs in parentheses, possibly none: `(%a, %b)` or `()`"),
        sym("("),
    ))
    .parse(rest)?;
    let (rest, inputs) = inputs(rest, open)?;
    let (rest, body) = if at(&rest, "{") {
        let (rest, body) = block(rest)?;
        (rest, Some(body))
    } else {
        (rest, None)
    };
    Ok((
        rest,
        SpecStmt {
            outputs,
            kind,
            kind_span,
            launch,
            inputs,
            body,
        },
    ))
}

/// `Init`'s value: a number (`0.0`, `-inf`), or an integer expression of
/// constants such as `N` (a name starts it).
fn init_value(input: Input) -> PResult<InitValue> {
    let here = skip(input);
    let text = *here.fragment();
    let infinity = text.starts_with("inf") && !text[3..].starts_with(super::lexeme::is_name_char);
    if text
        .strip_prefix("index")
        .is_some_and(|after| after.trim_start().starts_with('('))
    {
        let help = Some("`Init<index(i)>` gives each element its coordinate along mode i");
        let (rest, _) = word(here)?;
        let (rest, _) = cut(expect("`(`", help, sym("("))).parse(rest)?;
        let (rest, (axis, span)) = cut(expect("a mode number", help, int_literal)).parse(rest)?;
        let (rest, _) = cut(expect("`)`", help, sym(")"))).parse(rest)?;
        let Ok(axis) = u32::try_from(axis) else {
            return Err(Err::Failure(SyntaxError::expected(
                span.start,
                "a mode number",
            )));
        };
        return Ok((rest, InitValue::Index(axis)));
    }
    if !infinity && peek(&here).is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '(') {
        let (rest, value) = cut(int_expr).parse(here)?;
        return Ok((rest, InitValue::Constant(value)));
    }
    let (rest, (value, _)) = cut(float_value).parse(input)?;
    Ok((rest, InitValue::Number(value)))
}

fn params_code(error: Err<SyntaxError>) -> Err<SyntaxError> {
    error.map(|error| error.code_override(codes::SPEC_PARAMS))
}

/// Whether a parameter list `<…>` follows (a `<` that does not open `<<<`).
fn at_params(input: &Input) -> bool {
    at(input, "<") && !at(input, "<<<")
}

fn params_open(input: Input) -> PResult<Span> {
    if at(&input, "<<<") {
        let input = skip(input);
        return Err(Err::Error(SyntaxError::expected(offset(&input), "`<`")));
    }
    sym("<").parse(input)
}

fn unknown_kind(name: &str, span: Span) -> Diagnostic {
    let diagnostic = Diagnostic::error(
        codes::UNKNOWN_SPEC,
        format!("unknown spec kind `{name}`"),
        span,
    )
    .with_label("not a built-in kind");
    match suggest(name, &SPEC_KIND_NAMES) {
        Some(close) => diagnostic.with_help(format!("did you mean `{close}`?")),
        None => diagnostic.with_help(
            "the kinds are Move, MatMul, UnaryPointwise, BinaryPointwise, TernaryPointwise, Select, Reduction, Shfl, Init, and `Spec` for a fused computation",
        ),
    }
}

/// `<flag>` or nothing, for `Move<async>` and `MatMul<overwrite>` /
/// `MatMul<async>`: which of `flags` was given, if any.
fn flag_parameters<'s>(
    input: Input<'s>,
    kind: &'static str,
    flags: &[&'static str],
) -> PResult<'s, Vec<&'static str>> {
    if !at_params(&input) {
        return Ok((input, Vec::new()));
    }
    let (mut rest, _) = sym("<").parse(input)?;
    let mut found_flags: Vec<&'static str> = Vec::new();
    loop {
        let (after, (found, span)) = cut(expect("a parameter", None, word))
            .parse(rest)
            .map_err(params_code)?;
        let Some(flag) = flags.iter().find(|flag| **flag == found) else {
            let choices: Vec<String> = flags.iter().map(|flag| format!("`<{flag}>`")).collect();
            return fail(
                Diagnostic::error(
                    codes::SPEC_PARAMS,
                    format!("`{kind}` has no parameter `{found}`"),
                    span,
                )
                .with_label("unknown parameter")
                .with_help(format!(
                    "`{kind}` takes no parameter, or {}",
                    choices.join(" or ")
                )),
            );
        };
        if found_flags.contains(flag) {
            return fail(
                Diagnostic::error(
                    codes::SPEC_PARAMS,
                    format!("`{found}` is given twice"),
                    span,
                )
                .with_label("a second time")
                .with_help(format!("write each parameter of `{kind}` once")),
            );
        }
        found_flags.push(flag);
        rest = after;
        if at(&rest, ",") {
            let (after, _) = sym(",").parse(rest)?;
            rest = after;
        } else {
            break;
        }
    }
    let (rest, _) = cut(sym(">")).parse(rest).map_err(params_code)?;
    Ok((rest, found_flags))
}

/// `<op>` for the pointwise kinds, `op` one of `ops`.
fn operator_parameter<'s, Op: Copy>(
    input: Input<'s>,
    kind: &str,
    kind_span: Span,
    ops: &[(&'static str, Op)],
) -> PResult<'s, Op> {
    let names: Vec<&str> = ops.iter().map(|(name, _)| *name).collect();
    let list = names.join(", ");
    if !at_params(&input) {
        return fail(
            Diagnostic::error(
                codes::SPEC_PARAMS,
                format!("`{kind}` needs an operator"),
                kind_span,
            )
            .with_label("no operator given")
            .with_help(format!(
                "write `{kind}<{}>`; the operators are {list}",
                names[0]
            )),
        );
    }
    let (rest, _) = sym("<").parse(input)?;
    let (rest, op) = operator(rest, kind, ops)?;
    let (rest, _) = cut(sym(">")).parse(rest).map_err(params_code)?;
    Ok((rest, op))
}

fn operator<'s, Op: Copy>(
    input: Input<'s>,
    kind: &str,
    ops: &[(&'static str, Op)],
) -> PResult<'s, Op> {
    let names: Vec<&str> = ops.iter().map(|(name, _)| *name).collect();
    let (rest, (found, span)) = cut(expect("an operator", None, word))
        .parse(input)
        .map_err(params_code)?;
    match ops.iter().find(|(name, _)| *name == found) {
        Some((_, op)) => Ok((rest, *op)),
        None => {
            let diagnostic = Diagnostic::error(
                codes::SPEC_PARAMS,
                format!("`{kind}` has no operator `{found}`"),
                span,
            )
            .with_label("unknown operator");
            let help = match suggest(found, &names) {
                Some(close) => format!("did you mean `{close}`?"),
                None => format!("the operators of `{kind}` are {}", names.join(", ")),
            };
            fail(diagnostic.with_help(help))
        }
    }
}

/// `<op, [axes]>` after `Reduction`.
fn reduction(input: Input, kind_span: Span) -> PResult<SpecKind> {
    let help = Some("write `Reduction<add, [1]>`: the operator, then the axes to reduce");
    if !at_params(&input) {
        return fail(
            Diagnostic::error(
                codes::SPEC_PARAMS,
                "`Reduction` needs an operator and axes",
                kind_span,
            )
            .with_label("no parameters given")
            .with_help("write `Reduction<add, [1]>`: the operator, then the axes to reduce"),
        );
    }
    let (rest, _) = sym("<").parse(input)?;
    let (rest, op) = operator(rest, "Reduction", &ReduceOp::ALL)?;
    let (rest, _) = cut(expect("`,` and the axes", help, sym(",")))
        .parse(rest)
        .map_err(params_code)?;
    let (rest, open) = cut(expect("the axes `[…]`", help, sym("[")))
        .parse(rest)
        .map_err(params_code)?;
    let (rest, axes) = if at(&rest, "]") {
        (rest, Vec::new())
    } else {
        cut(comma_list(expect("an axis", help, int_expr))).parse(rest)?
    };
    let (rest, _) = cut(closing("]", open)).parse(rest).map_err(params_code)?;
    let (rest, _) = cut(expect("`>`", help, sym(">")))
        .parse(rest)
        .map_err(params_code)?;
    Ok((rest, SpecKind::Reduction(op, axes)))
}

/// `<bfly, mask>` after `Shfl`.
fn shuffle(input: Input, kind_span: Span) -> PResult<SpecKind> {
    let help = Some("write `Shfl<bfly, 16>`: the pattern, then the lane mask");
    if !at_params(&input) {
        return fail(
            Diagnostic::error(
                codes::SPEC_PARAMS,
                "`Shfl` needs a pattern and a lane mask",
                kind_span,
            )
            .with_label("no parameters given")
            .with_help("write `Shfl<bfly, 16>`: the pattern, then the lane mask"),
        );
    }
    let (rest, _) = sym("<").parse(input)?;
    let (rest, mode) = operator(rest, "Shfl", &[("bfly", ShflMode::Bfly)])?;
    let (rest, _) = cut(expect("`,` and a lane mask", help, sym(",")))
        .parse(rest)
        .map_err(params_code)?;
    let (rest, mask) = cut(expect("a lane mask", help, int_expr)).parse(rest)?;
    let (rest, _) = cut(expect("`>`", help, sym(">")))
        .parse(rest)
        .map_err(params_code)?;
    Ok((rest, SpecKind::Shfl(mode, mask)))
}

/// `<<<#blocks, #threads>>>`.
fn launch(input: Input) -> PResult<(Expr, Expr)> {
    let here = skip(input);
    let text = *here.fragment();
    if !text.starts_with("<<<") {
        let found = offset(&here);
        let mut error = SyntaxError::expected(found, "`<<<`");
        error.help = Some(if text.starts_with("<<") || text.starts_with('<') {
            "launch configurations open with three angle brackets: `<<<#blocks, #threads>>>`"
        } else {
            "write the launch configuration between the kind and the inputs: `Move<<<#b, #t>>>(%in)`"
        });
        return Err(Err::Failure(error.code_override(codes::BAD_LAUNCH)));
    }
    let (rest, open) = sym("<<<").parse(input)?;
    let (rest, blocks) = launch_group(rest)?;
    let (rest, _) = cut(expect(
        "`,` and the thread group",
        Some(LAUNCH_HELP),
        sym(","),
    ))
    .parse(rest)
    .map_err(|error| error.map(|error| error.code_override(codes::BAD_LAUNCH)))?;
    let (rest, threads) = launch_group(rest)?;
    let closed = sym(">>>").parse(rest);
    match closed {
        Ok((rest, _)) => Ok((rest, (blocks, threads))),
        Err(_) => {
            let found = offset(&skip(rest));
            let mut error = SyntaxError::expected(found, "`>>>`");
            error.related = Some((open, "launch configuration opened here"));
            error.help =
                Some("close the launch configuration with `>>>`: `<<<#blocks, #threads>>>`");
            Err(Err::Failure(error.code_override(codes::BAD_LAUNCH)))
        }
    }
}

fn launch_group(input: Input) -> PResult<Expr> {
    let here = skip(input);
    if peek(&here).is_some_and(|c| c.is_ascii_digit()) {
        let (_, (value, span)) = int_literal(here)?;
        return fail(
            Diagnostic::error(
                codes::BAD_LAUNCH,
                "launch groups are thread groups, not numbers",
                span,
            )
            .with_label("expected a group such as `#4`")
            .with_help(format!("name the group with `#`: `#{value}`")),
        );
    }
    cut(expect("a thread group `#g`", Some(LAUNCH_HELP), expr))
        .parse(input)
        .map_err(|error| error.map(|error| error.code_override(codes::BAD_LAUNCH)))
}

/// The inputs after `(`, up to and including `)`.
fn inputs(input: Input, open: Span) -> PResult<Vec<Expr>> {
    if at(&input, ")") {
        let (rest, _) = sym(")").parse(input)?;
        return Ok((rest, Vec::new()));
    }
    let (rest, first) = cut(expect("an input tensor `%x` or `)`", None, expr)).parse(input)?;
    let (rest, inputs) = commas_after(rest, first, expect("an input tensor `%x`", None, expr))?;
    let (rest, _) = cut(closing(")", open)).parse(rest)?;
    Ok((rest, inputs))
}
