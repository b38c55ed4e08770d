//! Stage 3, lowering (instruction selection): emitting pointwise operations
//! — fp32 instructions element by element, packed instructions on pairs of
//! 16-bit elements, or 16-bit elements computed in fp32 and rounded back.
//! `exp(x)` is `2^(x · log2 e)` on the special-function unit; ReLU is `max`
//! with zero; negation and absolute value of packed halves flip or clear
//! the sign bits, which is exact.

use super::super::error::LowerError;
use super::super::kernel::KernelLowering;
use super::Request;
use super::arith::{PointImpl, PointOp};
use crate::ir::{BinaryOp, UnaryOp};
use crate::ptx::{Operand, Reg, RegClass, imm};

/// log2(e) as fp32 bits: `exp(x) = ex2(x · log2 e)`.
const LOG2_E: u32 = 0x3FB8_AA3B;

/// Emits `op` over the request's operands, computed as `how` says.
pub fn emit(
    lowering: &mut KernelLowering,
    request: &Request,
    op: PointOp,
    how: PointImpl,
) -> Result<(), LowerError> {
    let out = &request.outputs[0];
    match how {
        PointImpl::F32 | PointImpl::Pairs => {
            let mut inputs = Vec::with_capacity(request.inputs.len());
            for input in &request.inputs {
                inputs.push(lowering.read_words(input)?);
            }
            let targets = lowering.target_words(out)?;
            for (position, target) in targets.iter().enumerate() {
                let args: Vec<Reg> = inputs.iter().map(|words| words[position]).collect();
                match how {
                    PointImpl::Pairs => pair_op(lowering, op, out.scalar, *target, &args)?,
                    PointImpl::F32 | PointImpl::ViaF32 => f32_op(lowering, op, *target, &args)?,
                }
            }
            lowering.flush_words(out, &targets)
        }
        PointImpl::ViaF32 => {
            let mut inputs = Vec::with_capacity(request.inputs.len());
            for input in &request.inputs {
                inputs.push(lowering.read_halves(input)?);
            }
            let mut results = Vec::with_capacity(out.count);
            for element in 0..out.count {
                let mut args = Vec::with_capacity(inputs.len());
                for (input, halves) in request.inputs.iter().zip(&inputs) {
                    args.push(lowering.widen(halves[element], input.scalar)?);
                }
                let wide = lowering.out.reg(RegClass::F32);
                f32_op(lowering, op, wide, &args)?;
                results.push(lowering.narrow(wide, out.scalar)?);
            }
            lowering.write_halves(out, &results)
        }
    }
}

/// `d = op(args)` in fp32.
fn f32_op(
    lowering: &mut KernelLowering,
    op: PointOp,
    d: Reg,
    args: &[Reg],
) -> Result<(), LowerError> {
    let out = &mut lowering.out;
    let (d, a): (Operand, Operand) = (d.into(), args[0].into());
    match op {
        PointOp::Unary(UnaryOp::Relu) => out.emit("max.f32", vec![d, a, Operand::f32(0.0)]),
        PointOp::Unary(UnaryOp::Exp) => {
            let scaled = out.reg(RegClass::F32);
            out.emit("mul.f32", vec![scaled.into(), a, Operand::F32Bits(LOG2_E)])?;
            out.emit("ex2.approx.f32", vec![d, scaled.into()])
        }
        PointOp::Unary(UnaryOp::Exp2) => out.emit("ex2.approx.f32", vec![d, a]),
        PointOp::Unary(UnaryOp::Rsqrt) => out.emit("rsqrt.approx.f32", vec![d, a]),
        PointOp::Unary(UnaryOp::Neg) => out.emit("neg.f32", vec![d, a]),
        PointOp::Unary(UnaryOp::Abs) => out.emit("abs.f32", vec![d, a]),
        PointOp::Binary(binary) => {
            let name = match binary {
                BinaryOp::Add => "add.f32",
                BinaryOp::Sub => "sub.f32",
                BinaryOp::Mul => "mul.f32",
                BinaryOp::Max => "max.f32",
                BinaryOp::Min => "min.f32",
            };
            out.emit(name, vec![d, a, args[1].into()])
        }
    }
}

/// `d = op(args)` on packed pairs of `scalar`.
fn pair_op(
    lowering: &mut KernelLowering,
    op: PointOp,
    scalar: crate::ir::Scalar,
    d: Reg,
    args: &[Reg],
) -> Result<(), LowerError> {
    let ty = match scalar {
        crate::ir::Scalar::Bf16 => "bf16x2",
        crate::ir::Scalar::Fp16
        | crate::ir::Scalar::Fp32
        | crate::ir::Scalar::I32
        | crate::ir::Scalar::U32 => "f16x2",
    };
    let out = &mut lowering.out;
    let (d, a): (Operand, Operand) = (d.into(), args[0].into());
    match op {
        PointOp::Unary(UnaryOp::Relu) => {
            let zero = out.reg(RegClass::B32);
            out.emit("mov.b32", vec![zero.into(), imm(0)])?;
            out.emit(&format!("max.{ty}"), vec![d, a, zero.into()])
        }
        PointOp::Unary(UnaryOp::Neg) => out.emit("xor.b32", vec![d, a, imm(0x8000_8000)]),
        PointOp::Unary(UnaryOp::Abs) => out.emit("and.b32", vec![d, a, imm(0x7fff_7fff)]),
        PointOp::Binary(binary) => {
            let name = match binary {
                BinaryOp::Add => "add",
                BinaryOp::Sub => "sub",
                BinaryOp::Mul => "mul",
                BinaryOp::Max => "max",
                BinaryOp::Min => "min",
            };
            out.emit(&format!("{name}.{ty}"), vec![d, a, args[1].into()])
        }
        PointOp::Unary(UnaryOp::Exp | UnaryOp::Exp2 | UnaryOp::Rsqrt) => {
            Err(LowerError::unsupported(
                lowering.out.span(),
                "a packed exponential or square root was selected",
                "this is a lowering bug: these go through fp32",
            ))
        }
    }
}
