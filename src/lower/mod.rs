//! Stage 3, lowering: from the checked IR to the PTX model — one `.entry`
//! per kernel, its statements walked (`walk`), its index expressions
//! emitted as loop-invariant-hoisted, common-subexpression-free arithmetic
//! (`int_emit`, `address`), its storage allocated (`shared`, `registers`),
//! and every atomic spec matched against the instruction catalogue (`isel`).
//! `docs/lowering.md` records the decisions. Every question about an index
//! expression goes to the index arithmetic ([`crate::index`]).

pub mod address;
pub mod broadcast;
pub mod emitter;
pub mod error;
pub mod group;
pub mod int_emit;
pub mod isel;
pub mod kernel;
pub mod registers;
pub mod shared;
#[cfg(test)]
pub mod testing;
pub mod views;
pub mod walk;

use std::collections::BTreeSet;
use std::sync::Arc;

pub use error::{Candidate, LowerError, NoMatch, OperandNote, codes};
pub use shared::dynamic_shared_bytes;

use crate::diag::{Diagnostic, Span};
use crate::ir::Program;
use crate::ptx::{Arch, Catalogue, Module};

/// What the caller asks of the lowering.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--arch`: the target; instructions it lacks are not selected, and the
    /// module's `.target` is raised to it. `None`: the lowest target that
    /// has every instruction used.
    pub arch: Option<Arch>,
    /// `--annotate`: each IR statement as a comment above its instructions.
    pub annotate: bool,
    /// The source text the program was checked from: annotations then show
    /// source lines rather than the pretty-printed IR.
    pub source: Option<Arc<str>>,
}

/// Lowers a checked program: one entry per kernel, in order. Collects the
/// errors of every kernel (every atomic spec that matches nothing) rather
/// than stopping at the first.
pub fn lower_program(program: &Program, options: &Options) -> Result<Module, Vec<Diagnostic>> {
    let catalogue = Catalogue::builtin().map_err(|error| {
        vec![
            LowerError::Ptx {
                span: Span::DUMMY,
                error,
            }
            .to_diagnostic(),
        ]
    })?;
    let mut module = Module::new(options.arch);
    let mut errors: Vec<LowerError> = Vec::new();
    let mut taken = BTreeSet::new();
    for kernel in &program.kernels {
        match kernel::lower_kernel(kernel, options, catalogue, &mut taken) {
            Ok(entry) => {
                if let Err(error) = module.add_entry(entry) {
                    errors.push(LowerError::Ptx {
                        span: kernel.span,
                        error,
                    });
                }
            }
            Err(kernel_errors) => errors.extend(kernel_errors),
        }
    }
    if errors.is_empty() {
        if let Err(error) = module.target() {
            errors.push(LowerError::Ptx {
                span: program.kernels.first().map_or(Span::DUMMY, |k| k.span),
                error,
            });
        }
    }
    if errors.is_empty() {
        Ok(module)
    } else {
        Err(errors.iter().map(LowerError::to_diagnostic).collect())
    }
}
#[cfg(test)]
mod placement_tests;
#[cfg(test)]
mod tests;
