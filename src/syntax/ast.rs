//! Stage 1, syntax: the abstract syntax tree of a `.gph` file, exactly as
//! written (no meaning given yet: names are unresolved, types uncomputed).
//! Every node carries the byte `Span` of its text; equality of trees modulo
//! spans is `strip_spans` followed by `==`.

pub use crate::diag::Span;
pub use crate::layout::Tuple;
pub use crate::vocab::{
    AsyncQueue, BarrierScope, BinaryOp, CompareOp, GroupKind, MEMORY_NAMES, Memory, ReduceOp,
    SCALAR_NAMES, Scalar, TernaryOp, UnaryOp,
};

/// A parsed file: constants and kernels in source order.
///
/// Rule: a file of bare statements (no `kernel`) holds one kernel with
/// `implicit == true`, named after the file stem; constants may only precede
/// its statements.
#[derive(Clone, PartialEq, Debug)]
pub struct File {
    /// Constants and kernels, in the order written.
    pub items: Vec<Item>,
    /// The whole file.
    pub span: Span,
}

/// A top-level item.
#[derive(Clone, PartialEq, Debug)]
pub enum Item {
    /// `const NAME = expr`.
    Const(ConstDef),
    /// `kernel NAME { … }`, or the bare statements of a file.
    Kernel(Kernel),
    /// `kernel NAME = BASE(CONST = value, …)`: another kernel from the same
    /// body.
    Variant(KernelVariant),
}

/// `kernel NAME = BASE(CONST = value, …)`: the kernel `BASE` again, under
/// the name `NAME`, with the constants above `BASE` evaluated as if those
/// values were defined (`--define`), so that one body gives several entries.
///
/// Rule: `BASE` is a kernel or variant defined earlier in the file; each
/// override names a constant defined above `BASE`'s body, at most once,
/// and its value is a constant expression where the variant stands. The
/// overrides win over command-line defines; a variant of a variant applies
/// its base's overrides first.
#[derive(Clone, PartialEq, Debug)]
pub struct KernelVariant {
    /// The new kernel's name.
    pub name: Name,
    /// The kernel whose body it reuses.
    pub base: Name,
    /// The constants it sets, written like `const` definitions without the
    /// keyword (`A_K_MAJOR = 0`).
    pub overrides: Vec<ConstDef>,
    /// From `kernel` to the closing parenthesis.
    pub span: Span,
}

/// `const NAME = expr [tune [v, …]]`: a compile-time integer, visible after
/// its definition.
#[derive(Clone, PartialEq, Debug)]
pub struct ConstDef {
    /// The constant's name (a plain identifier).
    pub name: Name,
    /// Its value, an integer expression of earlier constants.
    pub value: IntExpr,
    /// `tune [v, …]`: the values `ptxgen tune` may choose from; `None` for
    /// a constant that is not tunable (and for a variant's settings).
    pub tune: Option<TuneValues>,
    /// From `const` to the end of the value.
    pub span: Span,
}

/// `tune [64, 128, 256]` after a constant's value: the legal values a tuner
/// tries.
///
/// Rule: at least one value, no value twice, and the written value is one
/// of them (a `--define` may still set any other).
#[derive(Clone, PartialEq, Debug)]
pub struct TuneValues {
    /// Each value and its literal.
    pub values: Vec<(i64, Span)>,
    /// From `tune` to the closing bracket.
    pub span: Span,
}

/// A kernel: its statements run as one GPU launch.
#[derive(Clone, PartialEq, Debug)]
pub struct Kernel {
    /// The kernel's name; for an implicit kernel the file stem, made into an
    /// identifier (other characters become `_`), with an empty span.
    pub name: Name,
    /// Whether the kernel was written as bare statements, without `kernel`.
    pub implicit: bool,
    /// `(name = value, …)` after the name: what the kernel asks of the
    /// assembler for occupancy; empty for an implicit kernel.
    pub attributes: Vec<KernelAttribute>,
    /// The statements.
    pub body: Block,
    /// From `kernel` to the closing brace (the statements, if implicit).
    pub span: Span,
}

/// `name = value` in a kernel's header, e.g. `min_blocks_per_sm = 2`.
///
/// Rule: the value is an integer expression; the checker requires it to be
/// a positive compile-time constant (docs/language.md, "Occupancy").
#[derive(Clone, PartialEq, Debug)]
pub struct KernelAttribute {
    /// Which attribute.
    pub kind: KernelAttributeKind,
    /// The attribute's name as written.
    pub name: Span,
    /// Its value.
    pub value: IntExpr,
    /// From the name to the end of the value.
    pub span: Span,
}

