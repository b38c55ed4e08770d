//! CPU executor: loads, stores, accumulating stores (`red.global.add.f32`)
//! and asynchronous copies — parameter, global and shared state spaces,
//! scalar and vector; every global access checked for bounds, every shared
//! one for bounds, unwritten bytes, pending `cp.async` data and races, and
//! each warp's shared instruction measured for bank conflicts.

use std::collections::{HashMap, HashSet};

use super::super::ExecError;
use super::super::decode::{Cvta, Op, Space};
use super::super::interp::{Block, PendingCopy, State};
use super::super::machine::{FindingKind, PARAM_WINDOW, SHARED_WINDOW};
use super::super::parse::Operand;

/// Shared-memory banks, each 4 bytes wide.
const BANKS: u64 = 32;

/// `cvta` of one address: shared addresses live at [`SHARED_WINDOW`] in the
/// generic space, parameters at [`PARAM_WINDOW`], global ones where they
/// are.
pub fn cvta(direction: Cvta, address: u64) -> u64 {
    match direction {
        Cvta::ToGlobal | Cvta::FromGlobal => address,
        Cvta::FromShared => address.wrapping_add(SHARED_WINDOW),
        Cvta::ToShared => address.wrapping_sub(SHARED_WINDOW),
        Cvta::FromParam => address.wrapping_add(PARAM_WINDOW),
    }
}

/// The bank-conflict degree of one warp's shared access: lanes are served
/// in phases (a whole warp for accesses up to 4 bytes, half a warp for 8,
/// a quarter for 16); in each phase a bank serves each distinct 4-byte word
/// once. The degree is the most words one bank serves in one phase.
pub fn bank_degree(accesses: &[(u32, u64, u32)]) -> u32 {
    let widest = accesses.iter().map(|a| a.2).max().unwrap_or(4);
    let phase_lanes = match widest {
        0..=4 => 32,
        5..=8 => 16,
        _ => 8,
    };
    let mut words: HashMap<(u32, u64), HashSet<u64>> = HashMap::new();
    for &(lane, offset, bytes) in accesses {
        let phase = (lane % 32) / phase_lanes;
        for word in offset / 4..(offset + u64::from(bytes)).div_ceil(4) {
            words.entry((phase, word % BANKS)).or_default().insert(word);
        }
    }
    words.values().map(|w| w.len() as u32).max().unwrap_or(1)
}

/// A subnormal fp32 value as the zero of its sign, as `red.add.f32` reads
/// and writes them.
fn flush(value: f32) -> f32 {
    if value.is_subnormal() {
        0.0f32.copysign(value)
    } else {
        value
    }
}

/// Where an address operand points.
enum Place {
    Param(usize),
    Memory(u64),
}

impl Block<'_, '_> {
    fn place(&mut self, t: u32, pc: usize, operand: &Operand) -> Result<Place, ExecError> {
        let Operand::Address { base, offset } = operand else {
            return Err(self.operands(pc, "expected an address `[...]`"));
        };
        if let Operand::Name(name) = base.as_ref()
            && let Some(&index) = self.kernel.params.get(name)
        {
            return Ok(Place::Param(index));
        }
        let base = self.value(t, pc, base)?;
        Ok(Place::Memory(base.wrapping_add(*offset as u64)))
    }

