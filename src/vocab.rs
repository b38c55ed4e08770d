//! The leaf vocabulary the AST and the typed IR share: scalar types,
//! memories, group kinds, the pointwise and reduction operators, the
//! asynchronous queues — each with the one spelling the language writes
//! and prints. It uses nothing, so `syntax` and `ir` both stand on it and
//! neither needs the other (the AST reuses the IR's enums, as in naga).

use std::fmt;

/// Element types; written case-insensitively, printed lower case.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Scalar {
    /// IEEE half precision.
    Fp16,
    /// bfloat16.
    Bf16,
    /// IEEE single precision.
    Fp32,
    /// 32-bit signed integer.
    I32,
    /// 32-bit unsigned integer.
    U32,
    /// A barrier object of shared memory (`mbarrier`, 8 bytes): no number,
    /// only the operand of `Init<count>`, `Move<tma>`, `mbarrier_arrive`
    /// and `mbarrier_wait` (docs/language.md, "Bulk tensor copies").
    Mbarrier,
}

/// The names of the scalar types as printed, with their variants.
pub const SCALAR_NAMES: [(&str, Scalar); 6] = [
    ("fp16", Scalar::Fp16),
    ("bf16", Scalar::Bf16),
    ("fp32", Scalar::Fp32),
    ("i32", Scalar::I32),
    ("u32", Scalar::U32),
    ("mbarrier", Scalar::Mbarrier),
];

impl Scalar {
    /// Size of one element in bytes.
    pub fn bytes(self) -> u32 {
        match self {
            Scalar::Fp16 | Scalar::Bf16 => 2,
            Scalar::Fp32 | Scalar::I32 | Scalar::U32 => 4,
            Scalar::Mbarrier => 8,
        }
    }

    /// The lower-case name, e.g. `fp16`.
    pub fn name(self) -> &'static str {
        match self {
            Scalar::Fp16 => "fp16",
            Scalar::Bf16 => "bf16",
            Scalar::Fp32 => "fp32",
            Scalar::I32 => "i32",
            Scalar::U32 => "u32",
            Scalar::Mbarrier => "mbarrier",
        }
    }
}

/// Memory spaces, written in upper case.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Memory {
    /// Global memory, `GL`.
    Global,
    /// Shared memory of the block, `SH`.
    Shared,
    /// Registers of one thread, `RF`.
    Registers,
}

/// The names of the memories, with their variants.
pub const MEMORY_NAMES: [(&str, Memory); 3] = [
    ("GL", Memory::Global),
    ("SH", Memory::Shared),
    ("RF", Memory::Registers),
];

impl Memory {
    /// The upper-case name, e.g. `SH`.
    pub fn name(self) -> &'static str {
        match self {
            Memory::Global => "GL",
            Memory::Shared => "SH",
            Memory::Registers => "RF",
        }
    }
}

/// What a thread group enumerates.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum GroupKind {
    /// Threads of one block (`%tid.x`).
    Thread,
    /// Blocks of the grid (`%ctaid.x`).
    Block,
}

impl GroupKind {
    /// `thread` or `block`.
    pub fn name(self) -> &'static str {
        match self {
            GroupKind::Thread => "thread",
            GroupKind::Block => "block",
        }
    }
}

/// Operators of `UnaryPointwise`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum UnaryOp {
    /// `max(x, 0)`.
    Relu,
    /// `e^x`.
    Exp,
    /// `2^x`.
    Exp2,
    /// `1/sqrt(x)`.
    Rsqrt,
    /// `-x`.
    Neg,
    /// `|x|`.
    Abs,
    /// `ln x`.
    Log,
    /// `sqrt(x)`.
    Sqrt,
    /// `1/x`.
    Rcp,
    /// `tanh(x)`.
    Tanh,
    /// `1/(1 + e^-x)`.
    Sigmoid,
    /// GELU, tanh form: `x/2 · (1 + tanh(sqrt(2/pi) · (x + 0.044715 x^3)))`.
    Gelu,
}

