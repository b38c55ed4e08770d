//! Index arithmetic: the congruence domain — what an
//! index expression's value is modulo some number. Alignment proofs for
//! vector memory instructions ("this offset is a multiple of 8") read it.
//!
//! Transfer functions are exact integer identities: when every operation
//! evaluates without overflow, the mathematical and the machine results
//! agree, so a congruence of the mathematical result holds for the machine
//! one. The one operation that may wrap silently, `<<`, is handled by its
//! caller (see `analysis`).

use std::fmt;
use std::ops::{Add, Mul, Sub};

/// `value ≡ residue (mod modulus)`.
///
/// Rule: `modulus ≥ 0`. `modulus == 0` means the value is exactly `residue`;
/// otherwise `0 ≤ residue < modulus`. `modulus == 1` knows nothing.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Congruence {
    modulus: i64,
    residue: i64,
}

/// `2^62`: the largest power of two an `i64` holds, the divisor reported for
/// a value that is always zero.
pub(crate) const ZERO_DIVISOR: i64 = 1 << 62;

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `(g, x)` with `g = gcd(a, m)` and `a·x ≡ g (mod m)`, for `a, m > 0`.
fn gcd_and_inverse(a: i128, m: i128) -> (i128, i128) {
    let (mut old_r, mut r) = (a, m);
    let (mut old_s, mut s) = (1_i128, 0_i128);
    while r != 0 {
        let q = old_r / r;
        (old_r, r) = (r, old_r - q * r);
        (old_s, s) = (s, old_s - q * s);
    }
    (old_r, old_s)
}

impl Congruence {
    /// Knows nothing: every integer is ≡ 0 (mod 1).
    pub fn unknown() -> Congruence {
        Congruence {
            modulus: 1,
            residue: 0,
        }
    }

    /// Exactly `value`.
    pub fn exact(value: i64) -> Congruence {
        Congruence {
            modulus: 0,
            residue: value,
        }
    }

    /// A multiple of `divisor`; `None` unless `divisor ≥ 1`.
    pub fn multiple_of(divisor: i64) -> Option<Congruence> {
        Congruence::new(divisor, 0)
    }

    /// `≡ residue (mod modulus)` for `modulus ≥ 1` (the residue is reduced);
    /// `None` for a modulus below 1.
    pub fn new(modulus: i64, residue: i64) -> Option<Congruence> {
        (modulus >= 1).then(|| Congruence {
            modulus,
            residue: residue.rem_euclid(modulus),
        })
    }

    /// The modulus; 0 when the value is exact.
    pub fn modulus(self) -> i64 {
        self.modulus
    }

    /// The residue (the value itself when the modulus is 0).
    pub fn residue(self) -> i64 {
        self.residue
    }

    /// The value, when it is exact.
    pub fn as_exact(self) -> Option<i64> {
        (self.modulus == 0).then_some(self.residue)
    }

    /// Whether `value` satisfies the congruence.
    pub fn contains(self, value: i64) -> bool {
        if self.modulus == 0 {
            value == self.residue
        } else {
            value.rem_euclid(self.modulus) == self.residue
        }
    }

    /// The largest `d > 0` that divides every value: `gcd(modulus,
    /// residue)`; `2^62` (a multiple of every power of two an alignment test
    /// asks about) when the value is always 0.
    pub fn divisor(self) -> i64 {
        match (self.modulus, self.residue) {
            (0, 0) => ZERO_DIVISOR,
            (0, r) => i64::try_from(i128::from(r).abs()).unwrap_or(ZERO_DIVISOR),
            (m, r) => i64::try_from(gcd(i128::from(m), i128::from(r))).unwrap_or(1),
        }
    }

    /// From a modulus and residue computed in `i128`. A modulus too large
    /// for `i64` is replaced by one of its divisors (any divisor of a valid
    /// modulus is valid): its greatest common divisor with `2^62`, which
    /// keeps the power-of-two part that alignment needs.
    fn normalize(modulus: i128, residue: i128) -> Congruence {
        if modulus == 0 {
            return i64::try_from(residue)
                .map_or_else(|_| Congruence::unknown(), Congruence::exact);
        }
        let modulus = if modulus > i128::from(i64::MAX) {
            gcd(modulus, i128::from(ZERO_DIVISOR))
        } else {
            modulus
        };
        Congruence {
            modulus: modulus as i64, // fits: checked just above
            residue: residue.rem_euclid(modulus) as i64,
        }
    }

