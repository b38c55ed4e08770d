//! Stage 3, lowering (instruction selection): arithmetic each thread does
//! alone — `MatMul` as a fused multiply-add (fp32, fp16, and packed
//! `f16x2`/`bf16x2` pairs), the pointwise kinds (chosen and emitted in
//! `pointwise`), and `Init`. Operands in memory are loaded, and results
//! stored back, with one access each.

use super::super::error::LowerError;
use super::super::kernel::KernelLowering;
use super::super::registers::half_class;
use super::pointwise::{self, PointImpl, PointOp};
use super::{Family, Matched, Plan, Progress, Reject, Request};
use super::{expect_counts, expect_operands, expect_packed, expect_scalar};
use super::{expect_single_access, expect_single_read, expect_thread};
use crate::ir::{InitValue, Memory, Scalar, SpecKind};
use crate::ptx::{Operand, Reg, RegClass, Sm, imm};

/// The forms of a fused multiply-add.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FmaType {
    /// `fma.rn.f32` on single elements.
    F32,
    /// `fma.rn.f16` on single elements.
    F16,
    /// `fma.rn.f16x2` on pairs.
    F16x2,
    /// `fma.rn.bf16x2` on pairs.
    Bf16x2,
}

/// The arithmetic entries of the catalogue.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ArithPattern {
    /// `MatMul` of scalars or pairs.
    Fma(FmaType),
    /// A pointwise operation.
    Pointwise {
        /// The operation.
        op: PointOp,
        /// How it is computed.
        how: PointImpl,
    },
    /// `Init`: `mov` of the immediate.
    Init,
}

/// What an accepted arithmetic pattern emits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ArithPlan(ArithPattern);

/// Every arithmetic pattern.
pub fn patterns() -> Vec<ArithPattern> {
    let mut all: Vec<ArithPattern> = [FmaType::F32, FmaType::F16, FmaType::F16x2, FmaType::Bf16x2]
        .map(ArithPattern::Fma)
        .to_vec();
    let ops = PointOp::all();
    for how in [PointImpl::F32, PointImpl::Pairs, PointImpl::ViaF32] {
        for op in &ops {
            if how != PointImpl::Pairs || op.pair_instruction(Scalar::Fp16).is_some() {
                all.push(ArithPattern::Pointwise { op: *op, how });
            }
        }
    }
    all.push(ArithPattern::Init);
    all
}

impl ArithPattern {
    /// The entry's name.
    pub fn name(&self) -> String {
        match *self {
            ArithPattern::Fma(FmaType::F32) => "fma.rn.f32".into(),
            ArithPattern::Fma(FmaType::F16) => "fma.rn.f16".into(),
            ArithPattern::Fma(FmaType::F16x2) => "fma.rn.f16x2".into(),
            ArithPattern::Fma(FmaType::Bf16x2) => "fma.rn.bf16x2".into(),
            ArithPattern::Pointwise {
                op,
                how: PointImpl::F32,
            } => op.f32_form(),
            ArithPattern::Pointwise {
                op,
                how: PointImpl::Pairs,
            } => format!("{} on fp16/bf16 pairs", op.name()),
            ArithPattern::Pointwise {
                op,
                how: PointImpl::ViaF32,
            } => format!("{} on fp16/bf16 through fp32", op.name()),
            ArithPattern::Init => "mov (Init)".into(),
        }
    }

    /// Its spec family.
    pub fn family(&self) -> Family {
        match self {
            ArithPattern::Fma(_) => Family::MatMul,
            ArithPattern::Pointwise { .. } => Family::Pointwise,
            ArithPattern::Init => Family::Init,
        }
    }

