//! Graphene: a tensor IR whose tensors and thread groups carry CuTe-style
//! hierarchical layouts, compiled directly to PTX.
//!
//! The pipeline runs one way (see `docs/architecture.md`):
//! `syntax` (text → AST) → `check` (AST → typed IR) → `lower` (typed IR → PTX
//! model) → `ptx` (PTX model → text). `layout` is the algebra every stage
//! stands on; `atoms` holds the thread–value layouts of the instructions;
//! `diag` renders errors; `viz` draws layouts for the REPL. `compile` is the
//! one driver that runs the stages in sequence.

pub mod atoms;
pub mod check;
pub mod compile;
pub mod data;
pub mod diag;
pub mod exec;
pub mod index;
pub mod ir;
pub mod launch;
pub mod layout;
pub mod lower;
pub mod ptx;
pub mod reference;
#[cfg(feature = "cuda")]
pub mod runtime;
pub mod syntax;
pub mod tune;
pub mod viz;
pub mod vocab;

/// The index expressions, kept at their old path while callers move to
/// `ir::expr`.
pub use ir::expr;
