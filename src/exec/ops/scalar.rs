//! CPU executor: the arithmetic of one lane — integer, predicate, float,
//! half-precision and conversion instructions as pure functions of the
//! operands' bits (registers hold raw bits, zero-extended to 64).
//!
//! Rounding: f32 arithmetic is Rust's f32 (IEEE round to nearest even, as
//! PTX's default `.rn`), `fma` is fused. f16/bf16 results are computed in
//! f64 and rounded once to the 16-bit type (exact for add, sub and mul; an
//! fma may round twice in rare cases). The `.approx` functions are computed
//! in f64 and rounded to f32, which is at least as accurate as the PTX ISA
//! promises (docs/running.md lists the bounds).

use half::{bf16, f16};

use super::super::decode::{Approx, Cmp, FloatOp, IntOp, Ty};

/// The low `bytes` of `value`.
pub fn truncate(value: u64, bytes: u32) -> u64 {
    if bytes >= 8 {
        value
    } else {
        value & ((1u64 << (bytes * 8)) - 1)
    }
}

/// `value`'s low `bytes` read as a signed number.
pub fn sign_extend(value: u64, bytes: u32) -> i64 {
    let shift = 64 - bytes * 8;
    ((value << shift) as i64) >> shift
}

/// An integer operation on `ty` (the wide forms give a double-width result).
pub fn int(op: IntOp, ty: Ty, a: u64, b: u64, c: u64) -> u64 {
    if ty == Ty::Pred {
        return match op {
            IntOp::And => a & b & 1,
            IntOp::Or => (a | b) & 1,
            IntOp::Xor => (a ^ b) & 1,
            IntOp::Not => !a & 1,
            _ => 0,
        };
    }
    let bytes = ty.bytes();
    let signed = ty.is_signed();
    let (sa, sb) = (sign_extend(a, bytes), sign_extend(b, bytes));
    let (ua, ub) = (truncate(a, bytes), truncate(b, bytes));
    let wide = |x: i64, y: i64, u: u64, v: u64| -> u64 {
        if signed {
            (x as i128 * y as i128) as u64
        } else {
            (u as u128 * v as u128) as u64
        }
    };
    let result = match op {
        IntOp::Add => ua.wrapping_add(ub),
        IntOp::Sub => ua.wrapping_sub(ub),
        IntOp::MulLo => ua.wrapping_mul(ub),
        IntOp::MulHi => {
            let product = if signed {
                (sa as i128 * sb as i128) as u128
            } else {
                ua as u128 * ub as u128
            };
            (product >> (bytes * 8)) as u64
        }
        IntOp::MadLo => ua.wrapping_mul(ub).wrapping_add(c),
        IntOp::MulWide => return wide(sa, sb, ua, ub),
        IntOp::MadWide => return wide(sa, sb, ua, ub).wrapping_add(c),
        IntOp::Shl => {
            let shift = truncate(b, 4);
            if shift >= u64::from(bytes * 8) {
                0
            } else {
                ua << shift
            }
        }
        IntOp::Shr => {
            let shift = truncate(b, 4).min(u64::from(bytes * 8 - 1));
            if signed {
                (sa >> shift) as u64
            } else if truncate(b, 4) >= u64::from(bytes * 8) {
                0
            } else {
                ua >> shift
            }
        }
        IntOp::ShfRClamp => {
            let shift = truncate(c, 4).min(32);
            ((ub << 32 | ua) >> shift) & 0xffff_ffff
        }
        IntOp::And => ua & ub,
        IntOp::Or => ua | ub,
        IntOp::Xor => ua ^ ub,
        IntOp::Not => !ua,
        // Division by zero is unspecified in PTX; all ones, as the hardware gives.
        IntOp::Div => match (signed, ub) {
            (_, 0) => u64::MAX,
            (true, _) => sa.wrapping_div(sb) as u64,
            (false, _) => ua / ub,
        },
        IntOp::Rem => match (signed, ub) {
            (_, 0) => ua,
            (true, _) => sa.wrapping_rem(sb) as u64,
            (false, _) => ua % ub,
        },
        IntOp::Min if signed => sa.min(sb) as u64,
        IntOp::Max if signed => sa.max(sb) as u64,
        IntOp::Min => ua.min(ub),
        IntOp::Max => ua.max(ub),
        IntOp::Neg => sa.wrapping_neg() as u64,
    };
    truncate(result, bytes)
}

