//! Pictures of one value: what `:show` draws, and what a layout expression
//! draws after its first two lines. A target is a layout expression or an
//! IR expression (a tensor view or a thread group, checked by the
//! session's checker); its constant levels are drawn with `graphene::viz`.

use graphene::check::{self, Names, Shown, constant_layout, expr_text};
use graphene::ir::{self, Level};
use graphene::layout::{Layout, Swizzle, SwizzledLayout, Tiled};
use graphene::syntax::{TokenKind, parse_expr, tokenize};
use graphene::viz::{
    ColorBy, Style, VizError, blocks_layout, layout_grid, swizzled_grid, tiled_grid, tiles_in_place,
};

use crate::algebra::{self, Scope, Value};
use crate::command::Arg;
use crate::failure::{Failure, codes};

/// What the pictures read: the checker's names, the `let` names, the style.
///
/// Rule: pictures only read it; a picture never changes the session.
pub struct Context<'a> {
    /// The IR names.
    pub checker: &'a check::Session,
    /// The layout names.
    pub scope: Scope<'a>,
    /// How to draw.
    pub style: Style,
    /// What the colours of thread-data maps tell apart.
    pub color_by: ColorBy,
}

/// Something to draw.
///
/// Rule: a tensor or group has been checked by the session's checker; a
/// value has been evaluated against its `let` names.
pub enum Target {
    /// A value of the layout language.
    Value(Value),
    /// A tensor view.
    Tensor(ir::View),
    /// A thread (or block) group.
    Group(ir::GroupType),
}

/// Whether `text` is IR (mentions a `%tensor`, `#group` or `@index`)
/// rather than a layout expression.
pub fn mentions_ir_names(text: &str) -> bool {
    tokenize(text).iter().any(|t| {
        matches!(
            t.kind,
            TokenKind::Tensor | TokenKind::Group | TokenKind::Index
        )
    })
}

/// Evaluates a command's argument: IR through the checker, anything else
/// as a layout expression.
pub fn target(ctx: &Context, arg: &Arg) -> Result<Target, Failure> {
    if !mentions_ir_names(&arg.text) {
        return algebra::evaluate(&arg.text, arg.start, &ctx.scope).map(Target::Value);
    }
    let expr = parse_expr(&arg.text).map_err(|d| Failure::shifted(d, arg.start))?;
    match ctx.checker.expression(&expr) {
        Ok(Shown::Tensor { view, .. }) => Ok(Target::Tensor(view)),
        Ok(Shown::Group { ty, .. }) => Ok(Target::Group(ty)),
        Ok(
            Shown::Nothing
            | Shown::Const { .. }
            | Shown::Indices(_)
            | Shown::Spec(_)
            | Shown::Kernel(_),
        ) => Err(Failure::new(
            codes::CANNOT_DRAW,
            "not a tensor or thread group",
            arg.span(),
        )),
        Err(diagnostics) => Err(Failure::shifted(diagnostics, arg.start)),
    }
}

/// A drawing error, pointed at the argument.
pub fn cannot_draw(error: VizError, arg: &Arg) -> Failure {
    Failure::new(codes::CANNOT_DRAW, error.to_string(), arg.span()).label("cannot draw this")
}

/// The exact layouts of constant levels, or an error naming the symbolic
/// type `what`.
pub fn constant_levels(levels: &[Level], what: &str, arg: &Arg) -> Result<Vec<Layout>, Failure> {
    levels
        .iter()
        .map(constant_layout)
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| {
            Failure::new(
                codes::CANNOT_DRAW,
                format!("{what} has symbolic extents or strides"),
                arg.span(),
            )
            .label("not constant")
            .help("draw a constant tile of it: `.tile(…)` and index it first, or declare a constant shape")
        })
}

/// The header of a tensor: `%x : type`, and where its view starts.
pub fn tensor_header(ctx: &Context, arg: &Arg, view: &ir::View) -> String {
    let names = ctx.checker.names();
    let mut out = format!(
        "{} : {}\n",
        arg.text,
        check::tensor_type_text(&view.ty, &names)
    );
    out.push_str(&view_line(ctx.checker, view, &names));
    out
}

/// Where a view's elements are, one line: the buffer it declares (a view
/// of all of it from offset 0), or `a view of %1 … at offset …`.
pub fn view_line(checker: &check::Session, view: &ir::View, names: &Names) -> String {
    let Some(buffer) = checker.buffer(view.buffer) else {
        return String::new();
    };
    let storage = match buffer.kind {
        ir::BufferKind::Param(i) => format!("global memory, kernel parameter {i}"),
        ir::BufferKind::Shared => "shared memory".to_string(),
        ir::BufferKind::Registers => "registers of each thread".to_string(),
        ir::BufferKind::Temporary => "a value of the kernel's contract, not stored".to_string(),
    };
    if view.base.as_const() == Some(0) && view.ty == buffer.ty {
        return format!(
            "  {storage}, {} elements\n",
            expr_text(&buffer.elements, names)
        );
    }
    format!(
        "  a view of %{} ({storage}) at offset {}\n",
        buffer.name,
        expr_text(&view.base, names)
    )
}

