//! Stage 3, lowering (instruction selection): bulk tensor copies and the
//! barriers of shared memory — `Move<tma>` as `mbarrier.arrive.expect_tx`
//! and `cp.async.bulk.tensor` through the kernel's tensor map, `Init<count>`
//! of barriers as `mbarrier.init`, and the barrier statements
//! (`mbarrier_arrive`, `mbarrier_wait`, `setmaxnreg`).
//!
//! A copy is not chosen among patterns: `Move<tma>` names its instruction.
//! Its tensor map and box come from the checker's one derivation
//! (`check::tma::bulk_copy`); the coordinates of the box, innermost first,
//! are the source view's origin along each mode of the tensor — a partial
//! tile's bound gives it directly, and the one mode a bound may lack is
//! what remains of the view's base offset divided by that mode's stride.

use super::super::error::LowerError;
use super::super::kernel::KernelLowering;
use super::super::views::OperandInfo;
use crate::check::tma::bulk_copy;
use crate::expr::Expr;
use crate::ir::print::Print;
use crate::ir::{Memory, Scalar, SpecKind, SpecStmt, View};
use crate::ptx::{Guard, Operand, Reg, RegClass, imm};

/// Bytes a copy's destination must be aligned to: 128, or the swizzle's
/// repeat (8 rows of its span) when swizzled.
fn destination_alignment(span: u32) -> i64 {
    if span == 0 { 128 } else { i64::from(span) * 8 }
}

/// Whether `spec` is lowered here rather than by pattern selection.
pub fn is_bulk(spec: &SpecStmt) -> bool {
    spec.kind.is_bulk_copy() || initialises_barriers(spec)
}

/// Whether `spec` is an `Init` of barriers.
fn initialises_barriers(spec: &SpecStmt) -> bool {
    matches!(spec.kind, SpecKind::Init { .. })
        && spec
            .outputs
            .iter()
            .any(|out| out.ty.scalar == Scalar::Mbarrier)
}

/// Lowers a spec [`is_bulk`] accepts.
pub fn emit(lowering: &mut KernelLowering, spec: &SpecStmt) -> Result<(), LowerError> {
    match &spec.kind {
        SpecKind::Init { value } => init_barriers(lowering, spec, value),
        SpecKind::Move { .. } => copy(lowering, spec),
        SpecKind::MatMul { .. }
        | SpecKind::Unary(_)
        | SpecKind::Binary(_)
        | SpecKind::Ternary(_)
        | SpecKind::Select(_)
        | SpecKind::Reduction { .. }
        | SpecKind::Shfl { .. }
        | SpecKind::Generic => Err(LowerError::unsupported(
            spec.span,
            "this spec is no bulk copy or barrier initialisation",
            "this is a lowering bug: only `Move<tma>` and `Init` of barriers come here",
        )),
    }
}

/// `Init<count>` of barriers: each barrier initialised for `count`
/// arrivals, then one fence that makes the initialisations visible to the
/// copies (the async proxy).
fn init_barriers(
    lowering: &mut KernelLowering,
    spec: &SpecStmt,
    value: &crate::ir::InitValue,
) -> Result<(), LowerError> {
    let out = lowering.operand_info(&spec.outputs[0], "barriers");
    let count = match value {
        crate::ir::InitValue::Number(count) if count.fract() == 0.0 && *count >= 1.0 => {
            *count as i64
        }
        crate::ir::InitValue::Number(_) | crate::ir::InitValue::Index(_) => {
            return Err(LowerError::unsupported(
                out.span,
                "a barrier initialised with something other than a positive arrival count",
                "write `Init<N>` with N the arrivals that complete one phase",
            ));
        }
    };
    for element in 0..out.count {
        let address = lowering.address(&out, element)?;
        lowering.out.emit(
            "mbarrier.init.shared::cta.b64",
            vec![address.into(), imm(count)],
        )?;
    }
    lowering
        .out
        .emit("fence.mbarrier_init.release.cluster", Vec::new())
}

