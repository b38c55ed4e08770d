//! PTX model: a module — entries with their parameters, shared arrays and
//! bodies of instructions, labels and comments — before it becomes text.
//!
//! Instructions exist only as instantiated catalogue templates, so every
//! instruction in a module carries the target it needs; the module's
//! `.version`/`.target` is computed from them (see [`Module::target`]).

use std::sync::Arc;

use super::error::PtxError;
use super::operand::{Guard, Label, Operand, Reg, RegClass};
use super::target::{Arch, Requirement, Target, raise_for_shared, resolve_target};
use super::template::Template;

/// The type of a kernel parameter (the kernel ABI uses only these two).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ParamType {
    /// `.u64`: a global address.
    U64,
    /// `.u32`: an integer, e.g. a symbolic dimension.
    U32,
    /// `.align 64 .b8 NAME[128]`: a tensor map (TMA descriptor) passed by
    /// value, read in place by the copies (a grid constant).
    TensorMap,
}

impl ParamType {
    /// The PTX type spelling, before the name.
    pub fn ptx(self) -> &'static str {
        match self {
            ParamType::U64 => ".u64",
            ParamType::U32 => ".u32",
            ParamType::TensorMap => ".align 64 .b8",
        }
    }

    /// What follows the name: an array's extent.
    pub fn suffix(self) -> &'static str {
        match self {
            ParamType::U64 | ParamType::U32 => "",
            ParamType::TensorMap => "[128]",
        }
    }
}

/// A kernel parameter, in declaration order.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Param {
    /// Its identifier.
    pub name: String,
    /// Its type.
    pub ty: ParamType,
}

/// A statically sized `.shared` array declared inside an entry.
///
/// Rule: `align` is a power of two; `bytes > 0`; the entry's static arrays
/// total at most 48 KiB (larger tiles go to the dynamic array).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SharedArray {
    /// Its identifier.
    pub name: String,
    /// Size in bytes.
    pub bytes: u32,
    /// Alignment in bytes (128 unless asked otherwise).
    pub align: u32,
}

/// A `.global` variable an entry uses, declared at module scope (PTX
/// allows `.global` only there), zero when the module is loaded.
///
/// Rule: `align` is a power of two; `bytes > 0`; its name is unique in the
/// module.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GlobalVariable {
    /// Its identifier.
    pub name: String,
    /// Size in bytes.
    pub bytes: u32,
    /// Alignment in bytes.
    pub align: u32,
}

/// The `.extern .shared` array through which an entry reaches the dynamic
/// shared memory given at launch.
///
/// Rule: declared at module scope (PTX allows `.extern` only there); its name
/// is unique in the module.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct DynamicShared {
    /// Its identifier.
    pub name: String,
    /// Alignment in bytes.
    pub align: u32,
    /// Bytes a launch must pass for it (the PTX declares it unsized).
    pub bytes: u32,
}

/// One instantiated catalogue template, optionally guarded.
///
/// Rule: `operands` fit `template.slots` (checked at instantiation; the
/// fields are public for reading, build instructions through the catalogue).
#[derive(Clone, PartialEq, Debug)]
pub struct Instruction {
    /// `@%p` / `@!%p`, if any.
    pub guard: Option<Guard>,
    /// The catalogue entry it instantiates.
    pub template: Arc<Template>,
    /// Its operands, one per slot.
    pub operands: Vec<Operand>,
}

impl Instruction {
    /// The catalogue name of its template.
    pub fn name(&self) -> &str {
        &self.template.name
    }

    /// The target it needs.
    pub fn requirement(&self) -> Requirement {
        self.template.requirement
    }

    /// Every register it mentions, guard first.
    pub fn registers(&self) -> Vec<Reg> {
        let mut regs: Vec<Reg> = self.guard.iter().map(|guard| guard.pred).collect();
        regs.extend(self.operands.iter().flat_map(Operand::registers));
        regs
    }

