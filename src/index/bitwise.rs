//! Index arithmetic: the rules for `&`, `^`, `<<` and
//! `>>` — swizzled shared-memory addressing, `x ^ ((x >> S) & mask)`.
//!
//! Shifts by constants become multiplications and floor divisions (so the
//! linear and division rules see them), a low-bit mask becomes a remainder,
//! and an exclusive or of operands with disjoint bits becomes a sum; the
//! strength reduction turns the survivors back into shifts and masks for
//! emission. Rules rest on two's complement identities; the known-bits
//! domain proves the disjointness they need.

use super::analysis::log2_exact;
use super::linear::LinearSum;
use super::simplify::Simplifier;
use crate::expr::Expr;

/// The operands of a commutative operator in canonical order: a literal
/// last, otherwise sorted.
pub(super) fn ordered(a: Expr, b: Expr) -> (Expr, Expr) {
    let swap = match (a.as_const(), b.as_const()) {
        (Some(_), None) => true,
        (None, Some(_)) => false,
        _ => a > b,
    };
    if swap { (b, a) } else { (a, b) }
}

impl Simplifier<'_> {
    /// Canonical `x << k`: `x · 2^k` when no bit of `x` can be shifted out.
    pub(super) fn shl(&self, x: Expr, k: Expr) -> Expr {
        if let Some(shift) = k.as_const().filter(|s| (0..63).contains(s)) {
            let range = self.analyze(&x).range;
            let fits = |bound: Option<i64>| {
                bound.is_some_and(|v| i64::try_from(i128::from(v) << shift).is_ok())
            };
            if fits(range.lo()) && fits(range.hi()) {
                return self.mul(x, Expr::Const(1 << shift));
            }
        }
        Expr::shl(x, k)
    }

    /// Canonical `x >> k`: for `x ≥ 0`, division by `2^k`. (The
    /// arithmetic shift is floor division for every `x`, but emitted
    /// division truncates, so a value that may be negative keeps its shift.)
    pub(super) fn shr(&self, x: Expr, k: Expr) -> Expr {
        match k.as_const().filter(|s| (0..63).contains(s)) {
            Some(shift) if self.analyze(&x).range.is_non_negative() => {
                self.div(x, Expr::Const(1 << shift))
            }
            Some(_) | None => Expr::shr(x, k),
        }
    }

    /// Canonical `x & y`.
    pub(super) fn and(&self, x: Expr, y: Expr) -> Expr {
        let (x, y) = ordered(x, y);
        if x.as_const().is_some() || x == y {
            return Expr::and(x.clone(), y);
        }
        let (bx, by) = (self.analyze(&x).bits, self.analyze(&y).bits);
        if bx.is_disjoint(by) {
            return Expr::Const(0);
        }
        // Every bit x may have is set in y (or the other way round).
        if bx.possible_ones() & !by.ones() == 0 {
            return x;
        }
        if by.possible_ones() & !bx.ones() == 0 {
            return y;
        }
        let Some(mask) = y.as_const() else {
            return Expr::and(x, y);
        };
        // Mask bits that x never has change nothing; the narrower mask may
        // satisfy the rules above.
        let narrowed = mask & bx.possible_ones() as i64;
        if narrowed != mask {
            return self.and(x, Expr::Const(narrowed));
        }
        // The rules below divide x: emitted division truncates, so x must be
        // proven non-negative (then mask ≥ 0 too: it lies within x's bits).
        if !self.analyze(&x).range.is_non_negative() {
            return Expr::and(x, y);
        }
        // x & (2^t − 1) = x % 2^t.
        if let Some(t) = mask.checked_add(1).and_then(log2_exact) {
            return self.rem(x, Expr::Const(1 << t));
        }
        // x & ((2^b − 1) << s) = ((x / 2^s) % 2^b) · 2^s, kept when the
        // division rules make it no larger than the mask.
        let masked = Expr::and(x.clone(), Expr::Const(mask));
        let shift = mask.trailing_zeros();
        if let Some(bits) = (mask >> shift).checked_add(1).and_then(log2_exact) {
            let field = self.rem(self.div(x, Expr::Const(1 << shift)), Expr::Const(1 << bits));
            let field = self.mul(field, Expr::Const(1 << shift));
            if field.node_count() <= masked.node_count() {
                return field;
            }
        }
        masked
    }

    /// Canonical `x ^ y`.
    pub(super) fn xor(&self, x: Expr, y: Expr) -> Expr {
        let (x, y) = ordered(x, y);
        if x.as_const().is_some() {
            return Expr::xor(x, y);
        }
        if x == y {
            return Expr::Const(0);
        }
        let (bx, by) = (self.analyze(&x).bits, self.analyze(&y).bits);
        // No carry anywhere: x ^ y = x + y.
        if bx.is_disjoint(by) {
            return self.add(x, y);
        }
        // A constant whose every bit is set in x clears them: x ^ c = x − c.
        if let Some(c) = y.as_const()
            && c as u64 & !bx.ones() == 0
        {
            return self.sub(x, y);
        }
        self.hoist_disjoint_terms(&x, &y)
            .unwrap_or_else(|| Expr::xor(x, y))
    }

    /// `(t + r) ^ y = (r ^ y) + t` when the term `t` has no possible bit in
    /// common with the rest `r` of its operand nor with the other operand
    /// `y`: `t + r = t | r`, and `t` passes through the exclusive or
    /// untouched. Takes out every such term of either operand, in order;
    /// `None` when there is none.
    fn hoist_disjoint_terms(&self, x: &Expr, y: &Expr) -> Option<Expr> {
        let mut operands = [LinearSum::from_expr(x)?, LinearSum::from_expr(y)?];
        let mut hoisted = LinearSum::default();
        for side in 0..2 {
            let parts: Vec<LinearSum> = operands[side].parts().collect();
            for part in parts {
                let rest = operands[side].sub(&part)?;
                let other = &operands[1 - side];
                let bits = |sum: &LinearSum| self.analyze(&sum.to_expr()).bits;
                let part_bits = bits(&part);
                if part_bits.is_disjoint(bits(&rest)) && part_bits.is_disjoint(bits(other)) {
                    hoisted = hoisted.add(&part)?;
                    operands[side] = rest;
                }
            }
        }
        if hoisted == LinearSum::default() {
            return None;
        }
        let [x_rest, y_rest] = operands;
        let rest = self.xor(self.linear(x_rest), self.linear(y_rest));
        Some(self.add(rest, self.linear(hoisted)))
    }
}

