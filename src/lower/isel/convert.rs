//! Stage 3, lowering (instruction selection): `Move` between scalar types,
//! each thread alone — fp32 → fp16/bf16 two at a time (`cvt.rn.f16x2.f32`
//! packs a register pair) or one at a time, fp16/bf16 → fp32, and between
//! fp32 and 32-bit integers. Either side may be registers or memory that one
//! load or store moves.

use super::super::error::LowerError;
use super::super::kernel::KernelLowering;
use super::{Matched, Plan, Progress, Reject, Request};
use super::{
    expect_counts, expect_operands, expect_packed, expect_single_access, expect_single_read,
    expect_thread,
};
use crate::ir::{Memory, Scalar};
use crate::ptx::Sm;

/// The conversion entries of the catalogue.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ConvertPattern {
    /// fp32 → fp16 or bf16, two elements into one packed register.
    PackPairs {
        /// fp16 or bf16.
        to: Scalar,
    },
    /// fp32 → fp16 or bf16, one element at a time.
    Narrow {
        /// fp16 or bf16.
        to: Scalar,
    },
    /// fp16 or bf16 → fp32, one element at a time.
    Widen {
        /// fp16 or bf16.
        from: Scalar,
    },
    /// i32 or u32 → fp32, rounding to nearest.
    IntToFloat {
        /// i32 or u32.
        from: Scalar,
    },
    /// fp32 → i32 or u32, rounding toward zero.
    FloatToInt {
        /// i32 or u32.
        to: Scalar,
    },
}

/// What an accepted conversion emits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ConvertPlan(ConvertPattern);

/// Every conversion pattern, paired forms before single ones.
pub fn patterns() -> Vec<ConvertPattern> {
    vec![
        ConvertPattern::PackPairs { to: Scalar::Fp16 },
        ConvertPattern::PackPairs { to: Scalar::Bf16 },
        ConvertPattern::Narrow { to: Scalar::Fp16 },
        ConvertPattern::Narrow { to: Scalar::Bf16 },
        ConvertPattern::Widen { from: Scalar::Fp16 },
        ConvertPattern::Widen { from: Scalar::Bf16 },
        ConvertPattern::IntToFloat { from: Scalar::I32 },
        ConvertPattern::IntToFloat { from: Scalar::U32 },
        ConvertPattern::FloatToInt { to: Scalar::I32 },
        ConvertPattern::FloatToInt { to: Scalar::U32 },
    ]
}

fn int_name(scalar: Scalar) -> &'static str {
    match scalar {
        Scalar::I32 => "s32",
        Scalar::U32 | Scalar::Fp16 | Scalar::Bf16 | Scalar::Fp32 | Scalar::Mbarrier => "u32",
    }
}

fn half_name(scalar: Scalar) -> &'static str {
    match scalar {
        Scalar::Bf16 => "bf16",
        Scalar::Fp16 | Scalar::Fp32 | Scalar::I32 | Scalar::U32 | Scalar::Mbarrier => "f16",
    }
}

impl ConvertPattern {
    /// The entry's name.
    pub fn name(&self) -> String {
        match *self {
            ConvertPattern::PackPairs { to } => format!("cvt.rn.{}x2.f32", half_name(to)),
            ConvertPattern::Narrow { to } => format!("cvt.rn.{}.f32", half_name(to)),
            ConvertPattern::Widen { from: Scalar::Bf16 } => {
                "shl.b32 + mov.b32 (bf16 → fp32 by bits)".into()
            }
            ConvertPattern::Widen { from } => format!("cvt.f32.{}", half_name(from)),
            ConvertPattern::IntToFloat { from } => format!("cvt.rn.f32.{}", int_name(from)),
            ConvertPattern::FloatToInt { to } => format!("cvt.rzi.{}.f32", int_name(to)),
        }
    }

    /// The lowest target with its instructions.
    pub fn needs(&self) -> Sm {
        match *self {
            ConvertPattern::PackPairs { .. } | ConvertPattern::Narrow { to: Scalar::Bf16 } => {
                Sm(80)
            }
            ConvertPattern::Narrow { .. }
            | ConvertPattern::Widen { .. }
            | ConvertPattern::IntToFloat { .. }
            | ConvertPattern::FloatToInt { .. } => Sm(70),
        }
    }

