//! CPU executor: Hopper's bulk tensor copies (`cp.async.bulk.tensor`, the
//! TMA) and the mbarriers they complete on — a tensor map found through its
//! parameter's generic address, the box copied element by element with
//! zeros outside the tensor and the shared-memory swizzle applied, and each
//! mbarrier's phase, arrivals and transaction bytes kept in a side table by
//! shared offset.
//!
//! A copy is carried out whole when it is issued, and its bytes completed
//! on its barrier then. The shared bytes it wrote stay marked with the
//! barrier phase they complete, and a thread that reads them before a
//! `try_wait` of its own has seen that phase end reads early
//! (docs/running.md §8). `setmaxnreg` is checked and otherwise ignored.

use super::super::interp::{Block, State};
use super::super::machine::{Access, FindingKind, PARAM_SLOT, PARAM_WINDOW, TensorCopyMark};
use super::super::parse::Operand;
use super::super::{ExecError, TensorMapArg};

/// Most arrivals an mbarrier may expect per phase (PTX: 2^20 − 1).
const MAX_ARRIVALS: u64 = (1 << 20) - 1;

/// Shared-memory alignment of a tensor copy's destination.
const DESTINATION_ALIGN: u64 = 128;

/// One mbarrier of a block.
#[derive(Clone, Copy, Debug)]
pub(in crate::exec) struct Mbarrier {
    /// Arrivals each phase expects (init's count).
    count: u32,
    /// Arrivals the current phase still waits for.
    pending: u32,
    /// Transaction bytes expected and not yet completed.
    tx: i64,
    /// Phases completed since the block started; re-inits go on counting,
    /// so that a thread's seen phases stay comparable.
    completed: u32,
    /// `completed` at the last init: phase parity counts from there.
    base: u32,
    /// Who initialised it, when.
    init: Access,
}

impl Mbarrier {
    /// The parity of the current (incomplete) phase.
    fn parity(&self) -> u32 {
        (self.completed - self.base) & 1
    }
}

/// Where a spinning thread waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::exec) struct Spin {
    /// The `try_wait`.
    pub pc: usize,
    /// The barrier's shared offset.
    pub barrier: u32,
    /// The parity of the phase it waits to see complete.
    pub parity: u32,
}

/// Why `map` could not be encoded (the checks `cuTensorMapEncodeTiled`
/// makes), with `buffers` global buffers to point into; `None` when it can.
pub(in crate::exec) fn tensor_map_problem(map: &TensorMapArg, buffers: usize) -> Option<String> {
    let dims = map.extents.len();
    let inner_bytes = map
        .boxes
        .first()
        .map_or(0, |&b| u64::from(b) * u64::from(map.element_bytes));
    if map.buffer >= buffers {
        Some(format!("names buffer {} of {buffers}", map.buffer))
    } else if !(1..=5).contains(&dims) || map.boxes.len() != dims {
        Some(format!(
            "has {dims} extents and {} box sizes; 1 to 5 of each, as many",
            map.boxes.len()
        ))
    } else if map.strides_bytes.len() + 1 != dims {
        Some(format!(
            "has {} strides for {dims} dims",
            map.strides_bytes.len()
        ))
    } else if !matches!(map.element_bytes, 1 | 2 | 4 | 8) {
        Some(format!("has {}-byte elements", map.element_bytes))
    } else if map.boxes.iter().any(|&b| !(1..=256).contains(&b)) {
        Some(format!(
            "has box sizes {:?}; each must be 1 to 256",
            map.boxes
        ))
    } else if map.strides_bytes.iter().any(|s| s % 16 != 0) {
        Some(format!(
            "has strides {:?}; each must be a multiple of 16 bytes",
            map.strides_bytes
        ))
    } else if inner_bytes % 16 != 0 {
        Some(format!(
            "has a box row of {inner_bytes} bytes, not a multiple of 16"
        ))
    } else if !matches!(map.swizzle_bytes, 0 | 32 | 64 | 128) {
        Some(format!("has a {}-byte swizzle", map.swizzle_bytes))
    } else if map.swizzle_bytes != 0 && inner_bytes > u64::from(map.swizzle_bytes) {
        Some(format!(
            "has a box row of {inner_bytes} bytes, wider than its {}-byte swizzle",
            map.swizzle_bytes
        ))
    } else {
        None
    }
}