/// The kernel attributes, each at most once per kernel.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum KernelAttributeKind {
    /// `min_blocks_per_sm`: blocks that should fit on one SM at once
    /// (PTX `.minnctapersm`, CUDA's second `__launch_bounds__` argument).
    MinBlocksPerSm,
    /// `max_registers`: registers per thread at most (PTX `.maxnreg`).
    MaxRegisters,
}

impl KernelAttributeKind {
    /// Every attribute with its name as written.
    pub const ALL: [(&'static str, KernelAttributeKind); 2] = [
        ("min_blocks_per_sm", KernelAttributeKind::MinBlocksPerSm),
        ("max_registers", KernelAttributeKind::MaxRegisters),
    ];

    /// The attribute's name as written.
    pub fn name(self) -> &'static str {
        match self {
            KernelAttributeKind::MinBlocksPerSm => "min_blocks_per_sm",
            KernelAttributeKind::MaxRegisters => "max_registers",
        }
    }
}

/// A name without its sigil: `%x` has text `x`, `#4` has text `4`.
///
/// Rule: the text is non-empty and made of ASCII letters, digits and `_`;
/// plain identifiers do not start with a digit and are not `_` alone.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Name {
    /// The name without sigil.
    pub text: String,
    /// The name with its sigil.
    pub span: Span,
}

/// Statements between braces (or of an implicit kernel).
#[derive(Clone, PartialEq, Debug)]
pub struct Block {
    /// The statements in order.
    pub stmts: Vec<Stmt>,
    /// From `{` to `}` inclusive.
    pub span: Span,
}

/// One statement.
#[derive(Clone, PartialEq, Debug)]
pub struct Stmt {
    /// What kind of statement.
    pub kind: StmtKind,
    /// The whole statement (with its body, if any).
    pub span: Span,
}

/// The statement forms of `docs/language.md` §4.
#[derive(Clone, PartialEq, Debug)]
pub enum StmtKind {
    /// `%x : T`, `%x : T = e` or `%x = e`: declaration or definition.
    Tensor(TensorDef),
    /// `#g : G`, `#g : G = e` or `#g = e`.
    Group(GroupDef),
    /// `@a, (@b, @c) = #g.indices()`.
    Indices(IndicesDef),
    /// `outs <- Kind<params><<<#b, #t>>>(ins) { body }?`.
    Spec(SpecStmt),
    /// `for (k = lo; k < hi; k += step) { … }`.
    For(ForLoop),
    /// `if (c) { … } else if (c) { … } else { … }`.
    If(IfStmt),
    /// `sync` / `grid_sync`: a barrier of the block's threads, or of the
    /// whole grid's.
    Sync(BarrierScope),
    /// `async_commit` / `mma_commit`: closes the current group of the
    /// queue's asynchronous operations.
    Commit(AsyncQueue),
    /// `async_wait(N)` / `mma_wait(N)`: waits until at most N of the
    /// queue's groups are pending.
    Wait(AsyncQueue, IntExpr),
    /// `mbarrier_arrive(%bar[s])`: each thread that reaches it arrives once
    /// on the barrier.
    Arrive(Expr),
    /// `mbarrier_wait(%bar[s], P)`: each thread that reaches it waits until
    /// the barrier's phase of parity `P` (0 or 1) has completed.
    WaitPhase(Expr, IntExpr),
    /// `setmaxnreg(N)`: the warpgroup that reaches it moves its register
    /// budget to N per thread (`setmaxnreg.inc` / `.dec`).
    SetMaxRegisters(IntExpr),
    /// `contract { … }`: what a fused kernel computes over whole tensors,
    /// as tensor declarations and specs without launch groups or bodies
    /// (docs/language.md, "Contracts"). Kernel scope only.
    Contract(Block),
    /// `require K % 8 == 0`: a launch requirement stated by the kernel
    /// (the launch refuses dims that break it; the lowering may use it, to
    /// prove alignment for instance); `specialize K % 8 == 0`: a condition
    /// the kernel is compiled for besides the general case, taken at run
    /// time where it holds. Kernel scope only.
    Require(RequireKind, Cond),
    /// `let bq = w % QT`: a name for an integer expression, visible to the
    /// end of its block; each use stands for the expression (bodies only).
    Let(LetDef),
}

