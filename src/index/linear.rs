//! Index arithmetic: the linear normal form of index
//! expressions — a constant plus a sum of monomials with integer
//! coefficients — and its canonical rebuilding into an [`Expr`].
//!
//! `+`, `-` and multiplication by constants are taken apart into this form,
//! where like terms collect, `x - x` vanishes and terms sort into one fixed
//! order; everything else (`/`, `%`, bit operations, variables) stays whole
//! as a *factor* of a monomial. Rebuilding is a function of the form alone,
//! so two expressions with the same form print the same.

use std::collections::BTreeMap;

use crate::expr::Expr;

/// The factors of one term, sorted (a multiset of expressions).
///
/// Rule: non-empty; no factor is a literal or a product; a factor is a sum
/// only when it is a primitive sum of several terms (its content taken out
/// into the coefficient), as in `(a + 1) * b`.
pub(crate) type Monomial = Vec<Expr>;

/// `constant + Σ coefficient · monomial`.
///
/// Rule: no coefficient is 0; no number (coefficient or constant) is
/// `i64::MIN`, so every one can be negated. Arithmetic that would break this
/// reports `None` and the caller keeps its expression as it was.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub(crate) struct LinearSum {
    terms: BTreeMap<Monomial, i64>,
    constant: i64,
}

/// The greatest common divisor of `|a|` and `|b|` (0 for two zeros; 1 where
/// it would not fit an `i64`: only `i64::MIN` with 0 or itself gets there).
pub(crate) fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    i64::try_from(a).unwrap_or(1)
}

/// `a ⊆ b` as multisets of sorted factors; the factors of `b` left over.
fn monomial_without(b: &[Expr], a: &[Expr]) -> Option<Monomial> {
    let mut rest = Vec::with_capacity(b.len());
    let mut wanted = a.iter().peekable();
    for factor in b {
        if wanted.peek() == Some(&factor) {
            wanted.next();
        } else {
            rest.push(factor.clone());
        }
    }
    wanted.peek().is_none().then_some(rest)
}

impl LinearSum {
    /// The number `value`.
    pub(crate) fn constant(value: i64) -> Option<LinearSum> {
        (value != i64::MIN).then(|| LinearSum {
            terms: BTreeMap::new(),
            constant: value,
        })
    }

    fn term(monomial: Monomial, coefficient: i64) -> Option<LinearSum> {
        let mut sum = LinearSum::default();
        sum.add_term(monomial, coefficient)?;
        Some(sum)
    }

    /// Takes `expr` apart: sums, differences, literals and products with a
    /// constant operand open up; any other node is one factor.
    pub(crate) fn from_expr(expr: &Expr) -> Option<LinearSum> {
        match expr {
            Expr::Const(value) => LinearSum::constant(*value),
            Expr::Add(a, b) => LinearSum::from_expr(a)?.add(&LinearSum::from_expr(b)?),
            Expr::Sub(a, b) => LinearSum::from_expr(a)?.sub(&LinearSum::from_expr(b)?),
            Expr::Mul(a, b) => LinearSum::from_expr(a)?.mul(&LinearSum::from_expr(b)?),
            Expr::Var(_)
            | Expr::Div(..)
            | Expr::Rem(..)
            | Expr::And(..)
            | Expr::Xor(..)
            | Expr::Shr(..)
            | Expr::Shl(..) => LinearSum::term(vec![expr.clone()], 1),
        }
    }

    /// The value, when there are no terms.
    pub(crate) fn as_constant(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }

    /// The constant part.
    pub(crate) fn constant_part(&self) -> i64 {
        self.constant
    }

    /// The terms in canonical order.
    pub(crate) fn terms(&self) -> impl Iterator<Item = (&Monomial, i64)> {
        self.terms.iter().map(|(m, &c)| (m, c))
    }

    /// The number of terms (the constant not counted).
    pub(crate) fn term_count(&self) -> usize {
        self.terms.len()
    }

    /// The coefficient of `monomial` (0 when absent).
    pub(crate) fn coefficient(&self, monomial: &[Expr]) -> i64 {
        self.terms.get(monomial).copied().unwrap_or(0)
    }

    /// Adds `coefficient · monomial` in place.
    pub(crate) fn add_term(&mut self, monomial: Monomial, coefficient: i64) -> Option<()> {
        let old = self.coefficient(&monomial);
        let new = old.checked_add(coefficient).filter(|&c| c != i64::MIN)?;
        if new == 0 {
            self.terms.remove(&monomial);
        } else {
            self.terms.insert(monomial, new);
        }
        Some(())
    }

