//! Stage 2 → 3 interface: the checked program.
//!
//! `check` produces it from the AST; `lower`, `reference` and the REPL
//! consume it. Every name is resolved, every view knows its buffer, its base
//! offset (an [`Expr`] over thread/block ids, loop variables and symbolic
//! dims) and its full type. Nothing here refers back to the AST except spans.
//! Only the checker constructs a [`Program`] (its fields are public for the
//! consumers and for tests that build IR by hand). Its index expressions
//! are [`expr`]; its text is [`print`](mod@print).

pub mod expr;
pub mod print;

pub use crate::diag::Span;
use crate::layout::{Swizzle, Tuple};
pub use crate::vocab::{
    AsyncQueue, BarrierScope, BinaryOp, CompareOp, GroupKind, Memory, ReduceOp, Scalar, TernaryOp,
    UnaryOp,
};
use expr::Expr;

/// A checked `.gph` file.
#[derive(Clone, PartialEq, Debug)]
pub struct Program {
    /// The kernels, in source order.
    pub kernels: Vec<Kernel>,
}

/// A checked kernel: its ABI, its storage and its outermost spec.
///
/// Rule: `Var::Dim(i)` in any expression of this kernel names `dims[i]`,
/// `Var::Loop(i)` names `loops[i]`; `params` lists the `GL` buffers in ABI
/// order (docs/language.md §6).
#[derive(Clone, PartialEq, Debug)]
pub struct Kernel {
    /// The kernel's name (the PTX entry name).
    pub name: String,
    /// The `kernel NAME { … }` header (or the whole file for an implicit kernel).
    pub span: Span,
    /// Symbolic dimensions, in order of first appearance: `.u32` parameters.
    pub dims: Vec<NamedSpan>,
    /// Loop variables, in source order.
    pub loops: Vec<NamedSpan>,
    /// Every tensor's storage: parameters, shared allocations, register arrays.
    pub buffers: Vec<Buffer>,
    /// The `GL` parameter buffers in ABI order (indices into `buffers`).
    pub params: Vec<BufferId>,
    /// What a launcher must check about the dims before launching.
    pub requirements: Vec<Requirement>,
    /// The conditions of the kernel's specialized version (`specialize`):
    /// all `Divisible`. Rule: empty, or the lowering emits the body twice,
    /// once knowing them, taken when they all hold at run time, and once
    /// without.
    pub specializations: Vec<Requirement>,
    /// The outermost block group: the grid is its size, one-dimensional.
    pub grid: GroupType,
    /// The outermost thread group: the block is its size, one-dimensional.
    pub block: GroupType,
    /// What the kernel asks of the assembler for occupancy.
    pub occupancy: Occupancy,
    /// The outermost spec: its contract is the kernel's meaning, its body the
    /// implementation.
    pub root: SpecStmt,
    /// The written contract of a fused kernel (`contract { … }`), whose
    /// outermost spec is the generic `Spec`.
    pub contract: Option<Contract>,
    /// The tensor maps its `Move<tma>` copies read through, in the order of
    /// their 128-byte `.param`s (after the dims' `.u32`s).
    pub tensor_maps: Vec<TensorMap>,
}

/// A tensor map (the Tensor Memory Accelerator's descriptor) of one `GL`
/// parameter: the whole tensor as the hardware sees it, and the box one
/// `Move<tma>` copies (docs/language.md, "Bulk tensor copies").
///
/// Rule: `dims[0]` is the tensor's stride-1 mode; every other stride, in
/// bytes, is a multiple of 16 (a launch requirement); `boxes[i]` ≤ 256
/// elements, `boxes[0]` · element bytes a multiple of 16 and, swizzled, at
/// most the swizzle's span. The box lands in shared memory in the order of
/// `dims`, innermost first, under `swizzle`; elements past the tensor's
/// extents land as zero and count toward the bytes the barrier expects.
#[derive(Clone, PartialEq, Debug)]
pub struct TensorMap {
    /// The `GL` parameter it describes.
    pub tensor: BufferId,
    /// The tensor's modes in the map's order, innermost first.
    pub dims: Vec<MapDim>,
    /// The box: elements per map dim, innermost first.
    pub boxes: Vec<u32>,
    /// How the box's 16-byte chunks are permuted in shared memory.
    pub swizzle: TmaSwizzle,
}