/// What a kernel-scope divisibility statement does with its condition.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RequireKind {
    /// `require`: every launch must meet it.
    Launch,
    /// `specialize`: the kernel also has a version that assumes it, which
    /// launches that meet it run (docs/language.md, "Specializations").
    Specialize,
}

impl RequireKind {
    /// The statement's keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            RequireKind::Launch => "require",
            RequireKind::Specialize => "specialize",
        }
    }
}

/// A tensor declaration or definition.
///
/// Rule: at least one of `ty` and `value` is present.
#[derive(Clone, PartialEq, Debug)]
pub struct TensorDef {
    /// The tensor being defined (`%x`).
    pub name: Name,
    /// The written type, if annotated.
    pub ty: Option<TensorType>,
    /// The initialiser, if any.
    pub value: Option<Expr>,
}

/// A thread-group declaration or definition.
///
/// Rule: at least one of `ty` and `value` is present.
#[derive(Clone, PartialEq, Debug)]
pub struct GroupDef {
    /// The group being defined (`#g`).
    pub name: Name,
    /// The written type, if annotated.
    pub ty: Option<GroupType>,
    /// The initialiser, if any.
    pub value: Option<Expr>,
}

/// Binding of index names to the current thread's coordinates in a group.
///
/// Rule: `value` is an `ExprKind::Indices` (checked by the parser); the
/// pattern list is non-empty.
#[derive(Clone, PartialEq, Debug)]
pub struct IndicesDef {
    /// The top-level patterns, one per mode of the group's levels.
    pub patterns: Vec<IndexPattern>,
    /// `#g.indices()`.
    pub value: Expr,
}

/// A pattern on the left of `= #g.indices()`.
#[derive(Clone, PartialEq, Debug)]
pub struct IndexPattern {
    /// Name, ignored mode or tuple.
    pub kind: IndexPatternKind,
    /// The pattern's text.
    pub span: Span,
}

/// The forms of an index pattern.
#[derive(Clone, PartialEq, Debug)]
pub enum IndexPatternKind {
    /// `@i`: binds the (linear) index of the mode.
    Bind(Name),
    /// `_`: ignores the mode.
    Ignore,
    /// `(p, q, …)`: one pattern per sub-mode of a hierarchical mode.
    Tuple(Vec<IndexPattern>),
}

/// A tensor type `Level (. Level)* . Scalar . Memory (. Swizzle<B,M,S>)?`.
///
/// Rule: `levels` is non-empty, outermost first.
#[derive(Clone, PartialEq, Debug)]
pub struct TensorType {
    /// The layout levels, outermost first.
    pub levels: Vec<Layout>,
    /// The element type.
    pub scalar: ScalarChoice,
    /// Where the tensor lives.
    pub memory: Memory,
    /// The storage permutation, shared memory only (checked later).
    pub swizzle: Option<Swizzle>,
    /// The whole type.
    pub span: Span,
}

/// A tensor type's element type as written.
///
/// Rule: a `select`'s condition must be known when checking (constants and
/// defines), like `select` of integers: one source then serves fp16 and bf16.
#[derive(Clone, PartialEq, Debug)]
pub enum ScalarChoice {
    /// `fp16`.
    Named(Scalar),
    /// `select(c, bf16, fp16)`: the first where the condition holds; each
    /// may be a `select` again.
    Select(Box<Cond>, Box<ScalarChoice>, Box<ScalarChoice>),
}

/// A thread-group type `Level (. Level)* . (thread | block)`.
///
/// Rule: `levels` is non-empty, outermost first.
#[derive(Clone, PartialEq, Debug)]
pub struct GroupType {
    /// The layout levels, outermost first.
    pub levels: Vec<Layout>,
    /// Threads of a block, or blocks of the grid.
    pub kind: GroupKind,
    /// The whole type.
    pub span: Span,
}

/// `.Swizzle<B,M,S>` with CuTe's meaning of the three parameters.
#[derive(Clone, PartialEq, Debug)]
pub struct Swizzle {
    /// Number of bits XORed.
    pub bits: IntExpr,
    /// Lowest bit that changes.
    pub base: IntExpr,
    /// Distance of the source bits from the changed bits.
    pub shift: IntExpr,
    /// From `Swizzle` to `>`.
    pub span: Span,
}