    /// `self + other`.
    pub(crate) fn add(&self, other: &LinearSum) -> Option<LinearSum> {
        let mut sum = self.clone();
        sum.constant = sum
            .constant
            .checked_add(other.constant)
            .filter(|&c| c != i64::MIN)?;
        for (monomial, coefficient) in other.terms() {
            sum.add_term(monomial.clone(), coefficient)?;
        }
        Some(sum)
    }

    /// `self - other`.
    pub(crate) fn sub(&self, other: &LinearSum) -> Option<LinearSum> {
        self.add(&other.scale(-1)?)
    }

    /// `k · self`.
    pub(crate) fn scale(&self, k: i64) -> Option<LinearSum> {
        if k == 0 {
            return LinearSum::constant(0);
        }
        let valid = |v: i64| v.checked_mul(k).filter(|&p| p != i64::MIN);
        let mut terms = BTreeMap::new();
        for (monomial, coefficient) in self.terms() {
            terms.insert(monomial.clone(), valid(coefficient)?);
        }
        Some(LinearSum {
            terms,
            constant: valid(self.constant)?,
        })
    }

    /// `self · other`: distributes when either side is a constant; otherwise
    /// the product is one term whose factors are both sides' factors.
    pub(crate) fn mul(&self, other: &LinearSum) -> Option<LinearSum> {
        if let Some(k) = self.as_constant() {
            return other.scale(k);
        }
        if let Some(k) = other.as_constant() {
            return self.scale(k);
        }
        let (ka, fa) = self.content_and_factors()?;
        let (kb, fb) = other.content_and_factors()?;
        let mut factors: Monomial = fa.into_iter().chain(fb).collect();
        factors.sort();
        LinearSum::term(factors, ka.checked_mul(kb)?)
    }