/// One mode of a tensor map.
#[derive(Clone, PartialEq, Debug)]
pub struct MapDim {
    /// Which top-level mode of the tensor's (one-level) type.
    pub mode: usize,
    /// Its extent, over dims.
    pub extent: Expr,
    /// Its stride in elements, over dims (1 for the innermost).
    pub stride: Expr,
}

/// A tensor map's shared-memory swizzle: the 16-byte chunk index XORed with
/// the address bits above the span (CuTe's `Swizzle<B, 4, 3>` on bytes).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TmaSwizzle {
    /// Stored as the box is.
    None,
    /// 32-byte span (`Swizzle<1, 4, 3>` on bytes).
    Span32,
    /// 64-byte span (`Swizzle<2, 4, 3>` on bytes).
    Span64,
    /// 128-byte span (`Swizzle<3, 4, 3>` on bytes).
    Span128,
}

impl TmaSwizzle {
    /// The span in bytes (0 without a swizzle), as the driver's enum is named.
    pub fn span_bytes(self) -> u32 {
        match self {
            TmaSwizzle::None => 0,
            TmaSwizzle::Span32 => 32,
            TmaSwizzle::Span64 => 64,
            TmaSwizzle::Span128 => 128,
        }
    }
}

impl Kernel {
    /// Whether the body holds a `grid_sync`: the kernel must then be
    /// launched cooperatively, every block resident at once.
    pub fn has_grid_barrier(&self) -> bool {
        fn holds(stmts: &[Stmt]) -> bool {
            stmts.iter().any(|stmt| match stmt {
                Stmt::Sync { scope, .. } => *scope == BarrierScope::Grid,
                Stmt::Spec(spec) => spec.body.as_deref().is_some_and(holds),
                Stmt::For(each) => holds(&each.body),
                Stmt::If(branch) => holds(&branch.then_body) || holds(&branch.else_body),
                Stmt::Commit { .. }
                | Stmt::Wait { .. }
                | Stmt::Arrive { .. }
                | Stmt::WaitPhase { .. }
                | Stmt::SetMaxRegisters { .. } => false,
            })
        }
        self.root.body.as_deref().is_some_and(holds)
    }
}

/// `contract { … }`: what a fused kernel computes over whole tensors, as a
/// sequence of built-in specs (docs/language.md, "Contracts").
///
/// Rule: every step is a built-in kind with a whole-tensor contract (not
/// `Shfl`, the generic `Spec`, or an `async` kind), has no body, and its
/// operands are views of `GL` parameters or of the contract's temporaries
/// (`BufferKind::Temporary`) that depend on no thread, block or loop; a
/// temporary is written before it is read; the steps write each output of
/// the outermost spec. The steps' groups are scalar and mean nothing.
#[derive(Clone, PartialEq, Debug)]
pub struct Contract {
    /// The steps, in order.
    pub steps: Vec<SpecStmt>,
    /// The `contract` block.
    pub span: Span,
}

/// A kernel's occupancy request: `kernel NAME (min_blocks_per_sm = B,
/// max_registers = R)`, what CUDA writes `__launch_bounds__(threads, B)` and
/// `-maxrregcount R`; `None` leaves the choice to the assembler.
///
/// Rule (checked): every value is positive; block size × `min_blocks_per_sm`
/// ≤ 2048 threads; `max_registers` ≤ 255 and block size × `max_registers` ≤
/// 65536 (one SM's register file).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Occupancy {
    /// Blocks that should fit on one SM at once (PTX `.minnctapersm`).
    pub min_blocks_per_sm: Option<u32>,
    /// Registers per thread at most (PTX `.maxnreg`).
    pub max_registers: Option<u32>,
}

