//! CPU executor: the instruction families — [`scalar`] arithmetic (pure
//! functions of the bits), lane-by-lane register instructions (here),
//! `memory` (ld, st, cp.async, cvta), `warp` (shfl, ldmatrix, mma.sync),
//! `wgmma` (warpgroup multiply through descriptors) and `tma` (bulk tensor
//! copies and mbarriers).

mod memory;
pub mod scalar;
pub(in crate::exec) mod tma;
mod warp;
mod wgmma;

use super::ExecError;
use super::decode::{Op, Ty};
use super::interp::Block;
use super::parse::Operand;

impl Block<'_, '_> {
    /// Executes a non-control instruction for the `enabled` lanes.
    pub(in crate::exec) fn execute_op(
        &mut self,
        pc: usize,
        op: Op,
        enabled: &[u32],
    ) -> Result<(), ExecError> {
        match op {
            Op::Ld { .. }
            | Op::St { .. }
            | Op::CpAsync { .. }
            | Op::Poll(_)
            | Op::AtomAdd(_)
            | Op::RedAddF32 { .. } => self.memory(pc, op, enabled),
            Op::CpAsyncCommit | Op::CpAsyncWait(_) | Op::CpAsyncWaitAll => {
                for &t in enabled {
                    self.copy_group(t, op);
                }
                Ok(())
            }
            Op::Shfl(mode) => self.shfl(pc, mode, enabled),
            Op::Ldmatrix { count, trans } => self.ldmatrix(pc, count, trans, enabled),
            Op::Mma16816 {
                inputs,
                accumulator,
            } => self.mma_m16n8k16(pc, inputs, accumulator, enabled),
            Op::Mma884 => self.mma_m8n8k4(pc, enabled),
            Op::Wgmma { n, inputs } => self.wgmma(pc, n, inputs, enabled),
            Op::WgmmaCommit | Op::WgmmaWait(_) => {
                for &t in enabled {
                    self.wgmma_group(t, op);
                }
                Ok(())
            }
            Op::TensorCopy { dims } => self.tensor_copy(pc, dims, enabled),
            Op::MbarrierInit => self.mbarrier_init(pc, enabled),
            Op::MbarrierArrive { expect_tx } => self.mbarrier_arrive(pc, expect_tx, enabled),
            Op::MbarrierTryWait => self.mbarrier_try_wait(pc, enabled),
            Op::Setmaxnreg => self.setmaxnreg(pc, enabled),
            // Orderings the executor keeps anyway: every access is visible
            // to the async proxy and registers are never reordered.
            Op::WgmmaFence | Op::FenceProxyAsync | Op::Fence => Ok(()),
            Op::Mov(_)
            | Op::Int(..)
            | Op::Float(..)
            | Op::Approx(_)
            | Op::Setp(..)
            | Op::Selp(_)
            | Op::Cvt { .. }
            | Op::Cvta(_) => {
                for &t in enabled {
                    self.lane(pc, op, t)?;
                }
                Ok(())
            }
            Op::Bra | Op::Bar | Op::Ret => {
                Err(self.operands(pc, "control flow reached the lane executor"))
            }
        }
    }

    fn source(&mut self, t: u32, pc: usize, at: usize) -> Result<u64, ExecError> {
        let operand = self
            .instr(pc)
            .operands
            .get(at)
            .ok_or_else(|| self.operands(pc, &format!("missing operand {}", at + 1)))?;
        self.value(t, pc, operand)
    }

    /// One lane of a register-to-register instruction.
    fn lane(&mut self, pc: usize, op: Op, t: u32) -> Result<(), ExecError> {
        let instr = self.instr(pc);
        let operands = &instr.operands;
        let count = operands.len();
        let first = operands
            .first()
            .ok_or_else(|| self.operands(pc, "no operands"))?;
        if let (Op::Mov(ty), Operand::Vector(parts)) = (op, first) {
            // mov.b32 {lo, hi}, s: the first register gets the low half.
            let whole = self.source(t, pc, 1)?;
            let width = ty.bytes() * 8 / parts.len() as u32;
            for (i, part) in parts.iter().enumerate() {
                let reg = self.dest(pc, part)?;
                let piece = scalar::truncate(whole >> (width * i as u32), width / 8);
                self.write_reg(t, reg, piece);
            }
            return Ok(());
        }
        let dest = self.dest(pc, first)?;
        let sources: Vec<u64> = match (op, operands.get(1)) {
            (Op::Mov(ty), Some(Operand::Vector(parts))) => {
                let width = ty.bytes() * 8 / parts.len() as u32;
                let mut whole = 0u64;
                for (i, part) in parts.iter().enumerate() {
                    let value = self.value(t, pc, part)?;
                    whole |= scalar::truncate(value, width / 8) << (width * i as u32);
                }
                vec![whole]
            }
            _ => (1..count)
                .map(|at| self.source(t, pc, at))
                .collect::<Result<_, _>>()?,
        };
        let arg = |i: usize| sources.get(i).copied().unwrap_or(0);
        let result = match op {
            Op::Mov(ty) => scalar::truncate(arg(0), ty.bytes()),
            Op::Int(int, ty) => scalar::int(int, ty, arg(0), arg(1), arg(2)),
            Op::Float(float, ty) => scalar::float(float, ty, arg(0), arg(1), arg(2)),
            Op::Approx(function) => scalar::approx(function, arg(0)),
            Op::Setp(cmp, ty) => u64::from(scalar::compare(cmp, ty, arg(0), arg(1))),
            Op::Selp(ty) => {
                scalar::truncate(if arg(2) & 1 == 1 { arg(0) } else { arg(1) }, ty.bytes())
            }
            Op::Cvt { to, from: _ } if matches!(to, Ty::F16x2 | Ty::Bf16x2) => {
                scalar::pack_pair(to, arg(0), arg(1))
            }
            Op::Cvt { to, from } => scalar::convert(to, from, arg(0)),
            Op::Cvta(direction) => memory::cvta(direction, arg(0)),
            Op::Ld { .. }
            | Op::St { .. }
            | Op::CpAsync { .. }
            | Op::CpAsyncCommit
            | Op::CpAsyncWait(_)
            | Op::CpAsyncWaitAll
            | Op::Ldmatrix { .. }
            | Op::Mma16816 { .. }
            | Op::Mma884
            | Op::Wgmma { .. }
            | Op::WgmmaFence
            | Op::WgmmaCommit
            | Op::WgmmaWait(_)
            | Op::FenceProxyAsync
            | Op::TensorCopy { .. }
            | Op::MbarrierInit
            | Op::MbarrierArrive { .. }
            | Op::MbarrierTryWait
            | Op::Setmaxnreg
            | Op::Fence
            | Op::Poll(_)
            | Op::AtomAdd(_)
            | Op::RedAddF32 { .. }
            | Op::Shfl(_)
            | Op::Bar
            | Op::Bra
            | Op::Ret => return Err(self.operands(pc, "not a lane instruction")),
        };
        self.write_reg(t, dest, result);
        Ok(())
    }
}