impl UnaryOp {
    /// Every operator with its name, in documentation order.
    pub const ALL: [(&'static str, UnaryOp); 12] = [
        ("relu", UnaryOp::Relu),
        ("exp", UnaryOp::Exp),
        ("exp2", UnaryOp::Exp2),
        ("rsqrt", UnaryOp::Rsqrt),
        ("neg", UnaryOp::Neg),
        ("abs", UnaryOp::Abs),
        ("log", UnaryOp::Log),
        ("sqrt", UnaryOp::Sqrt),
        ("rcp", UnaryOp::Rcp),
        ("tanh", UnaryOp::Tanh),
        ("sigmoid", UnaryOp::Sigmoid),
        ("gelu", UnaryOp::Gelu),
    ];

    /// The operator's name.
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Relu => "relu",
            UnaryOp::Exp => "exp",
            UnaryOp::Exp2 => "exp2",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Neg => "neg",
            UnaryOp::Abs => "abs",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rcp => "rcp",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Gelu => "gelu",
        }
    }
}

/// Operators of `BinaryPointwise`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum BinaryOp {
    /// `x + y`.
    Add,
    /// `x - y`.
    Sub,
    /// `x * y`.
    Mul,
    /// `max(x, y)`.
    Max,
    /// `min(x, y)`.
    Min,
    /// `x / y`.
    Div,
}

impl BinaryOp {
    /// Every operator with its name, in documentation order.
    pub const ALL: [(&'static str, BinaryOp); 6] = [
        ("add", BinaryOp::Add),
        ("sub", BinaryOp::Sub),
        ("mul", BinaryOp::Mul),
        ("max", BinaryOp::Max),
        ("min", BinaryOp::Min),
        ("div", BinaryOp::Div),
    ];

    /// The operator's name.
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Max => "max",
            BinaryOp::Min => "min",
            BinaryOp::Div => "div",
        }
    }
}

/// Operators of `TernaryPointwise`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum TernaryOp {
    /// `x * y + z`, rounded once.
    Fma,
}

impl TernaryOp {
    /// Every operator with its name, in documentation order.
    pub const ALL: [(&'static str, TernaryOp); 1] = [("fma", TernaryOp::Fma)];

    /// The operator's name.
    pub fn name(self) -> &'static str {
        match self {
            TernaryOp::Fma => "fma",
        }
    }
}

/// Operators of `Reduction`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ReduceOp {
    /// Sum.
    Add,
    /// Maximum.
    Max,
}

impl ReduceOp {
    /// Every operator with its name.
    pub const ALL: [(&'static str, ReduceOp); 2] = [("add", ReduceOp::Add), ("max", ReduceOp::Max)];

    /// The operator's name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Add => "add",
            ReduceOp::Max => "max",
        }
    }
}

/// Comparisons: integer ones in conditions (written as symbols), and the
/// element comparison of `Select<op>` (written as names, `Select<lt>`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum CompareOp {
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

impl CompareOp {
    /// Every comparison with its name, as `Select<op>` writes it.
    pub const ALL: [(&'static str, CompareOp); 6] = [
        ("eq", CompareOp::Eq),
        ("ne", CompareOp::Ne),
        ("lt", CompareOp::Lt),
        ("le", CompareOp::Le),
        ("gt", CompareOp::Gt),
        ("ge", CompareOp::Ge),
    ];

    /// The comparison's name, as `Select<op>` and PTX's `setp` write it.
    pub fn name(self) -> &'static str {
        match self {
            CompareOp::Eq => "eq",
            CompareOp::Ne => "ne",
            CompareOp::Lt => "lt",
            CompareOp::Le => "le",
            CompareOp::Gt => "gt",
            CompareOp::Ge => "ge",
        }
    }

    /// Whether `x op y` holds.
    pub fn holds(self, x: i64, y: i64) -> bool {
        match self {
            CompareOp::Eq => x == y,
            CompareOp::Ne => x != y,
            CompareOp::Lt => x < y,
            CompareOp::Le => x <= y,
            CompareOp::Gt => x > y,
            CompareOp::Ge => x >= y,
        }
    }

    /// The operator's symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            CompareOp::Eq => "==",
            CompareOp::Ne => "!=",
            CompareOp::Lt => "<",
            CompareOp::Le => "<=",
            CompareOp::Gt => ">",
            CompareOp::Ge => ">=",
        }
    }
}