    fn parts(self) -> (i128, i128) {
        (i128::from(self.modulus), i128::from(self.residue))
    }

    /// `a / d` (floor) for a constant `d ≥ 1`: with `d | m`,
    /// `(r + m·i) / d = r / d + (m / d)·i` because `0 ≤ r < m`.
    pub fn div_by(self, divisor: i64) -> Congruence {
        let (m, r) = self.parts();
        let d = i128::from(divisor);
        if d < 1 {
            Congruence::unknown()
        } else if m == 0 {
            Congruence::normalize(0, r.div_euclid(d))
        } else if m % d == 0 {
            Congruence::normalize(m / d, r / d)
        } else {
            Congruence::unknown()
        }
    }

    /// `a % d` for a divisor `d` about which `divisor` is known: `a % d =
    /// a - d·q`, so it keeps `a`'s residue modulo anything dividing both `m`
    /// and every possible `d`.
    pub fn rem_by(self, divisor: Congruence) -> Congruence {
        let (m, r) = self.parts();
        if let (0, Some(d)) = (m, divisor.as_exact())
            && d != 0
        {
            // `i64::MIN % -1` overflows: such an evaluation fails anyway.
            return self
                .residue
                .checked_rem_euclid(d)
                .map_or_else(Congruence::unknown, Congruence::exact);
        }
        let divides_every_d = match divisor.parts() {
            (0, d) => d,
            (md, rd) => gcd(md, rd),
        };
        Congruence::normalize(gcd(m, divides_every_d), r)
    }

    /// Keeps only the power-of-two part of the modulus: what survives
    /// arithmetic modulo `2^64`.
    pub fn power_of_two_part(self) -> Congruence {
        let (m, r) = self.parts();
        if m == 0 {
            // An exact value reduced modulo 2^64 keeps its low 62 bits at least.
            return Congruence::normalize(i128::from(ZERO_DIVISOR), r);
        }
        Congruence::normalize(m & -m, r)
    }

    /// Both at once (Chinese remainder theorem), or `None` when no integer
    /// satisfies both. When the combined modulus would not fit an `i64`, the
    /// stronger of the two is kept.
    pub fn meet(self, other: Congruence) -> Option<Congruence> {
        if let Some(v) = self.as_exact() {
            return other.contains(v).then_some(self);
        }
        if let Some(v) = other.as_exact() {
            return self.contains(v).then_some(other);
        }
        let ((m1, r1), (m2, r2)) = (self.parts(), other.parts());
        let (g, inverse) = gcd_and_inverse(m1, m2);
        if (r2 - r1) % g != 0 {
            return None;
        }
        let lcm = m1 / g * m2;
        if lcm > i128::from(i64::MAX) {
            return Some(if m1 >= m2 { self } else { other });
        }
        // x = r1 + m1·t with m1·t ≡ r2 - r1 (mod m2), solved modulo m2 / g.
        let step = m2 / g;
        let t = ((r2 - r1) / g % step * (inverse % step)).rem_euclid(step);
        Some(Congruence::normalize(lcm, r1 + m1 * t))
    }

    /// The smallest value `≥ lo` and the largest `≤ hi` that satisfy the
    /// congruence (either may cross the other when none lies between).
    pub fn round_bounds(self, lo: i64, hi: i64) -> (i128, i128) {
        let (m, r) = self.parts();
        let (lo, hi) = (i128::from(lo), i128::from(hi));
        if m == 0 {
            return (r, r);
        }
        (lo + (r - lo).rem_euclid(m), hi - (hi - r).rem_euclid(m))
    }
}

/// `a + b`.
impl Add<Congruence> for Congruence {
    type Output = Congruence;

    fn add(self, other: Congruence) -> Congruence {
        let ((m1, r1), (m2, r2)) = (self.parts(), other.parts());
        Congruence::normalize(gcd(m1, m2), r1 + r2)
    }
}

/// `a - b`.
impl Sub<Congruence> for Congruence {
    type Output = Congruence;

    fn sub(self, other: Congruence) -> Congruence {
        let ((m1, r1), (m2, r2)) = (self.parts(), other.parts());
        Congruence::normalize(gcd(m1, m2), r1 - r2)
    }
}

/// `a * b`: `(r1 + m1·i)(r2 + m2·j) = r1·r2 + m1·r2·i + m2·r1·j +
/// m1·m2·i·j`, so the gcd of the last three coefficients is a modulus.
impl Mul<Congruence> for Congruence {
    type Output = Congruence;

