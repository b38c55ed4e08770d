//! The layout language, calls: the algebra's functions applied to
//! evaluated arguments, with the conversions between kinds of values (an
//! integer `n` stands for the layout `n:1`).

use graphene::diag::Span;
use graphene::layout::{
    Layout, LayoutError, SwizzledLayout, Tiler, blocked_product, coalesce, complement, composition,
    filter, left_inverse, logical_divide, logical_product, raked_product, right_inverse,
    tiled_divide, zipped_divide,
};

use super::parse::{Spanned, algebra_error, leaf_layout, quoted};
use super::{FUNCTIONS, Value};
use crate::failure::{Failure, codes, similar};

fn describe_kind(value: &Value) -> &'static str {
    match value {
        Value::Int(_) => "an integer",
        Value::Layout(_) => "a layout",
        Value::Swizzled(_) => "a swizzled layout",
        Value::Swizzle(_) => "a swizzle",
        Value::Tiler(_) => "a tiler",
    }
}

pub(super) fn kind_error(value: &Spanned, wanted: &str) -> Failure {
    Failure::new(
        codes::BAD_CALL,
        format!("expected {wanted}, found {}", describe_kind(&value.value)),
        value.span(),
    )
    .label(format!("this is {}", describe_kind(&value.value)))
}

fn as_layout(value: Spanned) -> Result<Layout, Failure> {
    match value.value {
        Value::Layout(layout) => Ok(layout),
        Value::Int(n) => leaf_layout(n, &value),
        Value::Swizzled(_) | Value::Swizzle(_) | Value::Tiler(_) => {
            Err(kind_error(&value, "a layout"))
        }
    }
}

pub(super) fn as_tiler(value: Spanned) -> Result<Tiler, Failure> {
    match value.value {
        Value::Tiler(tiler) => Ok(tiler),
        Value::Layout(_) | Value::Int(_) => as_layout(value).map(Tiler::Layout),
        Value::Swizzled(_) | Value::Swizzle(_) => Err(kind_error(
            &value,
            "a tiler (a layout, an integer or `<…>`)",
        )),
    }
}

