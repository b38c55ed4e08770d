//! PTX model: one instruction template of the catalogue — an instruction
//! form, its typed operand slots, the target it needs, and its PTX text with
//! `$slot` placeholders — and its instantiation into a model instruction.
//! The template files themselves are read by `template_file`.

use std::fmt;
use std::sync::Arc;

use super::error::PtxError;
use super::module::Instruction;
use super::operand::{AddressBase, Guard, Operand, RegClass, Space};
use super::target::{Requirement, Sm};

/// What one alternative of a slot accepts.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum SlotKind {
    /// A register of the class (`r`, `rd`, `f`, `h`, `rs`, `p`).
    Reg(RegClass),
    /// A brace-enclosed vector of exactly N registers of the class (`r*4`),
    /// 1 ≤ N ≤ [`SlotKind::MAX_VECTOR`].
    Vector(RegClass, usize),
    /// An integer immediate (`imm`).
    Imm,
    /// An fp32 immediate (`fimm`).
    F32Imm,
    /// A label (`label`).
    Label,
    /// A global address: base is a `%rd` register (`gaddr`).
    GlobalAddress,
    /// A shared address: base is a `%r` or `%rd` register holding a shared
    /// window address, or a shared symbol (`saddr`).
    SharedAddress,
    /// A kernel parameter, `[name]` (`paddr`).
    ParamAddress,
    /// A shared symbol used as a value (`ssym`).
    SharedSymbol,
    /// A global variable used as a value: its address in the global state
    /// space (`gsym`).
    GlobalSymbol,
    /// A kernel parameter used as a value: its address in the param state
    /// space (`psym`; a tensor map passed by value).
    ParamSymbol,
}

impl SlotKind {
    /// The most registers a vector slot holds: the fp32 accumulators of
    /// `wgmma.m64n256k16`, 64 × 256 / 128 threads.
    pub const MAX_VECTOR: usize = 128;

    /// The kind spelled `text` in a template file (`r*4`, `gaddr`).
    pub fn parse(text: &str) -> Option<SlotKind> {
        let fixed = match text {
            "imm" => Some(SlotKind::Imm),
            "fimm" => Some(SlotKind::F32Imm),
            "label" => Some(SlotKind::Label),
            "gaddr" => Some(SlotKind::GlobalAddress),
            "saddr" => Some(SlotKind::SharedAddress),
            "paddr" => Some(SlotKind::ParamAddress),
            "ssym" => Some(SlotKind::SharedSymbol),
            "gsym" => Some(SlotKind::GlobalSymbol),
            "psym" => Some(SlotKind::ParamSymbol),
            _ => None,
        };
        if fixed.is_some() {
            return fixed;
        }
        match text.split_once('*') {
            Some((class, count)) => {
                let class = RegClass::from_prefix(class)?;
                let count: usize = count.parse().ok()?;
                (1..=SlotKind::MAX_VECTOR)
                    .contains(&count)
                    .then_some(SlotKind::Vector(class, count))
            }
            None => RegClass::from_prefix(text).map(SlotKind::Reg),
        }
    }