    /// The lowest target with its instructions (for pairs: the fp16 form;
    /// bf16 pairs are checked when matching).
    pub fn needs(&self) -> Sm {
        match *self {
            ArithPattern::Fma(FmaType::Bf16x2) => Sm(80),
            ArithPattern::Pointwise {
                op,
                how: PointImpl::Pairs,
            } => op
                .pair_instruction(Scalar::Fp16)
                .map_or(Sm(70), |(_, sm)| sm),
            ArithPattern::Pointwise { op, .. } => op.f32_needs(),
            ArithPattern::Fma(_) | ArithPattern::Init => Sm(70),
        }
    }

    /// Matches a request.
    pub fn check(&self, request: &Request) -> Matched {
        match *self {
            ArithPattern::Fma(ty) => check_fma(request, ty)?,
            ArithPattern::Pointwise { op, how } => pointwise::check(request, op, how)?,
            ArithPattern::Init => check_init(request)?,
        }
        Ok(Plan::Arith(ArithPlan(*self)))
    }
}

fn any_memory() -> [Memory; 3] {
    [Memory::Registers, Memory::Global, Memory::Shared]
}

fn check_fma(request: &Request, ty: FmaType) -> Result<(), Reject> {
    let any = any_memory();
    expect_operands(request, &[&any], &[&any, &any], "computes C += A · B")?;
    let (scalar, count) = match ty {
        FmaType::F32 => (Scalar::Fp32, 1),
        FmaType::F16 => (Scalar::Fp16, 1),
        FmaType::F16x2 => (Scalar::Fp16, 2),
        FmaType::Bf16x2 => (Scalar::Bf16, 2),
    };
    expect_scalar(request, &[scalar])?;
    expect_thread(request)?;
    let what = if count == 1 {
        "multiplies single elements".to_string()
    } else {
        "multiplies pairs of elements elementwise (the paper's `__hfma2`)".to_string()
    };
    expect_counts(request, &[count; 3], &what)?;
    for (index, operand) in request.outputs.iter().chain(&request.inputs).enumerate() {
        if count == 2 {
            expect_packed(operand)?;
        }
        // C is read and written; A and B are only read.
        if index < request.outputs.len() {
            expect_single_access(operand)?;
        } else {
            expect_single_read(operand)?;
        }
    }
    Ok(())
}

/// The number an `Init` stores; `Init<index(i)>` has no instruction (it
/// states a contract's positions; a body computes coordinates from its
/// indices).
fn init_number(request: &Request) -> Result<f64, String> {
    match request.kind {
        SpecKind::Init {
            value: InitValue::Number(value),
        } => Ok(value),
        SpecKind::Init {
            value: InitValue::Index(axis),
        } => Err(format!(
            "stores a number; `Init<index({axis})>` (each element's coordinate) is for contracts"
        )),
        SpecKind::Move { .. }
        | SpecKind::MatMul { .. }
        | SpecKind::Unary(_)
        | SpecKind::Binary(_)
        | SpecKind::Ternary(_)
        | SpecKind::Select(_)
        | SpecKind::Reduction { .. }
        | SpecKind::Shfl { .. }
        | SpecKind::Generic => Err("implements `Init`".to_string()),
    }
}

fn check_init(request: &Request) -> Result<(), Reject> {
    let any = any_memory();
    expect_operands(request, &[&any], &[], "writes one output and reads nothing")?;
    expect_thread(request)?;
    let out = &request.outputs[0];
    let value = init_number(request).map_err(|reason| Reject::new(Progress::Types, reason))?;
    immediate_bits(value, out.scalar).map_err(|reason| Reject::new(Progress::Types, reason))?;
    if out.memory != Memory::Registers {
        expect_single_access(out)?;
    }
    out.register_slots()
        .map(|_| ())
        .or_else(|_| out.memory_place().map(|_| ()))
        .map_err(|reason| Reject::new(Progress::Layout, reason))
}