/// The shared address a tensor copy writes the box's byte `offset` from
/// `dst` to: the swizzle of `span` bytes XORs the 16-byte chunk (address
/// bits 4 and up) with the 128-byte row (bits 7 and up) — CuTe's
/// `Swizzle<3,4,3>`, `<2,4,3>`, `<1,4,3>` on byte addresses for 128, 64 and
/// 32 bytes.
pub fn swizzled(address: u64, span: u32) -> u64 {
    let bits = match span {
        128 => 3,
        64 => 2,
        32 => 1,
        _ => return address,
    };
    let mask = (1u64 << bits) - 1;
    address ^ (((address >> 7) & mask) << 4)
}

impl Block<'_, '_> {
    /// The shared offset an address operand `[base+offset]` names.
    fn address_of(&mut self, t: u32, pc: usize, operand: &Operand) -> Result<u64, ExecError> {
        let Operand::Address { base, offset } = operand else {
            return Err(self.operands(pc, "expected an address `[...]`"));
        };
        Ok(self.value(t, pc, base)?.wrapping_add(*offset as u64))
    }

    /// Operand `at` of the instruction at `pc`.
    fn operand(&self, pc: usize, at: usize) -> Result<Operand, ExecError> {
        self.instr(pc)
            .operands
            .get(at)
            .cloned()
            .ok_or_else(|| self.operands(pc, &format!("missing operand {}", at + 1)))
    }

    /// The mbarrier operand `at` of thread `t`: its shared offset, or
    /// `None` (after a finding) when it is outside shared memory or not
    /// 8-byte aligned.
    fn barrier_at(&mut self, t: u32, pc: usize, at: usize) -> Result<Option<u32>, ExecError> {
        let operand = self.operand(pc, at)?;
        let offset = self.address_of(t, pc, &operand)?;
        if !self.shared.contains(offset, 8) {
            let size = self.shared.bytes.len();
            let kind = FindingKind::SharedOutOfBounds {
                offset,
                bytes: 8,
                size,
            };
            self.find(t, pc, kind);
            return Ok(None);
        }
        if offset % 8 != 0 {
            let kind = FindingKind::Misaligned {
                what: "an mbarrier",
                offset,
                alignment: 8,
            };
            self.find(t, pc, kind);
            return Ok(None);
        }
        Ok(Some(offset as u32))
    }

    /// The initialised mbarrier at `offset` for a use by thread `t`, or
    /// `None` after the finding that it is not. An init by another thread
    /// in this barrier epoch is a finding too (PTX: the init must be made
    /// visible — `fence.mbarrier_init` and a `bar.sync` — before other
    /// threads use it), but the use goes on.
    fn barrier_for_use(&mut self, t: u32, pc: usize, offset: u32) -> Option<Mbarrier> {
        let Some(barrier) = self.mbarriers.get(&offset).copied() else {
            let detail = "used before any mbarrier.init".to_string();
            self.find(
                t,
                pc,
                FindingKind::Mbarrier {
                    offset: u64::from(offset),
                    detail,
                },
            );
            return None;
        };
        if barrier.init.epoch == self.epoch && barrier.init.thread != t {
            let line = self.instr(barrier.init.pc as usize).line;
            let detail = format!(
                "initialised by thread {} at line {line} with no bar.sync since",
                barrier.init.thread
            );
            self.find(
                t,
                pc,
                FindingKind::Mbarrier {
                    offset: u64::from(offset),
                    detail,
                },
            );
        }
        Some(barrier)
    }

    /// Stores `barrier` back, completing its phase when every arrival and
    /// every expected byte are in: the parity flips and the arrivals are
    /// expected again.
    fn settle(&mut self, offset: u32, mut barrier: Mbarrier) {
        if barrier.pending == 0 && barrier.tx == 0 {
            barrier.completed += 1;
            barrier.pending = barrier.count;
        }
        self.mbarriers.insert(offset, barrier);
        self.mbarrier_events += 1;
    }