/// `:show X`: the grid of a layout, tensor or group. `blocks` draws a
/// tiled tensor as blocks instead of inside its buffer.
pub fn show(ctx: &Context, arg: &Arg, blocks: bool) -> Result<String, Failure> {
    match target(ctx, arg)? {
        Target::Value(value) => value_text(&value, &ctx.style, arg),
        Target::Tensor(view) => {
            let mut out = tensor_header(ctx, arg, &view);
            out.push('\n');
            out.push_str(&tensor_grid(ctx, arg, &view, blocks)?);
            Ok(out)
        }
        Target::Group(ty) => {
            let names = ctx.checker.names();
            let mut out = format!("{} : {}\n\n", arg.text, check::group_type_text(&ty, &names));
            let levels = constant_levels(&ty.levels, &arg.text, arg)?;
            out.push_str(&levels_grid(&levels, &ctx.style).map_err(|e| cannot_draw(e, arg))?);
            Ok(out)
        }
    }
}

/// A value of the layout language: its CuTe text, what it is, its drawing.
pub fn value_text(value: &Value, style: &Style, arg: &Arg) -> Result<String, Failure> {
    let mut out = format!("{}\n{}\n", value.cute(), value.kind_line());
    let drawing = match value {
        Value::Layout(layout) => Some(layout_grid(layout, style)),
        Value::Swizzled(swizzled) => {
            Some(swizzled_grid(swizzled, style).map_err(|e| cannot_draw(e, arg))?)
        }
        Value::Int(_) | Value::Swizzle(_) | Value::Tiler(_) => None,
    };
    if let Some(drawing) = drawing {
        out.push('\n');
        out.push_str(&drawing);
    }
    Ok(out)
}

/// One level as a grid; two as tiles (blocks); more as nested blocks.
fn levels_grid(levels: &[Layout], style: &Style) -> Result<String, VizError> {
    match levels {
        [one] => Ok(layout_grid(one, style)),
        [outer, inner] => tiled_grid(
            &Tiled {
                outer: outer.clone(),
                inner: inner.clone(),
            },
            style,
        ),
        _ => {
            let page = blocks_layout(levels)?;
            Ok(format!(
                "{} levels drawn as nested blocks, innermost fastest:\n{}",
                levels.len(),
                layout_grid(&page, style)
            ))
        }
    }
}

/// The layout a buffer's elements are drawn on: its one level, or its
/// levels as nested blocks.
pub fn buffer_grid(buffer: &ir::Buffer, arg: &Arg) -> Result<Layout, Failure> {
    let levels = constant_levels(&buffer.ty.levels, &format!("%{}", buffer.name), arg)?;
    match levels.as_slice() {
        [one] => Ok(one.clone()),
        _ => blocks_layout(&levels).map_err(|e| cannot_draw(e, arg)),
    }
}

fn tensor_grid(ctx: &Context, arg: &Arg, view: &ir::View, blocks: bool) -> Result<String, Failure> {
    let levels = constant_levels(&view.ty.levels, &arg.text, arg)?;
    let swizzle = view.ty.swizzle;
    let base = view.base.as_const();
    let names = ctx.checker.names();
    let relative = || {
        format!(
            "(offsets from the view's base {}{})\n",
            expr_text(&view.base, &names),
            if swizzle.is_some() {
                ", before the swizzle"
            } else {
                ""
            }
        )
    };
    let style = &ctx.style;
    match (levels.as_slice(), base) {
        ([one], Some(base)) if base != 0 || swizzle.is_some() => {
            let swizzled =
                SwizzledLayout::new(swizzle.unwrap_or_else(Swizzle::identity), base, one.clone());
            swizzled_grid(&swizzled, style).map_err(|e| cannot_draw(e, arg))
        }
        ([one], Some(_)) => Ok(layout_grid(one, style)),
        ([one], None) => Ok(format!("{}{}", relative(), layout_grid(one, style))),
        ([outer, inner], Some(0)) if !blocks => {
            let tiled = Tiled {
                outer: outer.clone(),
                inner: inner.clone(),
            };
            let in_place = ctx
                .checker
                .buffer(view.buffer)
                .and_then(|buffer| buffer_grid(buffer, arg).ok())
                .and_then(|original| tiles_in_place(&original, &tiled, style).ok());
            match in_place {
                Some(drawing) => Ok(drawing),
                None => tiled_grid(&tiled, style).map_err(|e| cannot_draw(e, arg)),
            }
        }
        (_, Some(0)) => levels_grid(&levels, style).map_err(|e| cannot_draw(e, arg)),
        (_, Some(_) | None) => Ok(format!(
            "{}{}",
            relative(),
            levels_grid(&levels, style).map_err(|e| cannot_draw(e, arg))?
        )),
    }
}