/// The bits of `value` as one element of `scalar`, or why it has none.
pub fn immediate_bits(value: f64, scalar: Scalar) -> Result<u32, String> {
    match scalar {
        Scalar::Fp32 => Ok((value as f32).to_bits()),
        Scalar::Fp16 => Ok(u32::from(f32_to_f16(value as f32))),
        Scalar::Bf16 => Ok(u32::from(f32_to_bf16(value as f32))),
        Scalar::Mbarrier => Err("a barrier holds no number".to_string()),
        Scalar::I32 | Scalar::U32 => {
            let (lo, hi) = match scalar {
                Scalar::I32 => (f64::from(i32::MIN), f64::from(i32::MAX)),
                Scalar::U32 | Scalar::Fp16 | Scalar::Bf16 | Scalar::Fp32 | Scalar::Mbarrier => {
                    (0.0, f64::from(u32::MAX))
                }
            };
            if value.fract() != 0.0 || !(lo..=hi).contains(&value) {
                return Err(format!("{value} is not a {} value", scalar.name()));
            }
            Ok(value as i64 as u32)
        }
    }
}

/// fp32 → fp16 bits, rounding to nearest even (overflow gives infinity).
pub fn f32_to_f16(value: f32) -> u16 {
    let bits = value.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exponent = ((bits >> 23) & 0xff) as i32;
    let mantissa = bits & 0x7f_ffff;
    if exponent == 0xff {
        let nan = if mantissa != 0 { 0x200 } else { 0 };
        return sign | 0x7c00 | nan;
    }
    // The exponent biased for fp16 (15 instead of 127).
    let biased = exponent - 112;
    if biased >= 0x1f {
        return sign | 0x7c00;
    }
    let (kept, shift) = if biased > 0 {
        // Normal: exponent and the top 10 mantissa bits; a rounding carry
        // correctly moves into the exponent (up to infinity).
        (((biased as u32) << 10) | (mantissa >> 13), 13)
    } else if biased >= -10 {
        // Subnormal: the significand with its implicit bit, shifted down.
        let shift = (14 - biased) as u32;
        ((mantissa | 0x80_0000) >> shift, shift)
    } else {
        return sign;
    };
    let full = if biased > 0 {
        mantissa
    } else {
        mantissa | 0x80_0000
    };
    let remainder = full & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    let round_up = remainder > half || (remainder == half && kept & 1 == 1);
    sign | (kept + u32::from(round_up)) as u16
}

/// fp32 → bf16 bits, rounding to nearest even.
pub fn f32_to_bf16(value: f32) -> u16 {
    let bits = value.to_bits();
    if value.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    let round = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(round) >> 16) as u16
}

/// Emits an accepted arithmetic plan.
pub fn emit(
    lowering: &mut KernelLowering,
    request: &Request,
    plan: &ArithPlan,
) -> Result<(), LowerError> {
    match plan.0 {
        ArithPattern::Fma(ty) => emit_fma(lowering, request, ty),
        ArithPattern::Pointwise { op, how } => pointwise::emit(lowering, request, op, how),
        ArithPattern::Init => emit_init(lowering, request),
    }
}

fn emit_fma(
    lowering: &mut KernelLowering,
    request: &Request,
    ty: FmaType,
) -> Result<(), LowerError> {
    let (c, a, b) = (&request.outputs[0], &request.inputs[0], &request.inputs[1]);
    let accumulate = request.kind.accumulates();
    match ty {
        FmaType::F32 | FmaType::F16x2 | FmaType::Bf16x2 => {
            let a = lowering.read_words(a)?[0];
            let b = lowering.read_words(b)?[0];
            let addend: Operand = if accumulate {
                lowering.read_words(c)?[0].into()
            } else if ty == FmaType::F32 {
                Operand::f32(0.0)
            } else {
                let zero = lowering.out.reg(RegClass::B32);
                lowering.out.emit("mov.b32", vec![zero.into(), imm(0)])?;
                zero.into()
            };
            let d = lowering.target_words(c)?[0];
            let name = ArithPattern::Fma(ty).name();
            lowering
                .out
                .emit(&name, vec![d.into(), a.into(), b.into(), addend])?;
            lowering.flush_words(c, &[d])
        }
        FmaType::F16 => {
            let a = lowering.read_halves(a)?[0];
            let b = lowering.read_halves(b)?[0];
            let d = lowering.out.reg(half_class(Scalar::Fp16));
            if accumulate {
                let addend = lowering.read_halves(c)?[0];
                lowering.out.emit(
                    "fma.rn.f16",
                    vec![d.into(), a.into(), b.into(), addend.into()],
                )?;
            } else {
                lowering
                    .out
                    .emit("mul.f16", vec![d.into(), a.into(), b.into()])?;
            }
            lowering.write_halves(c, &[d])
        }
    }
}

