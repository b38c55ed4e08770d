//! Index arithmetic: the analyses of an index expression
//! under a kernel's [`Facts`] — its range, a divisor of every value it takes,
//! and its known bits.
//!
//! The three domains ([`Interval`], [`Congruence`], [`KnownBits`]) are
//! computed together, bottom-up, and after every node each is sharpened by
//! what the other two know (a *reduced product*): a range `[0, 63]` proves
//! the bits above bit 5 zero, a multiple of 8 proves the three low bits
//! zero, known low bits prove a congruence, and a congruence rounds the ends
//! of a range. Every result is sound for every assignment of the variables
//! that satisfies the facts and under which the expression evaluates without
//! error.

use super::bits::KnownBits;
use super::congruence::Congruence;
use super::facts::{Facts, VarFacts};
use super::interval::Interval;
use crate::expr::Expr;

/// Everything proven about the value of one expression.
///
/// Rule: each part holds for every value the expression takes; after
/// [`analyze`] the parts agree (none says something another refutes, unless
/// the facts themselves admit no value).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ValueFacts {
    /// Inclusive bounds.
    pub range: Interval,
    /// A congruence every value satisfies.
    pub congruence: Congruence,
    /// Bits proven zero or one.
    pub bits: KnownBits,
}

impl ValueFacts {
    /// The facts of a literal.
    pub fn exact(value: i64) -> ValueFacts {
        ValueFacts {
            range: Interval::point(value),
            congruence: Congruence::exact(value),
            bits: KnownBits::exact(value),
        }
    }

    fn of_var(facts: VarFacts) -> ValueFacts {
        ValueFacts {
            range: facts.range,
            congruence: facts.congruence,
            bits: KnownBits::unknown(),
        }
        .reduce()
    }

    /// The largest `d > 0` proven to divide every value (`2^62` for a value
    /// that is always 0).
    pub fn divisor(self) -> i64 {
        self.congruence.divisor()
    }

    /// The value, when only one is possible.
    pub fn as_exact(self) -> Option<i64> {
        self.range.as_point().or(self.congruence.as_exact())
    }

    /// Lets each domain sharpen the others. Where the facts admit no value
    /// at all the parts may disagree; then the weaker part is kept, which
    /// is vacuously sound.
    fn reduce(self) -> ValueFacts {
        let ValueFacts {
            mut range,
            mut congruence,
            mut bits,
        } = self;
        // Range → bits: a one-signed range fixes the high bits.
        const SIGN: u64 = 1 << 63;
        bits = match (range.lo(), range.hi()) {
            (Some(lo), Some(hi)) => bits.meet(KnownBits::from_range(lo, hi)),
            (Some(lo), None) if lo >= 0 => bits.meet(KnownBits::new(SIGN, 0)),
            (None, Some(hi)) if hi < 0 => bits.meet(KnownBits::new(0, SIGN)),
            _ => bits,
        };
        // Congruence → bits: the power of two in the modulus fixes low bits.
        bits = bits.meet(KnownBits::from_congruence(
            congruence.modulus(),
            congruence.residue(),
        ));
        // Bits → range.
        if let Some((lo, hi)) = bits.bounds()
            && let Some(narrower) =
                Interval::new(Some(lo), Some(hi)).and_then(|b| range.intersect(b))
        {
            range = narrower;
        }
        // Bits → congruence.
        let (known_low, residue) = bits.low_residue();
        if known_low > 0
            && let Some(from_bits) = Congruence::new(1 << known_low, residue)
            && let Some(both) = congruence.meet(from_bits)
        {
            congruence = both;
        }
        // Congruence → range: round the ends to values it allows.
        let (lo, hi) = (range.lo(), range.hi());
        let (rounded_lo, rounded_hi) = congruence.round_bounds(lo.unwrap_or(0), hi.unwrap_or(0));
        let rounded = Interval::new(
            lo.and(i64::try_from(rounded_lo).ok()),
            hi.and(i64::try_from(rounded_hi).ok()),
        );
        if let Some(rounded) = rounded.and_then(|r| range.intersect(r)) {
            range = rounded;
        }
        if let Some(value) = range.as_point() {
            congruence = Congruence::exact(value);
            bits = KnownBits::exact(value);
        }
        ValueFacts {
            range,
            congruence,
            bits,
        }
    }
}

/// The power of two `k` with `2^k == value`, for `value ≥ 1`.
pub(crate) fn log2_exact(value: i64) -> Option<u32> {
    (value > 0 && value & (value - 1) == 0).then(|| value.trailing_zeros())
}