/// Applies the algebra function `name` to `args`.
pub(super) fn call(
    name: &str,
    name_span: Span,
    args: Vec<Spanned>,
    call_span: Span,
) -> Result<Value, Failure> {
    let Some((_, signature, _)) = FUNCTIONS.iter().find(|(known, _, _)| *known == name) else {
        let names = FUNCTIONS.iter().map(|(n, _, _)| *n);
        let failure = Failure::new(
            codes::UNKNOWN_NAME,
            format!("no function named `{name}`"),
            name_span,
        )
        .label("unknown function");
        return Err(match similar(name, names).as_slice() {
            [] => failure.help("`:help algebra` lists the functions"),
            found => failure.help(format!("did you mean {}?", quoted(found))),
        });
    };
    let wanted = signature.split(", ").count();
    let arity = |given: usize| {
        let plural = if wanted == 1 { "argument" } else { "arguments" };
        Failure::new(
            codes::BAD_CALL,
            format!("`{name}` takes {wanted} {plural}, {given} given"),
            call_span,
        )
        .label("in this call")
        .help(format!("write `{name}({signature})`"))
    };
    let given = args.len();
    let optional_second = name == "complement" && given == 1;
    if given != wanted && !optional_second {
        return Err(arity(given));
    }
    let mut args = args.into_iter();
    let (Some(first), second) = (args.next(), args.next()) else {
        return Err(arity(given));
    };
    let algebra = |result: Result<Layout, LayoutError>| {
        result
            .map(Value::Layout)
            .map_err(|e| algebra_error(e, call_span).label("in this call"))
    };
    let second_or_arity = |second: Option<Spanned>| second.ok_or_else(|| arity(given));
    match name {
        "coalesce" => Ok(Value::Layout(coalesce(&as_layout(first)?))),
        "filter" => Ok(Value::Layout(filter(&as_layout(first)?))),
        "right_inverse" => Ok(Value::Layout(right_inverse(&as_layout(first)?))),
        "left_inverse" => algebra(left_inverse(&as_layout(first)?)),
        "composition" => composition_of(first, second_or_arity(second)?, call_span),
        "complement" => {
            let a = as_layout(first)?;
            match second {
                None => algebra(complement(&a, a.cosize())),
                Some(m) => match m.value {
                    Value::Int(n) => algebra(complement(&a, n)),
                    Value::Layout(shape) => algebra(complement(&a, shape.shape().clone())),
                    Value::Swizzled(_) | Value::Swizzle(_) | Value::Tiler(_) => {
                        Err(kind_error(&m, "an integer or a shape"))
                    }
                },
            }
        }
        "logical_divide" | "zipped_divide" | "tiled_divide" | "logical_product" => {
            let a = as_layout(first)?;
            let t = as_tiler(second_or_arity(second)?)?;
            algebra(match name {
                "logical_divide" => logical_divide(&a, &t),
                "zipped_divide" => zipped_divide(&a, &t),
                "tiled_divide" => tiled_divide(&a, &t),
                _ => logical_product(&a, &t),
            })
        }
        "blocked_product" | "raked_product" => {
            let a = as_layout(first)?;
            let b = as_layout(second_or_arity(second)?)?;
            algebra(if name == "blocked_product" {
                blocked_product(&a, &b)
            } else {
                raked_product(&a, &b)
            })
        }
        "size" | "cosize" | "rank" | "depth" => {
            let measure: fn(&Layout) -> i64 = match name {
                "size" => Layout::size,
                "cosize" => Layout::cosize,
                "rank" => |l| l.rank() as i64,
                _ => |l| l.depth() as i64,
            };
            unary_count(name, vec![first], call_span, measure)
        }
        _ => Err(Failure::new(
            codes::UNKNOWN_NAME,
            format!("no function named `{name}`"),
            name_span,
        )),
    }
}

/// `size`, `cosize`, `rank`, `depth`: an integer measure of one layout (of
/// the layout inside a swizzled one).
fn unary_count(
    name: &str,
    args: Vec<Spanned>,
    call_span: Span,
    measure: fn(&Layout) -> i64,
) -> Result<Value, Failure> {
    let given = args.len();
    let mut args = args.into_iter();
    match (args.next(), args.next()) {
        (Some(arg), None) => match arg.value {
            Value::Swizzled(s) => Ok(Value::Int(measure(s.layout()))),
            Value::Layout(_) | Value::Int(_) | Value::Swizzle(_) | Value::Tiler(_) => {
                Ok(Value::Int(measure(&as_layout(arg)?)))
            }
        },
        (Some(_), Some(_)) | (None, _) => Err(Failure::new(
            codes::BAD_CALL,
            format!("`{name}` takes 1 argument, {given} given"),
            call_span,
        )
        .label("in this call")
        .help(format!("write `{name}(L)`"))),
    }
}

/// `composition(A, B)`: of layouts, or of a swizzled layout (or a swizzle
/// alone) with a layout, which stays swizzled.
fn composition_of(a: Spanned, b: Spanned, call_span: Span) -> Result<Value, Failure> {
    let rhs = as_layout(b)?;
    let lhs = match a.value {
        // A swizzle alone is a function of the offset: Sw ∘ B.
        Value::Swizzle(swizzle) => {
            return Ok(Value::Swizzled(SwizzledLayout::new(swizzle, 0, rhs)));
        }
        Value::Swizzled(swizzled) => swizzled,
        Value::Layout(_) | Value::Int(_) | Value::Tiler(_) => {
            return composition(&as_layout(a)?, &rhs)
                .map(Value::Layout)
                .map_err(|e| algebra_error(e, call_span).label("in this call"));
        }
    };
    lhs.compose(&rhs)
        .map(Value::Swizzled)
        .map_err(|e| algebra_error(e, call_span).label("in this call"))
}
