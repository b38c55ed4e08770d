//! Index arithmetic: simplification of index
//! expressions under a kernel's [`Facts`], before instruction selection.
//!
//! The walk is bottom-up. At each node the children are already simplified
//! and canonical; the node is rebuilt through the rules of its operator:
//! sums and products by constants through the linear normal form
//! (`linear`), `/` and `%` through `divmod`, bit operations through
//! `bitwise`. Every rule is an identity of floor division and two's
//! complement arithmetic whose precondition is proven by the analyses
//! (`docs/index-arithmetic.md` lists them). The rebuilt node is kept only
//! when it has no more nodes than the node made of the simplified children,
//! which makes the result never larger than the input.

use super::analysis::{ValueFacts, analyze};
use super::bitwise::ordered;
use super::facts::Facts;
use super::linear::LinearSum;
use crate::expr::Expr;

/// An expression equal to `expr` for every assignment of its variables that
/// satisfies `facts` and under which `expr` evaluates, with no more nodes,
/// in canonical form: index computations that the rules prove equal print
/// the same.
///
/// Rule: `simplify(e).node_count() ≤ e.node_count()`. Wherever `e`
/// evaluates to `v` under an assignment allowed by `facts`, the result
/// computes `v` in machine arithmetic — `+ - * <<` modulo `2^64`, where the
/// linear rules are exact — and divides no negative value where `e` did
/// not. (Reordering a sum can move an intermediate value past `2^63` when
/// `e`'s values come near it; `Expr::eval` then reports an overflow that
/// wrapping arithmetic does not have. Index values are far smaller.)
pub fn simplify(expr: &Expr, facts: &Facts) -> Expr {
    Simplifier { facts }.expr(expr)
}

/// The rules, with the facts that prove their preconditions.
pub(super) struct Simplifier<'f> {
    facts: &'f Facts,
}

/// The most recombination steps taken on one sum.
const RECOMBINE_STEPS: usize = 64;

/// `candidate` unless it has more nodes than `fallback`.
fn no_larger(candidate: Expr, fallback: Expr) -> Expr {
    if candidate.node_count() <= fallback.node_count() {
        candidate
    } else {
        fallback
    }
}

