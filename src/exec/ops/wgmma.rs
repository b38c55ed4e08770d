//! CPU executor: Hopper's warpgroup multiply `wgmma.mma_async` — A (64×16)
//! and B (16×N) read from shared memory through matrix descriptors, the
//! accumulators spread over the warpgroup's 128 threads. Each warp computes
//! its own 16 rows of D, so the warps need not meet here; the destination
//! registers are pending until `wgmma.wait_group` retires their group, and
//! reading one before is an early read.
//!
//! Descriptors: only the forms the lowering writes are read, under the
//! 128-byte swizzle (mode 1) — K-major rows of 128 bytes, 8-row groups
//! `SBO` bytes apart; or, with the operand's transpose bit, MN-major 64×8
//! atoms (rows of 64 elements along M or N, one per k), `SBO` bytes apart
//! along K and `LBO` along M or N. Anything else is an error naming the
//! descriptor.

use super::super::ExecError;
use super::super::decode::{Op, Ty};
use super::super::fragments;
use super::super::interp::Block;
use super::super::machine::FindingKind;
use super::super::parse::Operand;
use super::warp::{element, half_value};

/// A decoded 128-byte-swizzled shared-memory matrix descriptor.
#[derive(Clone, Copy, Debug)]
struct Descriptor {
    start: u64,
    /// LBO: MN-major atoms' distance along M or N (unused K-major).
    leading: u64,
    /// SBO: K-major 8-row groups', or MN-major atoms' distance along K.
    stride: u64,
}

/// The 128-byte swizzle of a shared address: bits 7–9 into 4–6.
fn swizzle(unswizzled: u64) -> u64 {
    unswizzled ^ (((unswizzled >> 7) & 7) << 4)
}

impl Descriptor {
    fn decode(bits: u64) -> Option<Descriptor> {
        let swizzle_128 = bits >> 62 == 1;
        swizzle_128.then_some(Descriptor {
            start: (bits & 0x3FFF) << 4,
            leading: ((bits >> 16) & 0x3FFF) << 4,
            stride: ((bits >> 32) & 0x3FFF) << 4,
        })
    }

    /// K-major: the shared address of the 16-byte chunk `chunk` (k / 8) of `row`.
    fn chunk(self, row: u64, chunk: u64) -> u64 {
        swizzle(self.start + (row / 8) * self.stride + (row % 8) * 128 + chunk * 16)
    }

    /// MN-major: the shared address of the 16-bit element (mn, k).
    fn element(self, mn: u64, k: u64) -> u64 {
        swizzle(
            self.start
                + (mn / 64) * self.leading
                + (mn % 64) * 2
                + (k % 8) * 128
                + (k / 8) * self.stride,
        )
    }
}

impl Block<'_, '_> {
    /// Reads `rows` rows of 16 elements (along K) through `descriptor`,
    /// K-major or (`transposed`) MN-major, as thread `t`.
    fn matrix(
        &mut self,
        t: u32,
        pc: usize,
        descriptor: Descriptor,
        transposed: bool,
        rows: std::ops::Range<u64>,
        ty: Ty,
    ) -> Vec<[f64; 16]> {
        rows.map(|row| {
            let mut values = [0f64; 16];
            if transposed {
                for (k, value) in values.iter_mut().enumerate() {
                    let at = descriptor.element(row, k as u64);
                    let bytes = self.shared_read(t, pc, at, 2).unwrap_or_else(|| vec![0; 2]);
                    *value = half_value(ty, u64::from(u16::from_le_bytes([bytes[0], bytes[1]])));
                }
                return values;
            }
            for chunk in 0..2 {
                let at = descriptor.chunk(row, chunk);
                let bytes = self
                    .shared_read(t, pc, at, 16)
                    .unwrap_or_else(|| vec![0; 16]);
                for (i, pair) in bytes.chunks(2).enumerate() {
                    let bits = u64::from(u16::from_le_bytes([pair[0], pair[1]]));
                    values[chunk as usize * 8 + i] = half_value(ty, bits);
                }
            }
            values
        })
        .collect()
    }