/// A layout in bracket form, `[dims]` or `[dims : strides]`.
///
/// Rule: when `strides` is present it has as many top-level modes as `dims`
/// (checked by the parser); congruence inside modes is the checker's. The
/// leaf is an integer expression, or for tile arguments a `TileDim`.
#[derive(Clone, PartialEq, Debug)]
pub struct Layout<L = IntExpr> {
    /// Top-level dims; empty for `[]`.
    pub dims: Vec<Tuple<L>>,
    /// Top-level strides if a `:` was written.
    pub strides: Option<Vec<Tuple<L>>>,
    /// From `[` to `]`.
    pub span: Span,
}

/// A dim of a layout written as a tile argument: an expression, or `_` for
/// the whole mode.
///
/// Rule: `_` only as a top-level dim of a layout without strides (checked by
/// the parser).
#[derive(Clone, PartialEq, Debug)]
pub enum TileDim {
    /// A tile size.
    Size(IntExpr),
    /// `_`: the whole mode.
    Whole(Span),
}

/// An integer expression: dims, strides, coordinates, bounds.
#[derive(Clone, PartialEq, Debug)]
pub struct IntExpr {
    /// The expression's form.
    pub kind: IntExprKind,
    /// Its text (with any parentheses around it excluded).
    pub span: Span,
}

/// Forms of integer expressions. Parentheses leave no node: the tree is the
/// grouping, and the printer adds parentheses where precedence needs them.
#[derive(Clone, PartialEq, Debug)]
pub enum IntExprKind {
    /// A decimal literal.
    Literal(i64),
    /// A constant, loop variable or symbolic dimension.
    Var(Name),
    /// An index bound by `.indices()`, `@i`.
    Index(Name),
    /// `-e`.
    Neg(Box<IntExpr>),
    /// `a op b`.
    Binary(IntOp, Box<IntExpr>, Box<IntExpr>),
    /// `select(c, a, b)`: `a` where the condition holds, else `b`. The
    /// condition must be known when checking (constants and `--define`s
    /// only), so that one source picks layouts and tile shapes by a define.
    Select(Box<Cond>, Box<IntExpr>, Box<IntExpr>),
}

/// Binary integer operators; `* / %` bind tighter than `+ -`, all
/// left-associative. `/` and `%` round toward zero like PTX's `div.s32`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum IntOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
    /// `ceil_div(a, b)`: the quotient rounded up, the number of tiles of `b`
    /// that cover `a` (the last one may be partial).
    CeilDiv,
}

/// A condition of `if`.
#[derive(Clone, PartialEq, Debug)]
pub struct Cond {
    /// The condition's form.
    pub kind: CondKind,
    /// Its text.
    pub span: Span,
}

/// Forms of conditions; `&&` binds tighter than `||`.
#[derive(Clone, PartialEq, Debug)]
pub enum CondKind {
    /// `a op b` over integer expressions.
    Compare(CompareOp, IntExpr, IntExpr),
    /// `a && b`.
    And(Box<Cond>, Box<Cond>),
    /// `a || b`.
    Or(Box<Cond>, Box<Cond>),
}

/// A tensor or group expression: a name with operations applied.
#[derive(Clone, PartialEq, Debug)]
pub struct Expr {
    /// The expression's form.
    pub kind: ExprKind,
    /// Its text.
    pub span: Span,
}

/// Whether a tiling must divide its modes exactly.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Tiling {
    /// `.tile`: every tile is whole; a symbolic extent must be a multiple
    /// of the tile (a launch requirement).
    Exact,
    /// `.tile_partial`: the last tile of a mode may reach past its end;
    /// the view knows its bounds and accesses past them must be masked or
    /// guarded (docs/language.md, "Partial tiles").
    Partial,
}

impl Tiling {
    /// The method's name.
    pub fn method(self) -> &'static str {
        match self {
            Tiling::Exact => "tile",
            Tiling::Partial => "tile_partial",
        }
    }
}

