//! Stage 2, check: bulk tensor copies and the barriers they complete on
//! (docs/language.md, "Bulk tensor copies and barriers") — the tensor map
//! and box of a `Move<tma>`, derived from its global view and its tile;
//! the barrier statements `mbarrier_arrive` and `mbarrier_wait`;
//! `setmaxnreg`; and, over a whole kernel, the rules that a shared tile a
//! `Move<tma>` writes is read only after a wait on its barrier (the walk of
//! `landed.rs`) and that a barrier waited on is initialised and arrived at.

use std::collections::{BTreeMap, BTreeSet};

use crate::diag::{Diagnostic, Span};
use crate::expr::Expr;
use crate::ir::{
    self, Buffer, BufferId, BufferKind, Kernel, MapDim, Memory, Scalar, SpecKind, Stmt, TensorMap,
    TmaSwizzle, View,
};
use crate::syntax::ast::{self, IntExpr};

use super::codes;
use super::env::Checker;
use super::ints::IntContext;
use super::symbolic::constant_layout;

/// The most elements along one box dim (`boxDim[i] ≤ 256`).
pub const MAX_BOX: i64 = 256;
/// The most dims of a tensor map.
pub const MAX_RANK: usize = 5;

/// What one `Move<tma>` copies: its tensor map, and for each map dim the
/// source view's mode that walks it (`None`: a mode the view holds fixed,
/// a box of 1).
#[derive(Clone, PartialEq, Debug)]
pub struct BulkCopy {
    /// The map (equal to one of the kernel's `tensor_maps`).
    pub map: TensorMap,
    /// Per map dim, innermost first, the source view's mode.
    pub view_modes: Vec<Option<usize>>,
}

