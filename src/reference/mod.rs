//! Reference stage (no GPU needed): the CPU evaluation of a kernel's
//! meaning, for `ptxgen run --check` and for tests.
//!
//! A kernel means what its outermost spec's contract says
//! (docs/language.md §5): `Move` copies, `MatMul` accumulates `C + A·B`,
//! pointwise kinds apply their operation, `Reduction` folds modes, `Init`
//! fills. The reference evaluates that contract in f64 on the host copies
//! of the kernel's global tensors, then rounds each value into the output's
//! element type, which is what a correctly rounding kernel stores.
//!
//! - [`Contract::of`]: the outermost spec with the dims bound — its kind,
//!   its operands as [`ResolvedView`]s, the MatMul problem size.
//! - [`Contract::evaluate_outputs`]: the expected values of each output
//!   ([`Expected`]).
//! - [`compare`]: the GPU's output against them ([`Comparison`]: max abs
//!   error, ‖out − ref‖/‖ref‖, unwritten and NaN counts, the verdict).
//! - [`gemm_accumulate`]: the dense f64 GEMM underneath `MatMul`.
//!
//! `docs/running.md` records the decisions: element pairing, the matrix
//! reading of multi-level operands, tolerances, input domains.

mod compare;
mod contract;
mod evaluate;
mod gemm;
mod pointwise;
mod view;

pub use compare::{Comparison, Worst, compare};
pub use contract::{Contract, ContractKind, InputDomain, MatMulShape, Step};
pub use evaluate::{Expected, Tolerance, round_to, unit_roundoff};
pub use gemm::gemm_accumulate;
pub use pointwise::{approximate_bound, binary, select, ternary, unary};
pub use view::{FlatIndex, Leaf, Offsets, ResolvedView, gather};

use crate::expr::EvalError;
use crate::ir::Memory;

/// Why a kernel's contract cannot be evaluated. Every message is one line.
#[derive(Clone, PartialEq, Debug, thiserror::Error)]
pub enum ReferenceError {
    /// The outermost spec is the generic `Spec`.
    #[error(
        "kernel `{kernel}` has no contract to check: its outermost spec is the generic `Spec` \
         and it has no `contract {{ … }}` block (docs/language.md, \"Contracts\")"
    )]
    NoContract {
        /// The kernel.
        kernel: String,
    },
    /// A built-in kind whose contract has no whole-tensor reading.
    #[error("kernel `{kernel}`: {detail}")]
    Unsupported {
        /// The kernel.
        kernel: String,
        /// What and why.
        detail: String,
    },
    /// An operand the host cannot fill or read back.
    #[error(
        "{operand} is a {} tensor: only global (GL) tensors are filled and read back by the host",
        memory.name()
    )]
    NotGlobal {
        /// `%name`.
        operand: String,
        /// Where it lives.
        memory: Memory,
    },
    /// An operand whose view moves with the thread, block or a loop.
    #[error(
        "{operand} depends on `{variable}`: the outermost spec's operands must be whole tensors"
    )]
    PerThread {
        /// `%name`.
        operand: String,
        /// The variable, e.g. `tid`.
        variable: String,
    },
    /// An extent, stride or offset that does not evaluate.
    #[error("{operand}: {error}")]
    Eval {
        /// `%name`.
        operand: String,
        /// What failed.
        error: EvalError,
    },
    /// Values for the dims that do not fit the kernel.
    #[error("{0}")]
    Dims(String),
    /// Operand shapes that do not fit the contract.
    #[error("{0}")]
    Shape(String),
    /// A view reaching past its buffer.
    #[error("{operand}: offset {offset} is outside its buffer of {elements} elements")]
    OutOfBounds {
        /// `%name`.
        operand: String,
        /// The offending offset.
        offset: i64,
        /// The buffer's length.
        elements: usize,
    },
    /// Host data that does not match the kernel's parameters.
    #[error("{0}")]
    Input(String),
}
