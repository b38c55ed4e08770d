//! Index arithmetic: the known-bits domain — which bits
//! of an index expression's 64-bit two's-complement value are proven 0 or 1.
//! Swizzled shared-memory addressing needs it: when `a` and `c` have no
//! possible one-bit in common, `a + c == a | c == a ^ c`, so a swizzle
//! distributes over the sum.
//!
//! Transfer functions follow the machine operations bit for bit, including
//! the silent loss of bits shifted out by `<<`; `+`, `-` and `*` reason only
//! about low bits (the same modulo `2^64` whether or not the full result
//! overflows) and about sums without carries.

use std::fmt;
use std::ops::{Add, BitAnd, BitXor, Mul, Shl, Shr, Sub};

/// Bits proven zero and bits proven one.
///
/// Rule: `zeros & ones == 0`. A value `v` is described when every bit set in
/// `ones` is set in `v` and every bit set in `zeros` is clear in `v`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct KnownBits {
    zeros: u64,
    ones: u64,
}

/// The mask of the `n` lowest bits (`n ≤ 64`).
fn low_mask(n: u32) -> u64 {
    if n >= 64 { u64::MAX } else { (1 << n) - 1 }
}

impl KnownBits {
    /// Nothing known.
    pub fn unknown() -> KnownBits {
        KnownBits { zeros: 0, ones: 0 }
    }

    /// Every bit of `value`.
    pub fn exact(value: i64) -> KnownBits {
        let bits = value as u64;
        KnownBits {
            zeros: !bits,
            ones: bits,
        }
    }

    /// From explicit masks; bits claimed both ways are dropped (knowing less
    /// is always sound).
    pub fn new(zeros: u64, ones: u64) -> KnownBits {
        let conflict = zeros & ones;
        KnownBits {
            zeros: zeros & !conflict,
            ones: ones & !conflict,
        }
    }

    /// Bits proven zero.
    pub fn zeros(self) -> u64 {
        self.zeros
    }

    /// Bits proven one.
    pub fn ones(self) -> u64 {
        self.ones
    }

    /// Bits that may be one.
    pub fn possible_ones(self) -> u64 {
        !self.zeros
    }

    /// The value, when every bit is known.
    pub fn as_exact(self) -> Option<i64> {
        (self.zeros | self.ones == u64::MAX).then_some(self.ones as i64)
    }

    /// Whether `value` fits the description.
    pub fn contains(self, value: i64) -> bool {
        let bits = value as u64;
        bits & self.zeros == 0 && bits & self.ones == self.ones
    }

    /// Whether no bit can be one in both: then `a + b == a | b == a ^ b`
    /// (there is no carry anywhere).
    pub fn is_disjoint(self, other: KnownBits) -> bool {
        self.possible_ones() & other.possible_ones() == 0
    }

    /// What both descriptions say (of the same value).
    pub fn meet(self, other: KnownBits) -> KnownBits {
        KnownBits::new(self.zeros | other.zeros, self.ones | other.ones)
    }

    /// The number of low bits that are all known.
    fn known_low_bits(self) -> u32 {
        (!(self.zeros | self.ones)).trailing_zeros()
    }

    /// Known low bits of the result, computed from the low bits of the
    /// operands alone (valid for `+ - *`, whose low `t` bits depend only on
    /// the operands' low `t` bits).
    fn low_bits_of(self, other: KnownBits, op: fn(u64, u64) -> u64) -> KnownBits {
        let mask = low_mask(self.known_low_bits().min(other.known_low_bits()));
        let low = op(self.ones, other.ones) & mask;
        KnownBits::new(!low & mask, low)
    }

    /// `a % 2^t` (the non-negative remainder): the low `t` bits of `a`; every
    /// bit above is zero.
    pub fn rem_power_of_two(self, t: u32) -> KnownBits {
        let mask = low_mask(t);
        KnownBits::new((self.zeros & mask) | !mask, self.ones & mask)
    }