/// `Move<tma>`: the issuing thread arrives at the barrier expecting the
/// box's bytes, then starts the copy, which completes them.
fn copy(lowering: &mut KernelLowering, spec: &SpecStmt) -> Result<(), LowerError> {
    let (src, dst) = (&spec.inputs[0], &spec.outputs[0]);
    let kernel = lowering.kernel;
    let bulk = bulk_copy(&kernel.buffers, src, dst).map_err(|reason| {
        LowerError::unsupported(
            spec.span,
            format!("a bulk tensor copy {reason}"),
            "this is a checker bug: the checker refuses such copies",
        )
    })?;
    let index = kernel
        .tensor_maps
        .iter()
        .position(|map| *map == bulk.map)
        .ok_or_else(|| {
            LowerError::unsupported(
                spec.span,
                "a bulk tensor copy whose tensor map the kernel does not list",
                "this is a checker bug: every copy's map joins the kernel's",
            )
        })?;
    // Only the destination's first element is addressed: the hardware
    // walks the rest.
    let target = lowering.operand_info(&first_element(dst), "destination");
    check_alignment(lowering, &target, bulk.map.swizzle.span_bytes())?;
    let coordinates = coordinates(lowering, src, &bulk)?;
    let mut registers = Vec::with_capacity(coordinates.len());
    for coordinate in &coordinates {
        let operand = lowering.out.int(coordinate)?;
        registers.push(as_register(lowering, operand)?);
    }
    let map = lowering.tensor_map_address(index)?;
    let destination = lowering.unswizzled_shared_address(&target)?;
    let bar = lowering.barrier_address(&spec.inputs[1])?;
    let bytes: i64 = bulk
        .map
        .boxes
        .iter()
        .map(|&b| i64::from(b))
        .product::<i64>()
        * i64::from(src.ty.scalar.bytes());
    let state = lowering.out.reg(RegClass::B64);
    lowering.out.emit(
        "mbarrier.arrive.expect_tx.shared::cta.b64",
        vec![state.into(), bar.clone().into(), imm(bytes)],
    )?;
    let name = format!(
        "cp.async.bulk.tensor.{}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        registers.len()
    );
    lowering.out.emit(
        &name,
        vec![
            destination.at(0).into(),
            map.into(),
            registers.into(),
            bar.into(),
        ],
    )
}

/// The view of `view`'s element 0 alone: every extent 1.
fn first_element(view: &View) -> View {
    let mut first = view.clone();
    for level in &mut first.ty.levels {
        level.shape = level.shape.map(&mut |_| Expr::Const(1));
    }
    first.bounds.clear();
    first
}

/// A register holding `operand` (an immediate is moved into one).
fn as_register(lowering: &mut KernelLowering, operand: Operand) -> Result<Reg, LowerError> {
    match operand {
        Operand::Reg(reg) => Ok(reg),
        other => {
            let reg = lowering.out.reg(RegClass::B32);
            lowering.out.emit("mov.u32", vec![reg.into(), other])?;
            Ok(reg)
        }
    }
}

/// The destination starts where the hardware can land a box: its
/// unswizzled byte offset a multiple of [`destination_alignment`].
fn check_alignment(
    lowering: &KernelLowering,
    target: &OperandInfo,
    span: u32,
) -> Result<(), LowerError> {
    let align = destination_alignment(span);
    let place = target
        .memory_place()
        .map_err(|reason| LowerError::unsupported(target.span, reason, "this is a lowering bug"))?;
    let offset = Expr::add(place.base.clone(), place.offsets[0].clone());
    // A divisor past i64 (the offset 0, or a huge constant one) is aligned
    // to anything.
    let aligned = lowering
        .out
        .prover
        .divisor(&offset)
        .checked_mul(i64::from(target.scalar.bytes()))
        .is_none_or(|divisor| divisor % align == 0);
    let slice = lowering.shared_slice_offset(target.buffer);
    if aligned && slice.is_some_and(|slice| i64::from(slice) % align == 0) {
        return Ok(());
    }
    Err(LowerError::unsupported(
        target.span,
        format!(
            "a bulk copy lands at a shared address that is not provably a multiple of {align} bytes"
        ),
        "start each destination tile at a multiple of 1024 bytes of its buffer (whole 8-row groups of the 128-byte swizzle)",
    ))
}

/// The box's coordinates in the tensor, innermost map dim first.
fn coordinates(
    lowering: &KernelLowering,
    src: &View,
    bulk: &crate::check::tma::BulkCopy,
) -> Result<Vec<Expr>, LowerError> {
    let mut found: Vec<Option<Expr>> = vec![None; bulk.map.dims.len()];
    for bound in &src.bounds {
        // The view mode that walks the bound's tiled mode: the one with a
        // non-zero stride in the bound's coordinates.
        let Some(level) = bound.levels.first() else {
            continue;
        };
        let strides = level.stride.modes();
        let Some(mode) = strides
            .iter()
            .position(|stride| stride.leaves().iter().any(|s| **s != Expr::Const(0)))
        else {
            continue;
        };
        if let Some(d) = bulk.view_modes.iter().position(|m| *m == Some(mode)) {
            found[d] = Some(bound.origin.clone());
        }
    }
    let missing: Vec<usize> = (0..found.len()).filter(|&d| found[d].is_none()).collect();
    if missing.is_empty() {
        return Ok(found.into_iter().flatten().collect());
    }
    // What the known coordinates leave of the base: the missing ones'
    // coordinates times their strides.
    let known = found
        .iter()
        .zip(&bulk.map.dims)
        .fold(Expr::Const(0), |sum, (c, dim)| match c {
            Some(c) => Expr::add(sum, Expr::mul(c.clone(), dim.stride.clone())),
            None => sum,
        });
    let mut rest = lowering
        .out
        .prover
        .simplify(&Expr::sub(src.base.clone(), known));
    // Innermost first: a missing dim's coordinate is what the rest leaves
    // modulo the next missing dim's stride, when that stride is a whole
    // number of this dim's spans (extent × stride, a constant): then every
    // coordinate of this dim times its stride stays below it, and every
    // outer missing dim's term is a multiple of it. The outermost takes
    // what remains.
    for (at, &d) in missing.iter().enumerate() {
        let stride = bulk.map.dims[d].stride.clone();
        let part = match missing.get(at + 1) {
            None => rest.clone(),
            Some(&next) => {
                let next_stride = bulk.map.dims[next].stride.clone();
                let span = lowering
                    .out
                    .prover
                    .simplify(&Expr::mul(bulk.map.dims[d].extent.clone(), stride.clone()));
                let whole = match span {
                    Expr::Const(span) if span > 0 => {
                        lowering.out.prover.divisor(&next_stride) % span == 0
                    }
                    _ => false,
                };
                if !whole {
                    return Err(LowerError::unsupported(
                        src.span,
                        "a bulk copy whose box's coordinates cannot be told from its view",
                        "take the source as a tile of `.tile_partial` of the global tensor, so that the tile's origin along each mode is known",
                    ));
                }
                Expr::rem(rest.clone(), next_stride)
            }
        };
        let coordinate = if stride == Expr::Const(1) {
            part.clone()
        } else {
            Expr::div(part.clone(), stride)
        };
        found[d] = Some(lowering.out.prover.simplify(&coordinate));
        rest = lowering.out.prover.simplify(&Expr::sub(rest, part));
    }
    Ok(found.into_iter().flatten().collect())
}

