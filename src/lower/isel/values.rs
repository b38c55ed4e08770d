//! Stage 3, lowering (instruction selection): reading and writing an
//! operand's values in registers, shared by every pattern. A *word* is 32
//! bits: one fp32/i32/u32 element, or a packed pair of 16-bit elements (low
//! half first). Register operands are used in place; a memory operand is
//! moved with the one load or store its pattern proved possible (for a
//! broadcast input, the one load of its distinct elements: `super::super::broadcast`).

use super::super::error::LowerError;
use super::super::kernel::KernelLowering;
use super::super::registers::{Slot, half_class, word_class};
use super::super::views::OperandInfo;
use crate::ir::{Memory, Scalar};
use crate::ptx::{Operand, Reg, RegClass, imm};

/// The PTX name of a load (`ld`) or store (`st`) of `count` registers of
/// `class` in `memory`: `ld.global.v4.b32`, `st.shared.f32`, `ld.global.b16`.
pub fn access_name(op: &str, memory: Memory, count: usize, class: RegClass) -> String {
    let space = match memory {
        Memory::Global => "global",
        Memory::Shared => "shared",
        // Register arrays are never addressed; callers check the memory.
        Memory::Registers => "local",
    };
    let vector = match count {
        2 => ".v2",
        4 => ".v4",
        _ => "",
    };
    let ty = match class {
        RegClass::F32 => "f32",
        RegClass::F16 | RegClass::B16 => "b16",
        RegClass::B32 | RegClass::B64 | RegClass::Pred => "b32",
    };
    format!("{op}.{space}{vector}.{ty}")
}

pub(super) fn registers_operand(regs: &[Reg]) -> Operand {
    match regs {
        [one] => Operand::Reg(*one),
        many => Operand::Vector(many.to_vec()),
    }
}

impl KernelLowering<'_, '_> {
    /// Loads memory operand `op` into `regs` with one instruction.
    pub fn load_into(&mut self, op: &OperandInfo, regs: &[Reg]) -> Result<(), LowerError> {
        let address = self.address(op, 0)?;
        let name = access_name("ld", op.memory, regs.len(), regs[0].class);
        self.out
            .emit(&name, vec![registers_operand(regs), address.into()])
    }

    /// Stores `regs` to memory operand `op` with one instruction.
    pub fn store_from(&mut self, op: &OperandInfo, regs: &[Reg]) -> Result<(), LowerError> {
        let address = self.address(op, 0)?;
        let name = access_name("st", op.memory, regs.len(), regs[0].class);
        self.out
            .emit(&name, vec![address.into(), registers_operand(regs)])
    }

    /// The slot of each element of register operand `op`.
    pub fn slots(&mut self, op: &OperandInfo) -> Result<Vec<Slot>, LowerError> {
        let slots = op
            .register_slots()
            .map_err(|reason| LowerError::unsupported(op.span, reason, "this is a lowering bug"))?
            .to_vec();
        let buffer = self.buffer(op.buffer)?;
        slots
            .into_iter()
            .map(|slot| self.registers.slot(&mut self.out, op.buffer, buffer, slot))
            .collect()
    }

    /// The words of register operand `op`, in element order (its pattern
    /// proved 16-bit elements are packed pairs).
    fn register_words(&mut self, op: &OperandInfo) -> Result<Vec<Reg>, LowerError> {
        let buffer = self.buffer(op.buffer)?;
        let indices = if op.scalar.bytes() == 2 {
            op.packed_pairs()
                .map_err(|reason| LowerError::unsupported(op.span, reason, "a lowering bug"))?
        } else {
            op.register_slots()
                .map_err(|reason| LowerError::unsupported(op.span, reason, "a lowering bug"))?
                .to_vec()
        };
        indices
            .into_iter()
            .map(|index| self.registers.word(&mut self.out, op.buffer, buffer, index))
            .collect()
    }