fn f32_of(bits: u64) -> f32 {
    f32::from_bits(bits as u32)
}

fn half_to_f64(ty: Ty, bits: u64) -> f64 {
    match ty {
        Ty::Bf16 | Ty::Bf16x2 => f64::from(bf16::from_bits(bits as u16).to_f32()),
        _ => f64::from(f16::from_bits(bits as u16).to_f32()),
    }
}

fn half_from_f64(ty: Ty, value: f64) -> u64 {
    match ty {
        Ty::Bf16 | Ty::Bf16x2 => u64::from(bf16::from_f64(value).to_bits()),
        _ => u64::from(f16::from_f64(value).to_bits()),
    }
}

fn apply(op: FloatOp, a: f64, b: f64, c: f64) -> f64 {
    match op {
        FloatOp::Add => a + b,
        FloatOp::Sub => a - b,
        FloatOp::Mul => a * b,
        FloatOp::Div => a / b,
        FloatOp::Fma => a.mul_add(b, c),
        FloatOp::Max => a.max(b),
        FloatOp::Min => a.min(b),
        FloatOp::Neg => -a,
        FloatOp::Abs => a.abs(),
    }
}

/// A float operation on `ty` (f32, f16, bf16, or a packed pair).
pub fn float(op: FloatOp, ty: Ty, a: u64, b: u64, c: u64) -> u64 {
    match ty {
        Ty::F32 => {
            let (x, y, z) = (f32_of(a), f32_of(b), f32_of(c));
            let r = match op {
                FloatOp::Add => x + y,
                FloatOp::Sub => x - y,
                // `div.rn.f32`: IEEE division, correctly rounded.
                FloatOp::Div => x / y,
                FloatOp::Mul => x * y,
                FloatOp::Fma => x.mul_add(y, z),
                FloatOp::Max => x.max(y),
                FloatOp::Min => x.min(y),
                FloatOp::Neg => -x,
                FloatOp::Abs => x.abs(),
            };
            u64::from(r.to_bits())
        }
        Ty::F16x2 | Ty::Bf16x2 => {
            let lane = |shift: u32| {
                let part = |v: u64| half_to_f64(ty, (v >> shift) & 0xFFFF);
                half_from_f64(ty, apply(op, part(a), part(b), part(c))) << shift
            };
            lane(0) | lane(16)
        }
        _ => {
            let r = apply(
                op,
                half_to_f64(ty, a),
                half_to_f64(ty, b),
                half_to_f64(ty, c),
            );
            half_from_f64(ty, r)
        }
    }
}

/// An approximate special function of an f32, computed in f64.
pub fn approx(function: Approx, a: u64) -> u64 {
    let x = f64::from(f32_of(a));
    let r = match function {
        Approx::Ex2 => x.exp2(),
        Approx::Lg2 => x.log2(),
        Approx::Rsqrt => 1.0 / x.sqrt(),
        Approx::Rcp => 1.0 / x,
        Approx::Sqrt => x.sqrt(),
        Approx::Tanh => x.tanh(),
        Approx::Sin => x.sin(),
        Approx::Cos => x.cos(),
    };
    u64::from((r as f32).to_bits())
}

/// `setp.cmp.ty a, b` (floats compare ordered: false when either is NaN).
pub fn compare(cmp: Cmp, ty: Ty, a: u64, b: u64) -> bool {
    let ordering = match ty {
        Ty::F32 => f32_of(a).partial_cmp(&f32_of(b)),
        Ty::F16 | Ty::Bf16 => half_to_f64(ty, a).partial_cmp(&half_to_f64(ty, b)),
        _ if ty.is_signed() => Some(sign_extend(a, ty.bytes()).cmp(&sign_extend(b, ty.bytes()))),
        _ => Some(truncate(a, ty.bytes()).cmp(&truncate(b, ty.bytes()))),
    };
    let Some(ordering) = ordering else {
        return false;
    };
    match cmp {
        Cmp::Eq => ordering.is_eq(),
        Cmp::Ne => ordering.is_ne(),
        Cmp::Lt => ordering.is_lt(),
        Cmp::Le => ordering.is_le(),
        Cmp::Gt => ordering.is_gt(),
        Cmp::Ge => ordering.is_ge(),
    }
}