    /// `wgmma.mma_async.sync.aligned.m64nNk16.f32.ab.ab d, a-desc, b-desc,
    /// scale-d, scale-a, scale-b, trans-a, trans-b` for one warp, or with A
    /// from registers, `d, {a0, a1, a2, a3}, b-desc, scale-d, scale-a,
    /// scale-b, trans-b`.
    pub(in crate::exec) fn wgmma(
        &mut self,
        pc: usize,
        n: u32,
        inputs: Ty,
        lanes: &[u32],
    ) -> Result<(), ExecError> {
        let operands = self.instr(pc).operands.clone();
        // A from registers: `d, {a0..a3}, b-desc, scale-d, scale-a, scale-b,
        // trans-b` (no transpose bit for A).
        let register_a = operands.len() == 7 && matches!(operands[1], Operand::Vector(_));
        if operands.len() != 8 && !register_a {
            return Err(self.operands(
                pc,
                "wgmma takes d, a-desc (or A's registers), b-desc, and the scales and transposes",
            ));
        }
        let first = lanes[0];
        let warp = (first as usize / 32) % 4;
        let b_bits = self.value(first, pc, &operands[2])?;
        let scale_d = self.value(first, pc, &operands[3])? & 1;
        let scale_a = if self.value(first, pc, &operands[4])? as i64 == -1 {
            -1.0
        } else {
            1.0
        };
        let scale_b = if self.value(first, pc, &operands[5])? as i64 == -1 {
            -1.0
        } else {
            1.0
        };
        let b_transposed = self.value(first, pc, &operands[operands.len() - 1])? != 0;
        let Some(b) = Descriptor::decode(b_bits) else {
            return Err(self.undecoded(pc, b_bits));
        };
        let ma = if register_a {
            // Each lane's four registers: the mma.m16n8k16 A fragment of
            // this warp's 16 rows.
            let registers = self.gather(pc, 1, lanes)?;
            let mut ma = vec![[0f64; 16]; 16];
            for (lane, words) in registers.iter().enumerate() {
                for e in 0..8 {
                    let (m, k) = fragments::mma_m16n8k16_a(lane, e);
                    ma[m][k] = half_value(inputs, element(words, e));
                }
            }
            ma
        } else {
            let a_bits = self.value(first, pc, &operands[1])?;
            let a_transposed = self.value(first, pc, &operands[6])? != 0;
            let Some(a) = Descriptor::decode(a_bits) else {
                return Err(self.undecoded(pc, a_bits));
            };
            let rows = 16 * warp as u64;
            self.matrix(first, pc, a, a_transposed, rows..rows + 16, inputs)
        };
        let mb = self.matrix(first, pc, b, b_transposed, 0..u64::from(n), inputs);
        let Operand::Vector(dests) = &operands[0] else {
            return Err(self.operands(pc, "wgmma's d is a vector of registers"));
        };
        let dests: Vec<u32> = dests
            .iter()
            .map(|d| self.dest(pc, d))
            .collect::<Result<_, _>>()?;
        if dests.len() != n as usize / 2 {
            return Err(self.operands(pc, "d has the wrong number of registers for N"));
        }
        for &t in lanes {
            let lane = t as usize % 32;
            for (i, &reg) in dests.iter().enumerate() {
                let (m, col) = fragments::wgmma_c(warp, lane, i);
                let product: f64 = (0..16).map(|k| ma[m - 16 * warp][k] * mb[col][k]).sum();
                let at = t as usize * self.nregs + reg as usize;
                let accumulated = if scale_d == 1 {
                    if !self.written[at] {
                        let register = self.kernel.entry.registers[reg as usize].clone();
                        self.find(t, pc, FindingKind::UninitialisedRegister { register });
                    }
                    f64::from(f32::from_bits(self.regs[at] as u32))
                } else {
                    0.0
                };
                let d = (scale_a * scale_b * product + accumulated) as f32;
                self.write_reg(t, reg, u64::from(d.to_bits()));
                self.pending[at] = true;
            }
            self.threads[t as usize]
                .wgmma_open
                .extend(dests.iter().copied());
        }
        Ok(())
    }

    /// The error for a descriptor the executor does not read.
    fn undecoded(&self, pc: usize, bits: u64) -> ExecError {
        self.operands(
            pc,
            &format!("descriptor {bits:#x}: the CPU executor reads only the 128-byte swizzle"),
        )
    }

    /// `wgmma.commit_group` and `wgmma.wait_group N` of thread `t`.
    pub(in crate::exec) fn wgmma_group(&mut self, t: u32, op: Op) {
        let thread = &mut self.threads[t as usize];
        let retired: Vec<u32> = match op {
            Op::WgmmaCommit => {
                let group = std::mem::take(&mut thread.wgmma_open);
                thread.wgmma_groups.push_back(group);
                Vec::new()
            }
            _ => {
                let keep = match op {
                    Op::WgmmaWait(n) => n as usize,
                    _ => 0,
                };
                let mut retired = Vec::new();
                while thread.wgmma_groups.len() > keep {
                    retired.extend(thread.wgmma_groups.pop_front().unwrap_or_default());
                }
                retired
            }
        };
        // A register a newer group (or an uncommitted wgmma) also writes
        // stays pending: the accumulators of a k-loop are in every group.
        let thread = &self.threads[t as usize];
        let still_written: std::collections::HashSet<u32> = thread
            .wgmma_groups
            .iter()
            .flatten()
            .chain(&thread.wgmma_open)
            .copied()
            .collect();
        for reg in retired {
            if !still_written.contains(&reg) {
                let at = t as usize * self.nregs + reg as usize;
                self.pending[at] = false;
            }
        }
    }
}
