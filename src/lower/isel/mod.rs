//! Stage 3, lowering: instruction selection. The catalogue of atomic specs
//! is a list of [`Pattern`]s; each is a matcher over (spec kind, the unit of
//! the executing group, the operands' memories, scalar types, element
//! layouts and proven alignment) that either accepts, with a plan of the
//! instructions to emit (instantiated from `ptx-templates/` through the PTX
//! catalogue), or rejects with a precise reason. A spec no pattern accepts
//! becomes the "no instruction matches" diagnostic, listing the nearest
//! patterns and why each did not apply.

mod arith;
mod block;
mod bulk;
mod convert;
mod masked;
mod matrix;
mod memory;
mod pointwise;
mod reduce;
mod row;
mod values;
mod warp;
mod wgmma;

#[cfg(test)]
mod tests;

use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::sync::OnceLock;

use super::error::{Candidate, LowerError, NoMatch, OperandNote};
use super::group::GroupInfo;
use super::kernel::KernelLowering;
use super::views::OperandInfo;
use crate::diag::Span;
use crate::ir::print::Print;
use crate::ir::{Memory, SpecKind, SpecStmt};
use crate::ptx::{Arch, Sm};

pub use arith::FmaType;
pub use pointwise::{PointImpl, PointOp};

/// An atomic spec with its operands and group analysed: what patterns see.
#[derive(Clone, Debug)]
pub struct Request {
    /// What is computed.
    pub kind: SpecKind,
    /// The spec statement.
    pub span: Span,
    /// The executing thread group.
    pub group: GroupInfo,
    /// Written operands.
    pub outputs: Vec<OperandInfo>,
    /// Read operands.
    pub inputs: Vec<OperandInfo>,
    /// The requested architecture, if any.
    pub arch: Option<Arch>,
    /// The run-time loop variables in scope whose value may differ between
    /// the lanes of a warp: a view indexed by one is no more the same in
    /// every lane than one indexed by the thread id.
    pub lane_dependent_loops: BTreeSet<u32>,
}

/// How far a pattern got before rejecting: the later, the nearer it is.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Progress {
    /// Another kind of spec.
    Kind,
    /// Other operand counts or memories.
    Operands,
    /// Other scalar types.
    Types,
    /// Another executing unit.
    Group,
    /// Another number of elements.
    Size,
    /// Elements not laid out as the instruction needs.
    Layout,
    /// Alignment not proven.
    Alignment,
    /// Everything fits but the target lacks the instruction.
    Target,
}

/// Why a pattern does not apply.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Reject {
    /// How far matching got.
    pub progress: Progress,
    /// The reason, in words.
    pub reason: String,
    /// A concrete fix, when there is one.
    pub help: Option<String>,
}

impl Reject {
    /// A rejection at `progress`.
    pub fn new(progress: Progress, reason: impl Into<String>) -> Reject {
        Reject {
            progress,
            reason: reason.into(),
            help: None,
        }
    }

    /// The same rejection with a fix.
    pub fn with_help(mut self, help: impl Into<String>) -> Reject {
        self.help = Some(help.into());
        self
    }
}

/// The result of matching one pattern.
pub type Matched = Result<Plan, Reject>;

/// The kinds of atomic specs, as the catalogue groups them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Family {
    /// `Move`.
    Move,
    /// `Move<async>`.
    AsyncMove,
    /// `Move<add>` (and `Move<masked, add>`).
    AddMove,
    /// `MatMul`, `MatMul<overwrite>`.
    MatMul,
    /// `MatMul<async>`.
    AsyncMatMul,
    /// `UnaryPointwise` and `BinaryPointwise`.
    Pointwise,
    /// `Reduction`.
    Reduction,
    /// `Shfl`.
    Shfl,
    /// `Init`.
    Init,
}