/// A name as written, with where it was written.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct NamedSpan {
    /// The name without sigil.
    pub name: String,
    /// Its defining occurrence.
    pub span: Span,
}

/// Index of a [`Buffer`] in its kernel.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct BufferId(pub u32);

/// Storage of a tensor: where its elements live.
///
/// Rule: `Shared` and `Registers` buffers have constant sizes; a `Param`
/// buffer's size may involve dims. `ty` is the declared type, whose layout
/// defines the element offsets of the buffer.
#[derive(Clone, PartialEq, Debug)]
pub struct Buffer {
    /// Source name (without `%`).
    pub name: String,
    /// The declaration.
    pub span: Span,
    /// What kind of storage.
    pub kind: BufferKind,
    /// The declared type.
    pub ty: TensorType,
    /// Number of elements to reserve: the declared layout's cosize.
    pub elements: Expr,
}

/// What `Init` stores.
///
/// Rule: `Index(i)` names a logical mode of the output (mode i of every
/// level); the lowering has no instruction for it (contracts use it).
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum InitValue {
    /// The same number everywhere.
    Number(f64),
    /// Each element's coordinate along logical mode `i`.
    Index(u32),
}

/// The kinds of storage.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BufferKind {
    /// A global tensor passed by the caller (the i-th `.u64` parameter).
    Param(u32),
    /// A shared-memory allocation of the block.
    Shared,
    /// A register array of each thread.
    Registers,
    /// A tensor of the kernel's contract (declared inside `contract { … }`):
    /// a value the contract's steps compute and read, with no storage in
    /// the kernel.
    Temporary,
}

/// A launch-time condition on the dims.
#[derive(Clone, PartialEq, Debug)]
pub enum Requirement {
    /// `value % divisor == 0`, needed because `value / divisor` appears in a
    /// shape written at `span`.
    Divisible {
        /// The dividend (over dims).
        value: Expr,
        /// The divisor (over dims).
        divisor: Expr,
        /// Where the division was written.
        span: Span,
    },
    /// `value ≥ 1` (every shape extent must be positive).
    Positive {
        /// The extent (over dims).
        value: Expr,
        /// Where it was written.
        span: Span,
    },
}

/// One level of a tensor or group type: a layout whose extents and strides
/// may be symbolic.
///
/// Rule: `shape` and `stride` are congruent; every extent is ≥ 1. The
/// checker writes both as `Tuple::Node` of the top-level modes (`[8]` is
/// `Node([Leaf(8)])`, `[]` is `Node([])`); `check::constant_layout` gives
/// the exact `Layout` of a constant level.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Level {
    /// Extents.
    pub shape: Tuple<Expr>,
    /// Strides, in elements (tensors) or thread/block ids (groups).
    pub stride: Tuple<Expr>,
}

/// The type of a tensor value.
///
/// Rule: offsets are `Σ level_j(c_j)` over the levels; a swizzle, if any,
/// applies to the whole offset from the buffer's start.
#[derive(Clone, PartialEq, Debug)]
pub struct TensorType {
    /// Outermost first; a scalar has one empty level.
    pub levels: Vec<Level>,
    /// Element type.
    pub scalar: Scalar,
    /// Memory space.
    pub memory: Memory,
    /// Storage permutation of a shared buffer.
    pub swizzle: Option<Swizzle>,
}

/// The type of a thread group: levels map group coordinates to linear ids.
///
/// Rule: an executing group's innermost level is the unit that performs a
/// collective instruction together (e.g. `[32:1]`, a hardware warp); outer
/// levels enumerate the instances that run side by side.
#[derive(Clone, PartialEq, Debug)]
pub struct GroupType {
    /// Outermost first; `.scalar()` gives one empty level.
    pub levels: Vec<Level>,
    /// Thread or block.
    pub kind: GroupKind,
}

