//! Stage 3, lowering (instruction selection): the warp-collective matrix
//! instructions. `ldmatrix` moves 8×8 16-bit matrices from shared memory
//! into registers (each thread gives one 16-byte row, receives one packed
//! pair per matrix); `mma.sync.m16n8k16` and the Volta quad-pair
//! `mma.sync.m8n8k4` multiply register fragments. Which element each thread
//! holds, and the per-thread shapes the fragments must have, are the
//! atoms' (`crate::atoms`, docs/atoms.md); docs/lowering.md.

use super::super::error::LowerError;
use super::super::group::Unit;
use super::super::kernel::KernelLowering;
use super::super::views::OperandInfo;
use super::{Family, Matched, Plan, Progress, Reject, Request};
use super::{expect_counts, expect_operands, expect_packed};
use crate::atoms::{self, LdmatrixCount, Mma};
use crate::ir::{Memory, Scalar};
use crate::ptx::{Operand, Reg, Sm, imm};

/// The matrix entries of the catalogue.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MatrixPattern {
    /// `ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16`.
    Ldmatrix {
        /// 1, 2 or 4 matrices.
        count: LdmatrixCount,
    },
    /// `mma.sync.aligned.m16n8k16.row.col`.
    Mma16816 {
        /// fp16 or bf16 inputs.
        inputs: Scalar,
        /// fp32 or fp16 accumulators.
        accumulator: Scalar,
    },
    /// `mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32` (one quad pair).
    Mma884,
}

/// What an accepted matrix pattern emits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct MatrixPlan {
    pattern: MatrixPattern,
    /// `ldmatrix .trans`: the rows in memory are the columns of the
    /// fragment (docs/lowering.md).
    transpose: bool,
}

/// Every matrix pattern.
pub fn patterns() -> Vec<MatrixPattern> {
    vec![
        MatrixPattern::Ldmatrix {
            count: LdmatrixCount::X4,
        },
        MatrixPattern::Ldmatrix {
            count: LdmatrixCount::X2,
        },
        MatrixPattern::Ldmatrix {
            count: LdmatrixCount::X1,
        },
        MatrixPattern::Mma16816 {
            inputs: Scalar::Fp16,
            accumulator: Scalar::Fp32,
        },
        MatrixPattern::Mma16816 {
            inputs: Scalar::Bf16,
            accumulator: Scalar::Fp32,
        },
        MatrixPattern::Mma16816 {
            inputs: Scalar::Fp16,
            accumulator: Scalar::Fp16,
        },
        MatrixPattern::Mma884,
    ]
}

/// The PTX type suffix of a scalar type.
pub(super) fn type_name(scalar: Scalar) -> &'static str {
    match scalar {
        Scalar::Fp16 => "f16",
        Scalar::Bf16 => "bf16",
        Scalar::Fp32 => "f32",
        Scalar::I32 => "s32",
        Scalar::U32 => "u32",
        Scalar::Mbarrier => "b64",
    }
}

impl MatrixPattern {
    /// The entry's name.
    pub fn name(&self) -> String {
        match *self {
            MatrixPattern::Ldmatrix { count } => {
                let matrices = count.matrices();
                format!("ldmatrix.sync.aligned.m8n8.x{matrices}[.trans].shared.b16")
            }
            MatrixPattern::Mma16816 {
                inputs,
                accumulator,
            } => format!(
                "mma.sync.aligned.m16n8k16.row.col.{acc}.{ab}.{ab}.{acc}",
                acc = type_name(accumulator),
                ab = type_name(inputs)
            ),
            MatrixPattern::Mma884 => "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32".into(),
        }
    }

    /// Its spec family.
    pub fn family(&self) -> Family {
        match self {
            MatrixPattern::Ldmatrix { .. } => Family::Move,
            MatrixPattern::Mma16816 { .. } | MatrixPattern::Mma884 => Family::MatMul,
        }
    }

    /// The lowest target with the instruction.
    pub fn needs(&self) -> Sm {
        match self {
            MatrixPattern::Ldmatrix { .. } => Sm(75),
            MatrixPattern::Mma16816 { .. } => Sm(80),
            MatrixPattern::Mma884 => Sm(70),
        }
    }

    /// Matches a request.
    pub fn check(&self, request: &Request) -> Matched {
        match *self {
            MatrixPattern::Ldmatrix { count } => check_ldmatrix(request, count),
            MatrixPattern::Mma16816 {
                inputs,
                accumulator,
            } => {
                let scalars = [accumulator, inputs, inputs];
                check_mma(request, Unit::Warp, scalars, &atoms::mma_m16n8k16())?;
                Ok(self.plan())
            }
            MatrixPattern::Mma884 => {
                let scalars = [Scalar::Fp32, Scalar::Fp16, Scalar::Fp16];
                check_mma(request, Unit::QuadPair, scalars, &atoms::mma_m8n8k4())?;
                Ok(self.plan())
            }
        }
    }

