//! Index arithmetic: the interval domain — inclusive
//! bounds on the value of an index expression, and how each operator moves
//! them.
//!
//! Every transfer function is sound for the evaluation rules of
//! [`Expr::eval`](crate::expr::Expr::eval): whenever the operands lie in their
//! intervals and the operation evaluates without error, the result lies in
//! the returned interval. Arithmetic on the bounds is done in `i128`, where
//! sums and products of two `i64` cannot overflow; a bound that leaves the
//! `i64` range afterwards becomes unbounded (no evaluated value can lie
//! beyond it anyway).

use std::fmt;
use std::ops::{Add, BitAnd, BitXor, Div, Mul, Neg, Rem, Shl, Shr, Sub};

/// An inclusive range of 64-bit integers, `[lo, hi]`, where either end may
/// be unbounded.
///
/// Rule: never empty — `lo ≤ hi` when both are finite. `None` for `lo` means
/// unbounded below, for `hi` unbounded above.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Interval {
    lo: Option<i64>,
    hi: Option<i64>,
}

/// A bound on the extended integer line, for corner computations where an
/// infinite end meets a finite one.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Ext {
    NegInf,
    Fin(i128),
    PosInf,
}

impl Ext {
    /// Product with the convention `0 · ∞ = 0`: a bounded value times zero is
    /// zero however large it is.
    fn mul(self, other: Ext) -> Ext {
        match (self, other) {
            (Ext::Fin(a), Ext::Fin(b)) => Ext::Fin(a * b),
            (Ext::Fin(0), _) | (_, Ext::Fin(0)) => Ext::Fin(0),
            (x, y) => {
                if x.is_negative() == y.is_negative() {
                    Ext::PosInf
                } else {
                    Ext::NegInf
                }
            }
        }
    }

    fn is_negative(self) -> bool {
        match self {
            Ext::NegInf => true,
            Ext::Fin(v) => v < 0,
            Ext::PosInf => false,
        }
    }
}

impl Interval {
    /// `[lo, hi]`; `None` when `lo > hi` (an empty range is not a range).
    pub fn new(lo: Option<i64>, hi: Option<i64>) -> Option<Interval> {
        match (lo, hi) {
            (Some(l), Some(h)) if l > h => None,
            _ => Some(Interval { lo, hi }),
        }
    }

    /// Exactly `value`.
    pub fn point(value: i64) -> Interval {
        Interval {
            lo: Some(value),
            hi: Some(value),
        }
    }

    /// `[lo, ∞)`.
    pub fn at_least(lo: i64) -> Interval {
        Interval {
            lo: Some(lo),
            hi: None,
        }
    }

    /// Every 64-bit integer.
    pub fn full() -> Interval {
        Interval { lo: None, hi: None }
    }

    /// The lower bound, `None` when unbounded below.
    pub fn lo(self) -> Option<i64> {
        self.lo
    }

    /// The upper bound, `None` when unbounded above.
    pub fn hi(self) -> Option<i64> {
        self.hi
    }

    /// The only value, when the interval holds one.
    pub fn as_point(self) -> Option<i64> {
        match (self.lo, self.hi) {
            (Some(l), Some(h)) if l == h => Some(l),
            _ => None,
        }
    }

    /// Whether `value` lies in the interval.
    pub fn contains(self, value: i64) -> bool {
        self.lo.is_none_or(|l| l <= value) && self.hi.is_none_or(|h| value <= h)
    }

    /// Whether every value is ≥ 0.
    pub fn is_non_negative(self) -> bool {
        self.lo.is_some_and(|l| l >= 0)
    }

    /// Whether every value is ≥ 1.
    pub fn is_positive(self) -> bool {
        self.lo.is_some_and(|l| l >= 1)
    }

    /// Whether every value is `< bound`.
    pub fn is_below(self, bound: i64) -> bool {
        self.hi.is_some_and(|h| h < bound)
    }

    /// The values in both, or `None` when they share none.
    pub fn intersect(self, other: Interval) -> Option<Interval> {
        let lo = match (self.lo, other.lo) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let hi = match (self.hi, other.hi) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Interval::new(lo, hi)
    }

    fn lo_ext(self) -> Ext {
        self.lo.map_or(Ext::NegInf, |l| Ext::Fin(i128::from(l)))
    }

    fn hi_ext(self) -> Ext {
        self.hi.map_or(Ext::PosInf, |h| Ext::Fin(i128::from(h)))
    }