/// A tensor value: a view into a buffer.
///
/// Rule: element `c` of the view lives at buffer offset
/// `swizzle(base + Σ level_j(c_j))`. `base` may depend on any [`Var`](crate::expr::Var).
#[derive(Clone, PartialEq, Debug)]
pub struct View {
    /// The storage.
    pub buffer: BufferId,
    /// Element offset of the view's origin in the buffer (unswizzled).
    pub base: Expr,
    /// The view's type.
    pub ty: TensorType,
    /// Where the view may reach past its tensor: one entry per mode a
    /// `.tile_partial` divided unevenly; empty for a view that stays inside.
    pub bounds: Vec<Bound>,
    /// Where the operand was written.
    pub span: Span,
}

/// One mode along which a view may reach past its tensor (a partial tile).
///
/// Rule: the view's element at coordinates `c` (one per level, as for its
/// type) lies at coordinate `origin + Σ_j levels[j](c_j)` of the tiled
/// mode, where `levels` has the view's shapes and strides that count that
/// mode's coordinates; the element exists when that is below `extent`. A
/// view's elements exist when they do for every bound.
#[derive(Clone, PartialEq, Debug)]
pub struct Bound {
    /// The extent of the tiled mode.
    pub extent: Expr,
    /// The tiled mode's position in the level `.tile_partial` divided.
    pub mode: usize,
    /// The coordinate of the view's element 0 along it.
    pub origin: Expr,
    /// The view's levels with strides in coordinates of the tiled mode.
    pub levels: Vec<Level>,
}

/// A statement of a spec body.
#[derive(Clone, PartialEq, Debug)]
pub enum Stmt {
    /// A spec, atomic or decomposed.
    Spec(SpecStmt),
    /// A counted loop.
    For(ForStmt),
    /// A conditional.
    If(IfStmt),
    /// `sync` / `grid_sync`: a barrier of the block, or of the grid.
    Sync {
        /// Whom it waits for.
        scope: BarrierScope,
        /// The statement.
        span: Span,
    },
    /// `async_commit` / `mma_commit`: closes the current group of the
    /// queue's asynchronous operations.
    Commit {
        /// Which operations.
        queue: AsyncQueue,
        /// The statement.
        span: Span,
    },
    /// `async_wait(N)` / `mma_wait(N)`: waits until at most `pending` of the
    /// queue's groups are in flight.
    Wait {
        /// Which operations.
        queue: AsyncQueue,
        /// N.
        pending: u32,
        /// The statement.
        span: Span,
    },
    /// `mbarrier_arrive(%bar[s])`: each thread that reaches it arrives once.
    ///
    /// Rule: `barrier` is one element of a shared `mbarrier` tensor.
    Arrive {
        /// The barrier.
        barrier: View,
        /// The statement.
        span: Span,
    },
    /// `mbarrier_wait(%bar[s], P)`: each thread that reaches it waits until
    /// the barrier's phase of parity `P` has completed (the phase it is in
    /// has the other parity).
    ///
    /// Rule: `barrier` is one element of a shared `mbarrier` tensor;
    /// `parity` is 0 or 1 wherever it is evaluated (`(k / STAGES) % 2`).
    WaitPhase {
        /// The barrier.
        barrier: View,
        /// The parity of the phase waited for.
        parity: Expr,
        /// The statement.
        span: Span,
    },
    /// `setmaxnreg(N)`: the warpgroup that reaches it, all 128 threads
    /// together, moves its register budget to `count` per thread — up from
    /// the kernel's `max_registers` with `setmaxnreg.inc`, or down with
    /// `.dec`.
    ///
    /// Rule: `count` is a multiple of 8 in 24..=256; the kernel states
    /// `max_registers`.
    SetMaxRegisters {
        /// Registers per thread.
        count: u32,
        /// The statement.
        span: Span,
    },
}