    /// A lower bound on the 32-bit registers per thread ptxas needs to
    /// assemble it: the distinct registers it names (a 64-bit one counts
    /// twice, predicates not at all: they have their own file), plus what
    /// its template [reserves](super::Template::reserves).
    pub fn registers_needed(&self) -> u32 {
        let mut distinct = self.registers();
        distinct.sort_by_key(|reg| (reg.class.index(), reg.number));
        distinct.dedup();
        let named: u32 = distinct
            .iter()
            .map(|reg| match reg.class {
                RegClass::Pred => 0,
                RegClass::B16 | RegClass::F16 | RegClass::B32 | RegClass::F32 => 1,
                RegClass::B64 => 2,
            })
            .sum();
        named + self.template.reserves
    }

    /// The registers it writes (operands of written slots).
    pub fn defs(&self) -> Vec<Reg> {
        self.template
            .slots
            .iter()
            .zip(&self.operands)
            .filter(|(slot, _)| slot.written)
            .flat_map(|(_, operand)| operand.registers())
            .collect()
    }
}

/// One line of an entry's body.
#[derive(Clone, PartialEq, Debug)]
pub enum Statement {
    /// An instruction.
    Instruction(Instruction),
    /// A label placed before the next statement.
    Label(Label),
    /// A comment (one `//` line per line of text), for `--annotate`.
    Comment(String),
}

/// A kernel: `.visible .entry name(params) .maxntid [.minnctapersm]
/// [.maxnreg] { body }`.
///
/// Rule: names of parameters and shared arrays are unique within the entry,
/// every label branched to is placed exactly once (the builder checks both).
#[derive(Clone, PartialEq, Debug)]
pub struct Entry {
    /// The kernel's name.
    pub name: String,
    /// Its parameters, in order.
    pub params: Vec<Param>,
    /// `.maxntid N, 1, 1` when known (the launch is one-dimensional).
    pub max_threads: Option<u32>,
    /// `.minnctapersm N`: blocks the assembler should fit on one SM at once
    /// (it limits registers per thread to make room). Written after
    /// `.maxntid`, which PTX wants with it.
    pub min_blocks_per_sm: Option<u32>,
    /// `.maxnreg N`: registers per thread at most.
    pub max_registers: Option<u32>,
    /// Static shared arrays, in declaration order.
    pub shared: Vec<SharedArray>,
    /// The dynamic shared array, if the entry uses one.
    pub dynamic_shared: Option<DynamicShared>,
    /// The module-scope `.global` variables it uses.
    pub globals: Vec<GlobalVariable>,
    /// The body.
    pub body: Vec<Statement>,
}

impl Entry {
    /// The instructions of the body, in order.
    pub fn instructions(&self) -> impl Iterator<Item = &Instruction> {
        self.body.iter().filter_map(|statement| match statement {
            Statement::Instruction(instruction) => Some(instruction),
            Statement::Label(_) | Statement::Comment(_) => None,
        })
    }

    /// Shared memory one block of it uses: its static arrays and its
    /// dynamic one.
    pub fn shared_bytes(&self) -> u64 {
        let fixed: u64 = self.shared.iter().map(|array| u64::from(array.bytes)).sum();
        fixed
            + self
                .dynamic_shared
                .as_ref()
                .map_or(0, |d| u64::from(d.bytes))
    }

    /// The instruction needing the most registers per thread, with that
    /// number ([`Instruction::registers_needed`]); `None` for an empty body.
    pub fn register_floor(&self) -> Option<(&Instruction, u32)> {
        self.instructions()
            .map(|instruction| (instruction, instruction.registers_needed()))
            .max_by_key(|(_, needed)| *needed)
    }

    /// For each register class, one more than the highest register number
    /// used (0 when the class is unused): the `N` of `.reg .b32 %r<N>;`.
    pub fn register_counts(&self) -> [u32; RegClass::ALL.len()] {
        let mut counts = [0; RegClass::ALL.len()];
        for reg in self.instructions().flat_map(Instruction::registers) {
            let count = &mut counts[reg.class.index()];
            *count = (*count).max(reg.number + 1);
        }
        counts
    }
}

