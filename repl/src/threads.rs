//! Pictures computed thread by thread: `:map` (which thread owns which
//! element of a tensor), `:banks` (which shared-memory banks a warp's
//! access hits) and `:swizzle` (the same under another swizzle). A
//! per-thread view's base offset is an expression over the thread id; it is
//! evaluated for every id of the group named after `by`.

use std::collections::BTreeMap;

use graphene::check::expr_text;
use graphene::expr::Var;
use graphene::ir::{self, GroupKind};
use graphene::layout::{Layout, Swizzle, SwizzledLayout, Tuple};
use graphene::viz::{
    BankReport, MAX_CELLS, Owner, ThreadMap, WarpAccess, bank_grid, bank_report, banks,
    blocks_layout, element_view, swizzled_grid, thread_map,
};

use crate::command::{Arg, Number};
use crate::failure::{Failure, codes};
use crate::pictures::{
    Context, Target, buffer_grid, cannot_draw, constant_levels, target, tensor_header,
};

/// The most (thread, element) pairs a picture evaluates.
const MAX_PAIRS: usize = 1 << 20;
/// The lanes of a warp.
const WARP: i64 = 32;

/// A group's ids (ascending) and the variable they are values of.
struct Ids {
    ids: Vec<i64>,
    var: Var,
    name: String,
}

fn group_ids(ctx: &Context, arg: &Arg) -> Result<Ids, Failure> {
    let ty = match target(ctx, arg)? {
        Target::Group(ty) => ty,
        Target::Tensor(_) | Target::Value(_) => {
            return Err(Failure::new(
                codes::BAD_ARGUMENTS,
                "expected a thread group after `by`",
                arg.span(),
            )
            .label("not a thread group")
            .help("name the threads that evaluate the view, e.g. `by #warp`"));
        }
    };
    let levels = constant_levels(&ty.levels, &arg.text, arg)?;
    let (shape, stride): (Vec<_>, Vec<_>) = levels
        .iter()
        .flat_map(Layout::leaves)
        .map(|(s, d)| (Tuple::Leaf(s), Tuple::Leaf(d)))
        .unzip();
    let flat = Layout::new(Tuple::Node(shape), Tuple::Node(stride))
        .map_err(|e| Failure::new(codes::ALGEBRA, e.to_string(), arg.span()))?;
    if flat.size() as usize > MAX_PAIRS {
        return Err(too_many(arg, flat.size() as usize));
    }
    let mut ids: Vec<i64> = flat.offsets().collect();
    ids.sort_unstable();
    ids.dedup();
    let var = match ty.kind {
        GroupKind::Thread => Var::ThreadId,
        GroupKind::Block => Var::BlockId,
    };
    Ok(Ids {
        ids,
        var,
        name: arg.text.clone(),
    })
}

fn too_many(arg: &Arg, count: usize) -> Failure {
    Failure::new(
        codes::CANNOT_DRAW,
        format!("too many elements to evaluate ({count}; at most {MAX_PAIRS})"),
        arg.span(),
    )
    .label("too large")
    .help("tile it and index one tile first")
}

/// How many elements each thread's view has, if that is at most
/// `MAX_PAIRS / threads` (so that evaluating all of them stays cheap).
fn elements_per_thread(levels: &[Layout], threads: usize, arg: &Arg) -> Result<usize, Failure> {
    let count = levels
        .iter()
        .try_fold(1usize, |n, level| n.checked_mul(level.size() as usize));
    match count {
        Some(n) if n.saturating_mul(threads.max(1)) <= MAX_PAIRS => Ok(n),
        Some(n) => Err(too_many(arg, n.saturating_mul(threads.max(1)))),
        None => Err(too_many(arg, usize::MAX)),
    }
}

/// A tensor target, or an error saying what was found instead.
fn tensor(ctx: &Context, arg: &Arg) -> Result<ir::View, Failure> {
    match target(ctx, arg)? {
        Target::Tensor(view) => Ok(view),
        Target::Group(_) | Target::Value(_) => {
            Err(
                Failure::new(codes::BAD_ARGUMENTS, "expected a tensor", arg.span())
                    .label("not a tensor"),
            )
        }
    }
}

