//! CPU executor: the warp-wide instructions — `shfl.sync`, `ldmatrix` and
//! `mma.sync` (m16n8k16, and Volta's m8n8k4 quad pairs). Every lane's
//! sources are gathered before any destination is written (a fragment's D
//! is usually its C). Products are exact in f64 for 16-bit inputs and the
//! sums are taken in f64 then rounded once: the hardware's order of
//! summation is unspecified, so the result may differ from a GPU's in the
//! last bit of the accumulator type.

use half::{bf16, f16};

use super::super::ExecError;
use super::super::decode::{ShflMode, Ty};
use super::super::fragments;
use super::super::interp::Block;
use super::memory::bank_degree;
use super::scalar;

/// One 16-bit element of type `ty` as f64.
pub fn half_value(ty: Ty, bits: u64) -> f64 {
    match ty {
        Ty::Bf16 => f64::from(bf16::from_bits(bits as u16).to_f32()),
        _ => f64::from(f16::from_bits(bits as u16).to_f32()),
    }
}

/// Element `e` (16-bit, packed two per register) of a fragment.
pub(super) fn element(regs: &[u64], e: usize) -> u64 {
    (regs[e / 2] >> (16 * (e % 2))) & 0xFFFF
}

impl Block<'_, '_> {
    /// The registers of vector operand `at` of every lane, read.
    pub(super) fn gather(
        &mut self,
        pc: usize,
        at: usize,
        lanes: &[u32],
    ) -> Result<Vec<Vec<u64>>, ExecError> {
        let operand = self.instr(pc).operands.get(at).cloned();
        let operand =
            operand.ok_or_else(|| self.operands(pc, &format!("missing operand {}", at + 1)))?;
        let regs = self.regs_of(pc, &operand)?;
        Ok(lanes
            .iter()
            .map(|&t| regs.iter().map(|&r| self.read_reg(t, r, pc)).collect())
            .collect())
    }

    /// Writes `values[lane][i]` to register `i` of vector operand `at`.
    fn scatter(
        &mut self,
        pc: usize,
        at: usize,
        lanes: &[u32],
        values: &[Vec<u64>],
    ) -> Result<(), ExecError> {
        let operand = self.instr(pc).operands[at].clone();
        let regs = self.regs_of(pc, &operand)?;
        for (&t, lane_values) in lanes.iter().zip(values) {
            for (&reg, &value) in regs.iter().zip(lane_values) {
                self.write_reg(t, reg, value);
            }
        }
        Ok(())
    }

    /// `shfl.sync.mode.b32 d, a, b, c, membermask`.
    pub(in crate::exec) fn shfl(
        &mut self,
        pc: usize,
        mode: ShflMode,
        enabled: &[u32],
    ) -> Result<(), ExecError> {
        let base = enabled[0] / 32 * 32;
        let operands = self.instr(pc).operands.clone();
        if operands.len() != 5 {
            return Err(self.operands(pc, "shfl.sync takes d, a, b, c, membermask"));
        }
        let mask = self.value(enabled[0], pc, &operands[4])? as u32;
        for lane in 0..32u32 {
            let named = mask & (1 << lane) != 0;
            if named && !enabled.contains(&(base + lane)) {
                return Err(self.divergent(
                    pc,
                    format!(
                        "lane {lane} is in the member mask {mask:#010x} but not at this instruction"
                    ),
                ));
            }
        }
        let dest = self.dest(pc, &operands[0])?;
        let mut results = Vec::with_capacity(enabled.len());
        for &t in enabled {
            let lane = (t % 32) as i64;
            let b = (self.value(t, pc, &operands[2])? & 31) as i64;
            let c = self.value(t, pc, &operands[3])? as i64;
            let segment_mask = (c >> 8) & 31;
            let clamp = c & 31;
            let max_lane = (lane & segment_mask) | (clamp & !segment_mask);
            let min_lane = lane & segment_mask;
            let (j, valid) = match mode {
                ShflMode::Up => (lane - b, lane - b >= max_lane),
                ShflMode::Down => (lane + b, lane + b <= max_lane),
                ShflMode::Bfly => (lane ^ b, (lane ^ b) <= max_lane),
                ShflMode::Idx => {
                    let j = min_lane | (b & !segment_mask);
                    (j, j <= max_lane)
                }
            };
            let source = if valid { j } else { lane };
            let source_thread = base + source as u32;
            if source_thread as usize >= self.threads.len() {
                return Err(
                    self.divergent(pc, format!("lane {source} does not exist in this warp"))
                );
            }
            let value = self.value(source_thread, pc, &operands[1])?;
            results.push((t, value));
        }
        for (t, value) in results {
            self.write_reg(t, dest, scalar::truncate(value, 4));
        }
        Ok(())
    }