    /// Reads `len` shared bytes for thread `t`, noting every problem; the
    /// bytes, or `None` when out of bounds.
    pub(in crate::exec) fn shared_read(
        &mut self,
        t: u32,
        pc: usize,
        offset: u64,
        len: u32,
    ) -> Option<Vec<u8>> {
        if !self.shared.contains(offset, len) {
            let size = self.shared.bytes.len();
            self.find(
                t,
                pc,
                FindingKind::SharedOutOfBounds {
                    offset,
                    bytes: len,
                    size,
                },
            );
            return None;
        }
        let range = offset as usize..offset as usize + len as usize;
        let pending = range
            .clone()
            .find(|&at| self.shared.shadow[at].pending != 0);
        let unseen = |at: usize| {
            let mark = self.shared.shadow[at].tensor_copy?;
            let seen = self.threads[t as usize].seen_phases.get(&mark.barrier);
            (seen.is_none_or(|&seen| seen <= mark.phase)).then_some((at, mark))
        };
        if let Some(at) = pending {
            let owner = self.shared.shadow[at].pending - 1;
            let what =
                format!("shared byte {at}, which a cp.async of thread {owner} has not landed");
            self.find(t, pc, FindingKind::EarlyRead { what });
        } else if let Some((at, mark)) = range.clone().find_map(unseen) {
            let copy = self.instr(mark.pc as usize).line;
            let what = format!(
                "shared byte {at}, which the cp.async.bulk.tensor at line {copy} completes on \
                 the mbarrier at shared byte {} in its phase {}; this thread has not waited for \
                 that phase",
                mark.barrier, mark.phase
            );
            self.find(t, pc, FindingKind::EarlyRead { what });
        } else if let Some(at) = range.clone().find(|&at| !self.shared.shadow[at].written) {
            self.find(
                t,
                pc,
                FindingKind::UninitialisedShared { offset: at as u32 },
            );
        }
        let now = self.access(t, pc);
        if let Some(conflict) = self.shared.note_read(range.clone(), now) {
            self.race(t, pc, conflict, false);
        }
        Some(self.shared.bytes[range].to_vec())
    }

    /// Writes shared bytes for thread `t` (as instruction `pc`).
    pub(in crate::exec) fn shared_write(&mut self, t: u32, pc: usize, offset: u64, data: &[u8]) {
        if !self.shared.contains(offset, data.len() as u32) {
            let size = self.shared.bytes.len();
            let kind = FindingKind::SharedOutOfBounds {
                offset,
                bytes: data.len() as u32,
                size,
            };
            self.find(t, pc, kind);
            return;
        }
        let now = self.access(t, pc);
        if let Some(conflict) = self.shared.write(offset as usize, data, now) {
            self.race(t, pc, conflict, true);
        }
    }

    fn global_read(&mut self, t: u32, pc: usize, address: u64, len: u32) -> Option<Vec<u8>> {
        match self.run.globals.locate(address, len) {
            Some((buffer, at)) => {
                Some(self.run.globals.buffers[buffer][at..at + len as usize].to_vec())
            }
            None => {
                let detail = self.run.globals.describe_miss(address, len);
                self.find(t, pc, FindingKind::GlobalOutOfBounds { detail });
                None
            }
        }
    }

    fn global_write(&mut self, t: u32, pc: usize, address: u64, data: &[u8]) {
        match self.run.globals.locate(address, data.len() as u32) {
            Some((buffer, at)) => {
                self.run.globals.buffers[buffer][at..at + data.len()].copy_from_slice(data);
                self.run.global_writes += 1;
            }
            None => {
                let detail = self.run.globals.describe_miss(address, data.len() as u32);
                self.find(t, pc, FindingKind::GlobalOutOfBounds { detail });
            }
        }
    }