/// The tensor map and box of `Move<tma>` from `src` into `dst`, or why the
/// hardware cannot do it (docs/language.md, "Bulk tensor copies").
///
/// The source is one level of flat modes of a global parameter whose own
/// type is one level of flat modes, each view mode stepping as one mode of
/// the parameter (same stride); the parameter's stride-1 mode is the map's
/// innermost dim. The destination holds the box as the hardware lands it:
/// innermost dim fastest, the others in the order of their strides in the
/// destination, densely, under no swizzle or the 32-, 64- or 128-byte one.
pub fn bulk_copy(buffers: &[Buffer], src: &View, dst: &View) -> Result<BulkCopy, String> {
    let param = buffers
        .get(src.buffer.0 as usize)
        .filter(|buffer| matches!(buffer.kind, BufferKind::Param(_)))
        .ok_or("copies from a global parameter tensor; the source is not one")?;
    if dst.ty.memory != Memory::Shared {
        return Err(format!(
            "copies into shared memory; the destination is in {}",
            dst.ty.memory.name()
        ));
    }
    let scalar = src.ty.scalar;
    if dst.ty.scalar != scalar || !matches!(scalar.bytes(), 2 | 4) || scalar == Scalar::Mbarrier {
        return Err(format!(
            "copies 16- or 32-bit elements unchanged; this copy is {} to {}",
            scalar.name(),
            dst.ty.scalar.name()
        ));
    }
    let param_modes = flat_modes(&param.ty.levels).ok_or_else(|| {
        format!(
            "reads a tensor declared with one level of flat modes; %{} is not",
            param.name
        )
    })?;
    if param_modes.is_empty() || param_modes.len() > MAX_RANK {
        return Err(format!(
            "reads tensors of 1 to {MAX_RANK} modes; %{} has {}",
            param.name,
            param_modes.len()
        ));
    }
    let view_modes = flat_modes(&src.ty.levels).ok_or(
        "reads one box: a source view of one level of flat modes (a tile, not a tile of tiles)",
    )?;
    // Each view mode steps as one parameter mode: the same stride.
    let mut walks: Vec<Option<usize>> = vec![None; param_modes.len()];
    for (i, (_, stride)) in view_modes.iter().enumerate() {
        let Some(j) = param_modes
            .iter()
            .enumerate()
            .position(|(j, (_, s))| s == stride && walks[j].is_none())
        else {
            return Err(format!(
                "reads a box of %{}: mode {i} of the source steps as no mode of the tensor",
                param.name
            ));
        };
        walks[j] = Some(i);
    }
    let Some(innermost) = param_modes
        .iter()
        .position(|(_, stride)| *stride == Expr::Const(1))
    else {
        return Err(format!(
            "reads a tensor with a contiguous mode (stride 1); %{} has none",
            param.name
        ));
    };
    let mut boxes = vec![1i64; param_modes.len()];
    for (j, walk) in walks.iter().enumerate() {
        if let Some(i) = walk {
            boxes[j] = view_modes[*i]
                .0
                .as_const()
                .ok_or("copies a box of constant extents")?;
            if !(1..=MAX_BOX).contains(&boxes[j]) {
                return Err(format!(
                    "copies at most {MAX_BOX} elements along each mode; this box has {}",
                    boxes[j]
                ));
            }
        }
    }
    // The destination's offset of one step along each view mode decides
    // the order of the map's dims after the innermost.
    let dst_modes = dst_mode_offsets(dst, view_modes.len())?;
    for (i, offsets) in dst_modes.iter().enumerate() {
        if Expr::Const(offsets.len() as i64) != view_modes[i].0 {
            return Err(format!(
                "lands the box in a destination of its shape; the destination's mode {i} holds {} \
                 elements, the box's {}",
                offsets.len(),
                view_modes[i]
                    .0
                    .as_const()
                    .map_or("?".to_string(), |e| e.to_string())
            ));
        }
    }
    let step = |j: usize| walks[j].map_or(i64::MAX, |i| dst_modes[i].get(1).copied().unwrap_or(0));
    let mut order: Vec<usize> = (0..param_modes.len()).filter(|&j| j != innermost).collect();
    order.sort_by_key(|&j| (walks[j].is_none(), step(j)));
    order.insert(0, innermost);
    // The box lands densely in that order: check every destination offset.
    let mut pitch = 1i64;
    for &j in &order {
        if let Some(i) = walks[j] {
            for (c, offset) in dst_modes[i].iter().enumerate() {
                if *offset != c as i64 * pitch {
                    return Err(format!(
                        "lands the box densely, innermost mode of %{} fastest; the destination \
                         puts element {c} of its mode {i} at offset {offset}, not {}",
                        param.name,
                        c as i64 * pitch
                    ));
                }
            }
        }
        pitch *= boxes[j];
    }
    let swizzle = tma_swizzle(dst)?;
    let bytes = i64::from(scalar.bytes());
    let row = boxes[innermost] * bytes;
    if row % 16 != 0 {
        return Err(format!(
            "copies rows of a multiple of 16 bytes along the contiguous mode; this box's are {row}"
        ));
    }
    let span = i64::from(swizzle.span_bytes());
    if span > 0 && row > span {
        return Err(format!(
            "copies rows of at most the swizzle's {span} bytes along the contiguous mode; this \
             box's are {row}"
        ));
    }
    let dims = order
        .iter()
        .map(|&j| MapDim {
            mode: j,
            extent: param_modes[j].0.clone(),
            stride: param_modes[j].1.clone(),
        })
        .collect();
    Ok(BulkCopy {
        map: TensorMap {
            tensor: src.buffer,
            dims,
            boxes: order.iter().map(|&j| boxes[j] as u32).collect(),
            swizzle,
        },
        view_modes: order.iter().map(|&j| walks[j]).collect(),
    })
}

/// The (extent, stride) of each mode of a one-level type whose modes are
/// single leaves.
fn flat_modes(levels: &[ir::Level]) -> Option<Vec<(Expr, Expr)>> {
    let [level] = levels else { return None };
    let shapes = level.shape.modes();
    let strides = level.stride.modes();
    shapes
        .iter()
        .zip(strides)
        .map(
            |(shape, stride)| match (shape.leaves().as_slice(), stride.leaves().as_slice()) {
                ([extent], [stride]) => Some(((*extent).clone(), (*stride).clone())),
                _ => None,
            },
        )
        .collect()
}

