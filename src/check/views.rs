//! Stage 2, check: the values of tensor and group expressions — a view's
//! buffer, base offset and type through `.tile`, `.reshape` and indexing
//! (docs/language.md §3), and a group's type through `.tile`, `.reshape`
//! and `.scalar`. Tiling, reshaping and broadcasting (`super::broadcast`)
//! keep a view's base; indexing adds `level(c)` of every indexed mode to it.

use crate::diag::{Diagnostic, Span};
use crate::expr::{Expr, Var};
use crate::ir::{Level, Memory, View};
use crate::layout::{Layout, LayoutError, Tiler, Tuple, reshape};
use crate::syntax::ast::{self, Coord, CoordKind, ExprKind, TileArg, TileDim, Tiling};

use super::codes;
use super::env::{Binding, Checked, Checker, GroupVal, Namespace, Poisoned};
use super::ints::IntContext;
use super::symbolic::{self, Mode, TileFailure, level_from_modes, modes, size};

/// The value of a tensor or group expression.
#[derive(Clone, PartialEq, Debug)]
pub(crate) enum Value {
    /// A view of a tensor.
    Tensor(View),
    /// A thread group.
    Group(GroupVal),
}

impl Value {
    fn levels(&self) -> &[Level] {
        match self {
            Value::Tensor(view) => &view.ty.levels,
            Value::Group(group) => &group.ty.levels,
        }
    }

    fn with_levels(self, levels: Vec<Level>, span: Span) -> Value {
        match self {
            Value::Tensor(mut view) => {
                view.ty.levels = levels;
                view.span = span;
                Value::Tensor(view)
            }
            Value::Group(mut group) => {
                group.ty.levels = levels;
                Value::Group(group)
            }
        }
    }
}

/// The levels `.tile` or `.tile_partial` gives.
pub(super) struct TiledLevels {
    /// The tiled levels.
    pub levels: Vec<Level>,
    /// The modes of the innermost level whose last tile may reach past the
    /// mode's end (`.tile_partial` only), with the mode's extent.
    pub passed: Vec<(usize, Expr)>,
}

/// A tiler with the span it was written at.
struct SpannedTiler {
    tiler: Tiler,
    span: Span,
}