impl Simplifier<'_> {
    /// What the analyses prove about `expr` under the facts. (Remembering
    /// results in a map costs more than it saves: hashing an expression
    /// walks it just as analysing it does.)
    pub(super) fn analyze(&self, expr: &Expr) -> ValueFacts {
        analyze(expr, self.facts)
    }

    /// Simplifies bottom-up; each node is rebuilt by its rules, or from its
    /// simplified children when the rules would give more nodes.
    fn expr(&self, expr: &Expr) -> Expr {
        type Rule<'s, 'f> = fn(&'s Simplifier<'f>, Expr, Expr) -> Expr;
        type Build = fn(Expr, Expr) -> Expr;
        let (a, b, rule, structural, commutes): (_, _, Rule<'_, '_>, Build, bool) = match expr {
            Expr::Const(_) | Expr::Var(_) => return expr.clone(),
            Expr::Add(a, b) => (a, b, Simplifier::add, Expr::add, true),
            Expr::Sub(a, b) => (a, b, Simplifier::sub, Expr::sub, false),
            Expr::Mul(a, b) => (a, b, Simplifier::mul, Expr::mul, true),
            Expr::Div(a, b) => (a, b, Simplifier::div, Expr::div, false),
            Expr::Rem(a, b) => (a, b, Simplifier::rem, Expr::rem, false),
            Expr::And(a, b) => (a, b, Simplifier::and, Expr::and, true),
            Expr::Xor(a, b) => (a, b, Simplifier::xor, Expr::xor, true),
            Expr::Shr(a, b) => (a, b, Simplifier::shr, Expr::shr, false),
            Expr::Shl(a, b) => (a, b, Simplifier::shl, Expr::shl, false),
        };
        let (a, b) = (self.expr(a), self.expr(b));
        // The fallback too is written one way for both operand orders.
        let (x, y) = if commutes {
            ordered(a.clone(), b.clone())
        } else {
            (a.clone(), b.clone())
        };
        let fallback = structural(x, y);
        no_larger(rule(self, a, b), fallback)
    }

    /// The canonical expression of a linear form, after recombining
    /// quotients with remainders.
    pub(super) fn linear(&self, sum: LinearSum) -> Expr {
        self.recombine(sum).to_expr()
    }

    /// Through the linear form, or `fallback` when its numbers overflow.
    fn through_linear(
        &self,
        a: &Expr,
        b: &Expr,
        op: fn(&LinearSum, &LinearSum) -> Option<LinearSum>,
        fallback: fn(Expr, Expr) -> Expr,
    ) -> Expr {
        let sum = LinearSum::from_expr(a)
            .zip(LinearSum::from_expr(b))
            .and_then(|(x, y)| op(&x, &y));
        match sum {
            Some(sum) => self.linear(sum),
            None => fallback(a.clone(), b.clone()),
        }
    }

    /// Canonical `a + b`.
    pub(super) fn add(&self, a: Expr, b: Expr) -> Expr {
        self.through_linear(&a, &b, LinearSum::add, Expr::add)
    }

    /// Canonical `a - b`.
    pub(super) fn sub(&self, a: Expr, b: Expr) -> Expr {
        self.through_linear(&a, &b, LinearSum::sub, Expr::sub)
    }

    /// Canonical `a * b`.
    pub(super) fn mul(&self, a: Expr, b: Expr) -> Expr {
        self.through_linear(&a, &b, LinearSum::mul, Expr::mul)
    }

    /// Applies the recombination rules until none applies. They rest on
    /// `x = a·(x / a) + x % a` (floor division, `a ≥ 1` a constant) and on
    /// its digit form `x % (a·b) = a·((x / a) % b) + x % a`:
    /// - `k·a·(x / a) + k·(x % a) → k·x`;
    /// - `k·a·((x / a) % b) + k·(x % a) → k·(x % (a·b))`;
    /// - `k·x − k·a·(x / a) → k·(x % a)`, where that leaves fewer terms.
    ///
    /// Only exact matches merge: a partial merge (`17·(x / 16) + x % 16 →
    /// x + x / 16`) would save nodes but spread one coordinate over terms
    /// of mixed signs, where the analyses, which see each term alone, lose
    /// ranges and divisors the instruction selector needs. Each step
    /// removes an occurrence of `x`, so this ends.
    fn recombine(&self, mut sum: LinearSum) -> LinearSum {
        // Each step removes an occurrence of some `x`; the bound only
        // guards against a rule set that would someday cycle.
        for _ in 0..RECOMBINE_STEPS {
            match self.recombine_once(&sum) {
                Some(next) => sum = next,
                None => break,
            }
        }
        sum
    }

    fn recombine_once(&self, sum: &LinearSum) -> Option<LinearSum> {
        for (monomial, coefficient) in sum.terms() {
            let [factor] = monomial.as_slice() else {
                continue;
            };
            let found = match factor {
                Expr::Div(x, a) => self
                    .merge_with_remainder(sum, factor, coefficient, x, a, &|| {
                        Some(x.as_ref().clone())
                    })
                    .or_else(|| self.merge_difference(sum, factor, coefficient, x, a)),
                Expr::Rem(inner, b) => match inner.as_ref() {
                    Expr::Div(x, a) => {
                        let whole = || {
                            let ab = a.as_const()?.checked_mul(b.as_const()?)?;
                            Some(self.rem(x.as_ref().clone(), Expr::Const(ab)))
                        };
                        self.merge_with_remainder(sum, factor, coefficient, x, a, &whole)
                    }
                    Expr::Const(_)
                    | Expr::Var(_)
                    | Expr::Add(..)
                    | Expr::Sub(..)
                    | Expr::Mul(..)
                    | Expr::Rem(..)
                    | Expr::And(..)
                    | Expr::Xor(..)
                    | Expr::Shr(..)
                    | Expr::Shl(..) => None,
                },
                Expr::Const(_)
                | Expr::Var(_)
                | Expr::Add(..)
                | Expr::Sub(..)
                | Expr::Mul(..)
                | Expr::And(..)
                | Expr::Xor(..)
                | Expr::Shr(..)
                | Expr::Shl(..) => None,
            };
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// For a term `c·q` with `whole = a·q + x % a`: `k·a·q + k·(x % a) →
    /// k·whole`, when `c = k·a` and the sum has exactly `k·(x % a)`.
    fn merge_with_remainder(
        &self,
        sum: &LinearSum,
        quotient: &Expr,
        coefficient: i64,
        x: &Expr,
        a: &Expr,
        whole: &dyn Fn() -> Option<Expr>,
    ) -> Option<LinearSum> {
        let a_value = a.as_const().filter(|&a| a >= 1)?;
        let remainder = Expr::Rem(Box::new(x.clone()), Box::new(a.clone()));
        let remainder_coefficient = sum.coefficient(std::slice::from_ref(&remainder));
        let k = remainder_coefficient;
        if k == 0 || k.checked_mul(a_value) != Some(coefficient) {
            return None;
        }
        let mut next = sum.clone();
        next.add_term(vec![quotient.clone()], -k.checked_mul(a_value)?)?;
        next.add_term(vec![remainder], -k)?;
        next.add(&LinearSum::from_expr(&whole()?)?.scale(k)?)
    }

    /// `x·k − (x / a)·a·k → (x % a)·k`, taken only when it leaves fewer
    /// terms (that is, when `x·k` is really there to cancel).
    fn merge_difference(
        &self,
        sum: &LinearSum,
        quotient: &Expr,
        coefficient: i64,
        x: &Expr,
        a: &Expr,
    ) -> Option<LinearSum> {
        let a_value = a.as_const().filter(|&a| a >= 1)?;
        if coefficient % a_value != 0 {
            return None;
        }
        let k = -(coefficient / a_value);
        let mut next = sum.sub(&LinearSum::from_expr(x)?.scale(k)?)?;
        next.add_term(vec![quotient.clone()], -coefficient)?;
        // The remainder adds a term back: only worth it when two went.
        if next.term_count() + 1 >= sum.term_count() {
            return None;
        }
        let remainder = self.rem(x.clone(), a.clone());
        let next = next.add(&LinearSum::from_expr(&remainder)?.scale(k)?)?;
        (next.term_count() < sum.term_count()).then_some(next)
    }
}