/// Per top-level mode of the destination view (one level, constant), the
/// unswizzled offset of each of its coordinates from element 0.
fn dst_mode_offsets(dst: &View, modes: usize) -> Result<Vec<Vec<i64>>, String> {
    let layout = match dst.ty.levels.as_slice() {
        [level] => constant_layout(level),
        _ => None,
    }
    .ok_or("lands in a destination of one level of constant extents and strides")?;
    let parts = layout.modes();
    if parts.len() != modes {
        return Err(format!(
            "lands the box in a destination of as many modes as the source has ({modes}); it has {}",
            parts.len()
        ));
    }
    parts
        .iter()
        .map(|part| {
            (0..part.size())
                .map(|c| part.eval(c).map_err(|error| error.to_string()))
                .collect()
        })
        .collect()
}

/// The hardware swizzle that is the destination's: the 16-byte chunk bits
/// XORed with the bits just above the span (`Swizzle<B, 4, 3>` on bytes).
fn tma_swizzle(dst: &View) -> Result<TmaSwizzle, String> {
    let Some(swizzle) = dst.ty.swizzle else {
        return Ok(TmaSwizzle::None);
    };
    let byte_base = swizzle.base() + dst.ty.scalar.bytes().trailing_zeros() as i64;
    match (swizzle.bits(), byte_base, swizzle.shift()) {
        (1, 4, 3) => Ok(TmaSwizzle::Span32),
        (2, 4, 3) => Ok(TmaSwizzle::Span64),
        (3, 4, 3) => Ok(TmaSwizzle::Span128),
        _ => Err(format!(
            "lands tiles under the 32-, 64- or 128-byte swizzle (`Swizzle<1|2|3, {}, 3>` on {}); \
             the destination's is `Swizzle<{}, {}, {}>`",
            4 - dst.ty.scalar.bytes().trailing_zeros(),
            dst.ty.scalar.name(),
            swizzle.bits(),
            swizzle.base(),
            swizzle.shift()
        )),
    }
}

/// Whether `view` is one barrier: one element of a shared `mbarrier` tensor.
fn is_one_barrier(view: &View) -> bool {
    view.ty.scalar == Scalar::Mbarrier
        && view.ty.memory == Memory::Shared
        && view
            .ty
            .levels
            .iter()
            .flat_map(|level| level.shape.leaves())
            .all(|extent| *extent == Expr::Const(1))
}

impl Checker {
    /// The rules of `Move<tma>`: a barrier to complete on, a copy the
    /// hardware can do; its tensor map joins the kernel's.
    pub(crate) fn bulk_copy_rules(&mut self, spec: &ast::SpecStmt, output: &View, inputs: &[View]) {
        let [src, barrier] = inputs else {
            return;
        };
        if !is_one_barrier(barrier) {
            self.report(
                Diagnostic::error(codes::TMA_FORM, "`Move<tma>` without a barrier", barrier.span)
                    .with_label("its second input must be one barrier of shared memory")
                    .with_note("the copy lands asynchronously and completes on that barrier, which `mbarrier_wait` waits on")
                    .with_help("declare `%full:[STAGES].mbarrier.SH` and write `Move<tma>(%tile, %full[s])`"),
            );
            return;
        }
        match bulk_copy(&self.kernel.buffers, src, output) {
            Ok(copy) => {
                if !self.kernel.tensor_maps.contains(&copy.map) {
                    self.kernel.tensor_maps.push(copy.map);
                }
            }
            Err(reason) => self.report(
                Diagnostic::error(codes::TMA_FORM, "a `Move<tma>` the hardware cannot do", spec.kind_span)
                    .with_label(format!("a bulk tensor copy {reason}"))
                    .with_secondary(src.span, "the source")
                    .with_secondary(output.span, "the destination")
                    .with_help("copy a `.tile_partial` tile of a global tensor into a shared tile laid out as it lands, e.g. `[BM, 64 : 64, 1].fp16.SH.Swizzle<3, 3, 3>`"),
            ),
        }
    }