    /// `mbarrier.init.shared::cta.b64 [bar], count` for the enabled lanes.
    pub(in crate::exec) fn mbarrier_init(
        &mut self,
        pc: usize,
        enabled: &[u32],
    ) -> Result<(), ExecError> {
        let count_operand = self.operand(pc, 1)?;
        for &t in enabled {
            let count = self.value(t, pc, &count_operand)?;
            let Some(offset) = self.barrier_at(t, pc, 0)? else {
                continue;
            };
            if !(1..=MAX_ARRIVALS).contains(&count) {
                return Err(self.operands(
                    pc,
                    &format!("an mbarrier counts 1 to {MAX_ARRIVALS} arrivals; {count} given"),
                ));
            }
            let completed = self.mbarriers.get(&offset).map_or(0, |b| b.completed);
            let barrier = Mbarrier {
                count: count as u32,
                pending: count as u32,
                tx: 0,
                completed,
                base: completed,
                init: self.access(t, pc),
            };
            // The object's bytes are opaque: written, so that no read or
            // write of them is reported as a read of nothing, but outside
            // the race check (mbarrier operations are atomic).
            for at in offset as usize..offset as usize + 8 {
                let byte = &mut self.shared.shadow[at];
                byte.written = true;
                byte.tensor_copy = None;
            }
            self.mbarriers.insert(offset, barrier);
            self.mbarrier_events += 1;
        }
        Ok(())
    }

    /// `mbarrier.arrive[.expect_tx].shared::cta.b64 state, [bar][, bytes]`:
    /// each enabled lane arrives once, after adding `bytes` to the
    /// barrier's tx-count; `state` gets the phase count (opaque to PTX).
    pub(in crate::exec) fn mbarrier_arrive(
        &mut self,
        pc: usize,
        expect_tx: bool,
        enabled: &[u32],
    ) -> Result<(), ExecError> {
        let state = self.operand(pc, 0)?;
        let bytes_operand = if expect_tx {
            Some(self.operand(pc, 2)?)
        } else {
            None
        };
        for &t in enabled {
            let bytes = match &bytes_operand {
                Some(operand) => self.value(t, pc, operand)? as u32,
                None => 0,
            };
            let mut phase = 0;
            if let Some(offset) = self.barrier_at(t, pc, 1)?
                && let Some(mut barrier) = self.barrier_for_use(t, pc, offset)
            {
                phase = barrier.completed;
                barrier.tx += i64::from(bytes);
                if barrier.pending == 0 {
                    let detail = format!(
                        "an arrival beyond its count of {} in its phase {} (which waits for \
                         {} transaction bytes)",
                        barrier.count, barrier.completed, barrier.tx
                    );
                    let kind = FindingKind::Mbarrier {
                        offset: u64::from(offset),
                        detail,
                    };
                    self.find(t, pc, kind);
                } else {
                    barrier.pending -= 1;
                }
                self.settle(offset, barrier);
            }
            // `_` is the sink: the state is not kept.
            if state != Operand::Name("_".to_string()) {
                let dest = self.dest(pc, &state)?;
                self.write_reg(t, dest, u64::from(phase));
            }
        }
        Ok(())
    }

    /// `mbarrier.try_wait.parity.shared::cta.b64 p, [bar], parity`: true
    /// when the phase of that parity has completed (the current phase's
    /// parity differs), and the thread has then seen every completed phase;
    /// false makes the thread spin (its warp yields). An uninitialised
    /// barrier is a finding and reads as completed, so that the run goes on.
    pub(in crate::exec) fn mbarrier_try_wait(
        &mut self,
        pc: usize,
        enabled: &[u32],
    ) -> Result<(), ExecError> {
        let dest = self.operand(pc, 0)?;
        let dest = self.dest(pc, &dest)?;
        let parity_operand = self.operand(pc, 2)?;
        for &t in enabled {
            let parity = (self.value(t, pc, &parity_operand)? & 1) as u32;
            let mut done = true;
            if let Some(offset) = self.barrier_at(t, pc, 1)?
                && let Some(barrier) = self.barrier_for_use(t, pc, offset)
            {
                done = barrier.parity() != parity;
                let thread = &mut self.threads[t as usize];
                if done {
                    let seen = thread.seen_phases.entry(offset).or_insert(0);
                    *seen = (*seen).max(barrier.completed);
                    self.mbarrier_events += 1;
                } else {
                    thread.state = State::Spinning;
                    thread.spin = Some(Spin {
                        pc,
                        barrier: offset,
                        parity,
                    });
                }
            }
            self.write_reg(t, dest, u64::from(done));
        }
        Ok(())
    }