impl Checker {
    /// The value of a tensor or group expression.
    pub(crate) fn value(&mut self, e: &ast::Expr) -> Checked<Value> {
        match &e.kind {
            ExprKind::Tensor(name) => match self.lookup(Namespace::Tensor, name)? {
                Binding::Tensor(Some(mut view)) => {
                    view.span = e.span;
                    Ok(Value::Tensor(view))
                }
                Binding::Tensor(None)
                | Binding::Group(_)
                | Binding::Index(_)
                | Binding::Loop(_)
                | Binding::Unrolled(_)
                | Binding::Let(_) => Err(Poisoned),
            },
            ExprKind::Group(name) => match self.lookup(Namespace::Group, name)? {
                Binding::Group(Some(group)) => Ok(Value::Group(group)),
                Binding::Group(None)
                | Binding::Tensor(_)
                | Binding::Index(_)
                | Binding::Loop(_)
                | Binding::Unrolled(_)
                | Binding::Let(_) => Err(Poisoned),
            },
            ExprKind::Allocate => Err(self.fail(
                Diagnostic::error(
                    codes::BAD_OPERATION,
                    "`Allocate()` can only be the value of a declaration",
                    e.span,
                )
                .with_label("not a declaration's value")
                .with_help("allocate by declaring the tensor: `%x:[8,8].fp16.SH = Allocate()`"),
            )),
            ExprKind::Tile(base, args, tiling) => match self.value(base)? {
                Value::Tensor(view) => self
                    .tile_view(view, args, *tiling, e.span)
                    .map(Value::Tensor),
                Value::Group(group) => {
                    if *tiling == Tiling::Partial {
                        return Err(self.fail(
                            Diagnostic::error(
                                codes::BAD_OPERATION,
                                "`.tile_partial` applies to tensors, not thread groups",
                                e.span,
                            )
                            .with_label("a thread group")
                            .with_note("a group has a constant number of threads or a whole grid of blocks")
                            .with_help("tile the group with `.tile`; give the grid `ceil_div(M, 128)` blocks for the partial tiles of a tensor"),
                        ));
                    }
                    let value = Value::Group(group);
                    let tiled = self.tile_levels(value.levels(), args, e.span, Tiling::Exact)?;
                    Ok(value.with_levels(tiled.levels, e.span))
                }
            },
            ExprKind::Reshape(base, depth, layout) => match self.value(base)? {
                Value::Tensor(view) => self
                    .reshape_view(view, depth.as_ref(), layout, e.span)
                    .map(Value::Tensor),
                value @ Value::Group(_) => {
                    let levels = self.reshape_levels(value.levels(), depth.as_ref(), layout)?;
                    Ok(value.with_levels(levels, e.span))
                }
            },
            ExprKind::Broadcast(base, position, extent) => match self.value(base)? {
                Value::Tensor(view) => self
                    .broadcast_view(view, position, extent, e.span)
                    .map(Value::Tensor),
                Value::Group(_) => Err(self.fail(
                    Diagnostic::error(
                        codes::BAD_OPERATION,
                        "`.broadcast` applies to tensors, not thread groups",
                        e.span,
                    )
                    .with_label("a thread group")
                    .with_note("a stride-0 mode of a group would name one thread at several coordinates")
                    .with_help("broadcast the tensor the group works on: `%b.broadcast(0, M)`"),
                )),
            },
            ExprKind::Indices(_) => Err(self.fail(
                Diagnostic::error(
                    codes::BAD_OPERATION,
                    "`.indices()` is not a value",
                    e.span,
                )
                .with_label("binds index names; it cannot be used here")
                .with_help("bind the coordinates first: `@m, @n = #g.indices()`"),
            )),
            ExprKind::Scalar(base) => match self.value(base)? {
                Value::Group(mut group) => {
                    group.ty.levels = vec![symbolic::empty_level()];
                    Ok(Value::Group(group))
                }
                Value::Tensor(_) => Err(self.fail(
                    Diagnostic::error(
                        codes::BAD_OPERATION,
                        "`.scalar()` applies to thread groups, not tensors",
                        e.span,
                    )
                    .with_label("a tensor")
                    .with_help("index every mode of a tensor to reach one element: `%x[i, j]`"),
                )),
            },
            ExprKind::Index(base, coords) => match self.value(base)? {
                Value::Tensor(view) => self.index_view(view, coords, e.span).map(Value::Tensor),
                Value::Group(_) => Err(self.fail(
                    Diagnostic::error(
                        codes::BAD_OPERATION,
                        "thread groups cannot be indexed",
                        e.span,
                    )
                    .with_label("indexes a thread group")
                    .with_note("a spec runs on every instance of its group at once")
                    .with_help(
                        "bind the group's coordinates with `.indices()` and index tensors with them",
                    ),
                )),
            },
        }
    }

    /// The value of an expression that must be a tensor.
    pub(crate) fn tensor_value(&mut self, e: &ast::Expr) -> Checked<View> {
        match self.value(e)? {
            Value::Tensor(view) => Ok(view),
            Value::Group(_) => Err(self.wrong_kind(e, "a tensor", "a thread group")),
        }
    }

    /// The value of an expression that must be a thread group.
    pub(crate) fn group_value(&mut self, e: &ast::Expr) -> Checked<GroupVal> {
        match self.value(e)? {
            Value::Group(group) => Ok(group),
            Value::Tensor(_) => Err(self.wrong_kind(e, "a thread group", "a tensor")),
        }
    }

    fn wrong_kind(&mut self, e: &ast::Expr, expected: &str, found: &str) -> Poisoned {
        let help = if expected == "a tensor" {
            "operands and definitions with `%` are tensors; name a tensor `%x` here"
        } else {
            "launch configurations and `.indices()` take thread groups; name a group `#g` here"
        };
        let label = match &e.kind {
            ExprKind::Tensor(name) => format!("`%{}` is {found}", name.text),
            ExprKind::Group(name) => format!("`#{}` is {found}", name.text),
            ExprKind::Allocate
            | ExprKind::Tile(..)
            | ExprKind::Reshape(..)
            | ExprKind::Broadcast(..)
            | ExprKind::Indices(_)
            | ExprKind::Scalar(_)
            | ExprKind::Index(..) => format!("this is {found}"),
        };
        self.fail(
            Diagnostic::error(
                codes::WRONG_KIND,
                format!("expected {expected}, found {found}"),
                e.span,
            )
            .with_label(label)
            .with_help(help),
        )
    }