    fn mul(self, other: Congruence) -> Congruence {
        let ((m1, r1), (m2, r2)) = (self.parts(), other.parts());
        let modulus = gcd(gcd(m1 * m2, m1 * r2), m2 * r1);
        Congruence::normalize(modulus, r1 * r2)
    }
}

/// `≡ 3 (mod 8)`, `= 5`, `any`.
impl fmt::Display for Congruence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.modulus, self.residue) {
            (0, r) => write!(f, "= {r}"),
            (1, _) => f.write_str("any"),
            (m, r) => write!(f, "≡ {r} (mod {m})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small congruences with every value in `-40..=40` that satisfies each.
    fn samples() -> Vec<(Congruence, Vec<i64>)> {
        let mut all = vec![
            Congruence::unknown(),
            Congruence::exact(0),
            Congruence::exact(-6),
        ];
        for m in [2, 3, 4, 6, 8, 12] {
            for r in [0, 1, m - 1] {
                all.push(Congruence::new(m, r).expect("positive modulus"));
            }
        }
        all.into_iter()
            .map(|c| (c, (-40..=40).filter(|&v| c.contains(v)).collect()))
            .collect()
    }

    fn check(
        name: &str,
        transfer: impl Fn(Congruence, Congruence) -> Congruence,
        op: impl Fn(i64, i64) -> Option<i64>,
    ) {
        for (a, a_values) in samples() {
            for (b, b_values) in samples() {
                let result = transfer(a, b);
                for &x in &a_values {
                    for &y in &b_values {
                        if let Some(v) = op(x, y) {
                            assert!(
                                result.contains(v),
                                "{name}: {x} ({a}), {y} ({b}) -> {v} not {result}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn transfer_functions_hold_for_every_sample() {
        check("add", |a, b| a + b, |a, b| Some(a + b));
        check("sub", |a, b| a - b, |a, b| Some(a - b));
        check("mul", |a, b| a * b, |a, b| Some(a * b));
        check("rem", Congruence::rem_by, |a, b| {
            (b != 0).then(|| a.rem_euclid(b))
        });
        for d in [1, 2, 3, 4, 8] {
            check("div", |a, _| a.div_by(d), move |a, _| Some(a.div_euclid(d)));
        }
    }

    #[test]
    fn meet_is_the_intersection() {
        for (a, a_values) in samples() {
            for (b, _) in samples() {
                let both: Vec<i64> = a_values
                    .iter()
                    .copied()
                    .filter(|&v| b.contains(v))
                    .collect();
                match a.meet(b) {
                    Some(m) => {
                        for v in -40..=40 {
                            if a.contains(v) && b.contains(v) {
                                assert!(m.contains(v), "{a} ∧ {b} = {m} lacks {v}");
                            }
                        }
                    }
                    None => assert!(both.is_empty(), "{a} ∧ {b} said empty but {both:?}"),
                }
            }
        }
        let m = Congruence::new(4, 1)
            .unwrap()
            .meet(Congruence::new(6, 3).unwrap());
        assert_eq!(m, Congruence::new(12, 9));
    }

    #[test]
    fn divisors_for_alignment() {
        let k = Congruence::multiple_of(32).unwrap();
        let tid8 = Congruence::unknown() * Congruence::exact(8);
        assert_eq!((k + tid8).divisor(), 8);
        assert_eq!((k * Congruence::exact(4)).divisor(), 128);
        assert_eq!(Congruence::new(8, 4).unwrap().divisor(), 4);
        assert_eq!(Congruence::exact(0).divisor(), ZERO_DIVISOR);
        assert_eq!(Congruence::exact(-24).divisor(), 24);
        let extreme = Congruence::exact(i64::MIN).rem_by(Congruence::exact(-1));
        assert_eq!(extreme, Congruence::unknown());
        assert_eq!(
            Congruence::multiple_of(128).unwrap().div_by(64).divisor(),
            2
        );
    }

    #[test]
    fn huge_moduli_keep_their_power_of_two_part() {
        let big = Congruence::multiple_of(3 << 60).unwrap();
        let product = big * Congruence::multiple_of(12).unwrap();
        assert_eq!(product.divisor() % (1 << 62), 0);
        assert_eq!(
            Congruence::new(24, 5).unwrap().power_of_two_part(),
            Congruence::new(8, 5).unwrap()
        );
        assert_eq!(Congruence::new(8, 3).unwrap().round_bounds(0, 20), (3, 19));
    }
}