    /// What spinning thread `t` waits for, in words.
    pub(in crate::exec) fn describe_spin(&self, t: u32, spin: Spin) -> String {
        let instr = self.instr(spin.pc);
        let state = match self.mbarriers.get(&spin.barrier) {
            Some(b) => format!(
                "in its phase {} (parity {}) with {} of {} arrivals and {} transaction bytes \
                 outstanding",
                b.completed,
                b.parity(),
                b.pending,
                b.count,
                b.tx
            ),
            None => "never initialised".to_string(),
        };
        format!(
            "wait on an mbarrier no thread will complete: thread {t} at line {} (`{}`) waits for \
             the phase of parity {} of the mbarrier at shared byte {}, {state}",
            instr.line, instr.text, spin.parity, spin.barrier
        )
    }

    /// The tensor map a `cp.async.bulk.tensor` names: its parameter, by
    /// name or by the generic address `cvta.param` made of it.
    fn tensor_map(&mut self, t: u32, pc: usize, map: &Operand) -> Result<TensorMapArg, ExecError> {
        let named = match map {
            Operand::Name(name) => self.kernel.params.get(name).copied(),
            Operand::Reg(_)
            | Operand::Special(_)
            | Operand::Int(_)
            | Operand::F32Bits(_)
            | Operand::Vector(_)
            | Operand::Address { .. }
            | Operand::TensorCoords { .. } => None,
        };
        let index = match named {
            Some(index) => Some(index),
            None => {
                let address = self.value(t, pc, map)?;
                address
                    .checked_sub(PARAM_WINDOW)
                    .filter(|offset| offset % PARAM_SLOT == 0)
                    .map(|offset| (offset / PARAM_SLOT) as usize)
            }
        };
        match index.and_then(|i| self.run.tensor_maps.get(i)?.clone()) {
            Some(tensor_map) => Ok(tensor_map),
            None => Err(self.operands(
                pc,
                "the tensor map's address is not the generic address of a tensor-map \
                 parameter (`mov.b64` of the parameter, then `cvta.param.u64`)",
            )),
        }
    }

    /// `cp.async.bulk.tensor.Nd…tile.mbarrier::complete_tx::bytes [dst],
    /// [map, {c0, …}], [bar]`: each enabled lane copies one box.
    pub(in crate::exec) fn tensor_copy(
        &mut self,
        pc: usize,
        dims: u32,
        enabled: &[u32],
    ) -> Result<(), ExecError> {
        let Operand::TensorCoords { map, coords } = self.operand(pc, 1)? else {
            return Err(self.operands(pc, "the source is `[map, {coordinates}]`"));
        };
        if coords.len() != dims as usize {
            return Err(self.operands(pc, &format!("a {dims}d copy takes {dims} coordinates")));
        }
        let dst_operand = self.operand(pc, 0)?;
        for &t in enabled {
            let tensor_map = self.tensor_map(t, pc, &map)?;
            if tensor_map.extents.len() != dims as usize {
                return Err(self.operands(
                    pc,
                    &format!(
                        "a {dims}d copy of a {}d tensor map",
                        tensor_map.extents.len()
                    ),
                ));
            }
            let mut start = Vec::with_capacity(coords.len());
            for coord in &coords {
                // Signed 32-bit coordinates.
                start.push(i64::from(self.value(t, pc, coord)? as u32 as i32));
            }
            let dst = self.address_of(t, pc, &dst_operand)?;
            if dst % DESTINATION_ALIGN != 0 {
                let kind = FindingKind::Misaligned {
                    what: "a tensor copy's destination",
                    offset: dst,
                    alignment: DESTINATION_ALIGN as u32,
                };
                self.find(t, pc, kind);
            }
            let barrier = match self.barrier_at(t, pc, 2)? {
                Some(offset) => self.barrier_for_use(t, pc, offset).map(|b| (offset, b)),
                None => None,
            };
            let mark = barrier.map(|(offset, b)| TensorCopyMark {
                barrier: offset,
                phase: b.completed,
                pc: pc as u32,
            });
            let bytes = self.copy_box(t, pc, &tensor_map, &start, dst, mark);
            if let Some((offset, mut barrier)) = barrier {
                barrier.tx -= bytes as i64;
                if barrier.tx < 0 {
                    let detail = format!(
                        "a tensor copy of {bytes} bytes completes {} bytes more than its phase \
                         {} expects (arrive.expect_tx must come first, with the box's bytes)",
                        -barrier.tx, barrier.completed
                    );
                    let kind = FindingKind::Mbarrier {
                        offset: u64::from(offset),
                        detail,
                    };
                    self.find(t, pc, kind);
                    barrier.tx = 0;
                }
                self.settle(offset, barrier);
            }
        }
        Ok(())
    }