    /// What an inclusive range `[lo, hi]` of one sign says: every value
    /// shares the bits above the highest bit where `lo` and `hi` differ.
    pub fn from_range(lo: i64, hi: i64) -> KnownBits {
        if (lo < 0) != (hi < 0) {
            return KnownBits::unknown();
        }
        let differ = (lo ^ hi) as u64;
        let shared = if differ == 0 {
            u64::MAX
        } else {
            !low_mask(64 - differ.leading_zeros())
        };
        let bits = lo as u64;
        KnownBits::new(!bits & shared, bits & shared)
    }

    /// What `value ≡ residue (mod modulus)` says: the low bits, as many as
    /// the power of two dividing the modulus (all of them for `modulus ==
    /// 0`, an exact value).
    pub fn from_congruence(modulus: i64, residue: i64) -> KnownBits {
        if modulus == 0 {
            return KnownBits::exact(residue);
        }
        let mask = low_mask(modulus.trailing_zeros());
        let low = residue as u64 & mask;
        KnownBits::new(!low & mask, low)
    }

    /// The inclusive range of values described, when the sign bit is known.
    pub fn bounds(self) -> Option<(i64, i64)> {
        const SIGN: u64 = 1 << 63;
        if self.zeros & SIGN == 0 && self.ones & SIGN == 0 {
            return None;
        }
        // Within one sign, integer order is the order of the bit patterns.
        Some((self.ones as i64, !self.zeros as i64))
    }

    /// `(t, r)`: the low `t` bits are known and read `r`.
    pub fn low_residue(self) -> (u32, i64) {
        let t = self.known_low_bits().min(62);
        (t, (self.ones & low_mask(t)) as i64)
    }
}

/// `a + b`.
impl Add<KnownBits> for KnownBits {
    type Output = KnownBits;

    fn add(self, other: KnownBits) -> KnownBits {
        if self.is_disjoint(other) {
            return KnownBits::new(self.zeros & other.zeros, self.ones | other.ones);
        }
        self.low_bits_of(other, u64::wrapping_add)
    }
}

/// `a - b`.
impl Sub<KnownBits> for KnownBits {
    type Output = KnownBits;

    fn sub(self, other: KnownBits) -> KnownBits {
        self.low_bits_of(other, u64::wrapping_sub)
    }
}

/// `a * b`: the low bits, and as many trailing zeros as both operands
/// have together.
impl Mul<KnownBits> for KnownBits {
    type Output = KnownBits;

    fn mul(self, other: KnownBits) -> KnownBits {
        // Trailing zeros add up under multiplication.
        let trailing = [self, other].iter().map(|k| k.zeros.trailing_ones()).sum();
        self.low_bits_of(other, u64::wrapping_mul)
            .meet(KnownBits::new(low_mask(trailing), 0))
    }
}

/// `a & b`.
impl BitAnd<KnownBits> for KnownBits {
    type Output = KnownBits;

    fn bitand(self, other: KnownBits) -> KnownBits {
        KnownBits::new(self.zeros | other.zeros, self.ones & other.ones)
    }
}

/// `a ^ b`.
impl BitXor<KnownBits> for KnownBits {
    type Output = KnownBits;

    fn bitxor(self, other: KnownBits) -> KnownBits {
        KnownBits::new(
            (self.zeros & other.zeros) | (self.ones & other.ones),
            (self.zeros & other.ones) | (self.ones & other.zeros),
        )
    }
}

/// `a << k` for `k < 64`: bits move up, zeros fill in, bits shifted
/// out are lost.
impl Shl<u32> for KnownBits {
    type Output = KnownBits;

    fn shl(self, k: u32) -> KnownBits {
        KnownBits::new((self.zeros << k) | low_mask(k), self.ones << k)
    }
}

/// `a >> k` for `k < 64`, arithmetic: the sign bit, known or not,
/// fills in from the top.
impl Shr<u32> for KnownBits {
    type Output = KnownBits;

    fn shr(self, k: u32) -> KnownBits {
        KnownBits::new(
            ((self.zeros as i64) >> k) as u64,
            ((self.ones as i64) >> k) as u64,
        )
    }
}