/// The family of a spec kind; `None` for the generic `Spec`.
pub fn family_of(kind: &SpecKind) -> Option<Family> {
    match kind {
        SpecKind::Move { add: true, .. } => Some(Family::AddMove),
        SpecKind::Move {
            asynchronous: false,
            add: false,
            ..
        } => Some(Family::Move),
        SpecKind::Move {
            asynchronous: true,
            add: false,
            ..
        } => Some(Family::AsyncMove),
        SpecKind::MatMul {
            asynchronous: false,
            ..
        } => Some(Family::MatMul),
        SpecKind::MatMul {
            asynchronous: true, ..
        } => Some(Family::AsyncMatMul),
        SpecKind::Unary(_) | SpecKind::Binary(_) | SpecKind::Ternary(_) | SpecKind::Select(_) => {
            Some(Family::Pointwise)
        }
        SpecKind::Reduction { .. } => Some(Family::Reduction),
        SpecKind::Shfl { .. } => Some(Family::Shfl),
        SpecKind::Init { .. } => Some(Family::Init),
        SpecKind::Generic => None,
    }
}

/// One entry of the catalogue.
#[derive(Clone, PartialEq, Debug)]
pub enum Pattern {
    /// Loads, stores, copies through registers, register moves, `cp.async`.
    Memory(memory::MemoryPattern),
    /// Conversions between scalar types.
    Convert(convert::ConvertPattern),
    /// `ldmatrix` and `mma`.
    Matrix(matrix::MatrixPattern),
    /// `fma`, pointwise arithmetic and `Init`.
    Arith(arith::ArithPattern),
    /// Shuffles and reductions.
    Warp(warp::WarpPattern),
    /// Hopper's warpgroup multiply from shared memory.
    Wgmma(wgmma::WgmmaPattern),
    /// Accumulating stores into global memory (`red.global.add`).
    Reduce(reduce::ReducePattern),
    /// A warp's row store, realigned to its destination.
    Row(row::RowPattern),
}

/// What an accepted pattern will emit.
#[derive(Clone, PartialEq, Debug)]
pub enum Plan {
    /// A memory pattern's plan.
    Memory(memory::MemoryPlan),
    /// A conversion's plan.
    Convert(convert::ConvertPlan),
    /// A matrix instruction's plan.
    Matrix(matrix::MatrixPlan),
    /// An arithmetic plan.
    Arith(arith::ArithPlan),
    /// A warp plan.
    Warp(warp::WarpPlan),
    /// A warpgroup multiply's plan.
    Wgmma(wgmma::WgmmaPlan),
    /// An accumulating store's plan: the pattern says it all.
    Reduce(reduce::ReducePattern),
    /// A realigned row store's plan.
    Row(row::RowPlan),
}

impl Pattern {
    /// The entry's name, e.g. `ld.global.v4.b32`.
    pub fn name(&self) -> String {
        match self {
            Pattern::Memory(p) => p.name(),
            Pattern::Convert(p) => p.name(),
            Pattern::Matrix(p) => p.name(),
            Pattern::Arith(p) => p.name(),
            Pattern::Warp(p) => p.name(),
            Pattern::Wgmma(p) => p.name(),
            Pattern::Reduce(p) => p.name(),
            Pattern::Row(p) => p.name(),
        }
    }

    /// The spec family it implements.
    pub fn family(&self) -> Family {
        match self {
            Pattern::Memory(p) => p.family(),
            Pattern::Convert(_) => Family::Move,
            Pattern::Matrix(p) => p.family(),
            Pattern::Arith(p) => p.family(),
            Pattern::Warp(p) => p.family(),
            Pattern::Wgmma(p) => p.family(),
            Pattern::Reduce(p) => p.family(),
            Pattern::Row(p) => p.family(),
        }
    }

