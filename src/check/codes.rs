//! Stage 2, check: the checker's error codes. `docs/diagnostics.md` gives
//! each its meaning and a typical fix; a code never changes meaning.
//!
//! Grouped by subject: names `E020x`, integers `E021x`, types and their
//! operations `E022x`, thread groups and the launch `E023x`, memories
//! `E024x`, specs `E025x`, control flow `E026x`, kernel attributes `E027x`,
//! coverage and races `E028x`, barriers of shared memory and bulk copies
//! `E029x`.

/// A name that is not defined where it is used.
pub const UNDEFINED: &str = "E0200";
/// A name defined again while its first definition is visible (no shadowing).
pub const DUPLICATE: &str = "E0201";
/// A name used above its definition.
pub const USED_BEFORE_DEFINITION: &str = "E0202";
/// A name of the wrong kind: a tensor where a thread group is expected, an
/// index or loop variable in a type, …
pub const WRONG_KIND: &str = "E0203";
/// A `--define NAME=…` that names no `const` of the file.
pub const UNKNOWN_DEFINE: &str = "E0204";

/// A kernel named with a name PTX reserves (`WARP_SZ`): the kernel is the
/// PTX entry of that name, which `ptxas` refuses.
pub const RESERVED_NAME: &str = "E0205";

/// A runtime value where a compile-time constant is required.
pub const NOT_CONSTANT: &str = "E0210";
/// Division by zero or 64-bit overflow while folding constants.
pub const BAD_ARITHMETIC: &str = "E0211";
/// A division of constants in a type that leaves a remainder.
pub const INEXACT_DIVISION: &str = "E0212";

/// A written layout that is not one: dims and strides not congruent, an
/// extent below 1, a negative stride, a size past 64 bits, a bad swizzle.
pub const BAD_LAYOUT: &str = "E0220";
/// A type annotation that differs from the computed type.
pub const TYPE_MISMATCH: &str = "E0221";
/// `.tile(…)` with a number or form of tilers that does not fit the modes.
pub const TILE_ARITY: &str = "E0222";
/// A tiler that does not divide its mode exactly (partial tiles), or that
/// cannot tile it at all.
pub const BAD_TILE: &str = "E0223";
/// An operation on symbolic extents or strides that the checker cannot
/// carry out without knowing their values.
pub const SYMBOLIC_UNSUPPORTED: &str = "E0224";
/// `.reshape(…)` to a different size, or at a level that does not exist.
pub const BAD_RESHAPE: &str = "E0225";
/// Coordinates that do not fit the levels and modes they index.
pub const BAD_COORDINATES: &str = "E0226";
/// A coordinate that can leave its mode's extent.
pub const OUT_OF_RANGE: &str = "E0227";
/// An operation that does not apply to this kind of value (indexing a
/// group, `.indices()` of a tensor, `Allocate()` outside a declaration).
pub const BAD_OPERATION: &str = "E0228";
/// `.broadcast(i, n)` at a position outside the innermost level (`0 ≤ i ≤
/// rank`), or with an extent below 1.
pub const BAD_BROADCAST: &str = "E0229";

/// Index patterns that do not mirror the group's levels and modes.
pub const PATTERN_MISMATCH: &str = "E0230";
/// `.indices()` of a group whose ids do not decompose digit by digit.
pub const NOT_DECOMPOSABLE: &str = "E0231";
/// An outermost spec whose launch groups are not kernel-scope declarations.
pub const LAUNCH_NOT_DECLARED: &str = "E0232";
/// A block group where a thread group is expected, or the reverse.
pub const GROUP_KIND: &str = "E0233";
/// A launch group that cannot be launched: a block of more than 1024 or a
/// symbolic number of threads, or ids that are not `0 … N-1` once each.
pub const BAD_LAUNCH_SIZE: &str = "E0234";
/// A spec inside a body executed by groups not derived from the launch groups.
pub const NOT_DERIVED: &str = "E0235";
/// A thread group that reaches past the block (or a block group past the grid).
pub const EXCEEDS_LAUNCH: &str = "E0236";

/// A global tensor that is not a kernel-scope declaration (a parameter).
pub const GLOBAL_NOT_PARAMETER: &str = "E0240";
/// A shared or register allocation whose size is not a compile-time constant.
pub const ALLOCATION_NOT_CONSTANT: &str = "E0241";
/// A swizzle on a tensor that is not in shared memory.
pub const SWIZZLE_NOT_SHARED: &str = "E0242";
/// `Move<async>` other than global → shared.
pub const ASYNC_MOVE_MEMORY: &str = "E0243";
/// A register tensor indexed by a value that is not known at compile time.
pub const REGISTER_INDEX: &str = "E0244";
/// A `Move<add>` that is not an accumulating store into global fp32
/// elements: its output in shared memory or registers, elements of another
/// type, a body, or the outermost spec.
pub const ADD_MOVE: &str = "E0245";

