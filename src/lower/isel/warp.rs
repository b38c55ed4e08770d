//! Stage 3, lowering (instruction selection): exchanges inside a warp.
//! `Shfl<bfly, m>` is one `shfl.sync.bfly.b32` per 32-bit word; a
//! `Reduction` folds each thread's elements, then — when the executing unit
//! is a warp or an aligned power-of-two set of lanes — combines the threads
//! of the unit with a butterfly of shuffles, after which every thread holds
//! the result. A unit of several whole warps continues across the warps
//! through shared memory (`block.rs`).

use super::super::error::LowerError;
use super::super::group::Unit;
use super::super::kernel::KernelLowering;
use super::super::views::OperandInfo;
use super::block;
use super::{Family, Matched, Plan, Progress, Reject, Request};
use super::{
    expect_operands, expect_packed, expect_same_count, expect_same_scalar, expect_single_read,
    expect_warp,
};
use crate::ir::{Memory, ReduceOp, Scalar, SpecKind};
use crate::ptx::{Reg, imm};

/// Every lane of a warp takes part in every shuffle.
const FULL_MASK: i64 = -1;

/// The butterfly over a whole warp, widest exchange first.
const WARP_MASKS: [u32; 5] = [16, 8, 4, 2, 1];

/// The warp entries of the catalogue.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum WarpPattern {
    /// `shfl.sync.bfly.b32`.
    Shfl,
    /// A reduction with `op`: per-thread fold, then a butterfly.
    Reduce(ReduceOp),
}

/// What an accepted warp pattern emits.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct WarpPlan {
    pattern: WarpPattern,
    /// The butterfly's lane masks (empty: each thread alone).
    masks: Vec<u32>,
    /// The warps of one instance: above 1, a reduction continues across
    /// them through shared memory (a block reduction).
    warps: u32,
}

impl WarpPlan {
    /// The warps of one instance (1: a warp or less, shuffles alone).
    pub fn warps(&self) -> u32 {
        self.warps
    }
}

/// Every warp pattern.
pub fn patterns() -> Vec<WarpPattern> {
    vec![
        WarpPattern::Shfl,
        WarpPattern::Reduce(ReduceOp::Add),
        WarpPattern::Reduce(ReduceOp::Max),
    ]
}

/// The PTX name of `op` on registers holding `scalar` (`add.f32`, `max.s32`).
pub(super) fn op_name(op: ReduceOp, scalar: Scalar) -> String {
    let op = match op {
        ReduceOp::Add => "add",
        ReduceOp::Max => "max",
    };
    let ty = match scalar {
        Scalar::I32 => "s32",
        Scalar::U32 | Scalar::Mbarrier => "u32",
        Scalar::Fp32 | Scalar::Fp16 | Scalar::Bf16 => "f32",
    };
    format!("{op}.{ty}")
}

impl WarpPattern {
    /// The entry's name.
    pub fn name(&self) -> String {
        match self {
            WarpPattern::Shfl => "shfl.sync.bfly.b32".into(),
            WarpPattern::Reduce(op) => format!(
                "{} + shfl.sync.bfly.b32 butterfly",
                op_name(*op, Scalar::Fp32)
            ),
        }
    }

    /// Its spec family.
    pub fn family(&self) -> Family {
        match self {
            WarpPattern::Shfl => Family::Shfl,
            WarpPattern::Reduce(_) => Family::Reduction,
        }
    }

    /// Matches a request.
    pub fn check(&self, request: &Request) -> Matched {
        match self {
            WarpPattern::Shfl => check_shfl(request),
            WarpPattern::Reduce(op) => check_reduce(request, *op),
        }
    }
}

fn check_shfl(request: &Request) -> Matched {
    let rf: &[Memory] = &[Memory::Registers];
    expect_operands(request, &[rf], &[rf], "exchanges registers")?;
    let (out, input) = (&request.outputs[0], &request.inputs[0]);
    expect_same_scalar(request)?;
    expect_warp(request)?;
    expect_same_count(request)?;
    let mask = match request.kind {
        SpecKind::Shfl { mask } => mask,
        SpecKind::Move { .. }
        | SpecKind::MatMul { .. }
        | SpecKind::Unary(_)
        | SpecKind::Binary(_)
        | SpecKind::Ternary(_)
        | SpecKind::Select(_)
        | SpecKind::Reduction { .. }
        | SpecKind::Init { .. }
        | SpecKind::Generic => 0,
    };
    if mask >= 32 {
        return Err(Reject::new(
            Progress::Size,
            format!("exchanges with lane `lane ^ mask` for a mask below 32; the mask is {mask}"),
        ));
    }
    if out.scalar.bytes() == 2 {
        expect_packed(out)?;
        expect_packed(input)?;
    }
    Ok(Plan::Warp(WarpPlan {
        pattern: WarpPattern::Shfl,
        masks: vec![mask],
        warps: 1,
    }))
}

