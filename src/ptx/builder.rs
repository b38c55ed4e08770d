//! PTX model: the builder through which the lowering writes an entry —
//! declares parameters and shared arrays, hands out fresh registers and
//! labels, and appends catalogue instructions.
//!
//! The builder checks what the model's invariants need (valid unique names,
//! sane sizes, predicate guards, labels placed once) so that a finished
//! [`Entry`] always writes as well-formed PTX.

use std::collections::BTreeSet;

use super::catalogue::Catalogue;
use super::error::PtxError;
use super::identifier::check_identifier;
use super::module::{
    DynamicShared, Entry, GlobalVariable, Instruction, Param, ParamType, SharedArray, Statement,
};
use super::operand::{Guard, Label, Operand, Reg, RegClass, Space, Symbol};

/// Default alignment of shared arrays: enough for 16-byte vectors, swizzled
/// 128-byte rows and `ldmatrix`.
pub const DEFAULT_SHARED_ALIGN: u32 = 128;

/// The most static `.shared` bytes an entry may declare; beyond it a kernel
/// must use the dynamic array and opt in at launch.
pub const MAX_STATIC_SHARED_BYTES: u32 = 48 * 1024;

/// Builds one [`Entry`].
///
/// Rule: registers are numbered from 1 per class in the order they are
/// asked for; labels from 1 per entry. Nothing is reordered, so the same
/// calls give the same entry.
pub struct EntryBuilder<'c> {
    catalogue: &'c Catalogue,
    entry: Entry,
    next_register: [u32; RegClass::ALL.len()],
    next_label: u32,
    placed: BTreeSet<u32>,
}

impl EntryBuilder<'static> {
    /// A builder for entry `name` over the built-in catalogue.
    pub fn new(name: &str) -> Result<EntryBuilder<'static>, PtxError> {
        EntryBuilder::with_catalogue(name, Catalogue::builtin()?)
    }
}

impl<'c> EntryBuilder<'c> {
    /// A builder for entry `name` over `catalogue`.
    pub fn with_catalogue(name: &str, catalogue: &'c Catalogue) -> Result<Self, PtxError> {
        check_identifier("entry", name)?;
        Ok(EntryBuilder {
            catalogue,
            entry: Entry {
                name: name.to_string(),
                params: Vec::new(),
                max_threads: None,
                min_blocks_per_sm: None,
                max_registers: None,
                shared: Vec::new(),
                dynamic_shared: None,
                globals: Vec::new(),
                body: Vec::new(),
            },
            next_register: [1; RegClass::ALL.len()],
            next_label: 1,
            placed: BTreeSet::new(),
        })
    }