    /// Copies the box of `map` at `start` to shared `dst` as thread `t`:
    /// elements outside the tensor are zeros, the rest read from the
    /// tensor's buffer; the bytes are stored densely, innermost first,
    /// swizzled, and marked with `mark`. Returns the box's bytes.
    fn copy_box(
        &mut self,
        t: u32,
        pc: usize,
        map: &TensorMapArg,
        start: &[i64],
        dst: u64,
        mark: Option<TensorCopyMark>,
    ) -> u64 {
        let element = u64::from(map.element_bytes);
        let strides: Vec<u64> = std::iter::once(element)
            .chain(map.strides_bytes.iter().copied())
            .collect();
        let total: u64 = map.boxes.iter().map(|&b| u64::from(b)).product();
        let base = super::super::machine::Globals::base(map.buffer);
        let mut outside_buffer = false;
        let mut outside_shared = false;
        let mut index = vec![0u64; map.boxes.len()];
        for i in 0..total {
            // Box index (innermost fastest) → tensor coordinates → bytes.
            let mut rest = i;
            for (d, &size) in map.boxes.iter().enumerate() {
                index[d] = rest % u64::from(size);
                rest /= u64::from(size);
            }
            let mut offset = Some(0u64);
            for (d, &at) in index.iter().enumerate() {
                let coordinate = start[d] + at as i64;
                offset = if (0..map.extents[d] as i64).contains(&coordinate) {
                    offset.and_then(|o| o.checked_add((coordinate as u64).checked_mul(strides[d])?))
                } else {
                    // Outside the tensor: a zero, whatever the other dims.
                    None
                };
                if offset.is_none() {
                    break;
                }
            }
            let mut value = [0u8; 8];
            let value = &mut value[..element as usize];
            if let Some(offset) = offset {
                let address = base.wrapping_add(offset);
                match self.run.globals.locate(address, element as u32) {
                    Some((buffer, at)) => {
                        value.copy_from_slice(
                            &self.run.globals.buffers[buffer][at..at + element as usize],
                        );
                    }
                    // A coordinate inside the extents whose bytes are past
                    // the buffer: the map's strides or extents are wrong.
                    None if !outside_buffer => {
                        outside_buffer = true;
                        let detail = format!(
                            "{} (box element {i} of a tensor copy)",
                            self.run.globals.describe_miss(address, element as u32)
                        );
                        self.find(t, pc, FindingKind::GlobalOutOfBounds { detail });
                    }
                    None => {}
                }
            }
            let at = swizzled(dst.wrapping_add(i * element), map.swizzle_bytes);
            if !self.shared.contains(at, element as u32) {
                if !outside_shared {
                    outside_shared = true;
                    let size = self.shared.bytes.len();
                    let kind = FindingKind::SharedOutOfBounds {
                        offset: at,
                        bytes: element as u32,
                        size,
                    };
                    self.find(t, pc, kind);
                }
                continue;
            }
            let at = at as usize;
            self.shared.bytes[at..at + element as usize].copy_from_slice(value);
            for byte in &mut self.shared.shadow[at..at + element as usize] {
                // Written by the async proxy: ordered by the mbarrier, not
                // by the barrier epochs of the race check.
                byte.written = true;
                byte.write = Access::default();
                byte.read = Access::default();
                byte.read_by_many = false;
                byte.tensor_copy = mark;
            }
        }
        total * element
    }

    /// `setmaxnreg.{inc,dec}.sync.aligned.u32 N`: the CPU has no register
    /// file to resize; N is checked (24 to 256, a multiple of 8).
    pub(in crate::exec) fn setmaxnreg(
        &mut self,
        pc: usize,
        enabled: &[u32],
    ) -> Result<(), ExecError> {
        let count = self.operand(pc, 0)?;
        let count = self.value(enabled[0], pc, &count)?;
        if !(24..=256).contains(&count) || count % 8 != 0 {
            return Err(self.operands(
                pc,
                &format!("setmaxnreg takes 24 to 256 registers, a multiple of 8; {count} given"),
            ));
        }
        Ok(())
    }
}
