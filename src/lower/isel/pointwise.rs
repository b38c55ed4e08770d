//! Stage 3, lowering (instruction selection): the pointwise operations —
//! `UnaryPointwise`, `BinaryPointwise`, `TernaryPointwise` and `Select` —
//! element by element: fp32 directly, fp16/bf16 pairs with packed
//! instructions where the ISA has them, any 16-bit type through fp32
//! otherwise. The PTX form of each operation and its accuracy are listed in
//! docs/pointwise.md; this module is where they are chosen.

use super::super::error::LowerError;
use super::super::kernel::KernelLowering;
use super::{Progress, Reject, Request};
use super::{expect_counts, expect_operands, expect_packed, expect_scalar};
use super::{expect_single_access, expect_single_read, expect_thread};
use crate::ir::{BinaryOp, CompareOp, Memory, Scalar, SpecKind, TernaryOp, UnaryOp};
use crate::ptx::{Operand, Reg, RegClass, Sm, imm};

/// How a pointwise operation is computed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PointImpl {
    /// fp32 instructions, element by element.
    F32,
    /// Packed instructions on pairs of fp16 or bf16 elements.
    Pairs,
    /// Each 16-bit element widened to fp32, computed, and narrowed back.
    ViaF32,
}

/// A pointwise operation: the operator of one of the pointwise spec kinds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PointOp {
    /// `UnaryPointwise<op>`.
    Unary(UnaryOp),
    /// `BinaryPointwise<op>`.
    Binary(BinaryOp),
    /// `TernaryPointwise<op>`.
    Ternary(TernaryOp),
    /// `Select<op>`: `(a op b) ? x : y`.
    Select(CompareOp),
}

impl PointOp {
    /// Every pointwise operation, in the vocabulary's order.
    pub fn all() -> Vec<PointOp> {
        let unary = UnaryOp::ALL.map(|(_, op)| PointOp::Unary(op));
        let binary = BinaryOp::ALL.map(|(_, op)| PointOp::Binary(op));
        let ternary = TernaryOp::ALL.map(|(_, op)| PointOp::Ternary(op));
        let select = CompareOp::ALL.map(|(_, op)| PointOp::Select(op));
        unary
            .into_iter()
            .chain(binary)
            .chain(ternary)
            .chain(select)
            .collect()
    }

    /// The operation of a spec kind, if it is a pointwise one.
    fn of(kind: &SpecKind) -> Option<PointOp> {
        match kind {
            SpecKind::Unary(op) => Some(PointOp::Unary(*op)),
            SpecKind::Binary(op) => Some(PointOp::Binary(*op)),
            SpecKind::Ternary(op) => Some(PointOp::Ternary(*op)),
            SpecKind::Select(op) => Some(PointOp::Select(*op)),
            SpecKind::Move { .. }
            | SpecKind::MatMul { .. }
            | SpecKind::Reduction { .. }
            | SpecKind::Shfl { .. }
            | SpecKind::Init { .. }
            | SpecKind::Generic => None,
        }
    }

    /// How many inputs it reads.
    fn inputs(self) -> usize {
        match self {
            PointOp::Unary(_) => 1,
            PointOp::Binary(_) => 2,
            PointOp::Ternary(_) => 3,
            PointOp::Select(_) => 4,
        }
    }

    /// The operator as written in its spec kind, e.g. `gelu` or `select lt`.
    pub fn name(self) -> String {
        match self {
            PointOp::Unary(op) => op.name().into(),
            PointOp::Binary(op) => op.name().into(),
            PointOp::Ternary(op) => op.name().into(),
            PointOp::Select(op) => format!("select {}", op.name()),
        }
    }