fn buffer<'a>(ctx: &'a Context, view: &ir::View, arg: &Arg) -> Result<&'a ir::Buffer, Failure> {
    ctx.checker.buffer(view.buffer).ok_or_else(|| {
        Failure::new(
            codes::CANNOT_DRAW,
            "the view's buffer is unknown",
            arg.span(),
        )
    })
}

/// The offsets (from the buffer's start, unswizzled) of a view's elements
/// in element order — innermost level fastest, first mode fastest — for
/// one value of `var`.
fn element_offsets(
    ctx: &Context,
    view: &ir::View,
    levels: &[Layout],
    var: Var,
    id: i64,
    arg: &Arg,
) -> Result<Vec<i64>, Failure> {
    let base = view
        .base
        .eval(&|v| (v == var).then_some(id))
        .map_err(|error| {
            let names = ctx.checker.names();
            Failure::new(
                codes::CANNOT_DRAW,
                format!(
                    "cannot evaluate the view's base offset `{}`: {error}",
                    expr_text(&view.base, &names)
                ),
                arg.span(),
            )
            .label("its offset depends on more than the thread")
            .help("views indexed by loop variables or dims cannot be mapped; index with constants")
        })?;
    let per_level: Vec<Vec<i64>> = levels.iter().map(|l| l.offsets().collect()).collect();
    let total: usize = per_level.iter().map(Vec::len).product();
    let mut offsets = Vec::with_capacity(total);
    for index in 0..total {
        let mut rest = index;
        let mut offset = Some(base);
        for level in per_level.iter().rev() {
            offset = offset.and_then(|o| o.checked_add(level[rest % level.len()]));
            rest /= level.len();
        }
        let Some(offset) = offset else {
            return Err(Failure::new(
                codes::CANNOT_DRAW,
                format!("the offsets of id {id} do not fit in 64 bits"),
                arg.span(),
            ));
        };
        offsets.push(offset);
    }
    Ok(offsets)
}

/// What a cell of `:map` stands for.
#[derive(Clone, Copy)]
enum Zoom {
    /// An element, labelled with its thread and value.
    Threads,
    /// An element, labelled with its warp (`zoom warp`).
    Warps,
    /// A tile of `rows × cols` elements, labelled with its warps (`zoom MxN`).
    Tiles(usize, usize),
}

/// The zoom the word after `zoom` asks for (none: thread cells).
fn zoom_of(zoom: Option<&Arg>) -> Result<Zoom, Failure> {
    let Some(arg) = zoom else {
        return Ok(Zoom::Threads);
    };
    if matches!(arg.text.as_str(), "warp" | "warps") {
        return Ok(Zoom::Warps);
    }
    if !arg.text.contains(['x', '×']) {
        return Err(Failure::new(
            codes::BAD_ARGUMENTS,
            format!("cannot zoom to `{}`", arg.text),
            arg.span(),
        )
        .label("not a zoom level")
        .help("`zoom warp` draws each element's warp (W0, W1, …); `zoom 16x16` each 16×16 tile's warps"));
    }
    let tile = crate::command::grid(arg, "map", "the tile")?;
    Ok(Zoom::Tiles(tile.m as usize, tile.n as usize))
}

