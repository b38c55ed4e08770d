//! Stage 3, lowering: register arrays. An `RF` buffer is a fixed set of
//! virtual registers of its thread: one `%f` (fp32) or `%r` (i32, u32) per
//! 32-bit element, and one `%r` per *pair* of 16-bit elements (slots `2i`
//! and `2i+1` are its low and high half). ptxas allocates the real
//! registers; the array is only ever indexed by compile-time slots.

use std::collections::{BTreeMap, BTreeSet};

use super::emitter::Emitter;
use super::error::LowerError;
use crate::ir::{Buffer, BufferId, Scalar};
use crate::ptx::{Operand, Reg, RegClass};

/// Where one element of a register array lives.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Slot {
    /// A whole 32-bit register.
    Word(Reg),
    /// One half of a 32-bit register holding a pair of 16-bit elements.
    Half {
        /// The register.
        word: Reg,
        /// The upper half (odd slot) or the lower half (even slot).
        high: bool,
    },
}

/// The register class holding one word of `scalar`: `%f` for fp32, `%r`
/// otherwise (16-bit types are packed in pairs).
pub fn word_class(scalar: Scalar) -> RegClass {
    match scalar {
        Scalar::Fp32 => RegClass::F32,
        Scalar::Fp16 | Scalar::Bf16 | Scalar::I32 | Scalar::U32 | Scalar::Mbarrier => RegClass::B32,
    }
}

/// The register class holding a single 16-bit value of `scalar` once
/// unpacked: `%h` for fp16, `%rs` for bf16.
pub fn half_class(scalar: Scalar) -> RegClass {
    match scalar {
        Scalar::Fp16 => RegClass::F16,
        Scalar::Bf16 | Scalar::Fp32 | Scalar::I32 | Scalar::U32 | Scalar::Mbarrier => RegClass::B16,
    }
}

/// The registers of every register array of one kernel, made on first use.
///
/// Rule: an array's registers are allocated once, all together, in the
/// order arrays are first touched; the same slot always gives the same
/// register.
#[derive(Clone, Debug, Default)]
pub struct RegisterFile {
    arrays: BTreeMap<BufferId, Vec<Reg>>,
    /// Words of 16-bit arrays set to zero at the kernel's entry, because a
    /// write of one half keeps the other and so reads the word.
    defined_at_entry: BTreeSet<Reg>,
}

impl RegisterFile {
    /// An empty file.
    pub fn new() -> RegisterFile {
        RegisterFile::default()
    }

    /// The words of array `id`, allocated on first use.
    pub fn words(
        &mut self,
        out: &mut Emitter,
        id: BufferId,
        buffer: &Buffer,
    ) -> Result<&[Reg], LowerError> {
        if let std::collections::btree_map::Entry::Vacant(vacant) = self.arrays.entry(id) {
            let elements = buffer
                .elements
                .as_const()
                .filter(|n| (1..=1 << 16).contains(n))
                .ok_or_else(|| {
                    LowerError::unsupported(
                        buffer.span,
                        format!(
                            "register tensor `%{}` has {} elements; register arrays need a \
                             constant size of 1 to 65536",
                            buffer.name, buffer.elements
                        ),
                        "give register tensors small constant shapes",
                    )
                })?;
            let words = match buffer.ty.scalar.bytes() {
                2 => (elements + 1) / 2,
                _ => elements,
            };
            vacant.insert(out.regs(word_class(buffer.ty.scalar), words as usize));
        }
        Ok(&self.arrays[&id])
    }

