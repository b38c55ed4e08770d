//! Stage 3, lowering (instruction selection): block reductions. A
//! `Reduction` whose unit is several whole warps continues, after each
//! warp's butterfly, through shared memory: lane 0 of every warp stores its
//! warp's partial in the kernel's reduction scratch, a barrier, every warp
//! reads the partials of its instance and combines them with a second
//! butterfly — so every thread of the instance holds the result — and a
//! second barrier frees the scratch for the next block reduction
//! (docs/lowering.md, "Block reductions").

use super::super::error::LowerError;
use super::super::kernel::KernelLowering;
use super::super::registers::word_class;
use super::values::access_name;
use super::warp::{butterfly, op_name};
use crate::check::WARP_THREADS;
use crate::expr::{Expr, Var};
use crate::ir::{Memory, ReduceOp, Scalar};
use crate::ptx::{Guard, Operand, Reg, RegClass, imm};

/// Combines each of `targets` — one warp's reduction of each output
/// element, held by every lane — across the `warps` warps of the instance,
/// leaving the instance's result in every thread.
///
/// Rule: the instance of thread `t` is `⌊t/N⌋` (`N = 32 · warps`, the
/// checker's `block_reduction_warps`), so its warps' partials are the
/// scratch slots `k · B + ⌊t/N⌋ · warps + i`, `i < warps`, for output
/// element `k` and `B` the block's warps. Lane `l` reads partial
/// `l mod P`, `P` the power of two at or above `warps`; lanes whose
/// `l mod P` is `warps` or more take the operation's identity instead. A
/// butterfly over the masks below `P` then combines the `P` values of each
/// aligned group of `P` lanes, which are the instance's partials.
pub fn across_warps(
    lowering: &mut KernelLowering,
    op: ReduceOp,
    scalar: Scalar,
    targets: &[Reg],
    warps: u32,
) -> Result<(), LowerError> {
    let block_warps = lowering
        .scratch
        .as_ref()
        .map_or(0, |scratch| i64::from(scratch.warps));
    let class = word_class(scalar);
    let name = op_name(op, scalar);
    let tid = || Expr::Var(Var::ThreadId);
    let warp = Expr::div(tid(), Expr::Const(WARP_THREADS));

    // Lane 0 of each warp leaves its warp's partials.
    let lane = lowering
        .out
        .int(&Expr::rem(tid(), Expr::Const(WARP_THREADS)))?;
    let first_lane = lowering.out.reg(RegClass::Pred);
    lowering
        .out
        .emit("setp.eq.u32", vec![first_lane.into(), lane, imm(0)])?;
    let store = access_name("st", Memory::Shared, 1, class);
    for (k, target) in targets.iter().enumerate() {
        let slot = Expr::add(Expr::Const(k as i64 * block_warps), warp.clone());
        let address = lowering.scratch_address(&slot)?;
        lowering.out.emit_guarded(
            Guard::when(first_lane),
            &store,
            vec![address.into(), (*target).into()],
        )?;
    }
    lowering.out.emit("bar.sync", vec![imm(0)])?;

    // Every warp reads its instance's partials and combines them.
    let span = warps.next_power_of_two();
    let instance = Expr::div(tid(), Expr::Const(WARP_THREADS * i64::from(warps)));
    let partial = Expr::rem(tid(), Expr::Const(i64::from(span)));
    let first_partial = Expr::mul(instance, Expr::Const(i64::from(warps)));
    let load = access_name("ld", Memory::Shared, 1, class);
    let present = if warps < span {
        let partial = lowering.out.int(&partial)?;
        let present = lowering.out.reg(RegClass::Pred);
        lowering.out.emit(
            "setp.lt.u32",
            vec![present.into(), partial, imm(i64::from(warps))],
        )?;
        Some(present)
    } else {
        None
    };
    let masks: Vec<u32> = (0..span.trailing_zeros())
        .rev()
        .map(|bit| 1 << bit)
        .collect();
    for (k, target) in targets.iter().enumerate() {
        let slot = Expr::add(
            Expr::add(Expr::Const(k as i64 * block_warps), first_partial.clone()),
            partial.clone(),
        );
        let address = lowering.scratch_address(&slot)?;
        match present {
            Some(present) => {
                let mov = match class {
                    RegClass::F32 => "mov.f32",
                    RegClass::B32
                    | RegClass::B64
                    | RegClass::B16
                    | RegClass::F16
                    | RegClass::Pred => "mov.b32",
                };
                lowering
                    .out
                    .emit(mov, vec![(*target).into(), identity(op, scalar)])?;
                lowering.out.emit_guarded(
                    Guard::when(present),
                    &load,
                    vec![(*target).into(), address.into()],
                )?;
            }
            None => lowering
                .out
                .emit(&load, vec![(*target).into(), address.into()])?,
        }
        butterfly(lowering, &name, *target, &masks)?;
    }
    // No warp stores the next block reduction's partials before every warp
    // has read these.
    lowering.out.emit("bar.sync", vec![imm(0)])
}

/// The value `x op identity = x` for every `x`, NaN and signed zeros
/// included: `-0.0` for fp32 `add` (`+0.0 + -0.0 = +0.0`, while `-0.0 + +0.0`
/// would turn a sum of negative zeros positive); NaN for fp32 `max`, since
/// `max.f32` returns the other operand when one is NaN and NaN only when
/// both are (a `-inf` identity would turn a row of NaNs into `-inf`, where
/// the warp's reduction gives NaN); the smallest value for integer `max`.
fn identity(op: ReduceOp, scalar: Scalar) -> Operand {
    match (op, scalar) {
        (ReduceOp::Add, Scalar::Fp32 | Scalar::Fp16 | Scalar::Bf16) => {
            Operand::F32Bits((-0.0f32).to_bits())
        }
        (ReduceOp::Max, Scalar::Fp32 | Scalar::Fp16 | Scalar::Bf16) => {
            Operand::F32Bits(f32::NAN.to_bits())
        }
        (ReduceOp::Add, Scalar::I32 | Scalar::U32 | Scalar::Mbarrier)
        | (ReduceOp::Max, Scalar::U32 | Scalar::Mbarrier) => imm(0),
        (ReduceOp::Max, Scalar::I32) => imm(i64::from(i32::MIN as u32)),
    }
}