    fn types(&self) -> (Scalar, Scalar) {
        match *self {
            ConvertPattern::PackPairs { to } | ConvertPattern::Narrow { to } => (Scalar::Fp32, to),
            ConvertPattern::Widen { from } | ConvertPattern::IntToFloat { from } => {
                (from, Scalar::Fp32)
            }
            ConvertPattern::FloatToInt { to } => (Scalar::Fp32, to),
        }
    }

    /// Matches a request.
    pub fn check(&self, request: &Request) -> Matched {
        let any = [Memory::Registers, Memory::Global, Memory::Shared];
        expect_operands(
            request,
            &[&any],
            &[&any],
            "converts one operand into another",
        )?;
        let (out, input) = (&request.outputs[0], &request.inputs[0]);
        let (from, to) = self.types();
        if (input.scalar, out.scalar) != (from, to) {
            return Err(Reject::new(
                Progress::Types,
                format!(
                    "converts {} → {}; this spec moves {} → {}",
                    from.name(),
                    to.name(),
                    input.scalar.name(),
                    out.scalar.name()
                ),
            ));
        }
        expect_thread(request)?;
        let count = input.count;
        expect_counts(request, &[count, count], "converts element for element")?;
        if let ConvertPattern::PackPairs { .. } = self {
            if count % 2 != 0 {
                return Err(Reject::new(
                    Progress::Size,
                    format!("converts pairs of elements; the views have {count}"),
                ));
            }
            expect_packed(out)?;
        }
        expect_single_read(input)?;
        expect_single_access(out)?;
        Ok(Plan::Convert(ConvertPlan(*self)))
    }
}

/// Emits an accepted conversion.
pub fn emit(
    lowering: &mut KernelLowering,
    request: &Request,
    plan: &ConvertPlan,
) -> Result<(), LowerError> {
    let (out, input) = (&request.outputs[0], &request.inputs[0]);
    match plan.0 {
        ConvertPattern::PackPairs { to } => {
            let sources = lowering.read_words(input)?;
            let targets = lowering.target_words(out)?;
            let name = format!("cvt.rn.{}x2.f32", half_name(to));
            for (target, pair) in targets.iter().zip(sources.chunks(2)) {
                // The first source is the upper half (docs/ptx-fragments.md).
                lowering.out.emit(
                    &name,
                    vec![(*target).into(), pair[1].into(), pair[0].into()],
                )?;
            }
            lowering.flush_words(out, &targets)
        }
        ConvertPattern::Narrow { to } => {
            let sources = lowering.read_words(input)?;
            let mut halves = Vec::with_capacity(sources.len());
            for source in sources {
                halves.push(lowering.narrow(source, to)?);
            }
            lowering.write_halves(out, &halves)
        }
        ConvertPattern::Widen { from } => {
            let halves = lowering.read_halves(input)?;
            let targets = lowering.target_words(out)?;
            for (target, half) in targets.iter().zip(halves) {
                lowering.widen_into(half, from, *target)?;
            }
            lowering.flush_words(out, &targets)
        }
        ConvertPattern::IntToFloat { from } => {
            let sources = lowering.read_words(input)?;
            let targets = lowering.target_words(out)?;
            let name = format!("cvt.rn.f32.{}", int_name(from));
            for (target, source) in targets.iter().zip(sources) {
                lowering
                    .out
                    .emit(&name, vec![(*target).into(), source.into()])?;
            }
            lowering.flush_words(out, &targets)
        }
        ConvertPattern::FloatToInt { to } => {
            let sources = lowering.read_words(input)?;
            let targets = lowering.target_words(out)?;
            let name = format!("cvt.rzi.{}.f32", int_name(to));
            for (target, source) in targets.iter().zip(sources) {
                lowering
                    .out
                    .emit(&name, vec![(*target).into(), source.into()])?;
            }
            lowering.flush_words(out, &targets)
        }
    }
}