/// A kernel without a spec.
pub const NO_SPEC: &str = "E0250";
/// A statement that cannot stand at kernel scope (control flow, a second spec).
pub const KERNEL_SCOPE: &str = "E0251";
/// A spec with the wrong number of outputs or inputs for its kind.
pub const ARITY: &str = "E0252";
/// Operands whose element counts do not agree with the kind's contract.
pub const SIZE_MISMATCH: &str = "E0253";
/// `MatMul` operands that are not M×K, K×N and M×N.
pub const MATMUL_SHAPES: &str = "E0254";
/// `Reduction` axes that are out of range or repeated.
pub const REDUCTION_AXES: &str = "E0255";
/// `Shfl` outside a warp-sized group, with a mask past the warp, or on
/// operands that are not registers.
pub const SHFL: &str = "E0256";
/// A kind that has no instruction written without a body (`Spec`,
/// `MatMul<overwrite>`).
pub const MUST_DECOMPOSE: &str = "E0257";
/// `MatMul<async>` with a body: only a warpgroup's `wgmma` runs
/// asynchronously, and a decomposed spec is complete when it ends.
pub const ASYNC_DECOMPOSED: &str = "E0258";
/// An atomic `Reduction` over more than a warp whose instances are not
/// whole, aligned runs of warps: N consecutive threads (N a multiple of 32)
/// starting at multiples of N, the block a whole number of them.
pub const BLOCK_REDUCTION_GROUP: &str = "E0259";

/// A loop whose step is not positive.
pub const LOOP_STEP: &str = "E0260";
/// `async_wait(N)` with N outside `0 ..= 2^32-1`.
pub const ASYNC_WAIT: &str = "E0261";
/// The accumulators of a `MatMul<async>` read or written before an
/// `mma_wait` has seen its group complete.
pub const PENDING_ACCUMULATOR: &str = "E0262";
/// An `Init` value its output's element type cannot hold (`Init<70000>` on
/// fp16 would be infinity; `Init<1.5>` on i32 would be 1).
pub const INIT_OUT_OF_RANGE: &str = "E0263";
/// An index value past 32 bits: a tensor offset at or past 2^32, or a loop
/// counter whose last step passes 2^32 (the lowering's registers are `.u32`).
pub const PAST_32_BITS: &str = "E0265";
/// A swizzle that moves an offset of its tensor outside the tensor.
pub const SWIZZLE_OUTSIDE: &str = "E0266";
/// A broadcast view (a stride-0 mode of more than one element) as a spec's
/// output: it would write one element several times.
pub const BROADCAST_OUTPUT: &str = "E0267";
/// A `contract { … }` that is not one: a statement other than a tensor
/// declaration or a spec, a step with launch groups or a body, a kind with
/// no whole-tensor meaning, an operand outside global memory, a second
/// contract, or a contract inside a spec body.
pub const CONTRACT_FORM: &str = "E0268";
/// A contract that does not define the kernel: a temporary read before a
/// step computes it, an output of the outermost spec no step writes, or a
/// contract beside a built-in outermost spec.
pub const CONTRACT_DATAFLOW: &str = "E0269";

/// A `sync` under an `if` whose condition, or a `for` whose bounds, name
/// the thread id: threads that skip the barrier deadlock the block.
pub const DIVERGENT_SYNC: &str = "E0264";

/// An occupancy attribute out of range: `min_blocks_per_sm` below 1,
/// `max_registers` outside 1 to 255.
pub const BAD_OCCUPANCY: &str = "E0270";
/// An occupancy request one SM cannot hold: block size × `min_blocks_per_sm`
/// past 2048 threads, or block size × `max_registers` past 65536 registers.
pub const OCCUPANCY_EXCEEDS_SM: &str = "E0271";

/// An atomic spec's operand that may reach past the end of its tensor (a
/// view of `.tile_partial`) with no `<masked>` and no guarding `if`.
pub const ACCESS_PAST_END: &str = "E0272";

/// A `require` that is not a divisibility of dims by a positive constant
/// (`require K % 8 == 0`), or one inside a spec body.
pub const BAD_REQUIREMENT: &str = "E0274";