fn check_reduce(request: &Request, op: ReduceOp) -> Matched {
    let any = [Memory::Registers, Memory::Global, Memory::Shared];
    expect_operands(
        request,
        &[&[Memory::Registers]],
        &[&any],
        "reduces into registers",
    )?;
    let SpecKind::Reduction { op: wanted, axes } = &request.kind else {
        return Err(Reject::new(Progress::Kind, "implements `Reduction`"));
    };
    if *wanted != op {
        return Err(Reject::new(
            Progress::Kind,
            "reduces with another operation",
        ));
    }
    let (out, input) = (&request.outputs[0], &request.inputs[0]);
    let scalars = [Scalar::Fp32, Scalar::I32, Scalar::U32];
    if out.scalar != input.scalar || !scalars.contains(&input.scalar) {
        return Err(Reject::new(
            Progress::Types,
            format!(
                "reduces fp32, i32 or u32 into the same type; this spec reduces {} into {}",
                input.scalar.name(),
                out.scalar.name()
            ),
        ));
    }
    let (masks, warps) = match &request.group.unit {
        Unit::Thread => (Vec::new(), 1),
        Unit::Warp => (WARP_MASKS.to_vec(), 1),
        Unit::Lanes { masks } => (masks.iter().rev().copied().collect(), 1),
        // Four warps like any others: a reduction does not use the
        // warpgroup's instructions.
        Unit::Warpgroup => (WARP_MASKS.to_vec(), 4),
        Unit::Warps { count } => (WARP_MASKS.to_vec(), *count),
        Unit::QuadPair | Unit::Other(_) => {
            return Err(Reject::new(
                Progress::Group,
                format!(
                    "is executed by one thread, a warp, an aligned power-of-two set of lanes or \
                     whole warps (N consecutive threads from a multiple of N); `{}` is {}",
                    request.group.text,
                    request.group.describe()
                ),
            ));
        }
    };
    let kept =
        kept_positions(input, axes).map_err(|reason| Reject::new(Progress::Layout, reason))?;
    let results = kept.iter().max().map_or(1, |last| last + 1);
    if out.count != results {
        return Err(Reject::new(
            Progress::Size,
            format!(
                "gives one element per coordinate of the kept modes ({results}); the output \
                 has {}",
                out.count
            ),
        ));
    }
    expect_single_read(input)?;
    Ok(Plan::Warp(WarpPlan {
        pattern: WarpPattern::Reduce(op),
        masks,
        warps,
    }))
}

/// For each element of `input`, the index among the kept coordinates
/// (colexicographic over the logical modes not in `axes`). A mode of a view
/// of several levels of one rank is logical mode i of every level, inner
/// levels its low digits (docs/language.md, "Element order"): the scores
/// `[1,4].[1,2].[2,1].[1,2]` of a tile reduced over axis 1 keep their 2 rows.
fn kept_positions(input: &OperandInfo, axes: &[u32]) -> Result<Vec<usize>, String> {
    let rank = input.modes.first().map_or(0, Vec::len);
    if input.modes.iter().any(|level| level.len() != rank) {
        return Err(format!(
            "reduces a view whose levels have one rank; the input's {} levels differ",
            input.modes.len()
        ));
    }
    if let Some(axis) = axes.iter().find(|axis| **axis as usize >= rank) {
        return Err(format!(
            "axis {axis} is out of range: the input has {rank} modes"
        ));
    }
    // Each leaf in element order (innermost level first): its extent, its
    // logical mode, and the weight of its digit in that mode.
    let mut extents = vec![1usize; rank];
    let mut leaves = Vec::new();
    for (dims, modes) in input.dims.iter().zip(&input.modes).rev() {
        let mut next = 0;
        for (mode, count) in modes.iter().enumerate() {
            for extent in &dims[next..next + count] {
                leaves.push((*extent as usize, mode, extents[mode]));
                extents[mode] *= *extent as usize;
            }
            next += count;
        }
    }
    Ok((0..input.count)
        .map(|element| {
            let mut rest = element;
            let mut logical = vec![0usize; rank];
            for (extent, mode, weight) in &leaves {
                logical[*mode] += (rest % extent) * weight;
                rest /= extent;
            }
            let (mut position, mut scale) = (0, 1);
            for (mode, coordinate) in logical.iter().enumerate() {
                if !axes.contains(&(mode as u32)) {
                    position += coordinate * scale;
                    scale *= extents[mode];
                }
            }
            position
        })
        .collect())
}

