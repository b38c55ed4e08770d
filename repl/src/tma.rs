//! `:tma %dst %src`: the tensor map a `Move<tma>` from a global tile view
//! into a shared tile would be given (`graphene::check::tma::bulk_copy`,
//! the checker's own derivation) — the global tensor's modes innermost
//! first, the box, the swizzle, the bytes one copy lands — and a grid of
//! where the hardware lands each 16-byte chunk of the box in the tile.

use graphene::check::{expr_text, tensor_type_text, tma::bulk_copy};
use graphene::ir::{self, TmaSwizzle};
use graphene::layout::Swizzle;
use graphene::viz::landing_grid;

use crate::command::Arg;
use crate::failure::{Failure, codes, span};
use crate::pictures::{Context, Target, cannot_draw, target, tensor_header};

/// `:tma DST SRC`: the headers of both views, the tensor map, and the
/// landing grid; or, when the hardware cannot do the copy, the reason
/// `bulk_copy` gives, as an error over both arguments.
pub fn tma(ctx: &Context, dst: &Arg, src: &Arg) -> Result<String, Failure> {
    let dst_view = tensor(ctx, dst)?;
    let src_view = tensor(ctx, src)?;
    let buffers = ctx.checker.buffers();
    let names = ctx.checker.names();
    // `bulk_copy` takes the shapes as equal (a `Move` checks that first).
    let same_shape = if src_view.ty.levels.iter().map(|l| &l.shape).eq(dst_view
        .ty
        .levels
        .iter()
        .map(|l| &l.shape))
    {
        Ok(())
    } else {
        Err(format!(
            "lands a box of the source's shape in a destination of the same shape; {} is not {}",
            tensor_type_text(&dst_view.ty, &names),
            tensor_type_text(&src_view.ty, &names)
        ))
    };
    let copy = same_shape
        .and_then(|()| bulk_copy(buffers, &src_view, &dst_view))
        .map_err(|reason| {
            Failure::new(
                codes::CANNOT_DRAW,
                "a `Move<tma>` the hardware cannot do",
                span(dst.start, src.start + src.text.len() - dst.start),
            )
            .label(format!("a bulk tensor copy {reason}"))
            .help(
                "copy a `.tile_partial` tile of a global tensor into a shared tile laid out as it \
             lands, e.g. `[128, 64 : 64, 1].fp16.SH.Swizzle<3, 3, 3>`",
            )
        })?;
    let map = &copy.map;
    let tensor = buffers
        .get(map.tensor.0 as usize)
        .map_or_else(|| "the tensor".to_string(), |b| format!("%{}", b.name));
    let scalar = src_view.ty.scalar;
    let bytes = i64::from(scalar.bytes());
    let mut out = tensor_header(ctx, dst, &dst_view);
    out.push_str(&tensor_header(ctx, src, &src_view));
    out.push_str(&format!(
        "\ntensor map of {tensor}, {} ({bytes} bytes), dims innermost first:\n",
        scalar.name()
    ));
    let rows: Vec<[String; 6]> = map
        .dims
        .iter()
        .zip(&map.boxes)
        .zip(&copy.view_modes)
        .enumerate()
        .map(|(i, ((dim, size), walk))| {
            [
                format!("dim {i}"),
                dim.mode.to_string(),
                expr_text(&dim.extent, &names),
                expr_text(&dim.stride, &names),
                size.to_string(),
                walk.map_or_else(|| "fixed".to_string(), |m| m.to_string()),
            ]
        })
        .collect();
    let heading = [
        String::new(),
        format!("mode of {tensor}"),
        "extent".to_string(),
        "stride".to_string(),
        "box".to_string(),
        "view mode".to_string(),
    ];
    out.push_str(&aligned(&heading, &rows));
    let bits = match map.swizzle {
        TmaSwizzle::None => 0,
        TmaSwizzle::Span32 => 1,
        TmaSwizzle::Span64 => 2,
        TmaSwizzle::Span128 => 3,
    };
    let swizzle = if bits == 0 {
        Swizzle::identity()
    } else {
        Swizzle::new(bits, 4, 3).map_err(|e| cannot_draw(e.into(), dst))?
    };
    match map.swizzle {
        TmaSwizzle::None => out.push_str("swizzle: none, the box lands as it is\n"),
        TmaSwizzle::Span32 | TmaSwizzle::Span64 | TmaSwizzle::Span128 => out.push_str(&format!(
            "swizzle: {}-byte span, {swizzle} on byte offsets\n  (16-byte chunk bits 4-{} XOR bits 7-{})\n",
            map.swizzle.span_bytes(),
            3 + bits,
            6 + bits
        )),
    }
    let elements: i64 = map.boxes.iter().map(|b| i64::from(*b)).product();
    let inner = map.boxes.first().map_or(1, |b| i64::from(*b));
    let row_bytes = inner * bytes;
    let box_text = map
        .boxes
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(" × ");
    out.push_str(&format!(
        "one copy: box {box_text} = {elements} elements, {} bytes\n",
        elements * bytes
    ));
    let base = dst_view.base.as_const();
    let line = if bits == 0 { row_bytes } else { 128 };
    out.push_str(&format!(
        "\nwhere the hardware lands chunk c (16 bytes) of row r\n({row_bytes} bytes of dim 0 at byte {row_bytes}·r of {}{}):\nthe chunk of its {line}-byte line it is stored at\n",
        dst.text,
        match base {
            Some(_) => "",
            None => ", from its base taken as aligned",
        }
    ));
    let first_byte = base.unwrap_or(0).saturating_mul(bytes);
    out.push_str(
        &landing_grid(
            swizzle,
            first_byte,
            elements / inner.max(1),
            row_bytes,
            &ctx.style,
        )
        .map_err(|e| cannot_draw(e, dst))?,
    );
    Ok(out)
}

/// The view `arg` names, or an error saying a tensor is wanted there.
fn tensor(ctx: &Context, arg: &Arg) -> Result<ir::View, Failure> {
    match target(ctx, arg)? {
        Target::Tensor(view) => Ok(view),
        Target::Value(_) | Target::Group(_) => Err(Failure::new(
            codes::CANNOT_DRAW,
            format!("`{}` is not a tensor", arg.text),
            arg.span(),
        )
        .label("a tensor view is needed here")
        .help("write `:tma %shared_tile %global_tile`, e.g. `:tma %s %A.tile_partial([128, 64])[0, 0]`")),
    }
}

/// Rows of cells, left-aligned in columns two spaces apart, each line
/// indented by two.
fn aligned<const N: usize>(heading: &[String; N], rows: &[[String; N]]) -> String {
    let widths: Vec<usize> = (0..N)
        .map(|c| {
            std::iter::once(heading)
                .chain(rows)
                .map(|row| row[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in std::iter::once(heading).chain(rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str("  ");
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}