    fn plan(&self) -> Plan {
        Plan::Matrix(MatrixPlan {
            pattern: *self,
            transpose: false,
        })
    }
}

fn check_ldmatrix(request: &Request, count: LdmatrixCount) -> Matched {
    expect_operands(
        request,
        &[&[Memory::Registers]],
        &[&[Memory::Shared]],
        "moves shared memory → registers",
    )?;
    let (out, input) = (&request.outputs[0], &request.inputs[0]);
    if input.scalar.bytes() != 2 || out.scalar != input.scalar {
        return Err(Reject::new(
            Progress::Types,
            format!(
                "moves 16-bit elements without converting; this spec moves {} → {}",
                input.scalar.name(),
                out.scalar.name()
            ),
        ));
    }
    expect_warp(request, Unit::Warp)?;
    let (atom, matrices) = (atoms::ldmatrix(count, false), count.matrices());
    expect_counts(
        request,
        &[
            atom.values.values() as usize,
            atom.addresses.values() as usize,
        ],
        &format!(
            "gives each thread one 16-byte row to read (8 elements) and {} packed pair{}",
            matrices,
            if matrices == 1 { "" } else { "s" }
        ),
    )?;
    let place = input
        .memory_place()
        .map_err(|reason| Reject::new(Progress::Layout, reason))?;
    if !place.contiguous {
        return Err(Reject::new(
            Progress::Layout,
            format!(
                "each thread's input must be one row of 8 contiguous elements; the input {}",
                place.why_not_contiguous(input.count)
            ),
        )
        .with_help(
            "lay the shared tile out so that each thread's 8 elements are contiguous, e.g. \
             row-major `[16, 16 : 16, 1]` for rows of 8",
        ));
    }
    expect_packed(out)?;
    if place.align < 16 {
        return Err(Reject::new(Progress::Alignment, input.alignment_reason(16)));
    }
    Ok(Plan::Matrix(MatrixPlan {
        pattern: MatrixPattern::Ldmatrix { count },
        transpose: transposes(input, out),
    }))
}

/// `.trans` when the direction of a memory row (the mode of extent 8 of the
/// input's innermost level) differs from the direction of a register pair
/// (the mode of extent 2 of the output's innermost level). Rank-1 views have
/// no direction: no transpose.
fn transposes(input: &OperandInfo, out: &OperandInfo) -> bool {
    let direction = |dims: Option<&Vec<i64>>, extent: i64| -> Option<usize> {
        let dims = dims?;
        let long: Vec<usize> = (0..dims.len()).filter(|i| dims[*i] == extent).collect();
        let rest_unit = dims
            .iter()
            .enumerate()
            .all(|(i, d)| *d == 1 || long.contains(&i));
        (dims.len() >= 2 && long.len() == 1 && rest_unit).then(|| long[0])
    };
    match (
        direction(input.dims.last(), 8),
        direction(out.dims.last(), 2),
    ) {
        (Some(row), Some(pair)) => row != pair,
        (Some(_), None) | (None, Some(_)) | (None, None) => false,
    }
}

fn expect_warp(request: &Request, unit: Unit) -> Result<(), Reject> {
    if request.group.unit == unit {
        return Ok(());
    }
    let wanted = match unit {
        Unit::QuadPair => "a Volta quad pair, the group `[(4,2) : (1,16)]` innermost",
        Unit::Thread
        | Unit::Warp
        | Unit::Warpgroup
        | Unit::Warps { .. }
        | Unit::Lanes { .. }
        | Unit::Other(_) => "a whole warp, 32 consecutive threads from a multiple of 32",
    };
    Err(Reject::new(
        Progress::Group,
        format!(
            "is executed by {wanted}; `{}` is {}",
            request.group.text,
            request.group.describe()
        ),
    ))
}

fn check_mma(
    request: &Request,
    unit: Unit,
    scalars: [Scalar; 3],
    atom: &Mma,
) -> Result<(), Reject> {
    let rf: &[Memory] = &[Memory::Registers];
    expect_operands(request, &[rf], &[rf, rf], "multiplies register fragments")?;
    let operands = [&request.outputs[0], &request.inputs[0], &request.inputs[1]];
    if operands.iter().zip(&scalars).any(|(op, s)| op.scalar != *s) {
        return Err(Reject::new(
            Progress::Types,
            format!(
                "computes {} += {} · {}; this spec has {} += {} · {}",
                scalars[0].name(),
                scalars[1].name(),
                scalars[2].name(),
                operands[0].scalar.name(),
                operands[1].scalar.name(),
                operands[2].scalar.name()
            ),
        ));
    }
    expect_warp(request, unit)?;
    let names = ["C", "A", "B"];
    let fragments = [&atom.c, &atom.a, &atom.b];
    for ((operand, fragment), name) in operands.iter().zip(fragments).zip(names) {
        let count = fragment.values() as usize;
        if operand.count != count {
            return Err(Reject::new(
                Progress::Size,
                format!(
                    "takes {count} elements of {name} per thread; the {} has {}",
                    operand.role, operand.count
                ),
            ));
        }
    }
    for ((operand, fragment), name) in operands.iter().zip(fragments).zip(names) {
        let expected = fragment.levels();
        if name == "A" && is_c_pair(&operand.dims, &atom.c.levels()) {
            // Two column-adjacent C fragments as A (attention's P): accepted
            // only because the atom tables prove them the same elements.
            atom.c_pair_is_a().map_err(|mismatch| {
                Reject::new(
                    Progress::Layout,
                    format!("takes two C fragments side by side as A only where they are A; here {mismatch}"),
                )
            })?;
        } else if essential(&operand.dims) != essential(&expected) {
            return Err(Reject::new(
                Progress::Layout,
                format!(
                    "wants {name} per thread as {}; the {} is {}",
                    shape_text(&expected),
                    operand.role,
                    shape_text(&operand.dims)
                ),
            ));
        }
        if operand.scalar.bytes() == 2 {
            expect_packed(operand)?;
        }
    }
    Ok(())
}