/// Forms of tensor and group expressions (`docs/language.md` §3).
#[derive(Clone, PartialEq, Debug)]
pub enum ExprKind {
    /// `%x`.
    Tensor(Name),
    /// `#g`.
    Group(Name),
    /// `Allocate()`: fresh storage of the annotated type.
    Allocate,
    /// `e.tile(t0, t1, …)` or `e.tile_partial(t0, t1, …)`; at least one
    /// argument.
    Tile(Box<Expr>, Vec<TileArg>, Tiling),
    /// `e.reshape(depth, layout)`, or `e.reshape(layout)` (depth `None`).
    Reshape(Box<Expr>, Option<IntExpr>, Layout),
    /// `e.broadcast(position, extent)`: a mode of `extent` elements with
    /// stride 0 inserted at `position` of the innermost level.
    Broadcast(Box<Expr>, IntExpr, IntExpr),
    /// `e.indices()`.
    Indices(Box<Expr>),
    /// `e.scalar()`.
    Scalar(Box<Expr>),
    /// `e[c0, c1, …]`; at least one coordinate.
    Index(Box<Expr>, Vec<Coord>),
}

/// One argument of `.tile(…)`.
#[derive(Clone, PartialEq, Debug)]
pub enum TileArg {
    /// A layout, possibly with `_` dims (`[128, _]`).
    Layout(Layout<TileDim>),
    /// A bare size, meaning `[n:1]`.
    Size(IntExpr),
    /// `_`: the whole mode.
    Whole(Span),
}

/// One coordinate of an indexing `e[…]`.
#[derive(Clone, PartialEq, Debug)]
pub struct Coord {
    /// The coordinate's form.
    pub kind: CoordKind,
    /// Its text.
    pub span: Span,
}

/// Forms of coordinates.
#[derive(Clone, PartialEq, Debug)]
pub enum CoordKind {
    /// An integer expression (`0`, `k+1`, `@i`).
    Int(IntExpr),
    /// `_`: keeps the mode.
    Keep,
    /// `(a, b, …)` for a hierarchical mode; at least two elements.
    Tuple(Vec<Coord>),
}

/// `outs <- Kind<params><<<#blocks, #threads>>>(ins) { body }?`.
#[derive(Clone, PartialEq, Debug)]
pub struct SpecStmt {
    /// The output tensors; at least one.
    pub outputs: Vec<Expr>,
    /// The kind with its parameters.
    pub kind: SpecKind,
    /// The kind's name and parameters.
    pub kind_span: Span,
    /// The executing groups `<<<#blocks, #threads>>>`; `None` only for the
    /// steps of a `contract { … }`, which run on no threads.
    pub launch: Option<LaunchGroups>,
    /// The input tensors; possibly none (`Init`).
    pub inputs: Vec<Expr>,
    /// The decomposition; `None` makes the spec atomic.
    pub body: Option<Block>,
}

impl SpecStmt {
    /// Where the executing thread group is written; the kind for a
    /// contract's step, which has none.
    pub fn threads_span(&self) -> Span {
        self.launch
            .as_ref()
            .map_or(self.kind_span, |launch| launch.threads.span)
    }
}

/// `<<<#blocks, #threads>>>`: the groups that execute a spec.
#[derive(Clone, PartialEq, Debug)]
pub struct LaunchGroups {
    /// The executing block group.
    pub blocks: Expr,
    /// The executing thread group.
    pub threads: Expr,
}

/// The value of `Init<…>`.
///
/// Rule: `Constant` is an integer expression of constants (`const` names
/// and literals, after `--define`); the checker evaluates it.
#[derive(Clone, PartialEq, Debug)]
pub enum InitValue {
    /// A number as written: `0.0`, `-1.5e-3`, `inf`.
    Number(f64),
    /// An integer constant expression, e.g. `N` or `N * 2`.
    Constant(IntExpr),
    /// `index(i)`: each element's coordinate along logical mode `i` (a
    /// contract's query and key positions, for a causal mask).
    Index(u32),
}