    /// The fp32 instruction(s) computing it, for the catalogue entry's name.
    pub fn f32_form(self) -> String {
        let form = match self {
            PointOp::Unary(UnaryOp::Relu) => "max.f32 (relu)",
            PointOp::Unary(UnaryOp::Exp) => "mul.f32 + ex2.approx.f32 (exp)",
            PointOp::Unary(UnaryOp::Exp2) => "ex2.approx.f32",
            PointOp::Unary(UnaryOp::Rsqrt) => "rsqrt.approx.f32",
            PointOp::Unary(UnaryOp::Neg) => "neg.f32",
            PointOp::Unary(UnaryOp::Abs) => "abs.f32",
            PointOp::Unary(UnaryOp::Log) => "lg2.approx.f32 + mul.f32 (log)",
            PointOp::Unary(UnaryOp::Sqrt) => "sqrt.rn.f32",
            PointOp::Unary(UnaryOp::Rcp) => "rcp.rn.f32",
            PointOp::Unary(UnaryOp::Tanh) => "tanh.approx.f32",
            PointOp::Unary(UnaryOp::Sigmoid) => "ex2.approx.f32 + rcp.approx.f32 (sigmoid)",
            PointOp::Unary(UnaryOp::Gelu) => "ex2.approx.f32 + rcp.approx.f32 (gelu)",
            PointOp::Binary(BinaryOp::Add) => "add.f32",
            PointOp::Binary(BinaryOp::Sub) => "sub.f32",
            PointOp::Binary(BinaryOp::Mul) => "mul.f32",
            PointOp::Binary(BinaryOp::Max) => "max.f32",
            PointOp::Binary(BinaryOp::Min) => "min.f32",
            PointOp::Binary(BinaryOp::Div) => "div.rn.f32",
            PointOp::Ternary(TernaryOp::Fma) => "fma.rn.f32 (fma)",
            PointOp::Select(op) => return format!("setp.{}.f32 + selp.f32 (select)", op.name()),
        };
        form.into()
    }

    /// The lowest target whose fp32 instructions compute it.
    pub fn f32_needs(self) -> Sm {
        match self {
            PointOp::Unary(UnaryOp::Tanh) => Sm(75),
            PointOp::Unary(_) | PointOp::Binary(_) | PointOp::Ternary(_) | PointOp::Select(_) => {
                Sm(70)
            }
        }
    }

    /// The packed-pair instruction for it on `scalar` pairs, and the target
    /// it needs; `None` where the ISA has none, or where its packed form is
    /// less accurate than fp32 and a rounding (the operation then goes
    /// through fp32: docs/pointwise.md).
    pub fn pair_instruction(self, scalar: Scalar) -> Option<(&'static str, Sm)> {
        let bf16 = scalar == Scalar::Bf16;
        match self {
            PointOp::Binary(BinaryOp::Add) if !bf16 => Some(("add.f16x2", Sm(70))),
            PointOp::Binary(BinaryOp::Sub) if !bf16 => Some(("sub.f16x2", Sm(70))),
            PointOp::Binary(BinaryOp::Mul) if !bf16 => Some(("mul.f16x2", Sm(70))),
            PointOp::Binary(BinaryOp::Max) if !bf16 => Some(("max.f16x2", Sm(80))),
            PointOp::Binary(BinaryOp::Min) if !bf16 => Some(("min.f16x2", Sm(80))),
            PointOp::Binary(BinaryOp::Max) => Some(("max.bf16x2", Sm(80))),
            PointOp::Binary(BinaryOp::Min) => Some(("min.bf16x2", Sm(80))),
            PointOp::Unary(UnaryOp::Relu) if !bf16 => Some(("max.f16x2", Sm(80))),
            PointOp::Unary(UnaryOp::Relu) => Some(("max.bf16x2", Sm(80))),
            PointOp::Ternary(TernaryOp::Fma) if !bf16 => Some(("fma.rn.f16x2", Sm(70))),
            PointOp::Ternary(TernaryOp::Fma) => Some(("fma.rn.bf16x2", Sm(80))),
            // Sign bits: exact for both 16-bit formats.
            PointOp::Unary(UnaryOp::Neg) => Some(("xor.b32", Sm(70))),
            PointOp::Unary(UnaryOp::Abs) => Some(("and.b32", Sm(70))),
            PointOp::Binary(BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div)
            | PointOp::Select(_)
            | PointOp::Unary(
                UnaryOp::Exp
                | UnaryOp::Exp2
                | UnaryOp::Rsqrt
                | UnaryOp::Log
                | UnaryOp::Sqrt
                | UnaryOp::Rcp
                | UnaryOp::Tanh
                | UnaryOp::Sigmoid
                | UnaryOp::Gelu,
            ) => None,
        }
    }
}

fn any_memory() -> [Memory; 3] {
    [Memory::Registers, Memory::Global, Memory::Shared]
}