/// The low bits up to the highest bit that may be one, most significant
/// first: `0` known zero, `1` known one, `?` unknown — `0b??1000`. A value
/// that may be negative shows all 64 bits.
impl fmt::Display for KnownBits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = (64 - self.possible_ones().leading_zeros()).max(1);
        f.write_str("0b")?;
        for bit in (0..width).rev() {
            let mask = 1 << bit;
            let c = if self.zeros & mask != 0 {
                '0'
            } else if self.ones & mask != 0 {
                '1'
            } else {
                '?'
            };
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Descriptions of small sets of values: each value, ranges, and a few
    /// hand-made patterns.
    fn samples() -> Vec<(KnownBits, Vec<i64>)> {
        let universe: Vec<i64> = (-20..=70).collect();
        let mut descriptions: Vec<KnownBits> = vec![KnownBits::unknown()];
        descriptions.extend([0, 5, -3, 64].map(KnownBits::exact));
        descriptions.extend(
            [(0, 7), (8, 15), (0, 63), (16, 40), (-8, -1)]
                .map(|(l, h)| KnownBits::from_range(l, h)),
        );
        descriptions.extend(
            [(8, 0), (4, 1), (0, 3), (16, 5)].map(|(m, r)| KnownBits::from_congruence(m, r)),
        );
        descriptions.push(KnownBits::new(!0b111000, 0));
        descriptions
            .into_iter()
            .map(|d| {
                (
                    d,
                    universe
                        .iter()
                        .copied()
                        .filter(|&v| d.contains(v))
                        .collect(),
                )
            })
            .collect()
    }

    fn check(
        name: &str,
        transfer: impl Fn(KnownBits, KnownBits) -> KnownBits,
        op: impl Fn(i64, i64) -> i64,
    ) {
        for (a, xs) in samples() {
            for (b, ys) in samples() {
                let result = transfer(a, b);
                for &x in &xs {
                    for &y in &ys {
                        let v = op(x, y);
                        assert!(
                            result.contains(v),
                            "{name}: {x} ({a}), {y} ({b}) -> {v} not {result}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn transfer_functions_hold_for_every_sample() {
        check("add", |a, b| a + b, i64::wrapping_add);
        check("sub", |a, b| a - b, i64::wrapping_sub);
        check("mul", |a, b| a * b, i64::wrapping_mul);
        check("and", |a, b| a & b, |a, b| a & b);
        check("xor", |a, b| a ^ b, |a, b| a ^ b);
        for k in [0, 1, 3, 63] {
            check("shl", |a, _| a << k, move |a, _| a.wrapping_shl(k));
            check("shr", |a, _| a >> k, move |a, _| a >> k);
        }
        for t in [0, 1, 3, 6] {
            check(
                "rem",
                |a, _| a.rem_power_of_two(t),
                move |a, _| a.rem_euclid(1 << t),
            );
        }
    }

    #[test]
    fn range_and_congruence_give_bits() {
        let row = KnownBits::from_range(0, 7) << 6;
        let chunk = KnownBits::from_range(0, 7) << 3;
        assert!(row.is_disjoint(chunk));
        assert_eq!((row + chunk).to_string(), "0b??????000");
        assert_eq!(KnownBits::from_range(64, 127).to_string(), "0b1??????");
        assert_eq!(KnownBits::from_congruence(8, 5).low_residue(), (3, 5));
        assert_eq!(KnownBits::from_range(0, 31).bounds(), Some((0, 31)));
        assert_eq!(KnownBits::unknown().bounds(), None);
        assert_eq!(KnownBits::exact(-2).as_exact(), Some(-2));
    }

    #[test]
    fn overlapping_bits_are_not_disjoint() {
        let a = KnownBits::from_range(0, 15);
        let b = KnownBits::from_range(0, 7) << 3;
        assert!(!a.is_disjoint(b));
        assert_eq!(KnownBits::new(0b11, 0b10), KnownBits::new(0b01, 0));
    }
}