    /// Back from extended bounds. A finite bound past the `i64` range becomes
    /// unbounded on its own side and saturates on the other (only values that
    /// overflow could lie there, and those are never evaluated).
    fn from_ext(lo: Ext, hi: Ext) -> Interval {
        let lo = match lo {
            Ext::NegInf => None,
            Ext::Fin(v) if v < i128::from(i64::MIN) => None,
            Ext::Fin(v) => Some(i64::try_from(v).unwrap_or(i64::MAX)),
            Ext::PosInf => Some(i64::MAX),
        };
        let hi = match hi {
            Ext::PosInf => None,
            Ext::Fin(v) if v > i128::from(i64::MAX) => None,
            Ext::Fin(v) => Some(i64::try_from(v).unwrap_or(i64::MIN)),
            Ext::NegInf => Some(i64::MIN),
        };
        // Saturation can only meet, never cross: lo ≤ hi held before it.
        Interval { lo, hi }
    }
}

/// `-a`.
impl Neg for Interval {
    type Output = Interval;

    fn neg(self) -> Interval {
        let flip = |e: Ext| match e {
            Ext::NegInf => Ext::PosInf,
            Ext::Fin(v) => Ext::Fin(-v),
            Ext::PosInf => Ext::NegInf,
        };
        Interval::from_ext(flip(self.hi_ext()), flip(self.lo_ext()))
    }
}

/// `a + b`.
impl Add<Interval> for Interval {
    type Output = Interval;

    fn add(self, other: Interval) -> Interval {
        let sum = |a: Ext, b: Ext| match (a, b) {
            (Ext::Fin(x), Ext::Fin(y)) => Ext::Fin(x + y),
            (Ext::Fin(_), inf) | (inf, _) => inf,
        };
        Interval::from_ext(
            sum(self.lo_ext(), other.lo_ext()),
            sum(self.hi_ext(), other.hi_ext()),
        )
    }
}

/// `a - b`.
impl Sub<Interval> for Interval {
    type Output = Interval;

    fn sub(self, other: Interval) -> Interval {
        self + -other
    }
}

/// `a * b`: the extremes of a product over a box lie at its corners.
impl Mul<Interval> for Interval {
    type Output = Interval;

    fn mul(self, other: Interval) -> Interval {
        let corners = [
            self.lo_ext().mul(other.lo_ext()),
            self.lo_ext().mul(other.hi_ext()),
            self.hi_ext().mul(other.lo_ext()),
            self.hi_ext().mul(other.hi_ext()),
        ];
        let lo = corners.iter().copied().min().unwrap_or(Ext::NegInf);
        let hi = corners.iter().copied().max().unwrap_or(Ext::PosInf);
        Interval::from_ext(lo, hi)
    }
}

/// `a / d`, floor division. Only a divisor proven ≥ 1 gives bounds.
impl Div<Interval> for Interval {
    type Output = Interval;

    fn div(self, divisor: Interval) -> Interval {
        let Some(d_lo) = divisor.lo.filter(|&l| l >= 1) else {
            return Interval::full();
        };
        let d_lo = i128::from(d_lo);
        let d_hi = divisor.hi.map(i128::from);
        // floor(x / d) rises with x; for x ≥ 0 it falls as d grows, for x < 0
        // it rises towards -1.
        let lo = match self.lo_ext() {
            Ext::Fin(x) if x >= 0 => Ext::Fin(d_hi.map_or(0, |d| x.div_euclid(d))),
            Ext::Fin(x) => Ext::Fin(x.div_euclid(d_lo)),
            other => other,
        };
        let hi = match self.hi_ext() {
            Ext::Fin(x) if x >= 0 => Ext::Fin(x.div_euclid(d_lo)),
            Ext::Fin(x) => Ext::Fin(d_hi.map_or(-1, |d| x.div_euclid(d))),
            other => other,
        };
        Interval::from_ext(lo, hi)
    }
}

/// `a % d`, the non-negative remainder.
impl Rem<Interval> for Interval {
    type Output = Interval;

