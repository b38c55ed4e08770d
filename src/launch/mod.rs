//! Launch stage: the host side of running a checked kernel — `ptxgen run`
//! and `ptxgen bench`.
//!
//! - [`DimArg`], [`DimValues`]: `--dim NAME=VALUE`, bound to a kernel's dims.
//! - [`LaunchPlan`]: the requirements checked, grid and block from the
//!   launch groups, every global parameter sized and given a [`Role`]
//!   (filled with random values, or poisoned), the [`Work`] for rates.
//! - [`manifest`]: the same facts as JSON, with the grid, block and sizes
//!   as expressions of the dims, for programs that launch the PTX themselves.
//! - [`RunReport`], [`BenchReport`], [`json_rows`]: the summary lines and
//!   the `--json` rows; [`rotation_sets`]: how many input sets a bench
//!   rotates.
//! - With feature `cuda`: `run_kernel` (fill, poison, launch, read back,
//!   compare with [`crate::reference`]) and `bench_kernel` (warm-up,
//!   CUDA-event timing over rotated input sets).
//! - [`run_kernel_cpu`]: the same run on the CPU executor of the PTX
//!   ([`crate::exec`]), with its findings; no driver needed. `run_file`
//!   takes it with [`Backend::Cpu`] (the default without `cuda`).
//! - [`RunOptions`], [`BenchOptions`], [`select`], [`run_file`],
//!   [`bench_file`]: the subcommands' options, the kernels chosen and
//!   planned, and the whole command over a [`crate::compile::Compiled`].
//!
//! `docs/running.md` records the decisions.

mod command;
mod cpu;
#[cfg(feature = "cuda")]
mod device;
mod dims;
mod fill;
mod manifest;
mod plan;
mod report;

pub use command::{
    Backend, BenchOptions, CommandError, RunOptions, Selected, bench_file, run_file, select,
};
pub use cpu::{CpuRun, CpuRunError, run_kernel_cpu};
#[cfg(feature = "cuda")]
pub use device::{PlannedKernel, RunError, bench_kernel, bench_plans, run_kernel};
pub use dims::{DimArg, DimValues};
pub use fill::{element_type, fill_bytes, host_inputs, poison_flags};
pub use manifest::{
    DEFAULT_DYNAMIC_SHARED_BYTES, MANIFEST_VERSION, MAX_GRID_YZ, PARAM_ALIGN_BYTES, manifest,
};
pub use plan::{
    LaunchPlan, MAX_BLOCK_THREADS, MAX_GRID_BLOCKS, ParamPlan, Role, Source, TensorMapPlan, Work,
};
pub use report::{
    BenchReport, CheckOutcome, MAX_SETS, ROTATION_BYTES, Rate, RunReport, Stats, json_rows,
    rotation_sets,
};

/// Why a kernel cannot be launched as asked. Every message is one line.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum PlanError {
    /// A `--dim` that is not `NAME=VALUE`.
    #[error("`--dim {0}`: expected NAME=VALUE, e.g. `--dim M=4096`")]
    DimSyntax(String),
    /// A `--dim` value out of range.
    #[error(
        "`--dim {name}={text}`: the value must be an integer from 1 to 4294967295 (a .u32 parameter)"
    )]
    DimValue {
        /// The dim.
        name: String,
        /// The value as written.
        text: String,
    },
    /// The same name twice.
    #[error("`--dim {name}` is given twice ({first} and {second})")]
    DuplicateDim {
        /// The dim.
        name: String,
        /// The first value.
        first: u32,
        /// The second value.
        second: u32,
    },
    /// A name no kernel run has.
    #[error("`--dim {name}` names no symbolic dimension of the kernels run ({kernels})")]
    UnknownDim {
        /// The name given.
        name: String,
        /// Each kernel and its dims.
        kernels: String,
    },
    /// Dims without values.
    #[error(
        "kernel `{kernel}` needs `--dim` values for {} (its symbolic dimensions: {})",
        missing.join(", "),
        all.join(", ")
    )]
    MissingDims {
        /// The kernel.
        kernel: String,
        /// The dims not given.
        missing: Vec<String>,
        /// All its dims, in order.
        all: Vec<String>,
    },
    /// A violated launch requirement.
    #[error("{0}")]
    Requirement(String),
    /// A grid, block or buffer CUDA cannot launch or this host cannot hold.
    #[error("{0}")]
    Launch(String),
    /// A size that does not evaluate.
    #[error("{0}")]
    Eval(String),
}