/// `:map %T by #G [zoom warp|MxN]`: element → owning thread and value
/// number on the grid of `%T`'s buffer, and thread → its elements; zoomed
/// out, element (or tile) → owning warps only, for grids of up to
/// `MAX_MAP_CELLS`.
pub fn map(
    ctx: &Context,
    target_arg: &Arg,
    threads: &Arg,
    zoom: Option<&Arg>,
) -> Result<String, Failure> {
    let zoom = zoom_of(zoom)?;
    let in_warps = match zoom {
        Zoom::Threads => false,
        Zoom::Warps | Zoom::Tiles(..) => true,
    };
    let view = tensor(ctx, target_arg)?;
    let group = group_ids(ctx, threads)?;
    let buffer = buffer(ctx, &view, target_arg)?;
    if buffer.kind == ir::BufferKind::Registers {
        return Err(Failure::new(
            codes::CANNOT_DRAW,
            format!("%{} is in registers: every thread has its own", buffer.name),
            target_arg.span(),
        )
        .label("registers are per thread")
        .help("map a shared or global tensor; an instruction's register fragments are drawn by `:atom`"));
    }
    let levels = constant_levels(&view.ty.levels, &target_arg.text, target_arg)?;
    let buffer_levels = constant_levels(&buffer.ty.levels, &buffer.name, target_arg)?;
    let page = blocks_layout(&buffer_levels).map_err(|e| cannot_draw(e, target_arg))?;
    let (rows, cols) = page_size(&page);
    elements_per_thread(&levels, group.ids.len(), target_arg)?;
    let title = format!("{} by {}, on %{}", target_arg.text, group.name, buffer.name);
    // The map bounds the grid's size before the grid is enumerated.
    let mut owners = if in_warps {
        ThreadMap::large(title, rows, cols).map(ThreadMap::in_warps)
    } else {
        // Thread cells (`T12:v3`) stop at MAX_CELLS: past it, zoom out.
        ThreadMap::bounded(title, rows, cols, MAX_CELLS)
    }
    .map_err(|e| {
        let failure = cannot_draw(e, target_arg);
        if (rows as u64).saturating_mul(cols as u64) > MAX_CELLS && !in_warps {
            failure
                .help("draw it in warp cells: add `zoom warp` (or `zoom 16x16`: a cell per tile)")
        } else {
            failure
        }
    })?
    .colored_by(ctx.color_by);
    let mut place: BTreeMap<i64, (usize, usize)> = BTreeMap::new();
    for (index, offset) in page.offsets().enumerate() {
        if place.insert(offset, (index % rows, index / rows)).is_some() {
            return Err(Failure::new(
                codes::CANNOT_DRAW,
                format!("offset {offset} appears twice in %{}", buffer.name),
                target_arg.span(),
            )
            .label("its buffer's layout repeats offsets"));
        }
    }
    if let [.., inner] = buffer_levels.as_slice() {
        if buffer_levels.len() > 1 {
            let block = blocks_layout(std::slice::from_ref(inner))
                .map_err(|e| cannot_draw(e, target_arg))?;
            let (block_rows, block_cols) = page_size(&block);
            owners = owners.with_blocks(block_rows, block_cols);
        }
    }
    for &id in &group.ids {
        for (value, offset) in element_offsets(ctx, &view, &levels, group.var, id, target_arg)?
            .into_iter()
            .enumerate()
        {
            let Some(&(row, col)) = place.get(&offset) else {
                return Err(Failure::new(
                    codes::CANNOT_DRAW,
                    format!(
                        "thread {id}'s element {value} is at offset {offset}, outside %{}",
                        buffer.name
                    ),
                    target_arg.span(),
                )
                .label("reaches past its buffer"));
            };
            owners
                .assign(
                    row,
                    col,
                    Owner {
                        thread: id,
                        value: value as i64,
                    },
                )
                .map_err(|e| cannot_draw(e, target_arg))?;
        }
    }
    let mut out = tensor_header(ctx, target_arg, &view);
    out.push_str(&format!(
        "  evaluated for the {} ids of {}; value vE is element E of the view (element order)\n\n",
        group.ids.len(),
        group.name
    ));
    // Zoomed out, no thread view: it would list every element, which
    // zooming out is meant to avoid.
    match zoom {
        Zoom::Threads => out.push_str(&thread_map(&owners, &ctx.style)),
        Zoom::Warps => out.push_str(&element_view(&owners, &ctx.style)),
        Zoom::Tiles(rows, cols) => {
            let tiles = owners
                .in_tiles(rows, cols)
                .map_err(|e| cannot_draw(e, target_arg))?;
            out.push_str(&element_view(&tiles, &ctx.style));
        }
    }
    Ok(out)
}

/// Rows and columns of a page layout (rank 2, from `blocks_layout`).
fn page_size(page: &Layout) -> (usize, usize) {
    let rows = page.mode(0).map_or(1, |m| m.size()) as usize;
    let cols = page.mode(1).map_or(1, |m| m.size()) as usize;
    (rows, cols)
}

/// One warp access: each lane's storage offsets, `width` bytes at a time.
struct Accesses {
    /// Per access, per lane (0..32), the element offset it starts at.
    lanes: Vec<Vec<Option<i64>>>,
    element_bytes: i64,
    width: i64,
    /// How many elements each access of a lane covers.
    elements: usize,
}