    fn fresh_words(&mut self, op: &OperandInfo) -> Vec<Reg> {
        let count = (op.bytes() / 4).max(1) as usize;
        self.out.regs(word_class(op.scalar), count)
    }

    /// The operand's words holding its values: its registers, or fresh
    /// registers loaded from memory.
    pub fn read_words(&mut self, op: &OperandInfo) -> Result<Vec<Reg>, LowerError> {
        if let Some(broadcast) = &op.broadcast {
            return self.broadcast_words(op, broadcast);
        }
        match op.memory {
            Memory::Registers => self.register_words(op),
            Memory::Global | Memory::Shared => {
                let words = self.fresh_words(op);
                self.load_into(op, &words)?;
                Ok(words)
            }
        }
    }

    /// Registers to compute the operand's words into: its own registers, or
    /// fresh ones that [`KernelLowering::flush_words`] stores.
    pub fn target_words(&mut self, op: &OperandInfo) -> Result<Vec<Reg>, LowerError> {
        match op.memory {
            Memory::Registers => self.register_words(op),
            Memory::Global | Memory::Shared => Ok(self.fresh_words(op)),
        }
    }

    /// Stores words computed by [`KernelLowering::target_words`] when the
    /// operand is in memory.
    pub fn flush_words(&mut self, op: &OperandInfo, words: &[Reg]) -> Result<(), LowerError> {
        match op.memory {
            Memory::Registers => Ok(()),
            Memory::Global | Memory::Shared => self.store_from(op, words),
        }
    }

    /// `mov.b32 {lo, hi}, word`: the two halves of a packed word.
    pub fn unpack(&mut self, word: Reg, class: RegClass) -> Result<(Reg, Reg), LowerError> {
        let lo = self.out.reg(class);
        let hi = self.out.reg(class);
        self.out
            .emit("mov.b32/unpack", vec![lo.into(), hi.into(), word.into()])?;
        Ok((lo, hi))
    }

    /// `mov.b32 word, {lo, hi}`.
    pub fn pack(&mut self, word: Reg, lo: Reg, hi: Reg) -> Result<(), LowerError> {
        self.out
            .emit("mov.b32/pack", vec![word.into(), lo.into(), hi.into()])
    }

    /// Each element of a 16-bit operand in its own 16-bit register (`%h` for
    /// fp16, `%rs` for bf16), in element order.
    pub fn read_halves(&mut self, op: &OperandInfo) -> Result<Vec<Reg>, LowerError> {
        if let Some(broadcast) = &op.broadcast {
            return self.broadcast_halves(broadcast);
        }
        let class = half_class(op.scalar);
        match op.memory {
            Memory::Global | Memory::Shared if op.count == 1 => {
                let half = self.out.reg(class);
                self.load_into(op, &[half])?;
                Ok(vec![half])
            }
            Memory::Global | Memory::Shared => {
                let words = self.read_words(op)?;
                let mut halves = Vec::with_capacity(op.count);
                for word in words {
                    let (lo, hi) = self.unpack(word, class)?;
                    halves.extend([lo, hi]);
                }
                Ok(halves)
            }
            Memory::Registers => {
                let slots = self.slots(op)?;
                let mut unpacked: Vec<(Reg, (Reg, Reg))> = Vec::new();
                let mut halves = Vec::with_capacity(slots.len());
                for slot in slots {
                    let (word, high) = half_of(slot, op)?;
                    let pair = match unpacked.iter().find(|(w, _)| *w == word) {
                        Some((_, pair)) => *pair,
                        None => {
                            let pair = self.unpack(word, class)?;
                            unpacked.push((word, pair));
                            pair
                        }
                    };
                    halves.push(if high { pair.1 } else { pair.0 });
                }
                Ok(halves)
            }
        }
    }