/// Whether `dims` are the C fragments (of levels `c_levels`) of two
/// column-adjacent tiles: a level holding the pair — `[1,2]` along the
/// columns, or `[2]` where a mode of column tiles was split in pairs —
/// around the C fragment's levels, unit levels aside.
pub(super) fn is_c_pair(dims: &[Vec<i64>], c_levels: &[Vec<i64>]) -> bool {
    let mut levels = dims
        .iter()
        .skip_while(|level| level.iter().all(|e| *e == 1));
    let pair = levels.next().map(Vec::as_slice);
    let rest: Vec<Vec<i64>> = levels.cloned().collect();
    matches!(pair, Some([2] | [1, 2])) && essential(&rest) == essential(c_levels)
}

/// A fragment shape up to unit extents: per level, the position and extent
/// of each mode longer than 1, levels without one dropped. `[2].[2,1]` (a
/// B fragment indexed out of a wider register tensor) is `[2,1].[2,1]`;
/// `[2,2].[2,1]` is not `[2,2].[1,2]` (its pairs run along the other mode).
pub(super) fn essential(levels: &[Vec<i64>]) -> Vec<Vec<(usize, i64)>> {
    levels
        .iter()
        .map(|level| {
            level
                .iter()
                .enumerate()
                .filter(|(_, extent)| **extent > 1)
                .map(|(position, extent)| (position, *extent))
                .collect::<Vec<_>>()
        })
        .filter(|level| !level.is_empty())
        .collect()
}

pub(super) fn shape_text(levels: &[Vec<i64>]) -> String {
    levels
        .iter()
        .map(|level| {
            let dims: Vec<String> = level.iter().map(i64::to_string).collect();
            format!("[{}]", dims.join(","))
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// Emits an accepted matrix plan.
pub fn emit(
    lowering: &mut KernelLowering,
    request: &Request,
    plan: &MatrixPlan,
) -> Result<(), LowerError> {
    match plan.pattern {
        MatrixPattern::Ldmatrix { count } => {
            let matrices = count.matrices();
            let (out, input) = (&request.outputs[0], &request.inputs[0]);
            let address = lowering.address(input, 0)?;
            let words = lowering.target_words(out)?;
            let trans = if plan.transpose { ".trans" } else { "" };
            let name = format!("ldmatrix.sync.aligned.m8n8.x{matrices}{trans}.shared.b16");
            lowering
                .out
                .emit(&name, vec![Operand::Vector(words), address.into()])
        }
        MatrixPattern::Mma16816 { .. } | MatrixPattern::Mma884 => {
            let (c, a, b) = (&request.outputs[0], &request.inputs[0], &request.inputs[1]);
            let a = lowering.read_words(a)?;
            let b = lowering.read_words(b)?;
            let c_words = lowering.target_words(c)?;
            let accumulate = request.kind.accumulates();
            if !accumulate {
                zero(lowering, &c_words)?;
            }
            let name = MatrixPattern::name(&plan.pattern);
            lowering.out.emit(
                &name,
                vec![
                    Operand::Vector(c_words.clone()),
                    Operand::Vector(a),
                    Operand::Vector(b),
                    Operand::Vector(c_words),
                ],
            )
        }
    }
}

/// Sets accumulator registers to zero (`MatMul<overwrite>`).
fn zero(lowering: &mut KernelLowering, words: &[Reg]) -> Result<(), LowerError> {
    for word in words {
        match word.class {
            crate::ptx::RegClass::F32 => lowering
                .out
                .emit("mov.f32", vec![(*word).into(), Operand::f32(0.0)])?,
            crate::ptx::RegClass::Pred
            | crate::ptx::RegClass::B16
            | crate::ptx::RegClass::F16
            | crate::ptx::RegClass::B32
            | crate::ptx::RegClass::B64 => {
                lowering.out.emit("mov.b32", vec![(*word).into(), imm(0)])?
            }
        }
    }
    Ok(())
}