/// Matches a request for `op` computed as `how`.
pub fn check(request: &Request, op: PointOp, how: PointImpl) -> Result<(), Reject> {
    if PointOp::of(&request.kind) != Some(op) {
        return Err(Reject::new(
            Progress::Kind,
            format!("computes `{}`", op.name()),
        ));
    }
    let any = any_memory();
    let inputs: Vec<&[Memory]> = vec![&any; op.inputs()];
    expect_operands(request, &[&any], &inputs, "computes elementwise")?;
    let scalar = request.outputs[0].scalar;
    match how {
        PointImpl::F32 => expect_scalar(request, &[Scalar::Fp32])?,
        PointImpl::Pairs | PointImpl::ViaF32 => expect_scalar(request, &[scalar])
            .and_then(|()| expect_scalar(request, &[Scalar::Fp16, Scalar::Bf16]))?,
    }
    expect_thread(request)?;
    let count = request.outputs[0].count;
    expect_counts(
        request,
        &vec![count; 1 + op.inputs()],
        "computes element for element",
    )?;
    if how == PointImpl::Pairs {
        let Some((_, sm)) = op.pair_instruction(scalar) else {
            return Err(Reject::new(
                Progress::Types,
                format!("has no packed {} form of `{}`", scalar.name(), op.name()),
            ));
        };
        if count % 2 != 0 {
            return Err(Reject::new(
                Progress::Size,
                format!("works on pairs; the views have {count} elements"),
            ));
        }
        if let Some(arch) = request.arch.filter(|arch| arch.sm() < sm) {
            return Err(Reject::new(
                Progress::Target,
                format!("needs {sm} for {}; the target is {arch}", scalar.name()),
            ));
        }
        for operand in request.outputs.iter().chain(&request.inputs) {
            expect_packed(operand)?;
        }
    }
    if how != PointImpl::Pairs {
        let sm = op.f32_needs();
        if let Some(arch) = request.arch.filter(|arch| arch.sm() < sm) {
            return Err(Reject::new(
                Progress::Target,
                format!(
                    "computes `{}` with {}, which needs {sm}; the target is {arch}",
                    op.name(),
                    op.f32_form()
                ),
            ));
        }
    }
    if how == PointImpl::ViaF32 && scalar == Scalar::Bf16 {
        if let Some(arch) = request.arch.filter(|arch| arch.sm() < Sm(80)) {
            return Err(Reject::new(
                Progress::Target,
                format!(
                    "rounds to bf16 with cvt.rn.bf16.f32, which needs sm_80; the target is {arch}"
                ),
            ));
        }
    }
    for out in &request.outputs {
        expect_single_access(out)?;
    }
    for input in &request.inputs {
        expect_single_read(input)?;
    }
    Ok(())
}

/// log2(e) as fp32 bits: `exp(x) = ex2(x · log2 e)`.
const LOG2_E: u32 = 0x3FB8_AA3B;
/// −log2(e): `e^-x = ex2(x · −log2 e)`.
const NEG_LOG2_E: u32 = 0xBFB8_AA3B;
/// ln 2: `ln x = lg2(x) · ln 2`.
const LN_2: u32 = 0x3F31_7218;
/// The cubic coefficient of the tanh form of GELU, 0.044715.
const GELU_CUBIC: u32 = 0x3D37_2713;
/// −2·√(2/π)·log2(e): `e^(−2·√(2/π)·u) = ex2(u · this)`.
const GELU_EXP2_SCALE: u32 = 0xC013_5761;

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