    /// Each term, and the constant if it is not 0, as a sum of its own.
    pub(crate) fn parts(&self) -> impl Iterator<Item = LinearSum> + '_ {
        let terms = self.terms().map(|(m, c)| {
            let mut part = LinearSum::default();
            part.terms.insert(m.clone(), c);
            part
        });
        let constant = (self.constant != 0).then(|| LinearSum {
            terms: BTreeMap::new(),
            constant: self.constant,
        });
        terms.chain(constant)
    }

    /// The gcd of every coefficient and the constant (0 for the zero sum).
    pub(crate) fn content(&self) -> i64 {
        self.terms().fold(self.constant, |g, (_, c)| gcd(g, c))
    }

    /// `self / k` where `k` divides every number of the sum.
    pub(crate) fn divide_exactly(&self, k: i64) -> Option<LinearSum> {
        if k == 0 || self.content() % k != 0 {
            return None;
        }
        let terms = self.terms().map(|(m, c)| (m.clone(), c / k)).collect();
        Some(LinearSum {
            terms,
            constant: self.constant / k,
        })
    }

    /// `(content, factors)` with `self = content · Π factors`: the content
    /// carries the sign of the first term, so `-3a` is `-3 · [a]`.
    fn content_and_factors(&self) -> Option<(i64, Monomial)> {
        let first = self.terms().next().map_or(self.constant, |(_, c)| c);
        let content = if first < 0 {
            -self.content()
        } else {
            self.content()
        };
        let primitive = self.divide_exactly(content)?;
        let single = primitive
            .terms()
            .next()
            .filter(|_| primitive.term_count() == 1);
        match single {
            Some((monomial, 1)) if primitive.constant == 0 => Some((content, monomial.clone())),
            _ => Some((content, vec![primitive.to_expr()])),
        }
    }

    /// When the sum is one term `c · m` with `c ≥ 1` (or a constant `c ≥
    /// 1`, with `m` empty): `(m, c)`. The divisors the split rules handle.
    pub(crate) fn as_divisor(&self) -> Option<(Monomial, i64)> {
        match (self.as_constant(), self.term_count()) {
            (Some(c), _) if c >= 1 => Some((Vec::new(), c)),
            (None, 1) if self.constant == 0 => self
                .terms()
                .next()
                .filter(|&(_, c)| c >= 1)
                .map(|(m, c)| (m.clone(), c)),
            _ => None,
        }
    }

    /// Splits into `(q, r)` with `self = divisor · q + r`, where `q` holds
    /// the quotient of every term (and the constant) that `divisor = c · m`
    /// divides syntactically — its coefficient is a multiple of `c` and its
    /// factors include `m` — and `r` the other terms unchanged.
    pub(crate) fn split_by(&self, divisor: &(Monomial, i64)) -> Option<(LinearSum, LinearSum)> {
        let (dm, dc) = divisor;
        let mut quotient = LinearSum::default();
        let mut rest = LinearSum::default();
        for (monomial, coefficient) in self.terms() {
            match monomial_without(monomial, dm).filter(|_| coefficient % dc == 0) {
                Some(q) if q.is_empty() => {
                    quotient = quotient.add(&LinearSum::constant(coefficient / dc)?)?;
                }
                Some(q) => quotient.add_term(q, coefficient / dc)?,
                None => rest.add_term(monomial.clone(), coefficient)?,
            }
        }
        if dm.is_empty() && self.constant % dc == 0 {
            quotient = quotient.add(&LinearSum::constant(self.constant / dc)?)?;
        } else {
            rest.constant = self.constant;
        }
        Some((quotient, rest))
    }

    /// The expression of `coefficient · monomial`: the factors in order,
    /// then the coefficient.
    pub(crate) fn term_expr(monomial: &[Expr], coefficient: i64) -> Expr {
        let product = monomial
            .iter()
            .cloned()
            .reduce(Expr::mul)
            .unwrap_or(Expr::Const(1));
        Expr::mul(product, Expr::Const(coefficient))
    }

    /// The canonical expression: the positive terms (then a positive
    /// constant), minus the negated negative terms (then a negative
    /// constant's magnitude). Coefficients shared by several terms may be
    /// factored out where that saves nodes, also across the two parts:
    /// `(a − b)·4 + 1` rather than `a·4 − b·4 + 1`.
    pub(crate) fn to_expr(&self) -> Expr {
        let terms: Vec<(&[Expr], i64)> = self.terms().map(|(m, c)| (m.as_slice(), c)).collect();
        let plain = signed_sum(&terms, self.constant);
        let common = terms.iter().fold(0, |g, &(_, c)| gcd(g, c));
        if terms.iter().all(|&(_, c)| c > 0) {
            // Without negative terms, `build` already factors.
            return plain;
        }
        let with_constant = |e: Expr| match self.constant {
            0 => e,
            c if c > 0 => Expr::add(e, Expr::Const(c)),
            c => Expr::sub(e, Expr::Const(-c)),
        };
        let factored = (common > 1).then(|| {
            let reduced: Vec<(&[Expr], i64)> =
                terms.iter().map(|&(m, c)| (m, c / common)).collect();
            with_constant(Expr::mul(signed_sum(&reduced, 0), Expr::Const(common)))
        });
        let grouped = grouped_by_magnitude(&terms).map(with_constant);
        let mut best = plain;
        for alternative in [factored, grouped].into_iter().flatten() {
            if alternative.node_count() < best.node_count() {
                best = alternative;
            }
        }
        best
    }
}

/// Terms whose coefficients share a magnitude above 1 (of either sign)
/// grouped as `(a − b)·c`, each group where its first term stood, the
/// other terms added or subtracted after; `None` when no two terms share
/// one.
fn grouped_by_magnitude(terms: &[(&[Expr], i64)]) -> Option<Expr> {
    let shared = |c: i64| {
        c.abs() > 1
            && terms
                .iter()
                .filter(|&&(_, other)| other.abs() == c.abs())
                .count()
                > 1
    };
    if !terms.iter().any(|&(_, c)| shared(c)) {
        return None;
    }
    let mut added: Vec<Expr> = Vec::new();
    let mut subtracted: Vec<(&[Expr], i64)> = Vec::new();
    let mut done: Vec<i64> = Vec::new();
    for &(monomial, coefficient) in terms {
        let magnitude = coefficient.abs();
        if !shared(coefficient) {
            if coefficient > 0 {
                added.push(LinearSum::term_expr(monomial, coefficient));
            } else {
                subtracted.push((monomial, magnitude));
            }
        } else if !done.contains(&magnitude) {
            done.push(magnitude);
            let group: Vec<(&[Expr], i64)> = terms
                .iter()
                .filter(|&&(_, c)| c.abs() == magnitude)
                .map(|&(m, c)| (m, c.signum()))
                .collect();
            added.push(Expr::mul(signed_sum(&group, 0), Expr::Const(magnitude)));
        }
    }
    let plus = added.into_iter().reduce(Expr::add)?;
    Some(match build(&subtracted) {
        Some(minus) => Expr::sub(plus, minus),
        None => plus,
    })
}