    /// `.tile(args)` of the innermost level: its modes are divided by the
    /// tilers; the rests become a new outer level, the tiles the new
    /// innermost level.
    pub(super) fn tile_levels(
        &mut self,
        levels: &[Level],
        args: &[TileArg],
        span: Span,
        tiling: Tiling,
    ) -> Checked<TiledLevels> {
        let Some(innermost) = levels.last() else {
            return Err(Poisoned);
        };
        let level_modes = modes(innermost);
        let tilers = self.tilers(args, level_modes.len(), span)?;
        if tilers.len() != level_modes.len() {
            let level = self.level_text(innermost);
            return Err(self.fail(
                Diagnostic::error(
                    codes::TILE_ARITY,
                    format!(
                        "{} tiler{} for a level of {} mode{}",
                        tilers.len(),
                        if tilers.len() == 1 { "" } else { "s" },
                        level_modes.len(),
                        if level_modes.len() == 1 { "" } else { "s" }
                    ),
                    span,
                )
                .with_label(format!("tiles the innermost level {level}"))
                .with_help("give one tiler per mode, `_` for a mode kept whole: `.tile([8,8])`, `.tile(8, _)`"),
            ));
        }
        let mut outer = Vec::with_capacity(level_modes.len());
        let mut inner = Vec::with_capacity(level_modes.len());
        let mut passed = Vec::new();
        let mut failed = false;
        for (index, (mode, tiler)) in level_modes.iter().zip(&tilers).enumerate() {
            let tiled = match tiling {
                Tiling::Exact => symbolic::tile_mode(mode, &tiler.tiler),
                Tiling::Partial => {
                    symbolic::tile_mode_partial(mode, &tiler.tiler).map(|(tiled, extent)| {
                        passed.extend(extent.map(|extent| (index, extent)));
                        tiled
                    })
                }
            };
            match tiled {
                Ok(tiled) => {
                    if let Some((value, divisor)) = tiled.divisible {
                        self.require(crate::ir::Requirement::Divisible {
                            value,
                            divisor,
                            span: tiler.span,
                        });
                    }
                    outer.push(tiled.outer);
                    inner.push(tiled.inner);
                }
                Err(failure) => {
                    self.tile_failure(failure, mode, index, tiler);
                    failed = true;
                }
            }
        }
        if failed {
            return Err(Poisoned);
        }
        let mut result = levels[..levels.len() - 1].to_vec();
        result.push(level_from_modes(outer));
        result.push(level_from_modes(inner));
        Ok(TiledLevels {
            levels: result,
            passed,
        })
    }

    fn tile_failure(
        &mut self,
        failure: TileFailure,
        mode: &Mode,
        index: usize,
        tiler: &SpannedTiler,
    ) {
        let names = self.names();
        let mode_text = crate::ir::print::written_level_text(
            &Tuple::Node(vec![mode.0.clone()]),
            Some(&Tuple::Node(vec![mode.1.clone()])),
            &names,
        );
        let diagnostic = match failure {
            TileFailure::Partial { tile, extent } => Diagnostic::error(
                codes::BAD_TILE,
                format!("a tile of {tile} does not divide mode {index} of extent {extent}"),
                tiler.span,
            )
            .with_label(format!("tiles mode {index}, {mode_text}"))
            .with_note("partial tiles would reach past the tensor; the checker accepts exact tilings only")
            .with_help(format!("use a tile whose size divides {extent}")),
            TileFailure::Algebra(error) => Diagnostic::error(
                codes::BAD_TILE,
                format!("this tiler cannot tile mode {index}"),
                tiler.span,
            )
            .with_label(format!("tiles mode {index}, {mode_text}"))
            .with_note(error.to_string())
            .with_help("use a tile layout whose runs fit the mode, e.g. `[8:1]` or `[2:2]`"),
            TileFailure::NotSplittable(why) => Diagnostic::error(
                codes::BAD_TILE,
                format!("this tiler cannot tile the symbolic mode {index}"),
                tiler.span,
            )
            .with_label(format!("tiles mode {index}, {mode_text}: {why}"))
            .with_help("tile symbolic modes by a compact or evenly strided tile such as `[128]` or `[2:2]`"),
            TileFailure::SymbolicHierarchy => Diagnostic::error(
                codes::SYMBOLIC_UNSUPPORTED,
                format!("cannot tile the hierarchical mode {index}: it has symbolic parts"),
                tiler.span,
            )
            .with_label(format!("tiles mode {index}, {mode_text}"))
            .with_note("symbolic modes can be tiled only when flat (one extent, one stride)")
            .with_help("tile the flat symbolic mode before splitting it, or use constants"),
        };
        self.report(diagnostic);
    }