#[cfg(test)]
mod tests {
    use crate::expr::{Expr, Var};
    use crate::index::facts::Facts;
    use crate::index::simplify::simplify;

    fn tid() -> Expr {
        Expr::var(Var::ThreadId)
    }

    fn raw(build: fn(Box<Expr>, Box<Expr>) -> Expr, a: Expr, b: impl Into<Expr>) -> Expr {
        build(Box::new(a), Box::new(b.into()))
    }

    fn warp() -> Facts {
        Facts::builder().threads(32).build().expect("valid facts")
    }

    fn simplified(e: &Expr, facts: &Facts) -> String {
        simplify(e, facts).to_string()
    }

    #[test]
    fn shifts_become_arithmetic_only_when_exact() {
        let facts = warp();
        assert_eq!(simplified(&raw(Expr::Shl, tid(), 4), &facts), "(tid * 16)");
        assert_eq!(simplified(&raw(Expr::Shr, tid(), 2), &facts), "(tid / 4)");
        // A block id is an index value (below 2^32): shifting it by 4 loses no
        // bits, so it becomes a product; a product that may reach 2^60 shifted
        // by 8 may lose bits: it stays a shift.
        let bid = Expr::var(Var::BlockId);
        assert_eq!(
            simplified(&raw(Expr::Shl, bid.clone(), 4), &facts),
            "(bid * 16)"
        );
        let wide = raw(Expr::Mul, bid.clone(), 1 << 28);
        assert_eq!(
            simplified(&raw(Expr::Shl, wide, 8), &facts),
            "((bid * 268435456) << 8)"
        );
        // A value that may be negative keeps its arithmetic shift.
        let maybe_negative = raw(Expr::Sub, tid(), 16);
        assert_eq!(
            simplified(&raw(Expr::Shr, maybe_negative, 1), &facts),
            "((tid - 16) >> 1)"
        );
        // A shift by a variable amount is left alone.
        let by_loop = raw(Expr::Shl, tid(), Expr::var(Var::Loop(0)));
        assert_eq!(simplify(&by_loop, &facts), by_loop);
    }