/// The accesses of the first warp of `group` to `view`, its buffer stored
/// with `swizzle` (its own when `None`).
fn accesses(
    ctx: &Context,
    view: &ir::View,
    target_arg: &Arg,
    group: &Ids,
    width: Option<Number>,
    swizzle: Option<Swizzle>,
) -> Result<Accesses, Failure> {
    let element_bytes = i64::from(view.ty.scalar.bytes());
    let width_value = width.map_or(element_bytes, |w| w.value);
    let width_span = width.map_or(target_arg.span(), |w| w.span);
    if ![1, 2, 4, 8, 16].contains(&width_value) || width_value % element_bytes != 0 {
        return Err(Failure::new(
            codes::BAD_ACCESS,
            format!(
                "a {width_value}-byte access of {element_bytes}-byte elements"
            ),
            width_span,
        )
        .label("not an access width")
        .help("shared memory serves 4, 8 or 16 bytes per lane (or fewer), a multiple of the element size"));
    }
    let per_access = (width_value / element_bytes) as usize;
    let levels = constant_levels(&view.ty.levels, &target_arg.text, target_arg)?;
    let per_thread = elements_per_thread(&levels, WARP as usize, target_arg)?;
    if per_thread % per_access != 0 {
        return Err(Failure::new(
            codes::BAD_ACCESS,
            format!(
                "each thread's {per_thread} elements do not split into {width_value}-byte accesses"
            ),
            width_span,
        )
        .label("does not divide the view"));
    }
    let swizzle = swizzle
        .or(view.ty.swizzle)
        .unwrap_or_else(Swizzle::identity);
    let first_warp = group.ids.first().map_or(0, |id| id / WARP);
    let count = per_thread / per_access;
    let mut lanes = vec![vec![None; WARP as usize]; count];
    for &id in group.ids.iter().filter(|id| *id / WARP == first_warp) {
        let offsets = element_offsets(ctx, view, &levels, group.var, id, target_arg)?;
        let stored: Vec<i64> = offsets.iter().map(|&o| swizzle.apply(o)).collect();
        for (access, chunk) in stored.chunks(per_access).enumerate() {
            if chunk.windows(2).any(|pair| pair[1] != pair[0] + 1) {
                return Err(Failure::new(
                    codes::BAD_ACCESS,
                    format!(
                        "thread {id}'s elements {}..{} are not contiguous in shared memory (offsets {chunk:?})",
                        access * per_access,
                        access * per_access + per_access - 1
                    ),
                    width_span,
                )
                .label(format!("a {width_value}-byte access needs {per_access} consecutive elements"))
                .help("give a smaller width, or a view whose elements are contiguous"));
            }
            lanes[access][(id % WARP) as usize] = chunk.first().copied();
        }
    }
    Ok(Accesses {
        lanes,
        element_bytes,
        width: width_value,
        elements: per_access,
    })
}

/// The bank pictures of `accesses`: one line per access, then the worst
/// access drawn in full. Returns the text and the worst report.
fn bank_pictures(
    ctx: &Context,
    accesses: &Accesses,
    arg: &Arg,
) -> Result<(String, Option<BankReport>), Failure> {
    let mut out = String::new();
    let mut worst: Option<(usize, BankReport, WarpAccess)> = None;
    // Runs of consecutive accesses with the same verdict, one line each.
    let mut runs: Vec<(usize, usize, String)> = Vec::new();
    for (k, lanes) in accesses.lanes.iter().enumerate() {
        let access = WarpAccess::new(lanes, accesses.element_bytes, accesses.width)
            .map_err(|e| Failure::new(codes::BAD_ACCESS, e.to_string(), arg.span()))?;
        let report = bank_report(&access);
        let said = verdict(&report);
        match runs.last_mut() {
            Some((_, last, text)) if *text == said => *last = k,
            Some(_) | None => runs.push((k, k, said)),
        }
        if worst
            .as_ref()
            .is_none_or(|(_, w, _)| report.wavefronts() > w.wavefronts())
        {
            worst = Some((k, report, access));
        }
    }
    if accesses.lanes.len() > 1 {
        let per = accesses.elements;
        for (first, last, said) in &runs {
            let which = if first == last {
                format!("access {first}")
            } else {
                format!("accesses {first}-{last}")
            };
            let (low, high) = (first * per, last * per + per - 1);
            let elements = if low == high {
                format!("element {low}")
            } else {
                format!("elements {low}..{high}")
            };
            out.push_str(&format!("{which} ({elements} of each thread): {said}\n"));
        }
    }
    let Some((k, report, access)) = worst else {
        return Ok((out, None));
    };
    if accesses.lanes.len() > 1 {
        out.push_str(&format!("\nthe worst, access {k}:\n"));
    }
    out.push_str(&banks(&access, &ctx.style));
    Ok((out, Some(report)))
}