    /// The tilers of `.tile(args)` for a level of `rank` modes: a single
    /// layout with one entry per mode of a level of rank > 1 is read mode
    /// by mode (`[8,8]` is `[8], [8]`, `[128, _]` is `[128], _`).
    fn tilers(&mut self, args: &[TileArg], rank: usize, span: Span) -> Checked<Vec<SpannedTiler>> {
        let by_mode = match args {
            [TileArg::Layout(layout)] if rank > 1 && layout.dims.len() == rank => Some(layout),
            [TileArg::Layout(_) | TileArg::Size(_) | TileArg::Whole(_)] | [] | [_, _, ..] => None,
        };
        if let Some(layout) = by_mode {
            let entries: Vec<Checked<SpannedTiler>> = (0..rank)
                .map(|i| {
                    let stride = layout.strides.as_ref().map(|strides| &strides[i]);
                    self.tile_entry(&layout.dims[i], stride, layout.span)
                })
                .collect();
            return entries.into_iter().collect();
        }
        let tilers: Vec<Checked<SpannedTiler>> = args
            .iter()
            .map(|arg| match arg {
                TileArg::Whole(span) => Ok(SpannedTiler {
                    tiler: Tiler::Keep,
                    span: *span,
                }),
                TileArg::Size(size) => {
                    let n = self.constant(size, "tile sizes")?;
                    let layout = self.tile_layout(&Tuple::Leaf(n), None, size.span)?;
                    Ok(SpannedTiler {
                        tiler: Tiler::Layout(layout),
                        span: size.span,
                    })
                }
                TileArg::Layout(layout) => self.tile_layout_arg(layout, span),
            })
            .collect();
        tilers.into_iter().collect()
    }

    /// One entry of a by-mode tile layout.
    fn tile_entry(
        &mut self,
        dim: &Tuple<TileDim>,
        stride: Option<&Tuple<TileDim>>,
        span: Span,
    ) -> Checked<SpannedTiler> {
        if let Tuple::Leaf(TileDim::Whole(whole)) = dim {
            return Ok(SpannedTiler {
                tiler: Tiler::Keep,
                span: *whole,
            });
        }
        let shape = self.tile_tuple(dim)?;
        let stride = stride.map(|s| self.tile_tuple(s)).transpose()?;
        let layout = self.tile_layout(&shape, stride, span)?;
        Ok(SpannedTiler {
            tiler: Tiler::Layout(layout),
            span: tile_dim_span(dim).unwrap_or(span),
        })
    }

    /// A whole tile layout argument, applied to one mode.
    fn tile_layout_arg(
        &mut self,
        layout: &ast::Layout<TileDim>,
        span: Span,
    ) -> Checked<SpannedTiler> {
        let whole = layout.dims.iter().find_map(|dim| match dim {
            Tuple::Leaf(TileDim::Whole(span)) => Some(*span),
            Tuple::Leaf(TileDim::Size(_)) | Tuple::Node(_) => None,
        });
        if let Some(whole) = whole {
            return Err(self.fail(
                Diagnostic::error(
                    codes::TILE_ARITY,
                    "`_` in a tile layout that does not give one entry per mode",
                    whole,
                )
                .with_label("`_` keeps a whole mode only when the layout lists every mode")
                .with_secondary(span, "tiles a level with a different number of modes")
                .with_help(
                    "list one entry per mode of the level, e.g. `.tile([128, _])` for two modes",
                ),
            ));
        }
        let shape = Tuple::Node(layout.dims.clone());
        let shape = self.tile_tuple(&shape)?;
        let stride = match &layout.strides {
            Some(strides) => Some(self.tile_tuple(&Tuple::Node(strides.clone()))?),
            None => None,
        };
        let tiler = self.tile_layout(&shape, stride, layout.span)?;
        Ok(SpannedTiler {
            tiler: Tiler::Layout(tiler),
            span: layout.span,
        })
    }

