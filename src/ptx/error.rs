//! PTX model: the errors of building, instantiating and writing PTX.
//!
//! One enum for the whole stage, each variant naming what the caller did
//! wrong in words a kernel author recognises (the template name, the slot,
//! the register), so the lowering can wrap them into diagnostics unchanged.

use std::fmt;

use super::target::{Arch, Requirement, Sm};

/// A malformed template file: where, and what is wrong.
///
/// Rule: built-in template files never produce one (a test parses them all);
/// template text handed in at run time may.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct TemplateError {
    /// The file name as registered with the catalogue, e.g. `mma.ptxt`.
    pub file: String,
    /// 1-based line of the offending text.
    pub line: usize,
    /// What is wrong there.
    pub message: String,
}

/// Everything that can go wrong in the `ptx` stage.
#[derive(Clone, PartialEq, Debug, thiserror::Error)]
pub enum PtxError {
    /// A target or version string that does not parse.
    #[error("`{text}` is not a valid target: expected {expected}")]
    BadTarget {
        /// What was given.
        text: String,
        /// What would have been accepted.
        expected: &'static str,
    },
    /// The requested architecture lacks an instruction the module uses.
    #[error("instruction `{instruction}` needs {needs}, but the requested target is {requested}")]
    ArchTooLow {
        /// The catalogue name of the first such instruction.
        instruction: String,
        /// What it needs.
        needs: Requirement,
        /// What was asked for.
        requested: Arch,
    },
    /// The module uses an arch-specific instruction (`wgmma`), but the
    /// requested architecture is not that capability's arch-specific target
    /// (`sm_90` instead of `sm_90a`).
    #[error(
        "instruction `{instruction}` exists only on {} (PTX ISA {}), but the requested target is \
         {requested}; request {} instead (its code runs only on compute capability {})",
        .needs.target_name(),
        .needs.ptx,
        .needs.target_name(),
        capability(.needs.sm)
    )]
    ArchSpecific {
        /// The catalogue name of the first such instruction.
        instruction: String,
        /// What it needs (arch-specific).
        needs: Requirement,
        /// What was asked for.
        requested: Arch,
    },
    /// An arch-specific instruction next to one needing another capability:
    /// no target has both (arch-specific code runs on its capability alone).
    #[error(
        "instruction `{first}` needs {first_needs} and runs only on compute capability {}, but \
         `{other}` needs {other_needs}: no target has both",
        capability(.first_needs.sm)
    )]
    ArchSpecificConflict {
        /// The first arch-specific instruction whose capability differs.
        first: String,
        /// What it needs.
        first_needs: Requirement,
        /// The first instruction needing the module's highest capability.
        other: String,
        /// What that one needs.
        other_needs: Requirement,
    },
    /// No catalogue entry of that name.
    #[error("no PTX template named `{name}`{}", nearest_list(.nearest))]
    UnknownTemplate {
        /// The name asked for.
        name: String,
        /// Entries with similar names, best first (may be empty).
        nearest: Vec<String>,
    },
    /// An instantiation with the wrong number of operands.
    #[error("`{template}` takes {expected} operands ({slots}), but {found} were given")]
    OperandCount {
        /// The template's name.
        template: String,
        /// How many slots it has.
        expected: usize,
        /// Its slots, as written in the template (`d:r a:r b:r|imm`).
        slots: String,
        /// How many operands were given.
        found: usize,
    },
    /// An operand that does not fit its slot.
    #[error("operand `{slot}` of `{template}` must be {expected}, but {found} was given")]
    OperandMismatch {
        /// The template's name.
        template: String,
        /// The slot's name.
        slot: String,
        /// The slot's kind, in words.
        expected: String,
        /// The operand given, in words.
        found: String,
    },
    /// A name that is not a PTX identifier we emit (`[A-Za-z_][A-Za-z0-9_]*`).
    #[error(
        "`{name}` is not a valid {what} name: use letters, digits and `_`, not starting with a digit"
    )]
    BadName {
        /// What the name was for (`entry`, `parameter`, `shared array`).
        what: &'static str,
        /// The offending name.
        name: String,
    },
    /// A name of identifier syntax that `ptxas` nonetheless refuses
    /// ([`crate::ptx::identifier::RESERVED`]).
    #[error("`{name}` is a name PTX reserves and cannot be a {what} name")]
    ReservedName {
        /// What the name was for (`entry`, `parameter`, `shared array`).
        what: &'static str,
        /// The offending name.
        name: String,
    },
    /// A name used twice where names must be unique.
    #[error("{what} name `{name}` is already used")]
    DuplicateName {
        /// What the name was for.
        what: &'static str,
        /// The name.
        name: String,
    },
    /// A numeric setting out of range (thread count, shared size, alignment).
    #[error("{what}: {detail}")]
    BadValue {
        /// The setting.
        what: &'static str,
        /// Why the value is rejected.
        detail: String,
    },
    /// A guard whose register is not a predicate.
    #[error("a guard must be a predicate register (%p), not {found}")]
    GuardNotPredicate {
        /// The register given.
        found: String,
    },
    /// A label that an instruction refers to but that was never placed, or
    /// one placed twice.
    #[error("label {label} in entry `{entry}` {problem}")]
    Label {
        /// The entry.
        entry: String,
        /// The label as written.
        label: String,
        /// `is never placed` or `is placed twice`.
        problem: &'static str,
    },
    /// The built-in catalogue failed to parse.
    #[error("PTX template catalogue: {0}")]
    Template(#[from] TemplateError),
    /// The text sink refused a write.
    #[error("writing PTX text failed")]
    Fmt(#[from] fmt::Error),
}

/// `sm_90` → `9.0`, as CUDA writes compute capabilities.
fn capability(sm: Sm) -> String {
    format!("{}.{}", sm.0 / 10, sm.0 % 10)
}

fn nearest_list(nearest: &[String]) -> String {
    if nearest.is_empty() {
        String::new()
    } else {
        format!("; similar: {}", nearest.join(", "))
    }
}