/// Emits an accepted warp plan.
pub fn emit(
    lowering: &mut KernelLowering,
    request: &Request,
    plan: &WarpPlan,
) -> Result<(), LowerError> {
    let (out, input) = (&request.outputs[0], &request.inputs[0]);
    match plan.pattern {
        WarpPattern::Shfl => {
            let sources = lowering.read_words(input)?;
            let targets = lowering.target_words(out)?;
            for (target, source) in targets.into_iter().zip(sources) {
                shuffle(lowering, target, source, plan.masks[0])?;
            }
            Ok(())
        }
        WarpPattern::Reduce(op) => {
            let axes = match &request.kind {
                SpecKind::Reduction { axes, .. } => axes.clone(),
                SpecKind::Move { .. }
                | SpecKind::MatMul { .. }
                | SpecKind::Unary(_)
                | SpecKind::Binary(_)
                | SpecKind::Ternary(_)
                | SpecKind::Select(_)
                | SpecKind::Shfl { .. }
                | SpecKind::Init { .. }
                | SpecKind::Generic => Vec::new(),
            };
            let positions = kept_positions(input, &axes).map_err(|reason| {
                LowerError::unsupported(request.span, reason, "a lowering bug")
            })?;
            let values = lowering.read_words(input)?;
            let targets = lowering.target_words(out)?;
            let name = op_name(op, input.scalar);
            let mov = match input.scalar {
                Scalar::Fp32 | Scalar::Fp16 | Scalar::Bf16 => "mov.f32",
                Scalar::I32 | Scalar::U32 | Scalar::Mbarrier => "mov.b32",
            };
            for (k, target) in targets.iter().enumerate() {
                let mine: Vec<Reg> = positions
                    .iter()
                    .zip(&values)
                    .filter(|(position, _)| **position == k)
                    .map(|(_, value)| *value)
                    .collect();
                match mine.as_slice() {
                    [] => continue,
                    [only] => lowering
                        .out
                        .emit(mov, vec![(*target).into(), (*only).into()])?,
                    [first, second, rest @ ..] => {
                        lowering.out.emit(
                            &name,
                            vec![(*target).into(), (*first).into(), (*second).into()],
                        )?;
                        for value in rest {
                            lowering.out.emit(
                                &name,
                                vec![(*target).into(), (*target).into(), (*value).into()],
                            )?;
                        }
                    }
                }
                butterfly(lowering, &name, *target, &plan.masks)?;
            }
            if plan.warps > 1 {
                block::across_warps(lowering, op, input.scalar, &targets, plan.warps)?;
            }
            Ok(())
        }
    }
}

/// `target = target op (target of lane ^ mask)` for each mask in turn:
/// afterwards every lane of the masks' span holds the whole combination.
pub(super) fn butterfly(
    lowering: &mut KernelLowering,
    op_name: &str,
    target: Reg,
    masks: &[u32],
) -> Result<(), LowerError> {
    for mask in masks {
        let other = lowering.out.reg(target.class);
        shuffle(lowering, other, target, *mask)?;
        lowering
            .out
            .emit(op_name, vec![target.into(), target.into(), other.into()])?;
    }
    Ok(())
}

fn shuffle(lowering: &mut KernelLowering, d: Reg, a: Reg, mask: u32) -> Result<(), LowerError> {
    lowering.out.emit(
        "shfl.sync.bfly.b32",
        vec![
            d.into(),
            a.into(),
            imm(i64::from(mask)),
            imm(31),
            imm(FULL_MASK),
        ],
    )
}