    /// The lowest target with every instruction it emits.
    pub fn needs(&self) -> Sm {
        match self {
            Pattern::Memory(p) => p.needs(),
            Pattern::Convert(p) => p.needs(),
            Pattern::Matrix(p) => p.needs(),
            Pattern::Arith(p) => p.needs(),
            Pattern::Warp(_) => Sm(70),
            Pattern::Wgmma(p) => p.needs(),
            Pattern::Reduce(p) => p.needs(),
            Pattern::Row(p) => p.needs(),
        }
    }

    /// Matches `request`; on success, the plan.
    pub fn check(&self, request: &Request) -> Matched {
        let family = family_of(&request.kind);
        if family != Some(self.family()) {
            return Err(Reject::new(
                Progress::Kind,
                format!("implements another kind of spec than `{}`", request.kind),
            ));
        }
        let plan = match self {
            Pattern::Memory(p) => p.check(request),
            Pattern::Convert(p) => p.check(request),
            Pattern::Matrix(p) => p.check(request),
            Pattern::Arith(p) => p.check(request),
            Pattern::Warp(p) => p.check(request),
            Pattern::Wgmma(p) => p.check(request),
            Pattern::Reduce(p) => p.check(request),
            Pattern::Row(p) => p.check(request),
        }?;
        match request.arch {
            Some(arch) if arch.sm() < self.needs() => Err(Reject::new(
                Progress::Target,
                format!("needs {}; the target is {arch}", self.needs()),
            )
            .with_help(format!("compile for {} or later", self.needs()))),
            Some(_) | None => Ok(plan),
        }
    }
}

/// Every entry of the catalogue, in order of preference: the first that
/// accepts a spec is used. Built once: every atomic spec (each unrolled
/// iteration's included) is matched against it.
pub fn catalogue() -> &'static [Pattern] {
    static CATALOGUE: OnceLock<Vec<Pattern>> = OnceLock::new();
    CATALOGUE.get_or_init(build_catalogue)
}

fn build_catalogue() -> Vec<Pattern> {
    let mut all = Vec::new();
    all.extend(memory::patterns().into_iter().map(Pattern::Memory));
    all.extend(matrix::patterns().into_iter().map(Pattern::Matrix));
    all.extend(wgmma::patterns().into_iter().map(Pattern::Wgmma));
    all.extend(convert::patterns().into_iter().map(Pattern::Convert));
    all.extend(arith::patterns().into_iter().map(Pattern::Arith));
    all.extend(warp::patterns().into_iter().map(Pattern::Warp));
    all.extend(reduce::patterns().into_iter().map(Pattern::Reduce));
    all.extend(row::patterns().into_iter().map(Pattern::Row));
    all
}

/// How many candidates a "no instruction matches" diagnostic lists.
pub const CANDIDATES_SHOWN: usize = 4;