fn emit_init(lowering: &mut KernelLowering, request: &Request) -> Result<(), LowerError> {
    let out = &request.outputs[0];
    let value = init_number(request)
        .map_err(|reason| LowerError::unsupported(request.span, reason, "a lowering bug"))?;
    let bits = immediate_bits(value, out.scalar)
        .map_err(|reason| LowerError::unsupported(request.span, reason, "a lowering bug"))?;
    let packed = out.scalar.bytes() == 2;
    let whole_words = !packed
        || match out.memory {
            Memory::Registers => out.packed_pairs().is_ok(),
            Memory::Global | Memory::Shared => out.count >= 2,
        };
    if whole_words {
        let word_bits = if packed { bits | (bits << 16) } else { bits };
        let words = lowering.target_words(out)?;
        for word in &words {
            move_bits(lowering, *word, word_bits)?;
        }
        return lowering.flush_words(out, &words);
    }
    // Single 16-bit elements: one `%rs` holds the bits (packing and 16-bit
    // stores take `%rs` and `%h` alike).
    let half = lowering.out.reg(RegClass::B16);
    lowering
        .out
        .emit("mov.b16", vec![half.into(), imm(i64::from(bits))])?;
    lowering.write_halves(out, &vec![half; out.count])
}

fn move_bits(lowering: &mut KernelLowering, reg: Reg, bits: u32) -> Result<(), LowerError> {
    match reg.class {
        RegClass::F32 => lowering
            .out
            .emit("mov.f32", vec![reg.into(), Operand::F32Bits(bits)]),
        RegClass::Pred | RegClass::B16 | RegClass::F16 | RegClass::B32 | RegClass::B64 => lowering
            .out
            .emit("mov.b32", vec![reg.into(), imm(i64::from(bits))]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_conversions_round_to_nearest_even() {
        let cases: [(f32, u16); 9] = [
            (0.0, 0x0000),
            (-0.0, 0x8000),
            (1.0, 0x3c00),
            (-2.5, 0xc100),
            (65504.0, 0x7bff),
            (65520.0, 0x7c00),
            (f32::INFINITY, 0x7c00),
            (5.960_464_5e-8, 0x0001),
            (1.0 + 1.0 / 2048.0, 0x3c00),
        ];
        for (value, bits) in cases {
            assert_eq!(f32_to_f16(value), bits, "{value}");
        }
        assert_eq!(f32_to_f16(1.0 + 3.0 / 2048.0), 0x3c02);
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        assert_eq!(f32_to_bf16(f32::NEG_INFINITY), 0xff80);
        assert_eq!(f32_to_bf16(1.0 + 1.0 / 256.0), 0x3f80);
        assert_eq!(f32_to_bf16(1.0 + 3.0 / 256.0), 0x3f82);
    }

    #[test]
    fn immediates_respect_their_type() {
        assert_eq!(immediate_bits(1.0, Scalar::Fp32), Ok(0x3f80_0000));
        assert_eq!(immediate_bits(-1.0, Scalar::I32), Ok(u32::MAX));
        assert!(immediate_bits(0.5, Scalar::I32).is_err());
        assert!(immediate_bits(-1.0, Scalar::U32).is_err());
        assert_eq!(immediate_bits(f64::NEG_INFINITY, Scalar::Fp16), Ok(0xfc00));
    }
}