fn verdict(report: &BankReport) -> String {
    match report.degree() {
        0 => "no lane active".to_string(),
        1 => format!("conflict-free, {}", wavefronts(report.wavefronts())),
        n => format!(
            "{n}-way bank conflict, {} where {} would do",
            wavefronts(report.wavefronts()),
            report.ideal_wavefronts()
        ),
    }
}

fn wavefronts(count: usize) -> String {
    if count == 1 {
        "1 wavefront".to_string()
    } else {
        format!("{count} wavefronts")
    }
}

fn shared_buffer<'a>(
    ctx: &'a Context,
    view: &ir::View,
    arg: &Arg,
) -> Result<&'a ir::Buffer, Failure> {
    let buffer = buffer(ctx, view, arg)?;
    if buffer.kind != ir::BufferKind::Shared {
        return Err(Failure::new(
            codes::BAD_ACCESS,
            format!("%{} is not in shared memory", buffer.name),
            arg.span(),
        )
        .label("banks are a property of shared memory")
        .help("declare the tile `.SH`"));
    }
    Ok(buffer)
}

/// `:banks %T [by #G] [width N]`.
pub fn banks_of(
    ctx: &Context,
    target_arg: &Arg,
    threads: Option<&Arg>,
    width: Option<Number>,
) -> Result<String, Failure> {
    let view = tensor(ctx, target_arg)?;
    shared_buffer(ctx, &view, target_arg)?;
    let mut out = tensor_header(ctx, target_arg, &view);
    out.push('\n');
    let Some(threads) = threads else {
        if let Some(width) = width {
            return Err(Failure::new(
                codes::BAD_ARGUMENTS,
                "`width` is the width of a warp's access: say whose, with `by #G`",
                width.span,
            )
            .label("no access to measure")
            .help(format!(
                "`:banks {} by #threads width {}`",
                target_arg.text, width.value
            )));
        }
        let Some(base) = view.base.as_const() else {
            return Err(Failure::new(
                codes::CANNOT_DRAW,
                "the view's offset depends on the thread",
                target_arg.span(),
            )
            .label("a different view in each thread")
            .help(format!(
                "say whose access: `:banks {} by #threads`",
                target_arg.text
            )));
        };
        let levels = constant_levels(&view.ty.levels, &target_arg.text, target_arg)?;
        let page = match levels.as_slice() {
            [one] => one.clone(),
            _ => blocks_layout(&levels).map_err(|e| cannot_draw(e, target_arg))?,
        };
        let tile = SwizzledLayout::new(
            view.ty.swizzle.unwrap_or_else(Swizzle::identity),
            base,
            page,
        );
        let element_bytes = i64::from(view.ty.scalar.bytes());
        out.push_str(
            &bank_grid(&tile, element_bytes, &ctx.style).map_err(|e| cannot_draw(e, target_arg))?,
        );
        return Ok(out);
    };
    let group = group_ids(ctx, threads)?;
    let accesses = accesses(ctx, &view, target_arg, &group, width, None)?;
    out.push_str(&format!(
        "  each thread of {} reads its view {} bytes at a time\n\n",
        group.name, accesses.width
    ));
    out.push_str(&bank_pictures(ctx, &accesses, target_arg)?.0);
    Ok(out)
}