    /// Whether `operand` fits this kind.
    pub fn accepts(self, operand: &Operand) -> bool {
        match (self, operand) {
            (SlotKind::Reg(class), Operand::Reg(reg)) => reg.class == class,
            (SlotKind::Vector(class, count), Operand::Vector(regs)) => {
                regs.len() == count && regs.iter().all(|reg| reg.class == class)
            }
            (SlotKind::Imm, Operand::Imm(_))
            | (SlotKind::F32Imm, Operand::F32Bits(_))
            | (SlotKind::Label, Operand::Label(_)) => true,
            (SlotKind::GlobalAddress, Operand::Address(address)) => {
                matches!(&address.base, AddressBase::Reg(reg) if reg.class == RegClass::B64)
            }
            (SlotKind::SharedAddress, Operand::Address(address)) => match &address.base {
                AddressBase::Reg(reg) => matches!(reg.class, RegClass::B32 | RegClass::B64),
                AddressBase::Symbol(symbol) => symbol.space == Space::Shared,
            },
            (SlotKind::ParamAddress, Operand::Address(address)) => {
                matches!(&address.base, AddressBase::Symbol(symbol) if symbol.space == Space::Param)
                    && address.offset == 0
            }
            (SlotKind::SharedSymbol, Operand::Symbol(symbol)) => symbol.space == Space::Shared,
            (SlotKind::GlobalSymbol, Operand::Symbol(symbol)) => symbol.space == Space::Global,
            (SlotKind::ParamSymbol, Operand::Symbol(symbol)) => symbol.space == Space::Param,
            (
                SlotKind::Reg(_)
                | SlotKind::Vector(..)
                | SlotKind::Imm
                | SlotKind::F32Imm
                | SlotKind::Label
                | SlotKind::GlobalAddress
                | SlotKind::SharedAddress
                | SlotKind::ParamAddress
                | SlotKind::SharedSymbol
                | SlotKind::GlobalSymbol
                | SlotKind::ParamSymbol,
                _,
            ) => false,
        }
    }

    /// Whether an instruction may write an operand of this kind.
    pub fn is_writable(self) -> bool {
        match self {
            SlotKind::Reg(_) | SlotKind::Vector(..) => true,
            SlotKind::Imm
            | SlotKind::F32Imm
            | SlotKind::Label
            | SlotKind::GlobalAddress
            | SlotKind::SharedAddress
            | SlotKind::ParamAddress
            | SlotKind::SharedSymbol
            | SlotKind::GlobalSymbol
            | SlotKind::ParamSymbol => false,
        }
    }
}

/// The template-file spelling (`r*4`, `gaddr`).
impl fmt::Display for SlotKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SlotKind::Reg(class) => f.write_str(class.prefix()),
            SlotKind::Vector(class, count) => write!(f, "{}*{count}", class.prefix()),
            SlotKind::Imm => f.write_str("imm"),
            SlotKind::F32Imm => f.write_str("fimm"),
            SlotKind::Label => f.write_str("label"),
            SlotKind::GlobalAddress => f.write_str("gaddr"),
            SlotKind::SharedAddress => f.write_str("saddr"),
            SlotKind::ParamAddress => f.write_str("paddr"),
            SlotKind::SharedSymbol => f.write_str("ssym"),
            SlotKind::GlobalSymbol => f.write_str("gsym"),
            SlotKind::ParamSymbol => f.write_str("psym"),
        }
    }
}

/// One operand position of a template.
///
/// Rule: `kinds` is non-empty; a written slot has only register kinds.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Slot {
    /// Its name, used as `$name` in the text.
    pub name: String,
    /// What it accepts (any one of).
    pub kinds: Vec<SlotKind>,
    /// Whether the instruction writes it (listed under `writes:`).
    pub written: bool,
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.name)?;
        for (position, kind) in self.kinds.iter().enumerate() {
            if position > 0 {
                f.write_str("|")?;
            }
            kind.fmt(f)?;
        }
        Ok(())
    }
}

/// A piece of a template's text: literal PTX, or a slot's operand.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Piece {
    /// Text copied as is.
    Literal(String),
    /// The operand of the slot at this index.
    Slot(usize),
}

/// One catalogue entry: an instruction form and how to write it.
///
/// Rule: every slot appears in the text, the text ends with `;`, and the
/// name is unique in the catalogue.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Template {
    /// The catalogue name, e.g. `ld.global.v4.f32` or `mov.b32/pack`.
    pub name: String,
    /// The family (template file stem) it comes from.
    pub family: String,
    /// One line saying what it computes, possibly empty.
    pub doc: String,
    /// The lowest target it can be written for.
    pub requirement: Requirement,
    /// Its operands, in instantiation order.
    pub slots: Vec<Slot>,
    /// Its text.
    pub pieces: Vec<Piece>,
    /// SASS opcode mnemonics ptxas is expected to produce for it (`HMMA`);
    /// empty when the choice is ptxas's business. An item `I2F|I2FP` is met
    /// by either mnemonic (GPU generations name some opcodes differently).
    pub sass: Vec<String>,
    /// The capabilities on which `sass` holds; empty means every target from
    /// `requirement` up. (Later GPUs emulate some old forms in software.)
    pub sass_only_on: Vec<Sm>,
    /// Registers per thread ptxas needs for it beyond those its operands
    /// name (`reserves:`; 0 when not stated): with fewer, ptxas refuses
    /// the instruction rather than spilling.
    pub reserves: u32,
    /// The file and 1-based line of its `entry` line.
    pub origin: (String, usize),
}