    /// The rule that barriers are only the operands of `Init`, of
    /// `Move<tma>`'s second input and of the barrier statements.
    pub(crate) fn barrier_operands(&mut self, kind: &SpecKind, outputs: &[View], inputs: &[View]) {
        let allowed = |role: (bool, usize)| {
            (matches!(kind, SpecKind::Init { .. }) && role == (true, 0))
                || (kind.is_bulk_copy() && role == (false, 1))
        };
        let operands = outputs
            .iter()
            .enumerate()
            .map(|(i, view)| ((true, i), view))
            .chain(
                inputs
                    .iter()
                    .enumerate()
                    .map(|(i, view)| ((false, i), view)),
            );
        for (role, view) in operands {
            if view.ty.scalar == Scalar::Mbarrier && !allowed(role) {
                self.report(
                    Diagnostic::error(codes::MBARRIER_USE, "a barrier as a data operand", view.span)
                        .with_label("an `mbarrier` holds no numbers")
                        .with_note("a barrier is initialised by `Init<count>`, completed by `Move<tma>` and `mbarrier_arrive`, and waited on by `mbarrier_wait`")
                        .with_help("pass a tensor of numbers here"),
                );
            }
        }
    }

    /// The one barrier a barrier statement names.
    fn barrier(&mut self, e: &ast::Expr, statement: &str) -> Option<View> {
        let view = self.tensor_value(e).ok()?;
        if is_one_barrier(&view) {
            return Some(view);
        }
        self.report(
            Diagnostic::error(
                codes::MBARRIER_USE,
                format!("`{statement}` of something that is not one barrier"),
                e.span,
            )
            .with_label(format!(
                "a {}.{} view",
                view.ty.scalar.name(),
                view.ty.memory.name()
            ))
            .with_help("name one element of a shared barrier tensor, e.g. `%full[s]` of `%full:[STAGES].mbarrier.SH`"),
        );
        None
    }

    /// `mbarrier_arrive(%bar[s])`.
    pub(crate) fn arrive(&mut self, barrier: &ast::Expr, span: Span) -> Option<ir::Stmt> {
        let barrier = self.barrier(barrier, "mbarrier_arrive")?;
        Some(ir::Stmt::Arrive { barrier, span })
    }

    /// `mbarrier_wait(%bar[s], P)`: P is taken modulo 2.
    pub(crate) fn wait_phase(
        &mut self,
        barrier: &ast::Expr,
        parity: &IntExpr,
        span: Span,
    ) -> Option<ir::Stmt> {
        let barrier = self.barrier(barrier, "mbarrier_wait");
        let parity = self.int(parity, IntContext::Runtime).ok();
        Some(ir::Stmt::WaitPhase {
            barrier: barrier?,
            parity: parity?,
            span,
        })
    }

    /// `setmaxnreg(N)`.
    pub(crate) fn set_max_registers(&mut self, count: &IntExpr, span: Span) -> Option<ir::Stmt> {
        let value = self.constant(count, "a number of registers").ok()?;
        if (24..=256).contains(&value) && value % 8 == 0 {
            return Some(ir::Stmt::SetMaxRegisters {
                count: value as u32,
                span,
            });
        }
        self.report(
            Diagnostic::error(codes::SETMAXNREG, format!("`setmaxnreg({value})`"), count.span)
                .with_label("registers per thread: a multiple of 8 from 24 to 256")
                .with_help("a producer warpgroup takes few (`setmaxnreg(40)`), consumers many (`setmaxnreg(232)`)"),
        );
        None
    }
}