/// `outs <- Kind<<<#blocks, #threads>>>(ins) { body }?`
///
/// Rule: without a body the spec is atomic and must match one instruction
/// of the catalogue; operands are per-thread views.
#[derive(Clone, PartialEq, Debug)]
pub struct SpecStmt {
    /// What is computed.
    pub kind: SpecKind,
    /// Written tensors.
    pub outputs: Vec<View>,
    /// Read tensors.
    pub inputs: Vec<View>,
    /// The executing block group.
    pub blocks: GroupType,
    /// The executing thread group.
    pub threads: GroupType,
    /// The decomposition, if any.
    pub body: Option<Vec<Stmt>>,
    /// The whole spec statement.
    pub span: Span,
}

/// The built-in spec kinds and their contracts (docs/language.md §5).
#[derive(Clone, PartialEq, Debug)]
pub enum SpecKind {
    /// `out = in`, converting the scalar type (`out = out + in` with
    /// `add`); `asynchronous` asks for `cp.async`. Rule: a `masked` Move reads an element of the input
    /// outside the input's bounds (its view's [`Bound`]s) as zero and skips
    /// an element outside the output's bounds; it is the only atomic access
    /// allowed to reach past a partial tile.
    Move {
        /// `Move<async>`.
        asynchronous: bool,
        /// `Move<masked>`.
        masked: bool,
        /// `Move<tma>`: a bulk tensor copy global → shared of one box of
        /// a kernel tensor map, issued by each thread that executes it,
        /// completing on its second input, a barrier (which it arrives at
        /// once, expecting the box's bytes). Elements past the tensor land
        /// as zero.
        tma: bool,
        /// `Move<add>`: an accumulating store, `out = out + in`, each
        /// element one atomic read-modify-write (`red.global.add.f32`), so
        /// that several threads — of one block or of several — may add
        /// into one element in any order. Rule: atomic (no body), inside a
        /// decomposition, its output in global memory with fp32 elements;
        /// combines with `masked` only. An element of the outermost spec's
        /// output that a `Move<add>` writes is written by `Move<add>` only,
        /// and only where that spec accumulates (`MatMul`, `C = C + A·B`):
        /// the partial sums of a split K.
        add: bool,
    },
    /// `C = C + A·B`, or `C = A·B` when `accumulate` is false
    /// (`MatMul<overwrite>`). Rule: an `asynchronous` MatMul (`MatMul<async>`,
    /// a warpgroup's `wgmma`) has written C only once an `mma_wait` has seen
    /// its group complete; until then neither C nor the shared operands may
    /// be touched.
    MatMul {
        /// False for `MatMul<overwrite>`.
        accumulate: bool,
        /// `MatMul<async>`.
        asynchronous: bool,
    },
    /// `y = op(x)`.
    Unary(UnaryOp),
    /// `z = x op y`.
    Binary(BinaryOp),
    /// `w = op(x, y, z)`.
    Ternary(TernaryOp),
    /// `w = (a op b) ? x : y`, the comparison ordered (false when a or b is
    /// NaN).
    Select(CompareOp),
    /// `y = op over axes of x`.
    Reduction {
        /// The combining operation.
        op: ReduceOp,
        /// Reduced top-level modes of the input.
        axes: Vec<u32>,
    },
    /// `y = x of lane (lane ^ mask)`.
    Shfl {
        /// The butterfly mask.
        mask: u32,
    },
    /// Every element of the output = `value`.
    Init {
        /// The value.
        value: InitValue,
    },
    /// A fused computation with no built-in contract.
    Generic,
}

impl SpecKind {
    /// Whether the spec adds into its output (`MatMul`, `MatMul<async>`,
    /// `Move<add>`) rather than overwriting it.
    pub fn accumulates(&self) -> bool {
        match self {
            SpecKind::MatMul { accumulate, .. } => *accumulate,
            SpecKind::Move { add, .. } => *add,
            SpecKind::Unary(_)
            | SpecKind::Binary(_)
            | SpecKind::Ternary(_)
            | SpecKind::Select(_)
            | SpecKind::Reduction { .. }
            | SpecKind::Shfl { .. }
            | SpecKind::Init { .. }
            | SpecKind::Generic => false,
        }
    }

    /// Whether the spec is a `Move<add>`, an accumulating store whose
    /// writes commute: several threads may add into one element.
    pub fn adds_atomically(&self) -> bool {
        matches!(self, SpecKind::Move { add: true, .. })
    }