    fn tile_tuple(&mut self, tuple: &Tuple<TileDim>) -> Checked<Tuple<i64>> {
        let values = tuple.map(&mut |dim| match dim {
            TileDim::Size(size) => self.constant(size, "tile sizes"),
            // Only a top-level dim may be `_`, and those are handled above.
            TileDim::Whole(_) => Err(Poisoned),
        });
        values.try_map(&mut |value: &Checked<i64>| *value)
    }

    /// The layout of a tiler, column-major where no strides are written.
    fn tile_layout(
        &mut self,
        shape: &Tuple<i64>,
        stride: Option<Tuple<i64>>,
        span: Span,
    ) -> Checked<Layout> {
        let layout = match stride {
            Some(stride) => Layout::new(shape.clone(), stride),
            None => Layout::col_major(shape.clone()),
        };
        layout.map_err(|error| self.bad_written_layout(error, span))
    }

    fn bad_written_layout(&mut self, error: LayoutError, span: Span) -> Poisoned {
        self.fail(
            Diagnostic::error(codes::BAD_LAYOUT, "this layout is not valid", span)
                .with_label(error.to_string())
                .with_help("use extents of at least 1 and strides congruent to the dims"),
        )
    }

    /// `.reshape(depth, layout)`: level `depth` composed with `layout`.
    pub(super) fn reshape_levels(
        &mut self,
        levels: &[Level],
        depth: Option<&ast::IntExpr>,
        layout: &ast::Layout,
    ) -> Checked<Vec<Level>> {
        let depth = match depth {
            Some(depth) => {
                let value = self.constant(depth, "the depth of a reshape")?;
                if value < 0 || value as usize >= levels.len() {
                    return Err(self.fail(
                        Diagnostic::error(
                            codes::BAD_RESHAPE,
                            format!("there is no level {value} to reshape"),
                            depth.span,
                        )
                        .with_label(format!(
                            "levels are numbered 0 (outermost) to {}",
                            levels.len() - 1
                        ))
                        .with_help("give the depth of an existing level"),
                    ));
                }
                value as usize
            }
            None if levels.len() == 1 => 0,
            None => {
                return Err(self.fail(
                    Diagnostic::error(
                        codes::BAD_RESHAPE,
                        format!("which of the {} levels to reshape?", levels.len()),
                        layout.span,
                    )
                    .with_label("a reshape without a depth applies to one-level values only")
                    .with_help("give the depth: `.reshape(0, [2,2])` reshapes the outermost level"),
                ));
            }
        };
        let target = self.reshape_target(layout)?;
        let Some(current) = symbolic::constant_layout(&levels[depth]) else {
            let level = self.level_text(&levels[depth]);
            return Err(self.fail(
                Diagnostic::error(
                    codes::SYMBOLIC_UNSUPPORTED,
                    "cannot reshape a level with symbolic extents or strides",
                    layout.span,
                )
                .with_label(format!("reshapes {level}"))
                .with_help("tile the symbolic level first and reshape a constant one"),
            ));
        };
        match reshape(&current, &target) {
            Ok(result) => {
                let mut out = levels.to_vec();
                out[depth] = symbolic::level_of(&result);
                Ok(out)
            }
            Err(error) => {
                let level = self.level_text(&levels[depth]);
                let message = match &error {
                    LayoutError::SizeMismatch { .. } => format!(
                        "a reshape to {} elements of a level of {}",
                        target.size(),
                        current.size()
                    ),
                    _ => "this reshape has no layout".to_string(),
                };
                Err(self.fail(
                    Diagnostic::error(codes::BAD_RESHAPE, message, layout.span)
                        .with_label(format!("reshapes level {depth}, {level}"))
                        .with_note(error.to_string())
                        .with_help("a reshape re-views the same elements: keep the size, e.g. `[2,2]` for 4"),
                ))
            }
        }
    }

    fn reshape_target(&mut self, layout: &ast::Layout) -> Checked<Layout> {
        let what = "reshape layouts";
        let dims: Vec<Checked<Tuple<i64>>> = layout
            .dims
            .iter()
            .map(|dim| {
                self.int_tuple(dim, IntContext::Constant(what))
                    .map(|t| constants(&t))
            })
            .collect();
        let shape = Tuple::Node(dims.into_iter().collect::<Checked<_>>()?);
        let stride = match &layout.strides {
            Some(strides) => {
                let values: Vec<Checked<Tuple<i64>>> = strides
                    .iter()
                    .map(|s| {
                        self.int_tuple(s, IntContext::Constant(what))
                            .map(|t| constants(&t))
                    })
                    .collect();
                Some(Tuple::Node(values.into_iter().collect::<Checked<_>>()?))
            }
            None => None,
        };
        self.tile_layout(&shape, stride, layout.span)
    }