    /// `ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16 d, [a]`.
    pub(in crate::exec) fn ldmatrix(
        &mut self,
        pc: usize,
        count: u32,
        trans: bool,
        lanes: &[u32],
    ) -> Result<(), ExecError> {
        let address = self.instr(pc).operands[1].clone();
        let super::super::parse::Operand::Address { base, offset } = &address else {
            return Err(self.operands(pc, "ldmatrix takes an address"));
        };
        // rows[j][r]: the 8 elements of row r of matrix j, from lane 8j + r.
        let mut rows = vec![[[0u64; 8]; 8]; count as usize];
        let mut accesses = Vec::new();
        for j in 0..count as usize {
            for (r, row) in rows[j].iter_mut().enumerate() {
                let t = lanes[8 * j + r];
                let at = self.value(t, pc, base)?.wrapping_add(*offset as u64);
                accesses.push((t, at, 16));
                let bytes = self.shared_read(t, pc, at, 16);
                // The row goes to other lanes than the one that gave its
                // address: each of them reads it, for the race check (a
                // lane reading the row it stored itself is still racing
                // with the lanes that receive it).
                if bytes.is_some() {
                    self.note_receivers(pc, lanes, r, trans, at);
                }
                let bytes = bytes.unwrap_or_else(|| vec![0; 16]);
                for (c, pair) in bytes.chunks(2).enumerate() {
                    row[c] = u64::from(u16::from_le_bytes([pair[0], pair[1]]));
                }
            }
        }
        let degree = bank_degree(&accesses);
        self.note_banks(pc, degree);
        let values: Vec<Vec<u64>> = (0..lanes.len())
            .map(|lane| {
                (0..count as usize)
                    .map(|j| {
                        let (r0, c0) = fragments::ldmatrix(lane, 0, trans);
                        let (r1, c1) = fragments::ldmatrix(lane, 1, trans);
                        rows[j][r0][c0] | (rows[j][r1][c1] << 16)
                    })
                    .collect()
            })
            .collect();
        self.scatter(pc, 0, lanes, &values)
    }

    /// Records the read of the 16-byte row `row` at shared `offset` by every
    /// lane an `ldmatrix` delivers part of it to (the fragment's threads
    /// whose elements come from that row).
    fn note_receivers(&mut self, pc: usize, lanes: &[u32], row: usize, trans: bool, offset: u64) {
        let range = offset as usize..offset as usize + 16;
        for (lane, &t) in lanes.iter().enumerate() {
            if (0..2).any(|e| fragments::ldmatrix(lane, e, trans).0 == row) {
                let now = self.access(t, pc);
                if let Some(conflict) = self.shared.note_read(range.clone(), now) {
                    self.race(t, pc, conflict, false);
                }
            }
        }
    }

    /// `mma.sync.aligned.m16n8k16.row.col` with f32 or f16 accumulators.
    pub(in crate::exec) fn mma_m16n8k16(
        &mut self,
        pc: usize,
        inputs: Ty,
        accumulator: Ty,
        lanes: &[u32],
    ) -> Result<(), ExecError> {
        let a = self.gather(pc, 1, lanes)?;
        let b = self.gather(pc, 2, lanes)?;
        let c = self.gather(pc, 3, lanes)?;
        let mut ma = [[0f64; 16]; 16];
        let mut mb = [[0f64; 8]; 16];
        let mut mc = [[0f64; 8]; 16];
        for lane in 0..32 {
            for e in 0..8 {
                let (m, k) = fragments::mma_m16n8k16_a(lane, e);
                ma[m][k] = half_value(inputs, element(&a[lane], e));
            }
            for e in 0..4 {
                let (k, n) = fragments::mma_m16n8k16_b(lane, e);
                mb[k][n] = half_value(inputs, element(&b[lane], e));
                let (m, n) = fragments::mma_m16n8k16_c(lane, e);
                mc[m][n] = match accumulator {
                    Ty::F32 => f64::from(f32::from_bits(c[lane][e] as u32)),
                    _ => half_value(Ty::F16, element(&c[lane], e)),
                };
            }
        }
        let values: Vec<Vec<u64>> = (0..32)
            .map(|lane| {
                let d = |e: usize| {
                    let (m, n) = fragments::mma_m16n8k16_c(lane, e);
                    (0..16).map(|k| ma[m][k] * mb[k][n]).sum::<f64>() + mc[m][n]
                };
                match accumulator {
                    Ty::F32 => (0..4).map(|e| u64::from((d(e) as f32).to_bits())).collect(),
                    _ => (0..2)
                        .map(|r| {
                            let lo = u64::from(f16::from_f64(d(2 * r)).to_bits());
                            let hi = u64::from(f16::from_f64(d(2 * r + 1)).to_bits());
                            lo | (hi << 16)
                        })
                        .collect(),
                }
            })
            .collect();
        self.scatter(pc, 0, lanes, &values)
    }

    /// `mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32`: four quad pairs,
    /// each its own 8×8×4 product.
    pub(in crate::exec) fn mma_m8n8k4(
        &mut self,
        pc: usize,
        lanes: &[u32],
    ) -> Result<(), ExecError> {
        let a = self.gather(pc, 1, lanes)?;
        let b = self.gather(pc, 2, lanes)?;
        let c = self.gather(pc, 3, lanes)?;
        let mut ma = [[[0f64; 4]; 8]; 4];
        let mut mb = [[[0f64; 8]; 4]; 4];
        let mut mc = [[[0f64; 8]; 8]; 4];
        for lane in 0..32 {
            let q = fragments::mma_m8n8k4_quad_pair(lane);
            for e in 0..4 {
                let (m, k) = fragments::mma_m8n8k4_a(lane, e);
                ma[q][m][k] = half_value(Ty::F16, element(&a[lane], e));
                let (k, n) = fragments::mma_m8n8k4_b(lane, e);
                mb[q][k][n] = half_value(Ty::F16, element(&b[lane], e));
            }
            for (e, &bits) in c[lane].iter().enumerate().take(8) {
                let (m, n) = fragments::mma_m8n8k4_c(lane, e);
                mc[q][m][n] = f64::from(f32::from_bits(bits as u32));
            }
        }
        let values: Vec<Vec<u64>> = (0..32)
            .map(|lane| {
                let q = fragments::mma_m8n8k4_quad_pair(lane);
                (0..8)
                    .map(|e| {
                        let (m, n) = fragments::mma_m8n8k4_c(lane, e);
                        let d =
                            (0..4).map(|k| ma[q][m][k] * mb[q][k][n]).sum::<f64>() + mc[q][m][n];
                        u64::from((d as f32).to_bits())
                    })
                    .collect()
            })
            .collect();
        self.scatter(pc, 0, lanes, &values)
    }
}