/// The first pattern accepting `request`, or the diagnostic listing the
/// nearest ones: same family first, then those that got furthest, then
/// catalogue order.
pub fn select(request: &Request) -> Result<(Pattern, Plan), Box<NoMatch>> {
    let family = family_of(&request.kind);
    let mut rejected = Vec::new();
    for (position, pattern) in catalogue().iter().enumerate() {
        // An entry of another family cannot match and is never shown as
        // near: skipped before its rejection is put in words, which would
        // cost every unrolled statement a formatted string per entry.
        if Some(pattern.family()) != family {
            continue;
        }
        match pattern.check(request) {
            Ok(plan) => return Ok((pattern.clone(), plan)),
            Err(reject) => rejected.push((position, pattern, reject)),
        }
    }
    // Entries of another family, or of another operation of the same family
    // (`max.f32` for an `exp`), are not near.
    rejected.retain(|(_, pattern, reject)| {
        Some(pattern.family()) == family && reject.progress > Progress::Kind
    });
    rejected.sort_by_key(|(position, _, reject)| (Reverse(reject.progress), *position));
    rejected.truncate(CANDIDATES_SHOWN);
    let help = rejected
        .first()
        .and_then(|(_, _, reject)| reject.help.clone());
    let help = help.or_else(|| match request.kind {
        SpecKind::Generic => Some("a generic `Spec` has no instruction: give it a body".into()),
        SpecKind::MatMul {
            asynchronous: true, ..
        } => Some(
            "`MatMul<async>` is the warpgroup multiply (`wgmma`, sm_90a): B a whole shared tile, \
             A one too or each warp's 16 rows in registers, executed by 128 threads such as \
             `#block.tile(128)`; a warp's `mma.sync` on register fragments is a plain `MatMul`"
                .into(),
        ),
        SpecKind::Move { .. }
        | SpecKind::MatMul { .. }
        | SpecKind::Unary(_)
        | SpecKind::Binary(_)
        | SpecKind::Ternary(_)
        | SpecKind::Select(_)
        | SpecKind::Reduction { .. }
        | SpecKind::Shfl { .. }
        | SpecKind::Init { .. } => None,
    });
    let operands = request
        .outputs
        .iter()
        .chain(&request.inputs)
        .map(|operand| OperandNote {
            role: operand.role.clone(),
            ty: operand.ty.clone(),
            span: operand.span,
        })
        .collect();
    Err(Box::new(NoMatch {
        span: request.span,
        spec: request.kind.to_string(),
        group: request.group.text.clone(),
        operands,
        candidates: rejected
            .into_iter()
            .map(|(_, pattern, reject)| Candidate {
                name: pattern.name(),
                reason: reject.reason,
            })
            .collect(),
        help,
    }))
}

impl KernelLowering<'_, '_> {
    /// The request for atomic spec `spec` (unrolled variables substituted).
    pub fn request(&self, spec: &SpecStmt) -> Request {
        let analyse = |views: &[crate::ir::View], role: &dyn Fn(usize) -> String| {
            views
                .iter()
                .enumerate()
                .map(|(i, view)| {
                    OperandInfo::analyse(
                        view,
                        role(i),
                        view.ty.display(&self.names).to_string(),
                        &self.out.prover,
                        &self.names,
                    )
                })
                .collect::<Vec<_>>()
        };
        let outputs = analyse(&spec.outputs, &|i| {
            numbered("output", i, spec.outputs.len())
        });
        let inputs = analyse(&spec.inputs, &|i| numbered("input", i, spec.inputs.len()));
        Request {
            kind: spec.kind.clone(),
            span: spec.span,
            group: GroupInfo::analyse(&spec.threads, self.block_size, &self.names),
            outputs,
            inputs,
            arch: self.options.arch,
            lane_dependent_loops: self.lane_dependent_loops.clone(),
        }
    }
}

fn numbered(role: &str, i: usize, count: usize) -> String {
    if count == 1 {
        role.to_string()
    } else {
        format!("{role} {}", i + 1)
    }
}

/// Selects and emits the instructions of atomic spec `spec`.
pub fn lower_atomic(lowering: &mut KernelLowering, spec: &SpecStmt) -> Result<(), LowerError> {
    if bulk::is_bulk(spec) {
        lowering.wgmma_batch_open = false;
        return bulk::emit(lowering, spec);
    }
    let request = lowering.request(spec);
    // An operand whose elements cannot even be listed (a symbolic extent)
    // matches no entry; say why directly rather than through every entry.
    for operand in request.outputs.iter().chain(&request.inputs) {
        if let Err(reason) = &operand.place {
            return Err(LowerError::unsupported(
                operand.span,
                format!(
                    "the {} of this atomic spec cannot be compiled: {reason}",
                    operand.role
                ),
                "give every operand of an atomic spec a constant per-thread shape (tile and \
                 index until each thread's view has constant extents)",
            ));
        }
    }
    let (_, plan) = select(&request).map_err(LowerError::NoMatch)?;
    let emitted = match &plan {
        Plan::Memory(plan) => memory::emit(lowering, &request, plan),
        Plan::Convert(plan) => convert::emit(lowering, &request, plan),
        Plan::Matrix(plan) => matrix::emit(lowering, &request, plan),
        Plan::Arith(plan) => arith::emit(lowering, &request, plan),
        Plan::Warp(plan) => warp::emit(lowering, &request, plan),
        Plan::Wgmma(plan) => wgmma::emit(lowering, &request, plan),
        Plan::Reduce(plan) => reduce::emit(lowering, &request, plan),
        Plan::Row(plan) => row::emit(lowering, &request, plan),
    };
    match plan {
        Plan::Wgmma(_) => {}
        Plan::Memory(_)
        | Plan::Convert(_)
        | Plan::Matrix(_)
        | Plan::Arith(_)
        | Plan::Warp(_)
        | Plan::Reduce(_)
        | Plan::Row(_) => {
            lowering.wgmma_batch_open = false;
            if request
                .outputs
                .iter()
                .any(|o| o.memory == Memory::Registers)
            {
                lowering.register_work_since_mma_commit = true;
            }
        }
    }
    emitted
}