/// The kernel-wide rules of barriers and bulk copies.
pub(crate) fn check_kernel(kernel: &Kernel) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    let mut uses = Uses::default();
    if let Some(body) = &kernel.root.body {
        uses.collect(body, false);
    }
    if kernel.occupancy.max_registers.is_none() {
        if let Some(span) = uses.set_max_registers.first() {
            found.push(
                Diagnostic::error(
                    codes::SETMAXNREG,
                    "`setmaxnreg` in a kernel without `max_registers`",
                    *span,
                )
                .with_label("it moves the warpgroup's registers from the kernel's budget")
                .with_help(
                    "state the budget it starts from: `kernel NAME (max_registers = 168) { … }`",
                ),
            );
        }
    }
    for (barrier, span) in uses.waited.iter().chain(&uses.arrived) {
        if !uses.initialised.contains(barrier) {
            found.push(never_completes(
                kernel,
                *barrier,
                *span,
                "a barrier that is never initialised",
                "initialise it once, before the first copy: `if (@t == 0) { %bar <- Init<1><<<#one, #me>>>() }` then `sync`",
            ));
        }
    }
    for (barrier, span) in &uses.waited {
        if !uses.arrived.contains_key(barrier) {
            found.push(never_completes(
                kernel,
                *barrier,
                *span,
                "a wait on a barrier nothing arrives on",
                "a phase completes when its count of arrivals is in: `Move<tma>(…, %bar[s])` or `mbarrier_arrive(%bar[s])`",
            ));
        }
    }
    super::landed::early_reads(kernel, &uses.copied, &uses.refilled, &mut found);
    found
}

fn never_completes(
    kernel: &Kernel,
    barrier: BufferId,
    span: Span,
    message: &str,
    help: &str,
) -> Diagnostic {
    let name = kernel
        .buffers
        .get(barrier.0 as usize)
        .map_or("?", |buffer| buffer.name.as_str());
    Diagnostic::error(codes::PHASE_NEVER_COMPLETES, message, span)
        .with_label(format!(
            "%{name}'s phases never complete: this waits forever"
        ))
        .with_help(help.to_string())
}

/// Where each barrier buffer is initialised, arrived at and waited on,
/// and which shared buffers bulk copies write.
#[derive(Default)]
struct Uses {
    initialised: BTreeSet<BufferId>,
    arrived: BTreeMap<BufferId, Span>,
    waited: BTreeMap<BufferId, Span>,
    set_max_registers: Vec<Span>,
    /// Each buffer a `Move<tma>` writes: its barrier buffer and the first
    /// such copy.
    copied: super::landed::InFlight,
    /// The buffers some `Move<tma>` inside a loop writes: refilled, so
    /// waited for again in each turn of a loop that waits on their barrier.
    refilled: BTreeSet<BufferId>,
}

impl Uses {
    /// Collects from `stmts`, which are inside a loop if `looped`.
    fn collect(&mut self, stmts: &[Stmt], looped: bool) {
        for stmt in stmts {
            match stmt {
                Stmt::Spec(spec) => match &spec.body {
                    Some(body) => self.collect(body, looped),
                    None if matches!(spec.kind, SpecKind::Init { .. }) => {
                        for out in &spec.outputs {
                            if out.ty.scalar == Scalar::Mbarrier {
                                self.initialised.insert(out.buffer);
                            }
                        }
                    }
                    None if spec.kind.is_bulk_copy() => {
                        if let Some(barrier) = spec.inputs.get(1) {
                            self.arrived.entry(barrier.buffer).or_insert(spec.span);
                            if let Some(out) = spec.outputs.first() {
                                self.copied
                                    .entry(out.buffer)
                                    .or_insert((barrier.buffer, spec.span));
                                if looped {
                                    self.refilled.insert(out.buffer);
                                }
                            }
                        }
                    }
                    None => {}
                },
                Stmt::For(each) => self.collect(&each.body, true),
                Stmt::If(branch) => {
                    self.collect(&branch.then_body, looped);
                    self.collect(&branch.else_body, looped);
                }
                Stmt::Arrive { barrier, span } => {
                    self.arrived.entry(barrier.buffer).or_insert(*span);
                }
                Stmt::WaitPhase { barrier, span, .. } => {
                    self.waited.entry(barrier.buffer).or_insert(*span);
                }
                Stmt::SetMaxRegisters { span, .. } => self.set_max_registers.push(*span),
                Stmt::Sync { .. } | Stmt::Commit { .. } | Stmt::Wait { .. } => {}
            }
        }
    }
}