/// The asynchronous operations a thread issues and later waits for, each
/// kind grouped and counted on its own.
///
/// Rule: `commit` closes the group of the queue's operations issued since the
/// last commit; `wait(N)` returns once at most N of the queue's committed
/// groups are still in flight. The queues do not order each other.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum AsyncQueue {
    /// `Move<async>` copies (`cp.async`): `async_commit`, `async_wait(N)`.
    Copies,
    /// Warpgroup `MatMul<async>` (`wgmma.mma_async`): `mma_commit`,
    /// `mma_wait(N)`.
    Mma,
}

impl AsyncQueue {
    /// Both queues, in keyword order.
    pub const ALL: [AsyncQueue; 2] = [AsyncQueue::Copies, AsyncQueue::Mma];

    /// The keyword that closes a group.
    pub fn commit_keyword(self) -> &'static str {
        match self {
            AsyncQueue::Copies => "async_commit",
            AsyncQueue::Mma => "mma_commit",
        }
    }

    /// The keyword that waits for groups.
    pub fn wait_keyword(self) -> &'static str {
        match self {
            AsyncQueue::Copies => "async_wait",
            AsyncQueue::Mma => "mma_wait",
        }
    }

    /// What the queue's groups hold, in words.
    pub fn groups(self) -> &'static str {
        match self {
            AsyncQueue::Copies => "copy groups",
            AsyncQueue::Mma => "groups of warpgroup matrix multiplies",
        }
    }
}

/// Which threads a barrier waits for.
///
/// Rule: `sync` waits for every thread of the block (`bar.sync 0`);
/// `grid_sync` waits for every thread of every block of the launch, and
/// makes each block's global writes before it visible to every block after
/// it. A kernel holding a `grid_sync` is launched cooperatively: all its
/// blocks must be resident at once (docs/language.md §4).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum BarrierScope {
    /// `sync`: the block.
    Block,
    /// `grid_sync`: the whole grid.
    Grid,
}

impl BarrierScope {
    /// Both scopes, in keyword order.
    pub const ALL: [BarrierScope; 2] = [BarrierScope::Block, BarrierScope::Grid];

    /// The statement's keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            BarrierScope::Block => "sync",
            BarrierScope::Grid => "grid_sync",
        }
    }

    /// Whom it waits for, in words.
    pub fn waits_for(self) -> &'static str {
        match self {
            BarrierScope::Block => "every thread of the block",
            BarrierScope::Grid => "every thread of every block of the launch",
        }
    }
}

/// Each word prints as the language writes it, so a format string can hold
/// it directly (`{scalar}.{memory}`).
macro_rules! display_by_name {
    ($($word:ty => $method:ident),* $(,)?) => {$(
        impl fmt::Display for $word {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.$method())
            }
        }
    )*};
}

display_by_name!(
    Scalar => name,
    Memory => name,
    GroupKind => name,
    UnaryOp => name,
    BinaryOp => name,
    TernaryOp => name,
    ReduceOp => name,
    CompareOp => symbol,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keyword_tables_agree_with_the_printed_names() {
        for (written, scalar) in SCALAR_NAMES {
            assert_eq!(scalar.name(), written);
            assert_eq!(scalar.to_string(), written);
        }
        for (written, memory) in MEMORY_NAMES {
            assert_eq!(memory.name(), written);
        }
        for (written, op) in UnaryOp::ALL {
            assert_eq!(op.name(), written);
        }
        for (written, op) in BinaryOp::ALL {
            assert_eq!(op.name(), written);
        }
        for (written, op) in TernaryOp::ALL {
            assert_eq!(op.name(), written);
        }
        for (written, op) in CompareOp::ALL {
            assert_eq!(op.name(), written);
        }
        for (written, op) in ReduceOp::ALL {
            assert_eq!(op.name(), written);
        }
        assert_eq!(CompareOp::Le.to_string(), "<=");
        assert_eq!(GroupKind::Block.to_string(), "block");
    }

    #[test]
    fn scalar_sizes_are_those_of_ptx() {
        let bytes: Vec<u32> = SCALAR_NAMES.iter().map(|(_, s)| s.bytes()).collect();
        assert_eq!(bytes, [2, 2, 4, 4, 4, 8]);
    }

    #[test]
    fn every_queue_has_its_own_keywords() {
        let [copies, mma] = AsyncQueue::ALL;
        assert_ne!(copies.commit_keyword(), mma.commit_keyword());
        assert_ne!(copies.wait_keyword(), mma.wait_keyword());
        assert!(mma.wait_keyword().ends_with("_wait"));
    }
}