/// Shared checks: `count` outputs and inputs, each in one of the memories
/// listed (`outputs`, `inputs`); the reason names what was found.
pub fn expect_operands(
    request: &Request,
    outputs: &[&[Memory]],
    inputs: &[&[Memory]],
    what: &str,
) -> Result<(), Reject> {
    let fits = |operands: &[OperandInfo], wanted: &[&[Memory]]| {
        operands.len() == wanted.len()
            && operands
                .iter()
                .zip(wanted)
                .all(|(operand, memories)| memories.contains(&operand.memory))
    };
    if fits(&request.outputs, outputs) && fits(&request.inputs, inputs) {
        return Ok(());
    }
    let list = |operands: &[OperandInfo]| {
        operands
            .iter()
            .map(|operand| operand.memory.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(Reject::new(
        Progress::Operands,
        format!(
            "{what}; this spec writes [{}] from [{}]",
            list(&request.outputs),
            list(&request.inputs)
        ),
    ))
}

/// Shared check: the executing unit is each thread alone.
pub fn expect_thread(request: &Request) -> Result<(), Reject> {
    match request.group.unit {
        super::group::Unit::Thread => Ok(()),
        super::group::Unit::Warp
        | super::group::Unit::QuadPair
        | super::group::Unit::Warpgroup
        | super::group::Unit::Warps { .. }
        | super::group::Unit::Lanes { .. }
        | super::group::Unit::Other(_) => Err(Reject::new(
            Progress::Group,
            format!(
                "is executed by each thread alone (group `[]` or `[1]`); `{}` is {}",
                request.group.text,
                request.group.describe()
            ),
        )
        .with_help("execute per-thread specs with a `.scalar()` group")),
    }
}

/// Shared check: every operand has scalar type `scalar`.
pub fn expect_scalar(request: &Request, scalars: &[crate::ir::Scalar]) -> Result<(), Reject> {
    for operand in request.outputs.iter().chain(&request.inputs) {
        if !scalars.contains(&operand.scalar) {
            let wanted: Vec<&str> = scalars.iter().map(|s| s.name()).collect();
            return Err(Reject::new(
                Progress::Types,
                format!(
                    "works on {}; the {} is {}",
                    wanted.join(" or "),
                    operand.role,
                    operand.scalar.name()
                ),
            ));
        }
    }
    Ok(())
}

/// Shared check: the output has the input's scalar type (a move or an
/// exchange that does not convert).
pub fn expect_same_scalar(request: &Request) -> Result<(), Reject> {
    let (out, input) = (&request.outputs[0], &request.inputs[0]);
    if out.scalar == input.scalar {
        return Ok(());
    }
    Err(Reject::new(
        Progress::Types,
        format!(
            "does not convert; the input is {}, the output {}",
            input.scalar.name(),
            out.scalar.name()
        ),
    ))
}

/// Shared check: the executing unit is one whole warp.
pub fn expect_warp(request: &Request) -> Result<(), Reject> {
    if request.group.unit == super::group::Unit::Warp {
        return Ok(());
    }
    Err(Reject::new(
        Progress::Group,
        format!(
            "is executed by a whole warp; `{}` is {}",
            request.group.text,
            request.group.describe()
        ),
    ))
}

/// Shared check: the output holds as many elements as the input.
pub fn expect_same_count(request: &Request) -> Result<(), Reject> {
    let (out, input) = (&request.outputs[0], &request.inputs[0]);
    if out.count == input.count {
        return Ok(());
    }
    Err(Reject::new(
        Progress::Size,
        format!(
            "moves as many elements as it reads; the output has {}, the input {}",
            out.count, input.count
        ),
    ))
}

/// Shared check: a memory operand is moved by one load or store (2, 4, 8 or
/// 16 contiguous, aligned bytes); register operands pass.
pub fn expect_single_access(operand: &OperandInfo) -> Result<(), Reject> {
    if operand.memory == Memory::Registers {
        return Ok(());
    }
    let bytes = operand.bytes();
    if ![2, 4, 8, 16].contains(&bytes) {
        let reject = Reject::new(
            Progress::Size,
            format!(
                "reads or writes memory with one access of 2, 4, 8 or 16 bytes; the {} has {} \
                 bytes",
                operand.role, bytes
            ),
        );
        return Err(if bytes > 16 {
            reject.with_help("tile the memory operand into pieces of at most 16 bytes")
        } else {
            reject
        });
    }
    let place = operand
        .memory_place()
        .map_err(|reason| Reject::new(Progress::Layout, reason))?;
    if !place.contiguous {
        return Err(Reject::new(
            Progress::Layout,
            format!(
                "the {} {}",
                operand.role,
                place.why_not_contiguous(operand.count)
            ),
        ));
    }
    if place.align < bytes {
        return Err(alignment_reject(operand, bytes));
    }
    Ok(())
}

/// Shared check for inputs: as [`expect_single_access`], where a broadcast
/// operand is read as its distinct elements (one access of those).
pub fn expect_single_read(operand: &OperandInfo) -> Result<(), Reject> {
    expect_single_access(operand.read_access())
}

/// Shared check: a 16-bit register operand's elements are packed pairs.
pub fn expect_packed(operand: &OperandInfo) -> Result<(), Reject> {
    match operand.memory {
        Memory::Registers => operand.packed_pairs().map(|_| ()).map_err(|reason| {
            Reject::new(Progress::Layout, reason).with_help(
                "lay the register tensor out so that each pair of elements is one register's \
                 two halves, slots 2r and 2r+1 (e.g. a row-major `[2, 4 : 4, 1]` tiled by \
                 `[1, 2]`)",
            )
        }),
        Memory::Global | Memory::Shared => Ok(()),
    }
}

/// Shared check: outputs and inputs have `count` elements each.
pub fn expect_counts(request: &Request, counts: &[usize], what: &str) -> Result<(), Reject> {
    let operands: Vec<&OperandInfo> = request.outputs.iter().chain(&request.inputs).collect();
    for (operand, count) in operands.iter().zip(counts) {
        if operand.count != *count {
            return Err(Reject::new(
                Progress::Size,
                format!(
                    "{what}; the {} has {} element{}",
                    operand.role,
                    operand.count,
                    if operand.count == 1 { "" } else { "s" }
                ),
            ));
        }
    }
    Ok(())
}

/// A rejection for an operand whose alignment to `bytes` is not proven,
/// with the fix.
pub fn alignment_reject(operand: &OperandInfo, bytes: u32) -> Reject {
    let elements = bytes / operand.scalar.bytes();
    Reject::new(Progress::Alignment, operand.alignment_reason(bytes)).with_help(format!(
        "start each thread's view at a multiple of {elements} elements ({bytes} bytes), \
         padding the tensor if needed, or move smaller pieces"
    ))
}