/// Analyzes `expr` bottom-up under `facts`.
pub fn analyze(expr: &Expr, facts: &Facts) -> ValueFacts {
    let both = |a: &Expr, b: &Expr| (analyze(a, facts), analyze(b, facts));
    let unknown_congruence = Congruence::unknown();
    let value = match expr {
        Expr::Const(c) => return ValueFacts::exact(*c),
        Expr::Var(var) => return ValueFacts::of_var(facts.of(*var)),
        Expr::Add(a, b) => {
            let (a, b) = both(a, b);
            ValueFacts {
                range: a.range + b.range,
                congruence: a.congruence + b.congruence,
                bits: a.bits + b.bits,
            }
        }
        Expr::Sub(a, b) => {
            let (a, b) = both(a, b);
            ValueFacts {
                range: a.range - b.range,
                congruence: a.congruence - b.congruence,
                bits: a.bits - b.bits,
            }
        }
        Expr::Mul(a, b) => {
            let (a, b) = both(a, b);
            ValueFacts {
                range: a.range * b.range,
                congruence: a.congruence * b.congruence,
                bits: a.bits * b.bits,
            }
        }
        Expr::Div(a, b) => {
            let (a, b) = both(a, b);
            let divisor = b.as_exact();
            ValueFacts {
                range: a.range / b.range,
                congruence: divisor.map_or(unknown_congruence, |d| a.congruence.div_by(d)),
                bits: match divisor.and_then(log2_exact) {
                    Some(k) => a.bits >> k,
                    None => KnownBits::unknown(),
                },
            }
        }
        Expr::Rem(a, b) => {
            let (a, b) = both(a, b);
            ValueFacts {
                range: a.range % b.range,
                congruence: a.congruence.rem_by(b.congruence),
                bits: match b.as_exact().and_then(log2_exact) {
                    Some(t) => a.bits.rem_power_of_two(t),
                    None => KnownBits::unknown(),
                },
            }
        }
        Expr::And(a, b) => {
            let (a, b) = both(a, b);
            ValueFacts {
                range: a.range & b.range,
                congruence: unknown_congruence,
                bits: a.bits & b.bits,
            }
        }
        Expr::Xor(a, b) => {
            let (a, b) = both(a, b);
            ValueFacts {
                range: a.range ^ b.range,
                congruence: unknown_congruence,
                bits: a.bits ^ b.bits,
            }
        }
        Expr::Shr(a, b) => {
            let (a, b) = both(a, b);
            let shift = b.as_exact().filter(|k| (0..64).contains(k));
            ValueFacts {
                range: a.range >> b.range,
                congruence: match shift {
                    Some(k) if k < 63 => a.congruence.div_by(1 << k),
                    _ => unknown_congruence,
                },
                bits: shift.map_or(KnownBits::unknown(), |k| a.bits >> k as u32),
            }
        }
        Expr::Shl(a, b) => {
            let (a, b) = both(a, b);
            let shift = b.as_exact().filter(|k| (0..64).contains(k));
            let range = a.range << b.range;
            // Without a range proving that no bit is lost, the product is
            // only known modulo 2^64: keep the power-of-two part.
            let exact_product = range != Interval::full();
            ValueFacts {
                range,
                congruence: match shift {
                    Some(k) if k < 63 => {
                        let product = a.congruence * Congruence::exact(1 << k);
                        if exact_product {
                            product
                        } else {
                            product.power_of_two_part()
                        }
                    }
                    _ => unknown_congruence,
                },
                bits: shift.map_or(KnownBits::unknown(), |k| a.bits << k as u32),
            }
        }
    };
    value.reduce()
}

/// Inclusive bounds on every value of `expr`.
pub fn range(expr: &Expr, facts: &Facts) -> Interval {
    analyze(expr, facts).range
}

/// The largest `d > 0` proven to divide every value of `expr` (1 when
/// nothing is known; `2^62`, a multiple of every power of two an alignment
/// test asks about, when `expr` is always 0). Use [`is_multiple_of`] to test
/// a particular divisor.
pub fn known_divisor(expr: &Expr, facts: &Facts) -> i64 {
    analyze(expr, facts).divisor()
}

/// Whether every value of `expr` is proven a multiple of `divisor` (false
/// for a divisor below 1): the alignment question of vector loads.
pub fn is_multiple_of(expr: &Expr, divisor: i64, facts: &Facts) -> bool {
    divisor >= 1 && analyze(expr, facts).divisor() % divisor == 0
}