    fn rem(self, divisor: Interval) -> Interval {
        let Some(d_lo) = divisor.lo.filter(|&l| l >= 1) else {
            // A remainder is never negative, whatever the divisor.
            return Interval::at_least(0);
        };
        if let (Some(d), Some(x_lo), Some(x_hi)) = (divisor.as_point(), self.lo, self.hi) {
            // Within one period of the divisor the remainder is a shift.
            let q = x_lo.div_euclid(d);
            if q == x_hi.div_euclid(d) {
                let base = i128::from(q) * i128::from(d);
                return Interval::from_ext(
                    Ext::Fin(i128::from(x_lo) - base),
                    Ext::Fin(i128::from(x_hi) - base),
                );
            }
        }
        if self.is_non_negative() && self.is_below(d_lo) {
            return self;
        }
        let mut hi = divisor.hi.map(|d| d - 1);
        if self.is_non_negative() {
            hi = match (hi, self.hi) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        Interval { lo: Some(0), hi }
    }
}

/// `a & b`: masking a non-negative value keeps it between 0 and itself.
impl BitAnd<Interval> for Interval {
    type Output = Interval;

    fn bitand(self, other: Interval) -> Interval {
        match (self.is_non_negative(), other.is_non_negative()) {
            (true, true) => Interval {
                lo: Some(0),
                hi: match (self.hi, other.hi) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                },
            },
            (true, false) => Interval {
                lo: Some(0),
                hi: self.hi,
            },
            (false, true) => Interval {
                lo: Some(0),
                hi: other.hi,
            },
            (false, false) => Interval::full(),
        }
    }
}

/// `a ^ b`: non-negative when both are; the known-bits domain supplies
/// the upper bound.
impl BitXor<Interval> for Interval {
    type Output = Interval;

    fn bitxor(self, other: Interval) -> Interval {
        if self.is_non_negative() && other.is_non_negative() {
            Interval::at_least(0)
        } else {
            Interval::full()
        }
    }
}

/// `a >> s`, arithmetic: rises with `a`; for `a ≥ 0` it falls as `s`
/// grows, for `a < 0` it rises towards -1. Shift amounts outside `0..64`
/// fail to evaluate, so only those inside count.
impl Shr<Interval> for Interval {
    type Output = Interval;

    fn shr(self, amount: Interval) -> Interval {
        let Some(amount) = amount.intersect(Interval {
            lo: Some(0),
            hi: Some(63),
        }) else {
            return Interval::full();
        };
        let (s_lo, s_hi) = (amount.lo.unwrap_or(0), amount.hi.unwrap_or(63));
        let shift = |e: Ext, s: i64| match e {
            Ext::Fin(v) => Ext::Fin(v >> s),
            inf => inf,
        };
        let lo = match self.lo_ext() {
            e @ Ext::Fin(v) if v >= 0 => shift(e, s_hi),
            e => shift(e, s_lo),
        };
        let hi = match self.hi_ext() {
            e @ Ext::Fin(v) if v < 0 => shift(e, s_hi),
            e => shift(e, s_lo),
        };
        Interval::from_ext(lo, hi)
    }
}

/// `a << s`. The shift drops bits silently when they leave the word, so
/// there are bounds only when every operand value shifts without loss.
impl Shl<Interval> for Interval {
    type Output = Interval;

    fn shl(self, amount: Interval) -> Interval {
        let Some(amount) = amount.intersect(Interval {
            lo: Some(0),
            hi: Some(63),
        }) else {
            return Interval::full();
        };
        let (Some(x_lo), Some(x_hi), Some(s_lo), Some(s_hi)) =
            (self.lo, self.hi, amount.lo, amount.hi)
        else {
            return Interval::full();
        };
        let scaled = |x: i64, s: i64| i128::from(x) << s;
        let fits = |v: i128| i64::try_from(v).is_ok();
        if !(fits(scaled(x_lo, s_hi)) && fits(scaled(x_hi, s_hi))) {
            return Interval::full();
        }
        let lo = scaled(x_lo, if x_lo >= 0 { s_lo } else { s_hi });
        let hi = scaled(x_hi, if x_hi >= 0 { s_hi } else { s_lo });
        Interval::from_ext(Ext::Fin(lo), Ext::Fin(hi))
    }
}

