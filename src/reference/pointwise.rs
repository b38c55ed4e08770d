//! Reference stage: the f64 meaning of every pointwise operator — what
//! `UnaryPointwise`, `BinaryPointwise`, `TernaryPointwise` and `Select`
//! compute before the result is rounded into the output type — and the
//! error bound of the approximate PTX forms that the tolerance must admit
//! (docs/pointwise.md).
//!
//! Rule: IEEE semantics throughout. NaN in, NaN out (max, min and relu
//! excepted: NaN loses to a number, as PTX's `max`/`min`); `Select` compares ordered,
//! so a NaN operand of the comparison selects the second alternative.

use crate::ir::{BinaryOp, CompareOp, TernaryOp, UnaryOp};

/// √(2/π), the scale of GELU's tanh form.
const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
/// The cubic coefficient of GELU's tanh form.
const GELU_CUBIC: f64 = 0.044_715;

/// `op(x)`.
pub fn unary(op: UnaryOp, x: f64) -> f64 {
    match op {
        UnaryOp::Relu => x.max(0.0),
        UnaryOp::Exp => x.exp(),
        UnaryOp::Exp2 => x.exp2(),
        UnaryOp::Rsqrt => 1.0 / x.sqrt(),
        UnaryOp::Neg => -x,
        UnaryOp::Abs => x.abs(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Rcp => 1.0 / x,
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        // The tanh form, x/2·(1 + tanh u), rewritten exactly as
        // x / (1 + e^(−2u)): 1 + tanh u cancels in f64 for u below about
        // −19, where the true value is still an fp32 number.
        UnaryOp::Gelu => {
            let u = SQRT_2_OVER_PI * (x + GELU_CUBIC * x * x * x);
            x / (1.0 + (-2.0 * u).exp())
        }
    }
}

/// `x op y`.
pub fn binary(op: BinaryOp, x: f64, y: f64) -> f64 {
    match op {
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        BinaryOp::Mul => x * y,
        BinaryOp::Max => x.max(y),
        BinaryOp::Min => x.min(y),
        BinaryOp::Div => x / y,
    }
}

/// `op(x, y, z)`.
pub fn ternary(op: TernaryOp, x: f64, y: f64, z: f64) -> f64 {
    match op {
        TernaryOp::Fma => x.mul_add(y, z),
    }
}

/// `(a op b) ? x : y`, false when `a` or `b` is NaN (PTX `setp` on floats).
pub fn select(op: CompareOp, a: f64, b: f64, x: f64, y: f64) -> f64 {
    let holds = match op {
        CompareOp::Eq => a == b,
        // Ordered: Rust's `!=` is true for NaN, `setp.ne` is not.
        CompareOp::Ne => !a.is_nan() && !b.is_nan() && a != b,
        CompareOp::Lt => a < b,
        CompareOp::Le => a <= b,
        CompareOp::Gt => a > b,
        CompareOp::Ge => a >= b,
    };
    if holds { x } else { y }
}

/// The relative error bound of an fp32 unary form that is looser than the
/// fp32 tolerance, with the form's name; `None` for the forms within it.
/// Only `tanh.approx.f32` is: the PTX ISA bounds it by 2^-10.987; the
/// others are exact (`.rn`) or within a few ulp (`ex2`, `lg2`, `rsqrt`,
/// `rcp .approx`).
pub fn approximate_bound(op: UnaryOp) -> Option<(f64, &'static str)> {
    match op {
        UnaryOp::Tanh => Some(((-10.987f64).exp2(), "tanh.approx.f32 (2^-10.987)")),
        UnaryOp::Relu
        | UnaryOp::Exp
        | UnaryOp::Exp2
        | UnaryOp::Rsqrt
        | UnaryOp::Neg
        | UnaryOp::Abs
        | UnaryOp::Log
        | UnaryOp::Sqrt
        | UnaryOp::Rcp
        | UnaryOp::Sigmoid
        | UnaryOp::Gelu => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INF: f64 = f64::INFINITY;
    /// The smallest positive fp32 subnormal, widened.
    const F32_DENORMAL: f64 = 1.401_298_464_324_817e-45;

    fn same(actual: f64, expected: f64) -> bool {
        (actual.is_nan() && expected.is_nan())
            || (actual == expected && actual.is_sign_negative() == expected.is_sign_negative())
    }

    #[test]
    fn every_unary_operator_propagates_nan() {
        for (name, op) in UnaryOp::ALL {
            // ReLU is `max` with 0, where NaN loses to the number.
            let nan_loses = op == UnaryOp::Relu;
            assert_eq!(unary(op, f64::NAN).is_nan(), !nan_loses, "{name}(NaN)");
        }
        for (name, op) in BinaryOp::ALL {
            let nan_loses = matches!(op, BinaryOp::Max | BinaryOp::Min);
            assert_eq!(binary(op, f64::NAN, 1.0).is_nan(), !nan_loses, "{name}");
            assert_eq!(binary(op, 1.0, f64::NAN).is_nan(), !nan_loses, "{name}");
        }
        assert!(ternary(TernaryOp::Fma, f64::NAN, 1.0, 1.0).is_nan());
        assert!(ternary(TernaryOp::Fma, 1.0, 1.0, f64::NAN).is_nan());
    }

    #[test]
    fn unary_operators_at_the_edges() {
        // (op, input, expected), signs of zeros and infinities included.
        let cases: [(UnaryOp, f64, f64); 34] = [
            (UnaryOp::Relu, -0.0, 0.0),
            (UnaryOp::Relu, -INF, 0.0),
            (UnaryOp::Relu, INF, INF),
            (UnaryOp::Exp, -INF, 0.0),
            (UnaryOp::Exp, INF, INF),
            (UnaryOp::Exp, -0.0, 1.0),
            (UnaryOp::Exp2, -1075.0, 0.0),
            (UnaryOp::Exp2, 3.0, 8.0),
            (UnaryOp::Rsqrt, 0.0, INF),
            (UnaryOp::Rsqrt, -0.0, -INF),
            (UnaryOp::Rsqrt, INF, 0.0),
            (UnaryOp::Neg, 0.0, -0.0),
            (UnaryOp::Abs, -0.0, 0.0),
            (UnaryOp::Abs, -INF, INF),
            (UnaryOp::Log, 0.0, -INF),
            (UnaryOp::Log, -0.0, -INF),
            (UnaryOp::Log, INF, INF),
            (UnaryOp::Log, 1.0, 0.0),
            (UnaryOp::Sqrt, -0.0, -0.0),
            (UnaryOp::Sqrt, INF, INF),
            (UnaryOp::Sqrt, 4.0, 2.0),
            (UnaryOp::Rcp, 0.0, INF),
            (UnaryOp::Rcp, -0.0, -INF),
            (UnaryOp::Rcp, -INF, -0.0),
            (UnaryOp::Tanh, -0.0, -0.0),
            (UnaryOp::Tanh, INF, 1.0),
            (UnaryOp::Tanh, -INF, -1.0),
            (UnaryOp::Sigmoid, 0.0, 0.5),
            (UnaryOp::Sigmoid, INF, 1.0),
            (UnaryOp::Sigmoid, -INF, 0.0),
            (UnaryOp::Gelu, 0.0, 0.0),
            (UnaryOp::Gelu, -0.0, -0.0),
            (UnaryOp::Gelu, INF, INF),
            (UnaryOp::Gelu, -1e3, -0.0),
        ];
        for (op, x, expected) in cases {
            let actual = unary(op, x);
            assert!(
                same(actual, expected),
                "{op}({x}) = {actual}, not {expected}"
            );
        }
        // Undefined inputs are NaN, as the hardware forms give.
        for (op, x) in [
            (UnaryOp::Log, -1.0),
            (UnaryOp::Sqrt, -F32_DENORMAL),
            (UnaryOp::Rsqrt, -1.0),
        ] {
            assert!(unary(op, x).is_nan(), "{op}({x})");
        }
        // GELU at −∞ is 0·∞ in the tanh form itself: NaN, like the kernel.
        assert!(unary(UnaryOp::Gelu, -INF).is_nan());
    }

    #[test]
    fn denormals_are_not_flushed() {
        let d = F32_DENORMAL;
        assert_eq!(unary(UnaryOp::Neg, d), -d);
        assert_eq!(unary(UnaryOp::Relu, d), d);
        assert_eq!(unary(UnaryOp::Sqrt, d), d.sqrt());
        assert!(unary(UnaryOp::Rcp, d) > 1e44);
        assert_eq!(unary(UnaryOp::Tanh, d), d);
        assert_eq!(binary(BinaryOp::Div, d, 2.0 * d), 0.5);
        assert_eq!(ternary(TernaryOp::Fma, d, 2.0, d), 3.0 * d);
    }

    #[test]
    fn gelu_is_the_tanh_form_where_that_form_does_not_cancel() {
        for i in -80..=80 {
            let x = f64::from(i) / 10.0;
            let u = SQRT_2_OVER_PI * (x + GELU_CUBIC * x.powi(3));
            let tanh_form = 0.5 * x * (1.0 + u.tanh());
            let gelu = unary(UnaryOp::Gelu, x);
            assert!(
                (gelu - tanh_form).abs() <= 1e-12 * (1.0 + gelu.abs()),
                "gelu({x}) = {gelu}, tanh form {tanh_form}"
            );
        }
        // Far left the tanh form's 1 + tanh u is 0 in f64, though the value
        // is still a normal fp32 number.
        let u = SQRT_2_OVER_PI * (-10.0 + GELU_CUBIC * -1000.0);
        assert_eq!(1.0 + u.tanh(), 0.0);
        let far = unary(UnaryOp::Gelu, -10.0);
        assert!(far < -f64::from(f32::MIN_POSITIVE) && far > -1e-36, "{far}");
        let sigmoid = unary(UnaryOp::Sigmoid, -40.0);
        assert!((sigmoid / (-40f64).exp() - 1.0).abs() < 1e-12, "{sigmoid}");
    }

    #[test]
    fn binary_and_ternary_operators_at_the_edges() {
        let cases: [(BinaryOp, f64, f64, f64); 9] = [
            (BinaryOp::Add, INF, -INF, f64::NAN),
            (BinaryOp::Add, -0.0, -0.0, -0.0),
            (BinaryOp::Sub, 0.0, 0.0, 0.0),
            (BinaryOp::Mul, -0.0, 5.0, -0.0),
            (BinaryOp::Max, -0.0, f64::NAN, -0.0),
            (BinaryOp::Min, f64::NAN, -INF, -INF),
            (BinaryOp::Div, 1.0, -0.0, -INF),
            (BinaryOp::Div, 0.0, 0.0, f64::NAN),
            (BinaryOp::Div, INF, INF, f64::NAN),
        ];
        for (op, x, y, expected) in cases {
            let actual = binary(op, x, y);
            assert!(same(actual, expected), "{x} {op} {y} = {actual}");
        }
        // One rounding: (1 + 2^-30)(1 − 2^-30) − 1 is −2^-60 exactly.
        let e = (-30f64).exp2();
        let fused = ternary(TernaryOp::Fma, 1.0 + e, 1.0 - e, -1.0);
        assert_eq!(fused, -(-60f64).exp2());
        assert!(ternary(TernaryOp::Fma, INF, 0.0, 1.0).is_nan());
    }

    #[test]
    fn select_compares_ordered() {
        let (x, y) = (10.0, 20.0);
        let expect = |op, a: f64, b: f64, want: f64| {
            assert_eq!(select(op, a, b, x, y), want, "({a} {op:?} {b})");
        };
        expect(CompareOp::Lt, 1.0, 2.0, x);
        expect(CompareOp::Lt, 2.0, 2.0, y);
        expect(CompareOp::Le, 2.0, 2.0, x);
        expect(CompareOp::Gt, -INF, 0.0, y);
        expect(CompareOp::Ge, INF, INF, x);
        expect(CompareOp::Eq, 0.0, -0.0, x);
        expect(CompareOp::Ne, 0.0, -0.0, y);
        for (_, op) in CompareOp::ALL {
            expect(op, f64::NAN, 1.0, y);
            expect(op, 1.0, f64::NAN, y);
        }
        // The alternatives pass through unchanged, NaN and signed zero too.
        assert!(select(CompareOp::Lt, 0.0, 1.0, f64::NAN, 0.0).is_nan());
        assert!(select(CompareOp::Lt, 1.0, 0.0, 0.0, -0.0).is_sign_negative());
    }

    #[test]
    fn only_tanh_is_looser_than_the_fp32_tolerance() {
        for (name, op) in UnaryOp::ALL {
            let bound = approximate_bound(op).map(|(bound, _)| bound);
            assert_eq!(bound.is_some(), op == UnaryOp::Tanh, "{name}");
        }
        let (bound, _) = approximate_bound(UnaryOp::Tanh).unwrap();
        assert!(bound > 4.9e-4 && bound < 5.0e-4, "{bound}");
    }
}
