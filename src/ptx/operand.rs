//! PTX model: the values instructions name — virtual registers by class,
//! symbols, labels, immediates, vector operands and addresses — and their
//! PTX spelling.
//!
//! Each type's `Display` writes exactly the PTX text (`%rd4`, `[%rd4+16]`,
//! `{%r1,%r2}`, `0f3F800000`), so the writer and error messages agree.

use std::fmt;

/// The class of a virtual register: its PTX prefix and declared type.
///
/// Rule: a register's class fixes its width; instructions whose type is a
/// different type of the same width (`.u32` on a `.b32` register, `.b16` on an
/// `.f16` register) accept it, as PTX allows for bit-size types.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum RegClass {
    /// `%p`, `.pred`: predicates from `setp`, used by guards and `selp`.
    Pred,
    /// `%rs`, `.b16`: 16-bit integers and bf16 values.
    B16,
    /// `%h`, `.f16`: one fp16 value.
    F16,
    /// `%r`, `.b32`: 32-bit integers (`.u32`, `.s32`, `.b32`) and packed pairs
    /// (`.f16x2`, `.bf16x2`).
    B32,
    /// `%rd`, `.b64`: 64-bit integers and addresses.
    B64,
    /// `%f`, `.f32`: fp32 values.
    F32,
}

impl RegClass {
    /// Every class, in the order the writer declares them.
    pub const ALL: [RegClass; 6] = [
        RegClass::Pred,
        RegClass::B16,
        RegClass::F16,
        RegClass::B32,
        RegClass::B64,
        RegClass::F32,
    ];

    /// The register name prefix without `%`; also the class's name in
    /// template files (`r`, `rd`, `f`, `h`, `rs`, `p`).
    pub fn prefix(self) -> &'static str {
        match self {
            RegClass::Pred => "p",
            RegClass::B16 => "rs",
            RegClass::F16 => "h",
            RegClass::B32 => "r",
            RegClass::B64 => "rd",
            RegClass::F32 => "f",
        }
    }

    /// The type in the `.reg` declaration.
    pub fn decl_type(self) -> &'static str {
        match self {
            RegClass::Pred => ".pred",
            RegClass::B16 => ".b16",
            RegClass::F16 => ".f16",
            RegClass::B32 => ".b32",
            RegClass::B64 => ".b64",
            RegClass::F32 => ".f32",
        }
    }

    /// The class whose template name is `prefix`.
    pub fn from_prefix(prefix: &str) -> Option<RegClass> {
        RegClass::ALL
            .into_iter()
            .find(|class| class.prefix() == prefix)
    }

    /// Position in [`RegClass::ALL`], for per-class tables.
    pub fn index(self) -> usize {
        match self {
            RegClass::Pred => 0,
            RegClass::B16 => 1,
            RegClass::F16 => 2,
            RegClass::B32 => 3,
            RegClass::B64 => 4,
            RegClass::F32 => 5,
        }
    }
}

/// A virtual register, e.g. `%rd4`. ptxas allocates the real ones.
///
/// Rule: within an entry, `(class, number)` identifies the register; the
/// builder hands out numbers from 1 upwards per class.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Reg {
    /// Its class.
    pub class: RegClass,
    /// Its number within the class.
    pub number: u32,
}

impl Reg {
    /// The address `[self+offset]`.
    pub fn at(self, offset: i64) -> Address {
        Address {
            base: AddressBase::Reg(self),
            offset,
        }
    }
}

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}{}", self.class.prefix(), self.number)
    }
}

/// The state space a symbol lives in.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Space {
    /// A kernel parameter, read with `ld.param`.
    Param,
    /// A `.shared` array, static or dynamic.
    Shared,
    /// A module-scope `.global` variable (the grid barrier's counter).
    Global,
}

/// A named variable: a kernel parameter, a shared array or a global
/// variable.
///
/// Rule: the name is a valid identifier, unique in its module (checked when
/// the symbol is declared).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Symbol {
    /// The identifier as written in PTX.
    pub name: String,
    /// Where it lives.
    pub space: Space,
}

impl Symbol {
    /// The address `[self+offset]`.
    pub fn at(&self, offset: i64) -> Address {
        Address {
            base: AddressBase::Symbol(self.clone()),
            offset,
        }
    }
}

impl fmt::Display for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// A branch target, written `$L<id>` or `$L<id>_<hint>`.
///
/// Rule: ids are unique within an entry (the builder numbers them); the hint
/// only makes the text readable and holds letters, digits and `_`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Label {
    /// Unique number within the entry.
    pub id: u32,
    /// Readable suffix, possibly empty.
    pub hint: String,
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.hint.is_empty() {
            write!(f, "$L{}", self.id)
        } else {
            write!(f, "$L{}_{}", self.id, self.hint)
        }
    }
}