    /// `ld`, `st` and `cp.async` for the enabled lanes of one warp.
    pub(in crate::exec) fn memory(
        &mut self,
        pc: usize,
        op: Op,
        enabled: &[u32],
    ) -> Result<(), ExecError> {
        let mut shared_accesses = Vec::new();
        for &t in enabled {
            match op {
                Op::Ld { space, ty, count } => {
                    let operands = &self.instr(pc).operands;
                    let dests = self.regs_of(pc, &operands[0])?;
                    let place = self.place(t, pc, &operands[1])?;
                    let width = ty.bytes();
                    let len = width * count;
                    let bytes = match (space, place) {
                        (Space::Param, Place::Param(index)) => {
                            Some(self.run.params[index].to_le_bytes()[..width as usize].to_vec())
                        }
                        (Space::Global, Place::Memory(address)) => {
                            self.global_read(t, pc, address, len)
                        }
                        (Space::Shared, Place::Memory(offset)) => {
                            shared_accesses.push((t, offset, len));
                            self.shared_read(t, pc, offset, len)
                        }
                        _ => return Err(self.operands(pc, "an address of another state space")),
                    };
                    let bytes = bytes.unwrap_or_else(|| vec![0; len as usize]);
                    for (reg, chunk) in dests.iter().zip(bytes.chunks(width as usize)) {
                        let mut value = [0u8; 8];
                        value[..chunk.len()].copy_from_slice(chunk);
                        self.write_reg(t, *reg, u64::from_le_bytes(value));
                    }
                }
                Op::Poll(ty) => {
                    let operands = &self.instr(pc).operands;
                    let dest = self.dest(pc, &operands[0])?;
                    let Place::Memory(address) = self.place(t, pc, &operands[1])? else {
                        return Err(self.operands(pc, "a polled load reads global memory"));
                    };
                    let bytes = self.global_read(t, pc, address, ty.bytes());
                    let value = le_value(&bytes.unwrap_or_default());
                    self.write_reg(t, dest, value);
                    self.threads[t as usize].state = State::Polling;
                }
                Op::AtomAdd(ty) => {
                    let operands = &self.instr(pc).operands;
                    let dest = self.dest(pc, &operands[0])?;
                    let Place::Memory(address) = self.place(t, pc, &operands[1])? else {
                        return Err(self.operands(pc, "an atomic on global memory"));
                    };
                    let operand = operands[2].clone();
                    let add = self.value(t, pc, &operand)?;
                    let width = ty.bytes();
                    let old =
                        le_value(&self.global_read(t, pc, address, width).unwrap_or_default());
                    let sum = old.wrapping_add(add).to_le_bytes();
                    self.global_write(t, pc, address, &sum[..width as usize]);
                    self.write_reg(t, dest, old);
                }
                Op::RedAddF32 { count } => {
                    let operands = &self.instr(pc).operands;
                    let Place::Memory(address) = self.place(t, pc, &operands[0])? else {
                        return Err(self.operands(pc, "an accumulating store into global memory"));
                    };
                    let sources = match &operands[1] {
                        Operand::Vector(items) => items.clone(),
                        single => vec![single.clone()],
                    };
                    if sources.len() != count as usize {
                        return Err(self.operands(pc, "the vector width does not match the opcode"));
                    }
                    let mut adds = Vec::with_capacity(sources.len());
                    for source in &sources {
                        adds.push(f32::from_bits(self.value(t, pc, source)? as u32));
                    }
                    // Out of bounds: reported by the read, nothing written.
                    if let Some(old) = self.global_read(t, pc, address, 4 * count) {
                        let sums: Vec<u8> = old
                            .chunks(4)
                            .zip(&adds)
                            .flat_map(|(word, add)| {
                                let old = f32::from_le_bytes([word[0], word[1], word[2], word[3]]);
                                flush(flush(old) + flush(*add)).to_le_bytes()
                            })
                            .collect();
                        self.global_write(t, pc, address, &sums);
                    }
                }
                Op::St { space, ty, count } => {
                    let operands = &self.instr(pc).operands;
                    let place = self.place(t, pc, &operands[0])?;
                    let sources = match &operands[1] {
                        Operand::Vector(items) => items.clone(),
                        single => vec![single.clone()],
                    };
                    if sources.len() != count as usize {
                        return Err(self.operands(pc, "the vector width does not match the opcode"));
                    }
                    let mut data = Vec::with_capacity((ty.bytes() * count) as usize);
                    for source in &sources {
                        let value = self.value(t, pc, source)?;
                        data.extend_from_slice(&value.to_le_bytes()[..ty.bytes() as usize]);
                    }
                    match (space, place) {
                        (Space::Global, Place::Memory(address)) => {
                            self.global_write(t, pc, address, &data)
                        }
                        (Space::Shared, Place::Memory(offset)) => {
                            shared_accesses.push((t, offset, data.len() as u32));
                            self.shared_write(t, pc, offset, &data);
                        }
                        _ => return Err(self.operands(pc, "a store to a space it cannot write")),
                    }
                }
                Op::CpAsync { bytes, sized } => {
                    let operands = self.instr(pc).operands.clone();
                    let (Place::Memory(dst), Place::Memory(src)) = (
                        self.place(t, pc, &operands[0])?,
                        self.place(t, pc, &operands[1])?,
                    ) else {
                        return Err(
                            self.operands(pc, "cp.async takes a shared and a global address")
                        );
                    };
                    // PTX: a source size past the copy's size is undefined;
                    // the executor reads at most `bytes`.
                    let read = if sized {
                        (self.value(t, pc, &operands[3])? as u32).min(bytes)
                    } else {
                        bytes
                    };
                    shared_accesses.push((t, dst, bytes));
                    self.issue_copy(t, pc, dst, src, bytes, read);
                }
                _ => return Err(self.operands(pc, "not a memory instruction")),
            }
        }
        if !shared_accesses.is_empty() {
            let degree = bank_degree(&shared_accesses);
            self.note_banks(pc, degree);
        }
        Ok(())
    }