    /// `view[coords]`: the coordinates address the levels from the
    /// outermost in, one per top-level mode; `_` keeps a mode. Fully
    /// indexed levels disappear; the base moves by each indexed mode's
    /// offset.
    pub(super) fn index_view_levels(
        &mut self,
        mut view: View,
        coords: &[Coord],
        span: Span,
    ) -> Checked<View> {
        let total: usize = view.ty.levels.iter().map(|l| modes(l).len()).sum();
        let mut cursor = 0;
        let mut levels = Vec::new();
        let mut offset = Expr::Const(0);
        let mut failed = false;
        for (depth, level) in view.ty.levels.iter().enumerate() {
            let level_modes = modes(level);
            if cursor >= coords.len() {
                levels.push(level.clone());
                continue;
            }
            let rest = &coords[cursor..];
            if rest.len() < level_modes.len() {
                let text = self.level_text(level);
                return Err(self.fail(
                    Diagnostic::error(
                        codes::BAD_COORDINATES,
                        format!("the coordinates stop inside level {depth}"),
                        rest[0].span.join(rest[rest.len() - 1].span),
                    )
                    .with_label(format!(
                        "{} coordinate{} for level {depth}, {text}, of {} modes",
                        rest.len(),
                        if rest.len() == 1 { "" } else { "s" },
                        level_modes.len()
                    ))
                    .with_note("coordinates address whole levels, outermost first")
                    .with_help("write `_` for each mode to keep, e.g. `[@i, _]`"),
                ));
            }
            let mut kept = Vec::new();
            for (mode, coord) in level_modes.iter().zip(rest) {
                match self.index_mode(mode, coord, view.ty.memory) {
                    Ok((delta, keep)) => {
                        offset = Expr::add(offset, delta);
                        kept.extend(keep);
                    }
                    Err(Poisoned) => failed = true,
                }
            }
            cursor += level_modes.len();
            if !kept.is_empty() {
                levels.push(level_from_modes(kept));
            }
        }
        if cursor < coords.len() {
            let extra = &coords[cursor..];
            let text = self.tensor_text(&view.ty);
            return Err(self.fail(
                Diagnostic::error(
                    codes::BAD_COORDINATES,
                    format!("{} coordinates for a tensor of {total} modes", coords.len()),
                    extra[0].span.join(extra[extra.len() - 1].span),
                )
                .with_label("no mode left for these")
                .with_secondary(view.span, format!("of type {text}"))
                .with_help("give one coordinate per mode, outermost level first"),
            ));
        }
        if failed {
            return Err(Poisoned);
        }
        if levels.is_empty() {
            levels.push(symbolic::empty_level());
        }
        view.base = Expr::add(view.base, offset);
        view.ty.levels = levels;
        view.span = span;
        Ok(view)
    }

    /// One coordinate of one mode: the offset it adds, and the part of the
    /// mode it keeps (`_`, or `_` inside a tuple).
    fn index_mode(
        &mut self,
        mode: &Mode,
        coord: &Coord,
        memory: Memory,
    ) -> Checked<(Expr, Option<Mode>)> {
        match &coord.kind {
            CoordKind::Keep => Ok((Expr::Const(0), Some(mode.clone()))),
            CoordKind::Int(e) => {
                let value = self.int(e, IntContext::Runtime)?;
                self.check_range(&value, &size(&mode.0), coord.span);
                if memory == Memory::Registers {
                    self.register_index(&value, coord.span)?;
                }
                Ok((linear_offset(&mode.0, &mode.1, &value), None))
            }
            CoordKind::Tuple(parts) => {
                let (Tuple::Node(shapes), Tuple::Node(strides)) = mode else {
                    return Err(self.tuple_mismatch(coord, parts.len(), None));
                };
                if shapes.len() != parts.len() {
                    return Err(self.tuple_mismatch(coord, parts.len(), Some(shapes.len())));
                }
                let mut offset = Expr::Const(0);
                let mut kept = Vec::new();
                let mut failed = false;
                for ((shape, stride), part) in shapes.iter().zip(strides).zip(parts) {
                    match self.index_mode(&(shape.clone(), stride.clone()), part, memory) {
                        Ok((delta, keep)) => {
                            offset = Expr::add(offset, delta);
                            kept.extend(keep);
                        }
                        Err(Poisoned) => failed = true,
                    }
                }
                if failed {
                    return Err(Poisoned);
                }
                let kept = match kept.len() {
                    0 => None,
                    1 => kept.pop(),
                    _ => {
                        let (shape, stride): (Vec<_>, Vec<_>) = kept.into_iter().unzip();
                        Some((Tuple::Node(shape), Tuple::Node(stride)))
                    }
                };
                Ok((offset, kept))
            }
        }
    }

