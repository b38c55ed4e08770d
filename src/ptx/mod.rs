//! The PTX back end's foundation (no stage number: the lowering writes into
//! it): a typed model of a PTX module, its text writer, the instruction
//! catalogue compiled from `ptx-templates/`, and offline validation with
//! NVIDIA's `ptxas`/`nvdisasm`.
//!
//! Flow: the lowering asks an [`EntryBuilder`] for registers and labels and
//! emits catalogue instructions by name; entries go into a [`Module`]; the
//! [`Writer`] turns the module into text, choosing `.version`/`.target` from
//! what the instructions need. [`tools`] assembles that text to check it.

pub mod builder;
pub mod catalogue;
pub mod error;
pub mod identifier;
pub mod module;
pub mod operand;
pub mod target;
pub mod template;
pub mod template_file;
pub mod tools;
pub mod writer;

pub use builder::EntryBuilder;
pub use catalogue::Catalogue;
pub use error::{PtxError, TemplateError};
pub use module::{Entry, GlobalVariable, Instruction, Module, ParamType, Statement};
pub use operand::{Address, Guard, Label, Operand, Reg, RegClass, Space, Symbol, imm};
pub use target::{Arch, PtxVersion, Requirement, Sm, Target, TargetName};
pub use template::{Slot, SlotKind, Template};
pub use writer::Writer;