    /// Where slot `slot` of array `id` lives.
    pub fn slot(
        &mut self,
        out: &mut Emitter,
        id: BufferId,
        buffer: &Buffer,
        slot: i64,
    ) -> Result<Slot, LowerError> {
        let packed = buffer.ty.scalar.bytes() == 2;
        let words = self.words(out, id, buffer)?;
        let index = if packed { slot.div_euclid(2) } else { slot };
        let word = usize::try_from(index)
            .ok()
            .and_then(|index| words.get(index))
            .copied()
            .ok_or_else(|| {
                LowerError::unsupported(
                    out.span(),
                    format!(
                        "register slot {slot} is outside `%{}`, which has {} elements",
                        buffer.name, buffer.elements
                    ),
                    "index register tensors within their shape",
                )
            })?;
        Ok(if packed {
            Slot::Half {
                word,
                high: slot % 2 == 1,
            }
        } else {
            Slot::Word(word)
        })
    }

    /// Gives packed `word` a defined value (zero) at the kernel's entry,
    /// once: a write of one of its halves keeps the other, so it reads the
    /// word, which must then hold something on every path, even where
    /// nothing wrote it before (the unwritten half reads as zero).
    pub fn define_at_entry(&mut self, out: &mut Emitter, word: Reg) -> Result<(), LowerError> {
        if self.defined_at_entry.insert(word) {
            out.emit_at_entry("mov.b32", vec![word.into(), Operand::Imm(0)])?;
        }
        Ok(())
    }

    /// The register holding the packed pair `pair` (slots `2·pair`,
    /// `2·pair+1`) of a 16-bit array, or element `pair` of a 32-bit one.
    pub fn word(
        &mut self,
        out: &mut Emitter,
        id: BufferId,
        buffer: &Buffer,
        pair: i64,
    ) -> Result<Reg, LowerError> {
        let slot = if buffer.ty.scalar.bytes() == 2 {
            pair * 2
        } else {
            pair
        };
        match self.slot(out, id, buffer, slot)? {
            Slot::Word(reg) | Slot::Half { word: reg, .. } => Ok(reg),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Span;
    use crate::index::prove::Prover;
    use crate::lower::testing::registers;
    use crate::ptx::Catalogue;

    fn emitter() -> Emitter<'static> {
        Emitter::new(
            "k",
            Catalogue::builtin().unwrap(),
            Prover::with_threads(32),
            Span::DUMMY,
        )
        .unwrap()
    }

    #[test]
    fn halves_share_a_word_and_words_are_stable() {
        let mut out = emitter();
        let mut file = RegisterFile::new();
        let halves = registers("a", Scalar::Fp16, 8);
        let floats = registers("c", Scalar::Fp32, 4);
        let lo = file.slot(&mut out, BufferId(0), &halves, 4).unwrap();
        let hi = file.slot(&mut out, BufferId(0), &halves, 5).unwrap();
        let (
            Slot::Half {
                word: a,
                high: false,
            },
            Slot::Half {
                word: b,
                high: true,
            },
        ) = (lo, hi)
        else {
            panic!("16-bit slots are halves: {lo:?} {hi:?}");
        };
        assert_eq!(a, b);
        assert_eq!(a.to_string(), "%r3");
        assert_eq!(file.words(&mut out, BufferId(0), &halves).unwrap().len(), 4);
        let c2 = file.slot(&mut out, BufferId(1), &floats, 2).unwrap();
        assert_eq!(
            c2,
            Slot::Word(Reg {
                class: RegClass::F32,
                number: 3
            })
        );
        // Asking again allocates nothing new.
        assert_eq!(file.slot(&mut out, BufferId(1), &floats, 2).unwrap(), c2);
        assert_eq!(out.reg(RegClass::F32).number, 5);
    }

    #[test]
    fn slots_outside_the_array_are_errors() {
        let mut out = emitter();
        let mut file = RegisterFile::new();
        let halves = registers("a", Scalar::Fp16, 8);
        let error = file.slot(&mut out, BufferId(0), &halves, 8).unwrap_err();
        assert!(error.to_diagnostic().message.contains("slot 8"));
        let odd = registers("b", Scalar::Bf16, 3);
        assert_eq!(file.words(&mut out, BufferId(1), &odd).unwrap().len(), 2);
    }
}