/// A decomposition that leaves elements of its output unwritten.
pub const NOT_COVERED: &str = "E0280";
/// A decomposition that writes an element of its output twice (or two
/// threads that add into one element of a `MatMul`'s output).
pub const WRITTEN_TWICE: &str = "E0281";
/// Two threads of a block that write one shared element with no `sync`
/// between the writes.
pub const UNSYNCHRONISED_WRITES: &str = "E0282";
/// A thread of a block that reads a shared element another thread wrote,
/// or writes one another thread read, with no `sync` between.
pub const UNSYNCHRONISED_READ: &str = "E0285";
/// A read of a shared element that a `cp.async` writes, before an
/// `async_wait` of the copying thread has seen its group complete.
pub const ASYNC_EARLY_READ: &str = "E0286";
/// A collective instruction (an atomic spec executed by several threads
/// together) under a condition that may differ between them.
pub const DIVERGENT_COLLECTIVE: &str = "E0287";
/// A thread's read of an element of one of its register tensors that it
/// has not written.
pub const UNWRITTEN_REGISTER_READ: &str = "E0296";
/// A read of a shared element that nothing in its block writes.
pub const UNWRITTEN_SHARED_READ: &str = "E0298";
/// A note: the coverage of a decomposition could not be decided (too many
/// writes to enumerate, or an expression not evaluable at sample dims).
pub const COVERAGE_NOT_PROVED: &str = "E0283";
/// A `Move<add>` into an element of the output that is also overwritten,
/// or into the output of an outermost spec that does not accumulate.
pub const ADD_NOT_ACCUMULATED: &str = "E0284";

/// A barrier (`mbarrier`) where it cannot be: outside shared memory, as a
/// data operand, or a barrier statement's operand that is not one barrier.
pub const MBARRIER_USE: &str = "E0290";
/// A `Move<tma>` the Tensor Memory Accelerator cannot do: its source not a
/// box of a global parameter, its destination not laid out as the box
/// lands, a box past the hardware's limits, or no barrier to complete on.
pub const TMA_FORM: &str = "E0291";
/// A shared tile that a `Move<tma>` writes, read before a wait on the
/// barrier the copy completes on.
pub const TMA_EARLY_READ: &str = "E0292";
/// A barrier whose phases cannot complete: waited on or arrived at but
/// never initialised with `Init<count>`, or waited on with nothing that
/// arrives on it.
pub const PHASE_NEVER_COMPLETES: &str = "E0293";
/// `setmaxnreg(N)` with N not a multiple of 8 in 24 to 256, or in a kernel
/// without `max_registers` (the budget it moves from).
pub const SETMAXNREG: &str = "E0294";
/// A tunable constant's `tune [v, …]` list with a value twice, or whose
/// written value is not among them.
pub const BAD_TUNE_VALUES: &str = "E0297";

/// Every checker code, in order.
pub const ALL: [&str; 72] = [
    UNDEFINED,
    DUPLICATE,
    USED_BEFORE_DEFINITION,
    WRONG_KIND,
    UNKNOWN_DEFINE,
    RESERVED_NAME,
    NOT_CONSTANT,
    BAD_ARITHMETIC,
    INEXACT_DIVISION,
    BAD_LAYOUT,
    TYPE_MISMATCH,
    TILE_ARITY,
    BAD_TILE,
    SYMBOLIC_UNSUPPORTED,
    BAD_RESHAPE,
    BAD_COORDINATES,
    OUT_OF_RANGE,
    BAD_OPERATION,
    BAD_BROADCAST,
    PATTERN_MISMATCH,
    NOT_DECOMPOSABLE,
    LAUNCH_NOT_DECLARED,
    GROUP_KIND,
    BAD_LAUNCH_SIZE,
    NOT_DERIVED,
    EXCEEDS_LAUNCH,
    GLOBAL_NOT_PARAMETER,
    ALLOCATION_NOT_CONSTANT,
    SWIZZLE_NOT_SHARED,
    ASYNC_MOVE_MEMORY,
    REGISTER_INDEX,
    ADD_MOVE,
    NO_SPEC,
    KERNEL_SCOPE,
    ARITY,
    SIZE_MISMATCH,
    MATMUL_SHAPES,
    REDUCTION_AXES,
    SHFL,
    MUST_DECOMPOSE,
    ASYNC_DECOMPOSED,
    BLOCK_REDUCTION_GROUP,
    LOOP_STEP,
    ASYNC_WAIT,
    PENDING_ACCUMULATOR,
    INIT_OUT_OF_RANGE,
    DIVERGENT_SYNC,
    PAST_32_BITS,
    SWIZZLE_OUTSIDE,
    BROADCAST_OUTPUT,
    CONTRACT_FORM,
    CONTRACT_DATAFLOW,
    BAD_OCCUPANCY,
    OCCUPANCY_EXCEEDS_SM,
    ACCESS_PAST_END,
    BAD_REQUIREMENT,
    NOT_COVERED,
    WRITTEN_TWICE,
    UNSYNCHRONISED_WRITES,
    UNSYNCHRONISED_READ,
    ASYNC_EARLY_READ,
    UNWRITTEN_REGISTER_READ,
    UNWRITTEN_SHARED_READ,
    DIVERGENT_COLLECTIVE,
    COVERAGE_NOT_PROVED,
    ADD_NOT_ACCUMULATED,
    MBARRIER_USE,
    TMA_FORM,
    TMA_EARLY_READ,
    PHASE_NEVER_COMPLETES,
    SETMAXNREG,
    BAD_TUNE_VALUES,
];