    fn tuple_mismatch(&mut self, coord: &Coord, parts: usize, modes: Option<usize>) -> Poisoned {
        let label = match modes {
            Some(m) => format!("{parts} parts for a mode of {m} sub-modes"),
            None => format!("{parts} parts for a mode that is a single extent"),
        };
        self.fail(
            Diagnostic::error(
                codes::BAD_COORDINATES,
                "this tuple coordinate does not fit its mode",
                coord.span,
            )
            .with_label(label)
            .with_help("index a hierarchical mode with one part per sub-mode, or with one integer (its linear index)"),
        )
    }

    /// Checks that a register tensor's coordinate is known at compile time
    /// (constants and constant-bounded loop variables, whose loops are then
    /// unrolled).
    fn register_index(&mut self, value: &Expr, span: Span) -> Checked<()> {
        for var in value.vars() {
            let (why, secondary) = match var {
                Var::Loop(id) => {
                    let info = &mut self.kernel.loop_info[id as usize];
                    if info.constant_bounds.is_some() {
                        info.unroll = true;
                        continue;
                    }
                    let name = &self.kernel.loops[id as usize].name;
                    (
                        format!("the loop variable `{name}`, whose bounds are not constants"),
                        Some((info.header, "this loop would have to be unrolled")),
                    )
                }
                Var::ThreadId => ("the thread id".to_string(), None),
                Var::BlockId => ("the block id".to_string(), None),
                Var::Dim(id) => (
                    format!(
                        "the symbolic dimension `{}`",
                        self.kernel.dims[id as usize].name
                    ),
                    None,
                ),
            };
            let mut diagnostic = Diagnostic::error(
                codes::REGISTER_INDEX,
                "a register tensor indexed by a value unknown at compile time",
                span,
            )
            .with_label(format!("depends on {why}"))
            .with_note("registers are named in the instructions, so their indices must be constants (or variables of unrolled loops)")
            .with_help("index registers with constants or constant-bounded loop variables; select per-thread data through the layout of a shared or global tensor");
            if let Some((header, text)) = secondary {
                diagnostic = diagnostic.with_secondary(header, text);
            }
            return Err(self.fail(diagnostic));
        }
        Ok(())
    }
}

/// The offset of linear index `value` in a mode: digit by digit,
/// colexicographically; the last digit is not reduced (it is in range).
fn linear_offset(shape: &Tuple<Expr>, stride: &Tuple<Expr>, value: &Expr) -> Expr {
    let leaves: Vec<(&Expr, &Expr)> = shape.leaves().into_iter().zip(stride.leaves()).collect();
    let mut prefix = Expr::Const(1);
    let mut offset = Expr::Const(0);
    for (i, (extent, step)) in leaves.iter().enumerate() {
        let quotient = Expr::div(value.clone(), prefix.clone());
        let digit = if i + 1 == leaves.len() {
            quotient
        } else {
            Expr::rem(quotient, (*extent).clone())
        };
        offset = Expr::add(offset, Expr::mul(digit, (*step).clone()));
        prefix = Expr::mul(prefix, (*extent).clone());
    }
    offset
}

fn constants(tuple: &Tuple<Expr>) -> Tuple<i64> {
    tuple.map(&mut |e: &Expr| e.as_const().unwrap_or(1))
}

fn tile_dim_span(dim: &Tuple<TileDim>) -> Option<Span> {
    let spans: Vec<Span> = dim
        .leaves()
        .into_iter()
        .map(|leaf| match leaf {
            TileDim::Size(size) => size.span,
            TileDim::Whole(span) => *span,
        })
        .collect();
    Some(spans.first()?.join(*spans.last()?))
}