    #[test]
    fn masks_use_the_known_bits() {
        let facts = warp();
        let row = raw(Expr::Mul, raw(Expr::Rem, tid(), 8), 64);
        // No common bit: 0. Every bit of tid inside the mask: tid.
        assert_eq!(simplified(&raw(Expr::And, row.clone(), 63), &facts), "0");
        assert_eq!(simplified(&raw(Expr::And, tid(), 0xff), &facts), "tid");
        // Mask bits tid never has are dropped, leaving a low mask.
        assert_eq!(
            simplified(&raw(Expr::And, tid(), 0x10f), &facts),
            "(tid % 16)"
        );
        // A contiguous field becomes division and remainder when that is no larger.
        assert_eq!(
            simplified(&raw(Expr::And, row, 0x1c0), &facts),
            "((tid % 8) * 64)"
        );
        assert_eq!(
            simplified(&raw(Expr::And, tid(), 0x18), &facts),
            "(tid & 24)"
        );
        // Operands are ordered: the literal goes last.
        assert_eq!(
            simplified(&raw(Expr::And, Expr::Const(0x18), tid()), &facts),
            "(tid & 24)"
        );
    }

    #[test]
    fn exclusive_or_of_disjoint_parts_is_a_sum() {
        let facts = warp();
        let high = raw(Expr::Mul, raw(Expr::Div, tid(), 8), 64);
        let low = raw(Expr::Rem, tid(), 8);
        assert_eq!(
            simplified(&raw(Expr::Xor, high.clone(), low.clone()), &facts),
            "(((tid / 8) * 64) + (tid % 8))"
        );
        assert_eq!(
            simplified(&raw(Expr::Xor, low.clone(), low.clone()), &facts),
            "0"
        );
        // Bits known to be 1 are cleared by subtraction.
        let with_bit = raw(Expr::Add, raw(Expr::Mul, tid(), 2), 1);
        assert_eq!(
            simplified(&raw(Expr::Xor, with_bit, 1), &facts),
            "(tid * 2)"
        );
        // Overlapping bits stay an exclusive or.
        assert_eq!(simplified(&raw(Expr::Xor, tid(), 5), &facts), "(tid ^ 5)");
    }

    #[test]
    fn disjoint_terms_move_out_of_an_exclusive_or() {
        let facts = warp();
        let chunk = raw(Expr::Mul, raw(Expr::Div, tid(), 8), 8);
        let row_bits = raw(Expr::Mul, raw(Expr::Rem, tid(), 8), 8);
        // (row·64 + chunk·8 + 4) ^ row·8: row·64 and 4 meet no other bit.
        let address = raw(
            Expr::Add,
            raw(
                Expr::Add,
                raw(Expr::Mul, raw(Expr::Rem, tid(), 8), 64),
                chunk,
            ),
            4,
        );
        let swizzled = raw(Expr::Xor, address, row_bits);
        assert_eq!(
            simplified(&swizzled, &facts),
            "((((tid % 8) * 64) + (((tid / 8) * 8) ^ ((tid % 8) * 8))) + 4)"
        );
    }
}