/// `positive terms + positive constant − (negated terms + |negative
/// constant|)`, each part built by [`build`].
fn signed_sum(terms: &[(&[Expr], i64)], constant: i64) -> Expr {
    let positive: Vec<(&[Expr], i64)> = terms.iter().copied().filter(|&(_, c)| c > 0).collect();
    let negative: Vec<(&[Expr], i64)> = terms
        .iter()
        .filter(|&&(_, c)| c < 0)
        .map(|&(m, c)| (m, -c))
        .collect();
    let with_constant = |part: Option<Expr>, constant: i64| match (part, constant) {
        (part, 0) => part,
        (Some(part), c) => Some(Expr::add(part, Expr::Const(c))),
        (None, c) => Some(Expr::Const(c)),
    };
    let plus = with_constant(build(&positive), constant.max(0));
    let minus = with_constant(build(&negative), -constant.min(0));
    match (plus, minus) {
        (Some(plus), Some(minus)) => Expr::sub(plus, minus),
        (Some(plus), None) => plus,
        (None, Some(minus)) => Expr::sub(Expr::Const(0), minus),
        (None, None) => Expr::Const(0),
    }
}

/// The sum of terms with positive coefficients, in their order, in the
/// smallest of three shapes (ties go to the earlier):
/// distributed `a·4 + b·4 + c·8`; with the common coefficient out,
/// `(a + b + c·2)·4`; with equal coefficients grouped, `(a + b)·2 + c·3`.
fn build(terms: &[(&[Expr], i64)]) -> Option<Expr> {
    let distributed = terms
        .iter()
        .map(|&(m, c)| LinearSum::term_expr(m, c))
        .reduce(Expr::add)?;
    let common = terms.iter().fold(0, |g, &(_, c)| gcd(g, c));
    let factored = (common > 1).then(|| {
        let inner: Vec<(&[Expr], i64)> = terms.iter().map(|&(m, c)| (m, c / common)).collect();
        build(&inner).map(|inner| Expr::mul(inner, Expr::Const(common)))
    });
    let mut best = distributed;
    for alternative in [factored.flatten(), grouped(terms)].into_iter().flatten() {
        if alternative.node_count() < best.node_count() {
            best = alternative;
        }
    }
    Some(best)
}