/// `cvt.to.from a` for one value (packing conversions are the caller's).
pub fn convert(to: Ty, from: Ty, a: u64) -> u64 {
    let is_float = |t: Ty| matches!(t, Ty::F32 | Ty::F16 | Ty::Bf16);
    match (is_float(to), is_float(from)) {
        (true, true) => {
            let value = if from == Ty::F32 {
                f64::from(f32_of(a))
            } else {
                half_to_f64(from, a)
            };
            if to == Ty::F32 {
                u64::from((value as f32).to_bits())
            } else {
                half_from_f64(to, value)
            }
        }
        (true, false) => {
            let value = if from.is_signed() {
                sign_extend(a, from.bytes()) as f64
            } else {
                truncate(a, from.bytes()) as f64
            };
            // Integers up to 64 bits convert to f32 with one rounding via i128 → f32.
            let rounded = if from.is_signed() {
                sign_extend(a, from.bytes()) as f32
            } else {
                truncate(a, from.bytes()) as f32
            };
            if to == Ty::F32 {
                u64::from(rounded.to_bits())
            } else {
                half_from_f64(to, value)
            }
        }
        (false, true) => {
            let value = if from == Ty::F32 {
                f64::from(f32_of(a))
            } else {
                half_to_f64(from, a)
            };
            // Round toward zero, saturating; NaN gives 0 (Rust's `as`, and PTX's).
            let bits = match (to.is_signed(), to.bytes()) {
                (true, 8) => value as i64 as u64,
                (true, 4) => value as i32 as u64,
                (true, _) => value as i16 as u64,
                (false, 8) => value as u64,
                (false, 4) => u64::from(value as u32),
                (false, _) => u64::from(value as u16),
            };
            truncate(bits, to.bytes())
        }
        (false, false) => {
            let widened = if from.is_signed() {
                sign_extend(a, from.bytes()) as u64
            } else {
                truncate(a, from.bytes())
            };
            truncate(widened, to.bytes())
        }
    }
}

/// `cvt.rn.{f16x2,bf16x2}.f32 d, hi, lo`.
pub fn pack_pair(to: Ty, hi: u64, lo: u64) -> u64 {
    let element = if to == Ty::Bf16x2 { Ty::Bf16 } else { Ty::F16 };
    (convert(element, Ty::F32, hi) << 16) | convert(element, Ty::F32, lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_wrap_and_widen_as_ptx_says() {
        assert_eq!(int(IntOp::Add, Ty::U32, 0xFFFF_FFFF, 1, 0), 0);
        assert_eq!(
            int(IntOp::MulWide, Ty::U32, 0xFFFF_FFFF, 2, 0),
            0x1_FFFF_FFFE
        );
        assert_eq!(
            int(IntOp::MadWide, Ty::S32, (-1i32) as u32 as u64, 4, 100),
            96
        );
        assert_eq!(int(IntOp::Shr, Ty::S32, 0x8000_0000, 31, 0), 0xFFFF_FFFF);
        assert_eq!(int(IntOp::Shr, Ty::U32, 0x8000_0000, 31, 0), 1);
        assert_eq!(int(IntOp::Rem, Ty::U32, 17, 5, 0), 2);
        assert_eq!(int(IntOp::Not, Ty::Pred, 1, 0, 0), 0);
    }

    #[test]
    fn floats_round_to_nearest_and_pack_hi_first() {
        let one = u64::from(1.0f32.to_bits());
        let two = u64::from(2.0f32.to_bits());
        assert_eq!(
            float(FloatOp::Fma, Ty::F32, two, two, one),
            u64::from(5.0f32.to_bits())
        );
        let packed = pack_pair(Ty::F16x2, two, one);
        assert_eq!(packed, (0x4000 << 16) | 0x3C00);
        assert_eq!(
            float(FloatOp::Add, Ty::F16x2, packed, packed, 0),
            (0x4400 << 16) | 0x4000
        );
        assert!(!compare(
            Cmp::Ne,
            Ty::F32,
            u64::from(f32::NAN.to_bits()),
            one
        ));
        assert_eq!(
            convert(Ty::S32, Ty::F32, u64::from((-2.7f32).to_bits())),
            (-2i32) as u32 as u64
        );
        assert_eq!(convert(Ty::U64, Ty::U32, 0xFFFF_FFFF), 0xFFFF_FFFF);
        assert_eq!(convert(Ty::S64, Ty::S32, 0xFFFF_FFFF), u64::MAX);
    }
}