/// What an address is relative to.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum AddressBase {
    /// A register holding an address (`%rd` for global, `%r` or `%rd` for
    /// shared).
    Reg(Reg),
    /// A named variable.
    Symbol(Symbol),
}

/// A memory operand, `[base+offset]`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Address {
    /// The base.
    pub base: AddressBase,
    /// A byte offset added to the base; written only when non-zero, as
    /// `[%rd1+16]` or `[%rd1+-16]`.
    pub offset: i64,
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        match &self.base {
            AddressBase::Reg(reg) => reg.fmt(f)?,
            AddressBase::Symbol(symbol) => symbol.fmt(f)?,
        }
        // PTX spells a negative displacement `+-8`: the sign belongs to the
        // immediate, the `+` to the address syntax.
        if self.offset != 0 {
            write!(f, "+{}", self.offset)?;
        }
        f.write_str("]")
    }
}

/// One operand of an instruction.
#[derive(Clone, PartialEq, Debug)]
pub enum Operand {
    /// A single register.
    Reg(Reg),
    /// A brace-enclosed vector `{%r1,%r2}` (also of length 1: `{%r1}`).
    Vector(Vec<Reg>),
    /// An integer immediate, written in decimal.
    Imm(i64),
    /// An fp32 immediate given by its bits, written `0fXXXXXXXX` so that the
    /// text is exact.
    F32Bits(u32),
    /// A memory operand.
    Address(Address),
    /// A symbol used as a value (`mov.u32 %r1, tile;` takes its address).
    Symbol(Symbol),
    /// A branch target.
    Label(Label),
}

impl Operand {
    /// The fp32 immediate `value`.
    pub fn f32(value: f32) -> Operand {
        Operand::F32Bits(value.to_bits())
    }

    /// The operand in words, for error messages (`register %f3 (class f)`).
    pub fn describe(&self) -> String {
        match self {
            Operand::Reg(reg) => format!("register {reg} (class {})", reg.class.prefix()),
            Operand::Vector(regs) => describe_vector(regs),
            Operand::Imm(value) => format!("immediate {value}"),
            Operand::F32Bits(_) => format!("fp32 immediate {self}"),
            Operand::Address(address) => match &address.base {
                AddressBase::Reg(reg) => {
                    format!("address {address} (base class {})", reg.class.prefix())
                }
                AddressBase::Symbol(symbol) => {
                    format!("address {address} (base in {:?} space)", symbol.space)
                }
            },
            Operand::Symbol(symbol) => format!("symbol {symbol} ({:?} space)", symbol.space),
            Operand::Label(label) => format!("label {label}"),
        }
    }

    /// The registers this operand mentions, in order.
    pub fn registers(&self) -> Vec<Reg> {
        match self {
            Operand::Reg(reg) => vec![*reg],
            Operand::Vector(regs) => regs.clone(),
            Operand::Address(Address {
                base: AddressBase::Reg(reg),
                ..
            }) => vec![*reg],
            Operand::Address(Address {
                base: AddressBase::Symbol(_),
                ..
            })
            | Operand::Imm(_)
            | Operand::F32Bits(_)
            | Operand::Symbol(_)
            | Operand::Label(_) => Vec::new(),
        }
    }
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Reg(reg) => reg.fmt(f),
            Operand::Vector(regs) => {
                f.write_str("{")?;
                for (position, reg) in regs.iter().enumerate() {
                    if position > 0 {
                        f.write_str(", ")?;
                    }
                    reg.fmt(f)?;
                }
                f.write_str("}")
            }
            Operand::Imm(value) => write!(f, "{value}"),
            Operand::F32Bits(bits) => write!(f, "0f{bits:08X}"),
            Operand::Address(address) => address.fmt(f),
            Operand::Symbol(symbol) => symbol.fmt(f),
            Operand::Label(label) => label.fmt(f),
        }
    }
}

impl From<Reg> for Operand {
    fn from(reg: Reg) -> Self {
        Operand::Reg(reg)
    }
}

impl From<&[Reg]> for Operand {
    fn from(regs: &[Reg]) -> Self {
        Operand::Vector(regs.to_vec())
    }
}

impl From<Vec<Reg>> for Operand {
    fn from(regs: Vec<Reg>) -> Self {
        Operand::Vector(regs)
    }
}

impl From<Address> for Operand {
    fn from(address: Address) -> Self {
        Operand::Address(address)
    }
}

impl From<Symbol> for Operand {
    fn from(symbol: Symbol) -> Self {
        Operand::Symbol(symbol)
    }
}

impl From<&Symbol> for Operand {
    fn from(symbol: &Symbol) -> Self {
        Operand::Symbol(symbol.clone())
    }
}