/// The built-in spec kinds and their parameters (`docs/language.md` §5).
#[derive(Clone, PartialEq, Debug)]
pub enum SpecKind {
    /// `Move`, `Move<async>`, `Move<masked>`, `Move<tma>`, `Move<add>`.
    Move {
        /// `<async>`: asks for `cp.async`.
        asynchronous: bool,
        /// `<masked>`: elements outside the input's bounds read as zero,
        /// elements outside the output's bounds are not written.
        masked: bool,
        /// `<tma>`: a bulk tensor copy through the Tensor Memory
        /// Accelerator, completing on the barrier given as second input.
        tma: bool,
        /// `<add>`: each element added into the output (an atomic
        /// read-modify-write of global memory) instead of overwriting it.
        add: bool,
    },
    /// `MatMul`, `MatMul<overwrite>` or `MatMul<async>`.
    MatMul {
        /// `<overwrite>`: `C = A·B` instead of `C += A·B`.
        overwrite: bool,
        /// `<async>`: issued without waiting for it (`mma_commit`,
        /// `mma_wait`).
        asynchronous: bool,
    },
    /// `UnaryPointwise<op>`.
    UnaryPointwise(UnaryOp),
    /// `BinaryPointwise<op>`.
    BinaryPointwise(BinaryOp),
    /// `TernaryPointwise<op>`.
    TernaryPointwise(TernaryOp),
    /// `Select<op>`: `(a op b) ? x : y`.
    Select(CompareOp),
    /// `Reduction<op, [axes]>`.
    Reduction(ReduceOp, Vec<IntExpr>),
    /// `Shfl<bfly, mask>`.
    Shfl(ShflMode, IntExpr),
    /// `Init<value>`.
    Init(InitValue),
    /// `Spec`: a generic, fused computation.
    Generic,
}

/// Lane patterns of `Shfl`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ShflMode {
    /// Butterfly: lane `l` reads lane `l ^ mask`.
    Bfly,
}

/// `let name = value`: `name` stands for the integer expression `value`
/// wherever it is used, to the end of the enclosing block. Rule: `value` is
/// a run-time integer expression (constants, dims, loop variables, indices
/// and earlier `let`s); the name is a plain identifier that shadows nothing.
#[derive(Clone, PartialEq, Debug)]
pub struct LetDef {
    /// The name.
    pub name: Name,
    /// The expression it stands for.
    pub value: IntExpr,
}

/// `for (var = init; var < bound; var += step) { body }`.
#[derive(Clone, PartialEq, Debug)]
pub struct ForLoop {
    /// The loop variable (a plain identifier, the same in all three places).
    pub var: Name,
    /// First value.
    pub init: IntExpr,
    /// Exclusive upper bound.
    pub bound: IntExpr,
    /// Increment.
    pub step: IntExpr,
    /// The loop body.
    pub body: Block,
}

/// `if (c) { … } else if (c) { … } … else { … }`, kept flat so a long
/// `else if` chain costs no recursion.
#[derive(Clone, PartialEq, Debug)]
pub struct IfStmt {
    /// `(condition, block)` of `if` and each `else if`, in order; non-empty.
    pub branches: Vec<(Cond, Block)>,
    /// The final `else` block.
    pub otherwise: Option<Block>,
}

/// The names of the spec kinds as written before `<` or `<<<`.
pub const SPEC_KIND_NAMES: [&str; 10] = [
    "Move",
    "MatMul",
    "UnaryPointwise",
    "BinaryPointwise",
    "TernaryPointwise",
    "Select",
    "Reduction",
    "Shfl",
    "Init",
    "Spec",
];

impl IntOp {
    /// The operator's symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            IntOp::Add => "+",
            IntOp::Sub => "-",
            IntOp::Mul => "*",
            IntOp::Div => "/",
            IntOp::Rem => "%",
            IntOp::CeilDiv => "ceil_div",
        }
    }

    /// Binding strength: higher binds tighter (`ceil_div(a, b)` is written
    /// as a call, an atom).
    pub fn precedence(self) -> u8 {
        match self {
            IntOp::Add | IntOp::Sub => 1,
            IntOp::Mul | IntOp::Div | IntOp::Rem => 2,
            IntOp::CeilDiv => 3,
        }
    }
}

impl SpecKind {
    /// The kind's name as written, e.g. `BinaryPointwise`.
    pub fn name(&self) -> &'static str {
        match self {
            SpecKind::Move { .. } => "Move",
            SpecKind::MatMul { .. } => "MatMul",
            SpecKind::UnaryPointwise(_) => "UnaryPointwise",
            SpecKind::BinaryPointwise(_) => "BinaryPointwise",
            SpecKind::TernaryPointwise(_) => "TernaryPointwise",
            SpecKind::Select(_) => "Select",
            SpecKind::Reduction(..) => "Reduction",
            SpecKind::Shfl(..) => "Shfl",
            SpecKind::Init(_) => "Init",
            SpecKind::Generic => "Spec",
        }
    }
}