/// The bits of `expr`'s value proven zero or one.
pub fn known_bits(expr: &Expr, facts: &Facts) -> KnownBits {
    analyze(expr, facts).bits
}

/// Whether `a` and `b` can have no one-bit in common, so that `a + b`,
/// `a | b` and `a ^ b` are equal: a swizzle `x ^ f(x)` then distributes,
/// `sw(a + b) = sw(a) ^ sw(b)`.
pub fn bits_disjoint(a: &Expr, b: &Expr, facts: &Facts) -> bool {
    known_bits(a, facts).is_disjoint(known_bits(b, facts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Var;

    fn tid() -> Expr {
        Expr::var(Var::ThreadId)
    }

    #[test]
    fn warp_coordinates_have_tight_ranges() {
        let facts = Facts::builder().threads(32).build().unwrap();
        let grp = Expr::rem(Expr::div(tid(), 8.into()), 4.into());
        assert_eq!(
            range(&grp, &facts),
            Interval::new(Some(0), Some(3)).unwrap()
        );
        let lane_bits = Expr::mul(Expr::rem(tid(), 8.into()), 64.into());
        assert_eq!(
            range(&lane_bits, &facts),
            Interval::new(Some(0), Some(448)).unwrap()
        );
        assert_eq!(known_divisor(&lane_bits, &facts), 64);
        assert_eq!(known_bits(&lane_bits, &facts).to_string(), "0b???000000");
    }

    #[test]
    fn reduction_links_the_domains() {
        // A multiple of 8 below 30 is at most 24; a value with known low bits
        // gets a congruence.
        let facts = Facts::builder()
            .range(Var::Loop(0), 0, Some(29))
            .multiple_of(Var::Loop(0), 8)
            .build()
            .unwrap();
        let k = Expr::var(Var::Loop(0));
        assert_eq!(range(&k, &facts).hi(), Some(24));
        let masked = Expr::add(Expr::and(tid(), Expr::constant(!7)), 3.into());
        assert_eq!(
            analyze(&masked, &Facts::none()).congruence,
            Congruence::new(8, 3).unwrap()
        );
    }

    #[test]
    fn alignment_of_a_vector_access() {
        let facts = Facts::builder()
            .threads(256)
            .counted_loop(0, 0, Some(4096), 32)
            .build()
            .unwrap();
        let k = Expr::var(Var::Loop(0));
        let offset = Expr::add(
            Expr::mul(Expr::rem(tid(), 16.into()), 8.into()),
            Expr::mul(k, Expr::var(Var::Dim(0))),
        );
        assert_eq!(known_divisor(&offset, &facts), 8);
        assert!(is_multiple_of(&offset, 8, &facts));
        assert!(!is_multiple_of(&offset, 16, &facts));
        assert!(!is_multiple_of(&offset, 0, &facts));
        assert!(is_multiple_of(&Expr::constant(0), 16, &facts));
    }

    #[test]
    fn disjoint_bits_of_a_swizzled_address() {
        let facts = Facts::builder().threads(32).build().unwrap();
        let row = Expr::mul(Expr::rem(tid(), 8.into()), 64.into());
        let chunk = Expr::mul(Expr::div(tid(), 8.into()), 8.into());
        assert!(bits_disjoint(&row, &chunk, &facts));
        assert!(bits_disjoint(&row, &Expr::constant(16), &facts));
        assert!(!bits_disjoint(&row, &Expr::constant(64), &facts));
        assert!(!bits_disjoint(&tid(), &chunk, &facts));
    }

    #[test]
    fn shifts_follow_the_machine() {
        let facts = Facts::builder().threads(1024).build().unwrap();
        let shl = Expr::shl(tid(), 3.into());
        assert_eq!(known_divisor(&shl, &facts), 8);
        assert_eq!(range(&shl, &facts).hi(), Some(8184));
        // A block id is below 2^32 (an index value), so shifting it by 4 keeps
        // its bits; shifting a product that may reach 2^60 by 8 may not.
        let bid = Expr::shl(Expr::var(Var::BlockId), 4.into());
        assert_eq!(range(&bid, &facts).hi(), Some(((1 << 32) - 1) << 4));
        let wide = Expr::mul(Expr::var(Var::BlockId), Expr::constant(1 << 28));
        let lossy = Expr::shl(wide, 8.into());
        assert_eq!(
            range(&lossy, &facts),
            Interval::full(),
            "bits may be shifted out"
        );
        assert_eq!(known_divisor(&lossy, &facts), 1 << 36);
        assert_eq!(range(&Expr::shr(tid(), 5.into()), &facts).hi(), Some(31));
    }
}