    /// A `cp.async` of `bytes` into shared `dst` that reads the first
    /// `read` of them from global `src` and zero-fills the rest.
    fn issue_copy(&mut self, t: u32, pc: usize, dst: u64, src: u64, bytes: u32, read: u32) {
        let mut data = if read == 0 {
            Vec::new()
        } else {
            self.global_read(t, pc, src, read)
                .unwrap_or_else(|| vec![0; read as usize])
        };
        data.resize(bytes as usize, 0);
        if !self.shared.contains(dst, bytes) {
            let size = self.shared.bytes.len();
            self.find(
                t,
                pc,
                FindingKind::SharedOutOfBounds {
                    offset: dst,
                    bytes,
                    size,
                },
            );
            return;
        }
        for at in dst as usize..dst as usize + bytes as usize {
            self.shared.shadow[at].pending = t + 1;
        }
        self.threads[t as usize].copies_open.push(PendingCopy {
            offset: dst as usize,
            data,
            pc,
        });
    }

    fn land(&mut self, t: u32, copy: PendingCopy) {
        for at in copy.offset..copy.offset + copy.data.len() {
            self.shared.shadow[at].pending = 0;
        }
        self.shared_write(t, copy.pc, copy.offset as u64, &copy.data);
    }

    /// `cp.async.commit_group`, `wait_group N` and `wait_all` of thread `t`:
    /// copies land (become visible, as writes of `t`) at their wait.
    pub(in crate::exec) fn copy_group(&mut self, t: u32, op: Op) {
        let thread = &mut self.threads[t as usize];
        let landing: Vec<PendingCopy> = match op {
            Op::CpAsyncCommit => {
                let group = std::mem::take(&mut thread.copies_open);
                thread.copy_groups.push_back(group);
                Vec::new()
            }
            Op::CpAsyncWait(n) => {
                let mut landing = Vec::new();
                while thread.copy_groups.len() > n as usize {
                    landing.extend(thread.copy_groups.pop_front().unwrap_or_default());
                }
                landing
            }
            _ => {
                let mut landing: Vec<PendingCopy> =
                    thread.copy_groups.drain(..).flatten().collect();
                landing.append(&mut thread.copies_open);
                landing
            }
        };
        for copy in landing {
            self.land(t, copy);
        }
    }
}

/// Little-endian bytes (at most 8) as a value.
fn le_value(bytes: &[u8]) -> u64 {
    let mut value = [0u8; 8];
    let len = bytes.len().min(8);
    value[..len].copy_from_slice(&bytes[..len]);
    u64::from_le_bytes(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bank_degrees_count_distinct_words_per_bank() {
        // 32 lanes reading consecutive words: conflict-free.
        let linear: Vec<_> = (0..32).map(|l| (l, u64::from(l) * 4, 4)).collect();
        assert_eq!(bank_degree(&linear), 1);
        // Stride of 32 words: every lane in bank 0.
        let column: Vec<_> = (0..32).map(|l| (l, u64::from(l) * 128, 4)).collect();
        assert_eq!(bank_degree(&column), 32);
        // Broadcast: one word, many lanes.
        let same: Vec<_> = (0..32).map(|l| (l, 0, 4)).collect();
        assert_eq!(bank_degree(&same), 1);
        // 16-byte rows 128 bytes apart: 8 lanes a phase, all in banks 0..4.
        let rows: Vec<_> = (0..32).map(|l| (l, u64::from(l) * 128, 16)).collect();
        assert_eq!(bank_degree(&rows), 8);
    }
}