/// A PTX module: entries plus the architecture the caller asked for.
#[derive(Clone, PartialEq, Debug, Default)]
pub struct Module {
    /// `--arch`, if given: the target is raised to it, and an instruction
    /// needing more is an error.
    pub requested: Option<Arch>,
    /// Where the module comes from, one comment line each at the top of
    /// the text (the source file, the compiler and its options).
    pub provenance: Vec<String>,
    /// The kernels, in order.
    pub entries: Vec<Entry>,
}

impl Module {
    /// An empty module for `requested` (or the lowest target that fits).
    pub fn new(requested: Option<Arch>) -> Module {
        Module {
            requested,
            provenance: Vec::new(),
            entries: Vec::new(),
        }
    }

    /// Adds an entry; its name and its dynamic shared array's name must be
    /// new to the module (both live at module scope).
    pub fn add_entry(&mut self, entry: Entry) -> Result<(), PtxError> {
        let mut taken = self.module_scope_names();
        if taken.contains(&entry.name.as_str()) {
            return Err(PtxError::DuplicateName {
                what: "entry",
                name: entry.name.clone(),
            });
        }
        taken.push(&entry.name);
        let clash = entry
            .dynamic_shared
            .as_ref()
            .filter(|dynamic| taken.contains(&dynamic.name.as_str()));
        if let Some(dynamic) = clash {
            return Err(PtxError::DuplicateName {
                what: "dynamic shared array",
                name: dynamic.name.clone(),
            });
        }
        if let Some(global) = entry
            .globals
            .iter()
            .find(|global| taken.contains(&global.name.as_str()))
        {
            return Err(PtxError::DuplicateName {
                what: "global variable",
                name: global.name.clone(),
            });
        }
        self.entries.push(entry);
        Ok(())
    }

    fn module_scope_names(&self) -> Vec<&str> {
        let mut names = Vec::new();
        for entry in &self.entries {
            names.push(entry.name.as_str());
            names.extend(entry.dynamic_shared.iter().map(|d| d.name.as_str()));
            names.extend(entry.globals.iter().map(|g| g.name.as_str()));
        }
        names
    }

    /// The `.version`/`.target`: the lowest that every instruction used
    /// allows, raised to the requested architecture. Errors, naming the
    /// instruction, when the request is below one of them.
    /// Why the module has its target, in words: the request, the
    /// instructions' needs, or the shared memory that raised it. (No
    /// instruction is named: the header must not read as code.)
    pub fn target_reason(&self) -> Result<String, PtxError> {
        let target = self.target()?;
        if let Some(arch) = self.requested {
            return Ok(format!("requested with --arch {}", arch.name()));
        }
        let requirements = self
            .entries
            .iter()
            .flat_map(Entry::instructions)
            .map(|instruction| (instruction.name(), instruction.requirement()));
        let instructions = resolve_target(requirements, None)?;
        Ok(if target.sm > instructions.sm {
            let shared = self
                .entries
                .iter()
                .map(Entry::shared_bytes)
                .max()
                .unwrap_or(0);
            format!(
                "raised from {} to hold {shared} bytes of shared memory",
                instructions.name()
            )
        } else if instructions.sm > Requirement::FLOOR.sm {
            "the lowest requestable target with every instruction used".to_string()
        } else {
            "the lowest target this compiler writes".to_string()
        })
    }

    pub fn target(&self) -> Result<Target, PtxError> {
        let requirements = self
            .entries
            .iter()
            .flat_map(Entry::instructions)
            .map(|instruction| (instruction.name(), instruction.requirement()));
        let shared = self.entries.iter().map(Entry::shared_bytes).max();
        let target = resolve_target(requirements, self.requested)?;
        Ok(match (self.requested, shared) {
            (None, Some(bytes)) => raise_for_shared(target, bytes),
            (Some(_), _) | (None, None) => target,
        })
    }
}