impl KernelLowering<'_, '_> {
    /// The generic address of tensor map `index` (its `.param`).
    pub fn tensor_map_address(&mut self, index: usize) -> Result<Reg, LowerError> {
        let symbol = self.tensor_maps.get(index).cloned().ok_or_else(|| {
            LowerError::unsupported(
                self.out.span(),
                format!("the kernel has no tensor map number {index}"),
                "this is a lowering bug: every tensor map is declared",
            )
        })?;
        let param = self.out.reg(RegClass::B64);
        self.out
            .emit("mov.b64/psym", vec![param.into(), symbol.into()])?;
        let generic = self.out.reg(RegClass::B64);
        self.out
            .emit("cvta.param.u64", vec![generic.into(), param.into()])?;
        Ok(generic)
    }

    /// What the lowering knows of `view` as an operand.
    fn operand_info(&self, view: &View, role: &str) -> OperandInfo {
        OperandInfo::analyse(
            view,
            role.to_string(),
            view.ty.display(&self.names).to_string(),
            &self.out.prover,
            &self.names,
        )
    }

    /// The shared address of one barrier.
    fn barrier_address(&mut self, barrier: &View) -> Result<crate::ptx::Address, LowerError> {
        let info = self.operand_info(barrier, "barrier");
        if info.memory != Memory::Shared || info.count != 1 {
            return Err(LowerError::unsupported(
                barrier.span,
                "a barrier statement of something other than one shared barrier",
                "this is a checker bug",
            ));
        }
        self.address(&info, 0)
    }

    /// `mbarrier_arrive(%bar[s])`.
    pub fn arrive(&mut self, barrier: &View) -> Result<(), LowerError> {
        let address = self.barrier_address(barrier)?;
        let state = self.out.reg(RegClass::B64);
        self.out.emit(
            "mbarrier.arrive.shared::cta.b64",
            vec![state.into(), address.into()],
        )
    }

    /// `mbarrier_wait(%bar[s], P)`: polls `try_wait.parity` (which itself
    /// waits a while in hardware) until the phase of P's parity is done.
    pub fn wait_phase(&mut self, barrier: &View, parity: &Expr) -> Result<(), LowerError> {
        let address = self.barrier_address(barrier)?;
        let parity = self
            .out
            .prover
            .simplify(&Expr::rem(parity.clone(), Expr::Const(2)));
        let parity = self.out.int(&parity)?;
        let retry = self.out.label("mbarrier_wait");
        self.out.place(&retry)?;
        let done = self.out.reg(RegClass::Pred);
        self.out.emit(
            "mbarrier.try_wait.parity.shared::cta.b64",
            vec![done.into(), address.into(), parity],
        )?;
        self.out
            .emit_guarded(Guard::unless(done), "bra", vec![retry.into()])
    }

    /// `setmaxnreg(N)`: up from the kernel's budget, or down.
    pub fn set_max_registers(&mut self, count: u32) -> Result<(), LowerError> {
        let budget = self.kernel.occupancy.max_registers.ok_or_else(|| {
            LowerError::unsupported(
                self.out.span(),
                "`setmaxnreg` in a kernel without `max_registers`",
                "this is a checker bug",
            )
        })?;
        let direction = if count > budget { "inc" } else { "dec" };
        self.out.emit(
            &format!("setmaxnreg.{direction}.sync.aligned.u32"),
            vec![imm(i64::from(count))],
        )
    }
}