    /// Whether the spec is a `Move<tma>`, a bulk tensor copy completing on
    /// the barrier that is its second input.
    pub fn is_bulk_copy(&self) -> bool {
        matches!(self, SpecKind::Move { tma: true, .. })
    }

    /// Whether the spec is a `Move<async>` (`cp.async`), which lands when an
    /// `async_wait` of its issuing thread sees its group complete.
    pub fn is_async_copy(&self) -> bool {
        matches!(
            self,
            SpecKind::Move {
                asynchronous: true,
                tma: false,
                ..
            }
        )
    }

    /// Whether the spec is a `Move<masked>`, the one atomic access allowed
    /// to reach past a partial tile.
    pub fn masked(&self) -> bool {
        match self {
            // A bulk copy lands elements past the tensor as zeros.
            SpecKind::Move { masked, tma, .. } => *masked || *tma,
            SpecKind::MatMul { .. }
            | SpecKind::Unary(_)
            | SpecKind::Binary(_)
            | SpecKind::Ternary(_)
            | SpecKind::Select(_)
            | SpecKind::Reduction { .. }
            | SpecKind::Shfl { .. }
            | SpecKind::Init { .. }
            | SpecKind::Generic => false,
        }
    }
}

/// `for (var = lo; var < hi; var += step) { body }`.
///
/// Rule: `step > 0`; when `unroll` is set (the body indexes a register
/// array with `var`), `lo`, `hi` and `step` are constants.
#[derive(Clone, PartialEq, Debug)]
pub struct ForStmt {
    /// The loop variable (`Var::Loop(var)`).
    pub var: u32,
    /// First value.
    pub lo: Expr,
    /// Exclusive bound.
    pub hi: Expr,
    /// Increment.
    pub step: Expr,
    /// Whether the loop is fully unrolled: its variable indexes a register
    /// tensor, or its bounds are constants and it runs at most 8 iterations.
    pub unroll: bool,
    /// The body.
    pub body: Vec<Stmt>,
    /// The whole loop.
    pub span: Span,
}

/// `if (cond) { then } else { otherwise }`.
#[derive(Clone, PartialEq, Debug)]
pub struct IfStmt {
    /// The condition.
    pub cond: Cond,
    /// Taken when true.
    pub then_body: Vec<Stmt>,
    /// Taken when false (empty without `else`).
    pub else_body: Vec<Stmt>,
    /// The whole statement.
    pub span: Span,
}

/// A condition over integer expressions.
#[derive(Clone, PartialEq, Debug)]
pub enum Cond {
    /// `a op b`.
    Compare(CompareOp, Expr, Expr),
    /// Both.
    And(Box<Cond>, Box<Cond>),
    /// Either.
    Or(Box<Cond>, Box<Cond>),
}

impl Cond {
    /// The same condition with `f` applied to each side of each comparison.
    pub fn map_sides(&self, f: &dyn Fn(&Expr) -> Expr) -> Cond {
        match self {
            Cond::Compare(op, a, b) => Cond::Compare(*op, f(a), f(b)),
            Cond::And(a, b) => Cond::And(Box::new(a.map_sides(f)), Box::new(b.map_sides(f))),
            Cond::Or(a, b) => Cond::Or(Box::new(a.map_sides(f)), Box::new(b.map_sides(f))),
        }
    }

    /// Whether the condition holds, where every side of it is a constant
    /// (or the constant parts decide it); `None` where that needs run time.
    pub fn known(&self) -> Option<bool> {
        match self {
            Cond::Compare(op, a, b) => Some(op.holds(a.as_const()?, b.as_const()?)),
            Cond::And(a, b) => match (a.known(), b.known()) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                (Some(true), None) | (None, Some(true)) | (None, None) => None,
            },
            Cond::Or(a, b) => match (a.known(), b.known()) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                (Some(false), None) | (None, Some(false)) | (None, None) => None,
            },
        }
    }
}