/// Terms sharing a coefficient above 1 summed first, then multiplied once,
/// each group where its first term stood; `None` when no two terms share one.
fn grouped(terms: &[(&[Expr], i64)]) -> Option<Expr> {
    let shared = |c: i64| c > 1 && terms.iter().filter(|&&(_, other)| other == c).count() > 1;
    if !terms.iter().any(|&(_, c)| shared(c)) {
        return None;
    }
    let mut parts: Vec<Expr> = Vec::new();
    let mut done: Vec<i64> = Vec::new();
    for &(monomial, coefficient) in terms {
        if !shared(coefficient) {
            parts.push(LinearSum::term_expr(monomial, coefficient));
        } else if !done.contains(&coefficient) {
            done.push(coefficient);
            let group = terms
                .iter()
                .filter(|&&(_, c)| c == coefficient)
                .map(|&(m, _)| LinearSum::term_expr(m, 1))
                .reduce(Expr::add)?;
            parts.push(Expr::mul(group, Expr::Const(coefficient)));
        }
    }
    parts.into_iter().reduce(Expr::add)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Var;

    fn v(var: Var) -> Expr {
        Expr::var(var)
    }

    fn canonical(e: &Expr) -> Expr {
        LinearSum::from_expr(e).expect("no overflow").to_expr()
    }

    #[test]
    fn like_terms_collect_in_a_fixed_order() {
        let (tid, bid, k) = (v(Var::ThreadId), v(Var::BlockId), v(Var::Loop(0)));
        let a = Expr::add(
            Expr::add(
                Expr::mul(k.clone(), 32.into()),
                Expr::mul(bid.clone(), 128.into()),
            ),
            Expr::mul(tid.clone(), 8.into()),
        );
        let b = Expr::add(
            Expr::mul(8.into(), tid.clone()),
            Expr::add(
                Expr::mul(bid.clone(), 128.into()),
                Expr::mul(32.into(), k.clone()),
            ),
        );
        assert_eq!(canonical(&a), canonical(&b));
        assert_eq!(
            canonical(&a).to_string(),
            "(((tid * 8) + (bid * 128)) + (k0 * 32))"
        );
        let cancel = Expr::sub(Expr::add(tid.clone(), bid.clone()), tid.clone());
        assert_eq!(canonical(&cancel), bid);
    }

    #[test]
    fn constants_distribute_and_shared_coefficients_factor() {
        let (a, b, c) = (v(Var::Dim(0)), v(Var::Dim(1)), v(Var::Dim(2)));
        let sum = |x: &Expr, y: &Expr| Expr::add(x.clone(), y.clone());
        let times = |x: Expr, k: i64| Expr::mul(x, Expr::Const(k));
        // (a + b)·4 and a·4 + b·4 are the same form; the factored one is smaller.
        let factored = times(sum(&a, &b), 4);
        let distributed = sum(&times(a.clone(), 4), &times(b.clone(), 4));
        assert_eq!(canonical(&distributed), factored);
        // ((a + b)·2 + c)·4 keeps its nine nodes.
        let nested = times(Expr::add(times(sum(&a, &b), 2), c.clone()), 4);
        assert_eq!(canonical(&nested).node_count(), 9);
        // (k + 1)·32 opens up: a tie goes to the distributed form.
        let k = v(Var::Loop(0));
        assert_eq!(
            canonical(&times(sum(&k, &1.into()), 32)).to_string(),
            "((k0 * 32) + 32)"
        );
    }

    #[test]
    fn negative_parts_are_subtracted() {
        let (a, b) = (v(Var::Dim(0)), v(Var::Dim(1)));
        let e = Expr::sub(
            Expr::sub(a.clone(), Expr::mul(b.clone(), 3.into())),
            5.into(),
        );
        assert_eq!(canonical(&e).to_string(), "(d0 - ((d1 * 3) + 5))");
        assert_eq!(
            canonical(&Expr::Sub(Box::new(0.into()), Box::new(a))).to_string(),
            "(0 - d0)"
        );
    }

    #[test]
    fn products_of_sums_keep_their_content_outside() {
        let (a, b) = (v(Var::Dim(0)), v(Var::Dim(1)));
        let two_a_plus_two = Expr::add(Expr::mul(a.clone(), 2.into()), 2.into());
        let product = Expr::mul(two_a_plus_two, Expr::mul(b.clone(), 3.into()));
        let sum = LinearSum::from_expr(&product).unwrap();
        let (monomial, coefficient) = sum.terms().next().unwrap();
        assert_eq!(coefficient, 6);
        assert_eq!(monomial, &vec![b.clone(), Expr::add(a.clone(), 1.into())]);
        assert_eq!(canonical(&canonical(&product)), canonical(&product));
    }

    #[test]
    fn splitting_by_a_divisor() {
        let (a, d) = (v(Var::Dim(0)), v(Var::Dim(1)));
        // a·128 + d·a·64 + 3 + tid split by 64 → q = a·2 + d·a, r = tid + 3.
        let e = Expr::add(
            Expr::add(
                Expr::mul(a.clone(), 128.into()),
                Expr::mul(Expr::mul(d.clone(), a.clone()), 64.into()),
            ),
            Expr::add(3.into(), v(Var::ThreadId)),
        );
        let sum = LinearSum::from_expr(&e).unwrap();
        let (q, r) = sum.split_by(&(Vec::new(), 64)).unwrap();
        assert_eq!(q.to_expr().to_string(), "((d0 * 2) + (d0 * d1))");
        assert_eq!(r.to_expr().to_string(), "(tid + 3)");
        // Split by the symbolic divisor d1·32.
        let (q, r) = sum.split_by(&(vec![d.clone()], 32)).unwrap();
        assert_eq!(q.to_expr().to_string(), "(d0 * 2)");
        assert_eq!(r.term_count(), 2);
        assert_eq!(
            LinearSum::from_expr(&Expr::mul(d, 4.into()))
                .unwrap()
                .as_divisor()
                .map(|x| x.1),
            Some(4)
        );
    }

    #[test]
    fn overflow_is_reported_not_wrapped() {
        let a = v(Var::Dim(0));
        let big = Expr::mul(a.clone(), Expr::Const(i64::MAX));
        assert!(LinearSum::from_expr(&Expr::add(big.clone(), big)).is_none());
        assert!(LinearSum::from_expr(&Expr::Const(i64::MIN)).is_none());
    }
}