/// `[0, 31]`, `[1, ∞)`, `(-∞, 4]`.
impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.lo {
            Some(l) => write!(f, "[{l}, ")?,
            None => f.write_str("(-∞, ")?,
        }
        match self.hi {
            Some(h) => write!(f, "{h}]"),
            None => f.write_str("∞)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(lo: i64, hi: i64) -> Interval {
        Interval::new(Some(lo), Some(hi)).expect("non-empty")
    }

    /// Every value of `op` over the two small boxes lies in the interval the
    /// transfer function gives.
    fn check_exhaustively(
        name: &str,
        transfer: impl Fn(Interval, Interval) -> Interval,
        op: fn(i64, i64) -> Option<i64>,
    ) {
        let boxes = [(-9, -3), (-4, 5), (0, 0), (0, 13), (3, 9), (7, 7), (1, 64)];
        for &(al, ah) in &boxes {
            for &(bl, bh) in &boxes {
                let bound = transfer(range(al, ah), range(bl, bh));
                for a in al..=ah {
                    for b in bl..=bh {
                        if let Some(v) = op(a, b) {
                            assert!(
                                bound.contains(v),
                                "{name}: {a}, {b} -> {v} outside {bound} \
                                 for [{al},{ah}], [{bl},{bh}]"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn transfer_functions_contain_every_value() {
        check_exhaustively("add", |a, b| a + b, |a, b| a.checked_add(b));
        check_exhaustively("sub", |a, b| a - b, |a, b| a.checked_sub(b));
        check_exhaustively("mul", |a, b| a * b, |a, b| a.checked_mul(b));
        check_exhaustively(
            "div",
            |a, b| a / b,
            |a, b| (b != 0).then(|| a.div_euclid(b)),
        );
        check_exhaustively(
            "rem",
            |a, b| a % b,
            |a, b| (b != 0).then(|| a.rem_euclid(b)),
        );
        check_exhaustively("and", |a, b| a & b, |a, b| Some(a & b));
        check_exhaustively("xor", |a, b| a ^ b, |a, b| Some(a ^ b));
        check_exhaustively(
            "shr",
            |a, b| a >> b,
            |a, b| u32::try_from(b).ok().and_then(|s| a.checked_shr(s)),
        );
        check_exhaustively(
            "shl",
            |a, b| a << b,
            |a, b| u32::try_from(b).ok().and_then(|s| a.checked_shl(s)),
        );
    }

    #[test]
    fn bounds_are_tight_on_index_patterns() {
        let tid = range(0, 255);
        assert_eq!(tid / Interval::point(16), range(0, 15));
        assert_eq!(tid % Interval::point(8), range(0, 7));
        assert_eq!(range(0, 5) % Interval::point(8), range(0, 5));
        assert_eq!(range(64, 70) % Interval::point(32), range(0, 6));
        assert_eq!(tid * Interval::point(8), range(0, 2040));
        assert_eq!(tid << Interval::point(2), range(0, 1020));
        assert_eq!(tid >> Interval::point(3), range(0, 31));
    }

    #[test]
    fn unbounded_ends_stay_sound() {
        let bid = Interval::at_least(0);
        assert_eq!(bid * Interval::point(128), Interval::at_least(0));
        assert_eq!(bid / Interval::point(4), Interval::at_least(0));
        assert_eq!(
            range(0, 100) / Interval::at_least(1),
            range(0, 100),
            "dividing by an unbounded divisor can give anything down to 0"
        );
        assert_eq!(range(-7, -1) / Interval::at_least(2), range(-4, -1));
        assert_eq!(Interval::point(0) * Interval::full(), Interval::point(0));
        assert_eq!(bid % Interval::at_least(1), Interval::at_least(0));
        assert_eq!(range(0, 9) - bid, Interval::new(None, Some(9)).unwrap());
    }

    #[test]
    fn overflowing_bounds_become_unbounded() {
        let big = range(0, i64::MAX);
        assert_eq!(big + Interval::point(1), Interval::at_least(1));
        assert_eq!(big * Interval::point(2), Interval::at_least(0));
        assert_eq!(-range(i64::MIN, 0), Interval::at_least(0));
        assert_eq!(range(1, 2) << Interval::point(63), Interval::full());
    }

    #[test]
    fn set_operations_and_text() {
        assert_eq!(Interval::new(Some(3), Some(2)), None);
        assert_eq!(range(0, 9).intersect(range(5, 20)), Some(range(5, 9)));
        assert_eq!(range(0, 4).intersect(range(5, 20)), None);
        assert!(range(0, 31).is_below(32));
        assert!(!Interval::at_least(0).is_below(32));
        assert_eq!(range(0, 31).to_string(), "[0, 31]");
        assert_eq!(Interval::at_least(1).to_string(), "[1, ∞)");
        assert_eq!(Interval::point(7).as_point(), Some(7));
    }
}