impl From<Label> for Operand {
    fn from(label: Label) -> Self {
        Operand::Label(label)
    }
}

impl From<&Label> for Operand {
    fn from(label: &Label) -> Self {
        Operand::Label(label.clone())
    }
}

/// The integer immediate `value`.
pub fn imm(value: i64) -> Operand {
    Operand::Imm(value)
}

/// An instruction's guard: `@%p1` executes when the predicate is true,
/// `@!%p1` when it is false.
///
/// Rule: the register is of class [`RegClass::Pred`] (the builder checks).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Guard {
    /// The predicate register.
    pub pred: Reg,
    /// Whether the guard is negated (`@!`).
    pub negated: bool,
}

impl Guard {
    /// `@pred`.
    pub fn when(pred: Reg) -> Guard {
        Guard {
            pred,
            negated: false,
        }
    }

    /// `@!pred`.
    pub fn unless(pred: Reg) -> Guard {
        Guard {
            pred,
            negated: true,
        }
    }
}

impl fmt::Display for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bang = if self.negated { "!" } else { "" };
        write!(f, "@{bang}{}", self.pred)
    }
}

/// `vector {%f1, %f2, %f3} (3 registers of class f)`; a long vector (a
/// wgmma accumulator holds up to 128) shows its first two and last
/// registers, and mixed classes are listed one by one.
fn describe_vector(regs: &[Reg]) -> String {
    const SHOWN_IN_FULL: usize = 8;
    let text = match regs {
        [first, second, .., last] if regs.len() > SHOWN_IN_FULL => {
            format!("{{{first}, {second}, …, {last}}}")
        }
        _ => Operand::Vector(regs.to_vec()).to_string(),
    };
    let classes: Vec<&str> = regs.iter().map(|reg| reg.class.prefix()).collect();
    match classes.first() {
        Some(class) if classes.iter().all(|other| other == class) => {
            format!("vector {text} ({} registers of class {class})", regs.len())
        }
        Some(_) | None => format!("vector {text} (classes {})", classes.join(",")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(class: RegClass, number: u32) -> Reg {
        Reg { class, number }
    }

    #[test]
    fn registers_print_with_their_class_prefix() {
        let printed: Vec<String> = RegClass::ALL
            .into_iter()
            .map(|class| reg(class, 3).to_string())
            .collect();
        assert_eq!(printed, ["%p3", "%rs3", "%h3", "%r3", "%rd3", "%f3"]);
    }

    #[test]
    fn class_prefixes_round_trip() {
        for class in RegClass::ALL {
            assert_eq!(RegClass::from_prefix(class.prefix()), Some(class));
            assert_eq!(RegClass::ALL[class.index()], class);
        }
        assert_eq!(RegClass::from_prefix("q"), None);
    }

    #[test]
    fn addresses_write_offsets_only_when_nonzero() {
        let rd4 = reg(RegClass::B64, 4);
        assert_eq!(rd4.at(16).to_string(), "[%rd4+16]");
        assert_eq!(rd4.at(0).to_string(), "[%rd4]");
        assert_eq!(rd4.at(-8).to_string(), "[%rd4+-8]");
        let tile = Symbol {
            name: "tile".into(),
            space: Space::Shared,
        };
        assert_eq!(tile.at(128).to_string(), "[tile+128]");
    }

    #[test]
    fn long_and_mixed_vectors_are_described_briefly() {
        let accumulators: Vec<Reg> = (0..128).map(|n| reg(RegClass::F32, n)).collect();
        assert_eq!(
            Operand::from(accumulators).describe(),
            "vector {%f0, %f1, …, %f127} (128 registers of class f)"
        );
        let mixed = vec![reg(RegClass::F32, 1), reg(RegClass::B32, 2)];
        assert_eq!(
            Operand::from(mixed).describe(),
            "vector {%f1, %r2} (classes f,r)"
        );
    }

    #[test]
    fn vectors_immediates_and_guards_use_ptx_spelling() {
        let pair = Operand::Vector(vec![reg(RegClass::B32, 1), reg(RegClass::B32, 2)]);
        assert_eq!(pair.to_string(), "{%r1, %r2}");
        assert_eq!(Operand::f32(1.0).to_string(), "0f3F800000");
        assert_eq!(Operand::f32(-0.5).to_string(), "0fBF000000");
        assert_eq!(imm(-3).to_string(), "-3");
        let p1 = reg(RegClass::Pred, 1);
        assert_eq!(Guard::when(p1).to_string(), "@%p1");
        assert_eq!(Guard::unless(p1).to_string(), "@!%p1");
        let label = Label {
            id: 2,
            hint: "loop".into(),
        };
        assert_eq!(label.to_string(), "$L2_loop");
    }
}