/// `d = op(args)` in fp32. `exp(x)` is `2^(x · log2 e)` and `ln x` is
/// `log2(x) · ln 2` on the special-function unit; sigmoid is
/// `1/(1 + 2^(−x·log2 e))`, and GELU the same identity applied to the tanh
/// form, `x · sigmoid(2·√(2/π)·(x + 0.044715 x³))`, which is exact algebra
/// and keeps full relative accuracy for negative x where `1 + tanh`
/// cancels; ReLU is `max` with zero.
fn f32_op(
    lowering: &mut KernelLowering,
    op: PointOp,
    d: Reg,
    args: &[Reg],
) -> Result<(), LowerError> {
    let out = &mut lowering.out;
    let (d, a): (Operand, Operand) = (d.into(), args[0].into());
    let one = Operand::f32(1.0);
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
        PointOp::Unary(UnaryOp::Log) => {
            let log2 = out.reg(RegClass::F32);
            out.emit("lg2.approx.f32", vec![log2.into(), a])?;
            out.emit("mul.f32", vec![d, log2.into(), Operand::F32Bits(LN_2)])
        }
        PointOp::Unary(UnaryOp::Sqrt) => out.emit("sqrt.rn.f32", vec![d, a]),
        PointOp::Unary(UnaryOp::Rcp) => out.emit("rcp.rn.f32", vec![d, a]),
        PointOp::Unary(UnaryOp::Tanh) => out.emit("tanh.approx.f32", vec![d, a]),
        PointOp::Unary(UnaryOp::Sigmoid) => {
            let scaled = out.reg(RegClass::F32);
            out.emit(
                "mul.f32",
                vec![scaled.into(), a, Operand::F32Bits(NEG_LOG2_E)],
            )?;
            logistic_of_exponent(lowering, scaled, d)
        }
        PointOp::Unary(UnaryOp::Gelu) => {
            // u = x + 0.044715 x³ = x · (1 + 0.044715 x²).
            let square = out.reg(RegClass::F32);
            out.emit("mul.f32", vec![square.into(), a.clone(), a.clone()])?;
            let factor = out.reg(RegClass::F32);
            let cubic = Operand::F32Bits(GELU_CUBIC);
            out.emit("fma.rn.f32", vec![factor.into(), square.into(), cubic, one])?;
            let inner = out.reg(RegClass::F32);
            out.emit("mul.f32", vec![inner.into(), factor.into(), a.clone()])?;
            let scaled = out.reg(RegClass::F32);
            let scale = Operand::F32Bits(GELU_EXP2_SCALE);
            out.emit("mul.f32", vec![scaled.into(), inner.into(), scale])?;
            let sigmoid = lowering.out.reg(RegClass::F32);
            logistic_of_exponent(lowering, scaled, sigmoid.into())?;
            lowering.out.emit("mul.f32", vec![d, a, sigmoid.into()])
        }
        PointOp::Binary(binary) => {
            let name = match binary {
                BinaryOp::Add => "add.f32",
                BinaryOp::Sub => "sub.f32",
                BinaryOp::Mul => "mul.f32",
                BinaryOp::Max => "max.f32",
                BinaryOp::Min => "min.f32",
                BinaryOp::Div => "div.rn.f32",
            };
            out.emit(name, vec![d, a, args[1].into()])
        }
        PointOp::Ternary(TernaryOp::Fma) => {
            out.emit("fma.rn.f32", vec![d, a, args[1].into(), args[2].into()])
        }
        PointOp::Select(compare) => {
            let holds = out.reg(RegClass::Pred);
            out.emit(
                &format!("setp.{}.f32", compare.name()),
                vec![holds.into(), a, args[1].into()],
            )?;
            out.emit(
                "selp.f32",
                vec![d, args[2].into(), args[3].into(), holds.into()],
            )
        }
    }
}

/// `d = 1 / (1 + 2^t)`: `2^t` may overflow to infinity, whose reciprocal
/// is the correct limit 0. `rcp.approx` (1 ulp) instead of `rcp.rn`: the
/// exponential already carries ~2 ulp, and the approximate reciprocal has
/// no slow path.
fn logistic_of_exponent(
    lowering: &mut KernelLowering,
    t: Reg,
    d: Operand,
) -> Result<(), LowerError> {
    let out = &mut lowering.out;
    let power = out.reg(RegClass::F32);
    out.emit("ex2.approx.f32", vec![power.into(), t.into()])?;
    let denominator = out.reg(RegClass::F32);
    out.emit(
        "add.f32",
        vec![denominator.into(), power.into(), Operand::f32(1.0)],
    )?;
    out.emit("rcp.approx.f32", vec![d, denominator.into()])
}

/// `d = op(args)` on packed pairs of `scalar`.
fn pair_op(
    lowering: &mut KernelLowering,
    op: PointOp,
    scalar: Scalar,
    d: Reg,
    args: &[Reg],
) -> Result<(), LowerError> {
    let Some((name, _)) = op.pair_instruction(scalar) else {
        return Err(LowerError::unsupported(
            lowering.out.span(),
            format!("packed `{}` was selected", op.name()),
            "this is a lowering bug: the operation has no packed form and goes through fp32",
        ));
    };
    let out = &mut lowering.out;
    let (d, a): (Operand, Operand) = (d.into(), args[0].into());
    match op {
        PointOp::Unary(UnaryOp::Relu) => {
            let zero = out.reg(RegClass::B32);
            out.emit("mov.b32", vec![zero.into(), imm(0)])?;
            out.emit(name, vec![d, a, zero.into()])
        }
        PointOp::Unary(UnaryOp::Neg) => out.emit(name, vec![d, a, imm(0x8000_8000)]),
        PointOp::Unary(UnaryOp::Abs) => out.emit(name, vec![d, a, imm(0x7fff_7fff)]),
        PointOp::Unary(_) | PointOp::Binary(_) | PointOp::Ternary(_) | PointOp::Select(_) => {
            let mut operands = vec![d];
            operands.extend(args.iter().map(|arg| Operand::from(*arg)));
            out.emit(name, operands)
        }
    }
}