/// `:swizzle B M S [X [by #G] [width N]]`.
pub fn swizzle(
    ctx: &Context,
    params: [Number; 3],
    target_arg: Option<&Arg>,
    threads: Option<&Arg>,
    width: Option<Number>,
) -> Result<String, Failure> {
    let [b, m, s] = params;
    let params_span = b.span.join(s.span).join(m.span);
    let sw = Swizzle::new(b.value, m.value, s.value).map_err(|e| {
        Failure::new(codes::ALGEBRA, e.to_string(), params_span)
            .label("not a valid swizzle")
            .help("Swizzle<B,M,S> XORs the B bits at M+S into the B bits at M; |S| ≥ B")
    })?;
    let Some(target_arg) = target_arg else {
        if let Some(by) = threads {
            return Err(Failure::new(
                codes::BAD_ARGUMENTS,
                "`by` needs a tensor to swizzle",
                by.span(),
            )
            .help("give the tensor after B M S, e.g. `:swizzle 3 3 3 %s by #w`"));
        }
        // The swizzle alone: how it works on fp16, the element type the
        // 16-byte chunks of the tensor-core tiles hold.
        return graphene::viz::swizzle_explained(sw, 2, &ctx.style).map_err(|e| {
            Failure::new(codes::BAD_ARGUMENTS, e.to_string(), params_span)
                .label("nothing to explain")
                .help("explain a swizzle that moves bits, e.g. `:swizzle 3 3 3`")
        });
    };
    let view = match target(ctx, target_arg)? {
        Target::Value(value) => {
            let layout = match value {
                crate::algebra::Value::Layout(layout) => layout,
                other => {
                    return Err(Failure::new(
                        codes::BAD_ARGUMENTS,
                        format!("cannot swizzle {}", other.kind_line()),
                        target_arg.span(),
                    )
                    .label("expected a layout or a tensor"));
                }
            };
            if threads.is_some() {
                return Err(Failure::new(
                    codes::BAD_ARGUMENTS,
                    "`by` needs a tensor: a layout has no threads",
                    target_arg.span(),
                ));
            }
            let swizzled = SwizzledLayout::new(sw, 0, layout);
            return crate::pictures::value_text(
                &crate::algebra::Value::Swizzled(swizzled),
                &ctx.style,
                target_arg,
            );
        }
        Target::Tensor(view) => view,
        Target::Group(_) => {
            return Err(Failure::new(
                codes::BAD_ARGUMENTS,
                "cannot swizzle a thread group",
                target_arg.span(),
            )
            .label("expected a layout or a tensor"));
        }
    };
    let buffer = shared_buffer(ctx, &view, target_arg)?;
    let page = buffer_grid(buffer, target_arg)?;
    let own = view
        .ty
        .swizzle
        .map_or("no swizzle".to_string(), |own| format!("its own {own}"));
    let mut out = tensor_header(ctx, target_arg, &view);
    out.push_str(&format!(
        "  %{} stored with {sw} instead of {own}\n\n",
        buffer.name
    ));
    let stored = SwizzledLayout::new(sw, 0, page);
    out.push_str(&swizzled_grid(&stored, &ctx.style).map_err(|e| cannot_draw(e, target_arg))?);
    out.push('\n');
    let element_bytes = i64::from(buffer.ty.scalar.bytes());
    let Some(threads) = threads else {
        out.push_str(
            &bank_grid(&stored, element_bytes, &ctx.style)
                .map_err(|e| cannot_draw(e, target_arg))?,
        );
        return Ok(out);
    };
    let group = group_ids(ctx, threads)?;
    let before = accesses(ctx, &view, target_arg, &group, width, None)?;
    let after = accesses(ctx, &view, target_arg, &group, width, Some(sw))?;
    let (before_text, before_report) = bank_pictures(ctx, &before, target_arg)?;
    let (after_text, after_report) = bank_pictures(ctx, &after, target_arg)?;
    out.push_str(&format!("before, with {own}:\n{before_text}\n"));
    out.push_str(&format!("after, with {sw}:\n{after_text}\n"));
    if let (Some(before), Some(after)) = (before_report, after_report) {
        out.push_str(&format!(
            "{} by {}:\n  with {own}: {}\n  with {sw}: {}\n",
            target_arg.text,
            group.name,
            verdict(&before),
            verdict(&after)
        ));
    }
    Ok(out)
}