impl Template {
    /// Checks `operands` against the slots and makes an unguarded
    /// instruction.
    pub fn instantiate(self: &Arc<Self>, operands: Vec<Operand>) -> Result<Instruction, PtxError> {
        self.check(&operands)?;
        Ok(Instruction {
            guard: None,
            template: Arc::clone(self),
            operands,
        })
    }

    /// Like [`Template::instantiate`], executed only under `guard`.
    pub fn instantiate_guarded(
        self: &Arc<Self>,
        guard: Guard,
        operands: Vec<Operand>,
    ) -> Result<Instruction, PtxError> {
        let mut instruction = self.instantiate(operands)?;
        instruction.guard = Some(guard);
        Ok(instruction)
    }

    fn check(&self, operands: &[Operand]) -> Result<(), PtxError> {
        if operands.len() != self.slots.len() {
            return Err(PtxError::OperandCount {
                template: self.name.clone(),
                expected: self.slots.len(),
                slots: self.signature(),
                found: operands.len(),
            });
        }
        for (slot, operand) in self.slots.iter().zip(operands) {
            if !slot.kinds.iter().any(|kind| kind.accepts(operand)) {
                return Err(PtxError::OperandMismatch {
                    template: self.name.clone(),
                    slot: slot.name.clone(),
                    expected: slot
                        .kinds
                        .iter()
                        .map(|kind| kind.to_string())
                        .collect::<Vec<_>>()
                        .join(" or "),
                    found: operand.describe(),
                });
            }
        }
        Ok(())
    }

    /// The slots as written in the template file: `d:r a:r b:r|imm`.
    pub fn signature(&self) -> String {
        let slots: Vec<String> = self.slots.iter().map(Slot::to_string).collect();
        slots.join(" ")
    }

    /// The SASS opcodes expected when assembling for `sm` (empty when none
    /// are, or when `sm` is not one of `sass_only_on`).
    pub fn expected_sass(&self, sm: Sm) -> &[String] {
        if self.sass_only_on.is_empty() || self.sass_only_on.contains(&sm) {
            &self.sass
        } else {
            &[]
        }
    }

    /// Writes the text with `operands` in place of the slots.
    pub fn render(&self, operands: &[Operand], out: &mut impl fmt::Write) -> fmt::Result {
        for piece in &self.pieces {
            match piece {
                Piece::Literal(text) => out.write_str(text)?,
                Piece::Slot(index) => match operands.get(*index) {
                    Some(operand) => write!(out, "{operand}")?,
                    None => return Err(fmt::Error),
                },
            }
        }
        Ok(())
    }
}

/// One template file: a family of related instructions.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Family {
    /// The family name (the file stem).
    pub name: String,
    /// What the family is for.
    pub description: String,
    /// Its templates, in file order after expansion.
    pub templates: Vec<Arc<Template>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_kinds_round_trip_through_their_spelling() {
        for text in [
            "r", "rd", "f", "h", "rs", "p", "r*1", "f*8", "f*64", "f*128", "imm", "fimm", "label",
            "gaddr", "saddr", "paddr", "ssym", "gsym", "psym",
        ] {
            assert_eq!(SlotKind::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(SlotKind::parse("r*0"), None);
        assert_eq!(SlotKind::parse("f*129"), None);
        assert_eq!(SlotKind::parse("q*4"), None);
    }
}