    /// Writes one 16-bit register per element of `op`: packed into the
    /// operand's registers (a word of which only one half is written keeps
    /// its other half), or stored to memory.
    pub fn write_halves(&mut self, op: &OperandInfo, halves: &[Reg]) -> Result<(), LowerError> {
        match op.memory {
            Memory::Global | Memory::Shared if op.count == 1 => self.store_from(op, halves),
            Memory::Global | Memory::Shared => {
                let words = self.out.regs(RegClass::B32, halves.len() / 2);
                for (word, pair) in words.iter().zip(halves.chunks(2)) {
                    self.pack(*word, pair[0], pair[1])?;
                }
                self.store_from(op, &words)
            }
            Memory::Registers => {
                let slots = self.slots(op)?;
                let mut words: Vec<(Reg, [Option<Reg>; 2])> = Vec::new();
                for (slot, half) in slots.into_iter().zip(halves) {
                    let (word, high) = half_of(slot, op)?;
                    let position = match words.iter().position(|(w, _)| *w == word) {
                        Some(position) => position,
                        None => {
                            words.push((word, [None, None]));
                            words.len() - 1
                        }
                    };
                    words[position].1[usize::from(high)] = Some(*half);
                }
                let class = half_class(op.scalar);
                for (word, [lo, hi]) in words {
                    if lo.is_none() != hi.is_none() {
                        self.registers.define_at_entry(&mut self.out, word)?;
                    }
                    let (lo, hi) = match (lo, hi) {
                        (Some(lo), Some(hi)) => (lo, hi),
                        (Some(lo), None) => (lo, self.unpack(word, class)?.1),
                        (None, Some(hi)) => (self.unpack(word, class)?.0, hi),
                        (None, None) => continue,
                    };
                    self.pack(word, lo, hi)?;
                }
                Ok(())
            }
        }
    }
}

impl KernelLowering<'_, '_> {
    /// A 16-bit value of `scalar` widened to a new fp32 register (fp16 by
    /// `cvt`, bf16 by moving its bits to the upper half: exact either way).
    pub fn widen(&mut self, half: Reg, scalar: Scalar) -> Result<Reg, LowerError> {
        let wide = self.out.reg(RegClass::F32);
        self.widen_into(half, scalar, wide)?;
        Ok(wide)
    }

    /// [`KernelLowering::widen`] into the fp32 register `wide`.
    pub fn widen_into(&mut self, half: Reg, scalar: Scalar, wide: Reg) -> Result<(), LowerError> {
        match scalar {
            Scalar::Bf16 => {
                let bits = self.out.reg(RegClass::B32);
                self.out
                    .emit("cvt.u32.u16", vec![bits.into(), half.into()])?;
                self.out
                    .emit("shl.b32", vec![bits.into(), bits.into(), imm(16)])?;
                self.out
                    .emit("mov.b32/f.from.r", vec![wide.into(), bits.into()])?;
            }
            Scalar::Fp16 | Scalar::Fp32 | Scalar::I32 | Scalar::U32 | Scalar::Mbarrier => self
                .out
                .emit("cvt.f32.f16", vec![wide.into(), half.into()])?,
        }
        Ok(())
    }

    /// An fp32 value rounded to nearest into a new 16-bit register of
    /// `scalar`.
    pub fn narrow(&mut self, wide: Reg, scalar: Scalar) -> Result<Reg, LowerError> {
        let half = self.out.reg(half_class(scalar));
        let name = match scalar {
            Scalar::Bf16 => "cvt.rn.bf16.f32",
            Scalar::Fp16 | Scalar::Fp32 | Scalar::I32 | Scalar::U32 | Scalar::Mbarrier => {
                "cvt.rn.f16.f32"
            }
        };
        self.out.emit(name, vec![half.into(), wide.into()])?;
        Ok(half)
    }
}

fn half_of(slot: Slot, op: &OperandInfo) -> Result<(Reg, bool), LowerError> {
    match slot {
        Slot::Half { word, high } => Ok((word, high)),
        Slot::Word(_) => Err(LowerError::unsupported(
            op.span,
            format!("the {} is not a 16-bit register operand", op.role),
            "this is a lowering bug",
        )),
    }
}
