//! The CPU executor of emitted PTX: runs a kernel's PTX text on the host,
//! thread by thread with each warp's lanes in step, and reports what a GPU
//! cannot — accesses outside their allocation, reads of registers or
//! shared memory nothing wrote, races on shared memory between barriers,
//! asynchronous results (`cp.async`, `cp.async.bulk.tensor`, `wgmma`) read
//! before their wait, mbarriers misused or deadlocked — and the
//! bank-conflict degree of every shared-memory instruction.
//!
//! - [`parse`]: PTX text → entries (flat instruction lists).
//! - [`decode`]: each opcode → the operation, or an error naming it.
//! - [`machine`]: global and shared memory, shadow state, findings.
//! - `interp`: blocks, warps, lanes, barriers; `ops`: instruction families.
//! - [`fragments`]: which lane holds which element of the warp-wide
//!   instructions (ldmatrix, mma, wgmma), read off the atoms table.
//!
//! `docs/running.md` ("The CPU executor") records the decisions.

pub mod decode;
pub mod fragments;
mod interp;
pub mod machine;
mod ops;
pub mod parse;
#[cfg(test)]
mod tests;

pub use machine::{Finding, FindingKind};

/// A kernel argument, in parameter order.
#[derive(Clone, PartialEq, Debug)]
pub enum Arg {
    /// A global buffer (its initial bytes); the parameter gets its address.
    Buffer(Vec<u8>),
    /// A 32-bit scalar.
    U32(u32),
    /// A tensor map passed by value (a 128-byte `.param`), in the
    /// executor's own encoding of what the driver would be given.
    TensorMap(TensorMapArg),
}

/// What a tensor map describes (`launch::TensorMapPlan`, the buffer named
/// by its index among the [`Arg::Buffer`]s).
///
/// Rule: as `launch::TensorMapPlan`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TensorMapArg {
    /// Index of the global buffer among the `Arg::Buffer` arguments.
    pub buffer: usize,
    /// Bytes per element.
    pub element_bytes: u32,
    /// Elements per dim, innermost first.
    pub extents: Vec<u64>,
    /// Bytes between consecutive indices of dims 1, 2, ….
    pub strides_bytes: Vec<u64>,
    /// The box, elements per dim, innermost first.
    pub boxes: Vec<u32>,
    /// The shared-memory swizzle's span in bytes (0: none).
    pub swizzle_bytes: u32,
}

/// The bank-conflict degree of one shared-memory instruction: the most
/// distinct 4-byte words any bank served in one phase of one warp's access
/// (1: conflict-free).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct BankReport {
    /// The PTX line.
    pub line: usize,
    /// The instruction.
    pub instruction: String,
    /// The `.gph` line, from `--annotate` comments.
    pub source: Option<String>,
    /// The worst degree over every execution.
    pub worst: u32,
    /// Warp executions measured.
    pub executions: u64,
}

/// What a run produced and found.
#[derive(Clone, Debug)]
pub struct ExecReport {
    /// Each buffer argument's bytes after the run, in argument order.
    pub outputs: Vec<Vec<u8>>,
    /// The first finding of each kind at each instruction.
    pub findings: Vec<Finding>,
    /// How many findings there were in all.
    pub finding_total: usize,
    /// Every shared-memory instruction that ran, in PTX order.
    pub banks: Vec<BankReport>,
    /// Warp instructions executed.
    pub warp_instructions: u64,
}

/// Why a kernel could not be executed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum ExecError {
    /// PTX the parser does not read.
    #[error("PTX line {line}: {message}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// An instruction the executor does not implement.
    #[error("PTX line {line}: the CPU executor does not know the instruction `{opcode}`")]
    Unknown {
        /// The opcode as written.
        opcode: String,
        /// 1-based line.
        line: usize,
    },
    /// Operands the instruction cannot take.
    #[error("PTX line {line}: `{text}`: {message}")]
    Operands {
        /// 1-based line.
        line: usize,
        /// The instruction.
        text: String,
        /// What is wrong.
        message: String,
    },
    /// No `.entry` of that name.
    #[error("no kernel `{kernel}` in the PTX (it has: {})", available.join(", "))]
    NoKernel {
        /// The name asked for.
        kernel: String,
        /// The entries there are.
        available: Vec<String>,
    },
    /// Arguments that do not match the parameters.
    #[error("kernel `{kernel}`: {message}")]
    Arguments {
        /// The kernel.
        kernel: String,
        /// What is wrong.
        message: String,
    },
    /// A warp-wide instruction some of whose lanes were elsewhere.
    #[error("PTX line {line}: `{text}`: {message}")]
    Divergent {
        /// 1-based line.
        line: usize,
        /// The instruction.
        text: String,
        /// Which lanes.
        message: String,
    },
    /// The run went on longer than the step limit (a loop that never ends?).
    #[error("kernel `{kernel}` ran more than {limit} warp instructions in block {block}")]
    StepLimit {
        /// The kernel.
        kernel: String,
        /// The block.
        block: u32,
        /// The limit.
        limit: u64,
    },
    /// Every thread still running waits for something no thread will do:
    /// blocks polling memory that no block writes any more (a grid barrier
    /// some block never reaches), or a block's threads spinning on
    /// mbarrier phases nothing will complete.
    #[error("kernel `{kernel}` deadlocks: blocks {blocks} {waiting}")]
    Deadlock {
        /// The kernel.
        kernel: String,
        /// The blocks still waiting.
        blocks: String,
        /// What they wait for, and where.
        waiting: String,
    },
}

/// The launch shape of a run.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct LaunchShape {
    /// Blocks (1-D).
    pub grid: u32,
    /// Threads per block (1-D).
    pub block: u32,
    /// Dynamic shared memory per block, bytes.
    pub dynamic_shared: u32,
}

/// Runs `kernel` of the PTX `ptx` on the CPU over `grid` blocks of `block`
/// threads with `dynamic_shared` bytes of dynamic shared memory; `args` in
/// parameter order. Blocks run one after another.
pub fn run_kernel(
    ptx: &str,
    kernel: &str,
    grid: u32,
    block: u32,
    dynamic_shared: u32,
    args: &[Arg],
) -> Result<ExecReport, ExecError> {
    let entries = parse::parse_module(ptx)?;
    let entry = entries
        .iter()
        .find(|e| e.name == kernel)
        .ok_or_else(|| ExecError::NoKernel {
            kernel: kernel.to_string(),
            available: entries.iter().map(|e| e.name.clone()).collect(),
        })?;
    let shape = LaunchShape {
        grid,
        block,
        dynamic_shared,
    };
    interp::run(entry, shape, args)
}

/// The opcodes of `ptx` the executor does not know, each with its line
/// (empty: every instruction runs).
pub fn unknown_instructions(ptx: &str) -> Result<Vec<ExecError>, ExecError> {
    let entries = parse::parse_module(ptx)?;
    Ok(entries
        .iter()
        .flat_map(|e| e.body.iter())
        .filter_map(|i| decode::decode(i).err())
        .collect())
}
