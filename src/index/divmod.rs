//! Index arithmetic: the rules for floor division and
//! remainder — the heart of layout arithmetic, where coordinates are
//! `(tid / stride) % shape` and offsets sum them with strides.
//!
//! Every rule needs its dividend proven non-negative and its divisor proven
//! at least 1 (by the analyses), so that floor division, the truncating
//! division PTX performs, and the identities below all agree. Each rule is
//! stated in `docs/index-arithmetic.md` with its proof.

use super::analysis::ValueFacts;
use super::facts::INDEX_LIMIT;
use super::linear::{LinearSum, gcd};
use super::simplify::Simplifier;
use crate::expr::Expr;

impl Simplifier<'_> {
    /// Canonical `x / d` for canonical operands.
    pub(super) fn div(&self, x: Expr, d: Expr) -> Expr {
        let plain = Expr::div(x.clone(), d.clone());
        if x.as_const().is_some() && d.as_const().is_some() {
            return plain;
        }
        let (fx, fd) = (self.analyze(&x), self.analyze(&d));
        if !fx.range.is_non_negative() || !fd.range.is_positive() {
            return plain;
        }
        // 0 ≤ x < d: the quotient is 0.
        if let (Some(x_hi), Some(d_lo)) = (fx.range.hi(), fd.range.lo())
            && x_hi < d_lo
        {
            return Expr::Const(0);
        }
        if let Some(n) = d.as_const()
            && let Some(quotient) = self.div_by_constant(&x, fx, n)
        {
            return quotient;
        }
        self.div_split(&x, &d).unwrap_or(plain)
    }

    /// The rules for a constant divisor `n ≥ 1`.
    fn div_by_constant(&self, x: &Expr, fx: ValueFacts, n: i64) -> Option<Expr> {
        // All of x within one period [q·n, q·n + n): the quotient is q.
        if let (Some(lo), Some(hi)) = (fx.range.lo(), fx.range.hi())
            && lo / n == hi / n
        {
            return Some(Expr::Const(lo / n));
        }
        match x {
            // (y / a) / n = y / (a·n).
            Expr::Div(y, a) => {
                let a = a.as_const().filter(|&a| a >= 1)?;
                Some(self.div(y.as_ref().clone(), Expr::Const(a.checked_mul(n)?)))
            }
            // (y % (n·b)) / n = (y / n) % b.
            Expr::Rem(y, m) => {
                let m = m.as_const().filter(|&m| m % n == 0)?;
                if !self.analyze(y).range.is_non_negative() {
                    return None;
                }
                let quotient = self.div(y.as_ref().clone(), Expr::Const(n));
                Some(self.rem(quotient, Expr::Const(m / n)))
            }
            Expr::Const(_)
            | Expr::Var(_)
            | Expr::Add(..)
            | Expr::Sub(..)
            | Expr::Mul(..)
            | Expr::And(..)
            | Expr::Xor(..)
            | Expr::Shr(..)
            | Expr::Shl(..) => None,
        }
    }

    /// `(d·q + r) / d = q + r / d` for `r ≥ 0`, where `q` collects the terms
    /// that `d` divides syntactically; then, for a constant `d`, small
    /// addends dropped and common factors, `(g·y) / (g·n) = y / n`.
    fn div_split(&self, x: &Expr, d: &Expr) -> Option<Expr> {
        let sum = LinearSum::from_expr(x)?;
        let divisor = LinearSum::from_expr(d)?.as_divisor()?;
        let (quotient, rest) = sum.split_by(&divisor)?;
        if quotient != LinearSum::default() && self.formed_dividend_fits(&sum, &rest) {
            let rest_quotient = self.div(self.linear(rest), d.clone());
            return Some(self.add(self.linear(quotient), rest_quotient));
        }
        let (monomial, n) = divisor;
        if !monomial.is_empty() {
            return None;
        }
        // (A + B) / n = A / n when g | A, g | n and 0 ≤ B < g.
        if let Some((aligned, _)) = self.split_small_addend(&sum, n) {
            return Some(self.div(aligned, d.clone()));
        }
        let common = gcd(sum.content(), n);
        if common > 1 {
            let reduced = self.linear(sum.divide_exactly(common)?);
            return Some(self.div(reduced, Expr::Const(n / common)));
        }
        None
    }

    /// `(A, B)` with `sum = A + B`, where every term of `A` is proven a
    /// multiple of some `g > 1` that divides `n`, and `0 ≤ B < g`: then
    /// `A + B` never carries into the bits `n` looks at — `(A + B) / n = A
    /// / n` and `(A + B) % n = A % n + B`. The largest such `g` is taken;
    /// `None` when there is none (or `A` or `B` would be empty).
    fn split_small_addend(&self, sum: &LinearSum, n: i64) -> Option<(Expr, Expr)> {
        let parts: Vec<(LinearSum, i64)> = sum
            .parts()
            .map(|part| {
                let divisor = self.analyze(&part.to_expr()).divisor();
                (part, gcd(divisor, n))
            })
            .collect();
        let mut candidates: Vec<i64> = parts.iter().map(|&(_, g)| g).filter(|&g| g > 1).collect();
        candidates.sort_unstable_by(|a, b| b.cmp(a));
        candidates.dedup();
        for g in candidates {
            let mut aligned = LinearSum::default();
            let mut small = LinearSum::default();
            for (part, part_g) in &parts {
                let side = if part_g % g == 0 {
                    &mut aligned
                } else {
                    &mut small
                };
                *side = side.add(part)?;
            }
            if aligned == LinearSum::default() || small == LinearSum::default() {
                continue;
            }
            let small = self.linear(small);
            let bound = self.analyze(&small).range;
            if bound.is_non_negative() && bound.is_below(g) {
                return Some((self.linear(aligned), small));
            }
        }
        None
    }

    /// Canonical `x % d` for canonical operands.
    pub(super) fn rem(&self, x: Expr, d: Expr) -> Expr {
        let plain = Expr::rem(x.clone(), d.clone());
        if x.as_const().is_some() && d.as_const().is_some() {
            return plain;
        }
        let (fx, fd) = (self.analyze(&x), self.analyze(&d));
        if !fx.range.is_non_negative() || !fd.range.is_positive() {
            return plain;
        }
        // 0 ≤ x < d: the remainder is x.
        if let (Some(x_hi), Some(d_lo)) = (fx.range.hi(), fd.range.lo())
            && x_hi < d_lo
        {
            return x;
        }
        if let Some(n) = d.as_const()
            && let Some(remainder) = self.rem_by_constant(&x, fx, n)
        {
            return remainder;
        }
        self.rem_split(&x, &d).unwrap_or(plain)
    }

    /// The rules for a constant divisor `n ≥ 1`.
    fn rem_by_constant(&self, x: &Expr, fx: ValueFacts, n: i64) -> Option<Expr> {
        // n | x: the remainder is 0.
        if fx.divisor() % n == 0 {
            return Some(Expr::Const(0));
        }
        // All of x within one period [q·n, q·n + n): the remainder is x − q·n.
        if let (Some(lo), Some(hi)) = (fx.range.lo(), fx.range.hi())
            && lo / n == hi / n
        {
            return Some(self.sub(x.clone(), Expr::Const(lo / n * n)));
        }
        // (y % (n·b)) % n = y % n.
        if let Expr::Rem(y, m) = x
            && m.as_const().is_some_and(|m| m % n == 0)
            && self.analyze(y).range.is_non_negative()
        {
            return Some(self.rem(y.as_ref().clone(), Expr::Const(n)));
        }
        None
    }

    /// `(d·q + r) % d = r % d` for `r ≥ 0`, dropping the terms `d` divides
    /// (syntactically, or for a constant `d` by their known divisor); for a
    /// constant `n`, coefficients reduced modulo `n`, small addends taken
    /// out, then common factors, `(g·y) % (g·n) = (y % n)·g`.
    fn rem_split(&self, x: &Expr, d: &Expr) -> Option<Expr> {
        let sum = LinearSum::from_expr(x)?;
        let divisor = LinearSum::from_expr(d)?.as_divisor()?;
        let (_, mut rest) = sum.split_by(&divisor)?;
        let (monomial, n) = divisor;
        let by_constant = monomial.is_empty();
        if by_constant {
            let multiples: Vec<_> = rest
                .terms()
                .filter(|&(m, c)| self.analyze(&LinearSum::term_expr(m, c)).divisor() % n == 0)
                .map(|(m, c)| (m.clone(), c))
                .collect();
            for (m, c) in multiples {
                rest.add_term(m, -c)?;
            }
        }
        if rest != sum && self.formed_dividend_fits(&sum, &rest) {
            return Some(self.rem(self.linear(rest), d.clone()));
        }
        if !by_constant {
            return None;
        }
        // c·y % n = (c mod n)·y % n.
        let mut reduced = LinearSum::constant(sum.constant_part().rem_euclid(n))?;
        for (m, c) in sum.terms().filter(|&(_, c)| c > 0) {
            reduced.add_term(m.clone(), c % n)?;
        }
        for (m, c) in sum.terms().filter(|&(_, c)| c < 0) {
            reduced.add_term(m.clone(), c)?;
        }
        if reduced != sum && self.formed_dividend_fits(&sum, &reduced) {
            return Some(self.rem(self.linear(reduced), d.clone()));
        }
        // (A + B) % n = A % n + B when g | A, g | n and 0 ≤ B < g.
        if let Some((aligned, small)) = self.split_small_addend(&sum, n) {
            return Some(self.add(self.rem(aligned, d.clone()), small));
        }
        let common = gcd(sum.content(), n);
        if common > 1 {
            let inner = self.linear(sum.divide_exactly(common)?);
            let factored = self.mul(
                self.rem(inner, Expr::Const(n / common)),
                Expr::Const(common),
            );
            let plain = Expr::rem(x.clone(), d.clone());
            return (factored.node_count() <= plain.node_count()).then_some(factored);
        }
        None
    }
}

impl Simplifier<'_> {
    /// Whether `formed`, a dividend a rule makes from the dividend `original`
    /// (it was not in the input), computes exactly in the emitted code, which
    /// wraps at 2^32, wherever `original` does — so that dividing it is sound:
    /// it is proven non-negative, and either proven below `INDEX_LIMIT` or
    /// made by dropping terms proven non-negative (then `formed ≤ original`).
    fn formed_dividend_fits(&self, original: &LinearSum, formed: &LinearSum) -> bool {
        let range = self.analyze(&self.linear(formed.clone())).range;
        if !range.is_non_negative() {
            return false;
        }
        if range.is_below(INDEX_LIMIT) {
            return true;
        }
        LinearSum::sub(original, formed)
            .is_some_and(|dropped| self.analyze(&dropped.to_expr()).range.is_non_negative())
    }
}