    /// The catalogue instructions come from.
    pub fn catalogue(&self) -> &'c Catalogue {
        self.catalogue
    }

    fn check_new_name(&self, what: &'static str, name: &str) -> Result<(), PtxError> {
        check_identifier(what, name)?;
        let taken = self
            .entry
            .params
            .iter()
            .map(|param| param.name.as_str())
            .chain(self.entry.shared.iter().map(|array| array.name.as_str()))
            .chain(self.entry.dynamic_shared.iter().map(|d| d.name.as_str()))
            .chain(self.entry.globals.iter().map(|g| g.name.as_str()))
            .chain([self.entry.name.as_str()])
            .any(|taken| taken == name);
        if taken {
            return Err(PtxError::DuplicateName {
                what,
                name: name.to_string(),
            });
        }
        Ok(())
    }

    /// Appends a parameter; read it with `ld.param.u64`/`ld.param.u32` at
    /// `symbol.at(0)`.
    pub fn param(&mut self, name: &str, ty: ParamType) -> Result<Symbol, PtxError> {
        self.check_new_name("parameter", name)?;
        self.entry.params.push(Param {
            name: name.to_string(),
            ty,
        });
        Ok(Symbol {
            name: name.to_string(),
            space: Space::Param,
        })
    }

    /// Declares a static shared array of `bytes` bytes, aligned to `align`
    /// (default [`DEFAULT_SHARED_ALIGN`]).
    pub fn shared_array(
        &mut self,
        name: &str,
        bytes: u32,
        align: Option<u32>,
    ) -> Result<Symbol, PtxError> {
        self.check_new_name("shared array", name)?;
        let align = check_align(align)?;
        let total: u64 = self
            .entry
            .shared
            .iter()
            .map(|a| u64::from(a.bytes))
            .sum::<u64>()
            + u64::from(bytes);
        if bytes == 0 || total > u64::from(MAX_STATIC_SHARED_BYTES) {
            return Err(PtxError::BadValue {
                what: "static shared memory",
                detail: format!(
                    "`{name}` asks for {bytes} bytes, {total} in all; static arrays take 1 to \
                     {MAX_STATIC_SHARED_BYTES} bytes in all (use the dynamic array beyond)"
                ),
            });
        }
        self.entry.shared.push(SharedArray {
            name: name.to_string(),
            bytes,
            align,
        });
        Ok(Symbol {
            name: name.to_string(),
            space: Space::Shared,
        })
    }

    /// Declares a module-scope `.global` variable of `bytes` bytes aligned
    /// to `align`, zero when the module is loaded.
    pub fn global_variable(
        &mut self,
        name: &str,
        bytes: u32,
        align: u32,
    ) -> Result<Symbol, PtxError> {
        self.check_new_name("global variable", name)?;
        let align = check_align(Some(align))?;
        if bytes == 0 {
            return Err(PtxError::BadValue {
                what: "global variable",
                detail: format!("`{name}` has 0 bytes"),
            });
        }
        self.entry.globals.push(GlobalVariable {
            name: name.to_string(),
            bytes,
            align,
        });
        Ok(Symbol {
            name: name.to_string(),
            space: Space::Global,
        })
    }

    /// Declares the entry's dynamic shared array (at most one), of `bytes`
    /// bytes at launch.
    pub fn dynamic_shared(
        &mut self,
        name: &str,
        align: Option<u32>,
        bytes: u32,
    ) -> Result<Symbol, PtxError> {
        if let Some(existing) = &self.entry.dynamic_shared {
            return Err(PtxError::BadValue {
                what: "dynamic shared memory",
                detail: format!("entry already has its dynamic array `{}`", existing.name),
            });
        }
        self.check_new_name("dynamic shared array", name)?;
        let align = check_align(align)?;
        self.entry.dynamic_shared = Some(DynamicShared {
            name: name.to_string(),
            align,
            bytes,
        });
        Ok(Symbol {
            name: name.to_string(),
            space: Space::Shared,
        })
    }

    /// Sets `.maxntid threads, 1, 1`.
    pub fn max_threads(&mut self, threads: u32) -> Result<(), PtxError> {
        if !(1..=1024).contains(&threads) {
            return Err(PtxError::BadValue {
                what: ".maxntid",
                detail: format!("{threads} threads per block; a block has 1 to 1024"),
            });
        }
        self.entry.max_threads = Some(threads);
        Ok(())
    }

    /// Sets `.minnctapersm blocks` (with `.maxntid`, which PTX wants
    /// beside it).
    pub fn min_blocks_per_sm(&mut self, blocks: u32) -> Result<(), PtxError> {
        if blocks == 0 || self.entry.max_threads.is_none() {
            return Err(PtxError::BadValue {
                what: ".minnctapersm",
                detail: format!(
                    "{blocks} blocks per SM; needs at least 1, and `.maxntid` set first"
                ),
            });
        }
        self.entry.min_blocks_per_sm = Some(blocks);
        Ok(())
    }

    /// Sets `.maxnreg registers` (1 to 255 per thread).
    pub fn max_registers(&mut self, registers: u32) -> Result<(), PtxError> {
        if !(1..=255).contains(&registers) {
            return Err(PtxError::BadValue {
                what: ".maxnreg",
                detail: format!("{registers} registers per thread; a thread has 1 to 255"),
            });
        }
        self.entry.max_registers = Some(registers);
        Ok(())
    }

    /// A fresh register of `class`.
    pub fn reg(&mut self, class: RegClass) -> Reg {
        let next = &mut self.next_register[class.index()];
        let reg = Reg {
            class,
            number: *next,
        };
        *next += 1;
        reg
    }

    /// `count` fresh registers of `class`, e.g. an mma accumulator.
    pub fn regs(&mut self, class: RegClass, count: usize) -> Vec<Reg> {
        (0..count).map(|_| self.reg(class)).collect()
    }

    /// A fresh label; `hint` (letters, digits, `_`; others become `_`) only
    /// makes the text readable.
    pub fn label(&mut self, hint: &str) -> Label {
        let hint = hint
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let label = Label {
            id: self.next_label,
            hint,
        };
        self.next_label += 1;
        label
    }

    /// Places `label` before the next statement. Placing one twice is an
    /// error.
    pub fn place(&mut self, label: &Label) -> Result<(), PtxError> {
        if !self.placed.insert(label.id) {
            return Err(PtxError::Label {
                entry: self.entry.name.clone(),
                label: label.to_string(),
                problem: "is placed twice",
            });
        }
        self.entry.body.push(Statement::Label(label.clone()));
        Ok(())
    }

    /// Appends a comment line (several if `text` has newlines).
    pub fn comment(&mut self, text: &str) {
        self.entry.body.push(Statement::Comment(text.to_string()));
    }

    /// Instantiates catalogue entry `name` with `operands` and appends it.
    pub fn emit(&mut self, name: &str, operands: Vec<Operand>) -> Result<(), PtxError> {
        let instruction = self.catalogue.instantiate(name, operands)?;
        self.push(instruction)
    }

    /// Like [`EntryBuilder::emit`], executed only under `guard`.
    pub fn emit_guarded(
        &mut self,
        guard: Guard,
        name: &str,
        operands: Vec<Operand>,
    ) -> Result<(), PtxError> {
        let mut instruction = self.catalogue.instantiate(name, operands)?;
        instruction.guard = Some(guard);
        self.push(instruction)
    }

    /// Appends an instruction made elsewhere (e.g. by
    /// [`Template::instantiate`](super::template::Template::instantiate)).
    pub fn push(&mut self, instruction: Instruction) -> Result<(), PtxError> {
        match instruction.guard {
            Some(guard) if guard.pred.class != RegClass::Pred => {
                return Err(PtxError::GuardNotPredicate {
                    found: guard.pred.to_string(),
                });
            }
            Some(_) | None => {}
        }
        self.entry.body.push(Statement::Instruction(instruction));
        Ok(())
    }

    /// The finished entry. Errors if an instruction refers to a label that
    /// was never placed.
    pub fn finish(self) -> Result<Entry, PtxError> {
        let unplaced = self
            .entry
            .instructions()
            .flat_map(|instruction| &instruction.operands)
            .find_map(|operand| match operand {
                Operand::Label(label) if !self.placed.contains(&label.id) => Some(label.clone()),
                Operand::Label(_)
                | Operand::Reg(_)
                | Operand::Vector(_)
                | Operand::Imm(_)
                | Operand::F32Bits(_)
                | Operand::Address(_)
                | Operand::Symbol(_) => None,
            });
        if let Some(label) = unplaced {
            return Err(PtxError::Label {
                entry: self.entry.name.clone(),
                label: label.to_string(),
                problem: "is never placed",
            });
        }
        Ok(self.entry)
    }
}

fn check_align(align: Option<u32>) -> Result<u32, PtxError> {
    let align = align.unwrap_or(DEFAULT_SHARED_ALIGN);
    if !align.is_power_of_two() || align > 1024 {
        return Err(PtxError::BadValue {
            what: "shared alignment",
            detail: format!("{align} is not a power of two up to 1024"),
        });
    }
    Ok(align)
}
