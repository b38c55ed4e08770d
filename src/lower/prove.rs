//! Stage 3, lowering: what the lowering may assume about one kernel's index
//! values, and the proofs it asks for — simplification before emission,
//! ranges, divisors (alignment of vector accesses) and possibly-set bits
//! (whether a swizzle distributes over a sum).
//!
//! Every question the lowering asks about an index expression goes through
//! [`Prover`], so the analyses behind it can be replaced in one place. The
//! analyses here are deliberately simple and sound: interval arithmetic,
//! gcd-style divisors and bit masks derived from both.

use std::collections::BTreeMap;

use crate::expr::{Expr, Var};
use crate::ir;

/// Facts about the variables of one kernel and the proofs built on them.
///
/// Rule: every answer holds for every value the kernel's variables can take
/// (`tid < block size`, `bid < grid size` when constant, loop variables
/// within their bounds and steps, dims ≥ 1 and multiples of what the
/// kernel's requirements divide them by).
#[derive(Clone, Debug)]
pub struct Prover {
    threads: i64,
    blocks: Option<i64>,
    /// The grid's size as an expression (symbolic grids: `bid < grid`).
    grid: Option<Expr>,
    loops: BTreeMap<u32, LoopFact>,
    dim_divisors: BTreeMap<u32, i64>,
}

/// What is known about one loop variable.
#[derive(Clone, Copy, Debug)]
struct LoopFact {
    lo: i64,
    /// Largest value taken, when the bound is constant.
    last: Option<i64>,
    /// Every value is `lo + n * step`.
    step: i64,
}

/// An inclusive range of non-negative values; `hi` is `None` when unbounded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Range {
    /// Smallest value.
    pub lo: i64,
    /// Largest value, if bounded.
    pub hi: Option<i64>,
}

/// A divisor no alignment question ever exceeds: what `0` is a multiple of.
const ANY_DIVISOR: i64 = 1 << 40;

impl Prover {
    /// The facts of `kernel`: its launch sizes, every loop's bounds and every
    /// divisibility requirement on a dim.
    pub fn for_kernel(kernel: &ir::Kernel) -> Prover {
        let mut prover = Prover {
            threads: group_size(&kernel.block).unwrap_or(1024),
            blocks: group_size(&kernel.grid),
            grid: Some(
                kernel
                    .grid
                    .levels
                    .iter()
                    .flat_map(|level| level.shape.leaves())
                    .fold(Expr::Const(1), |size, extent| {
                        Expr::mul(size, extent.clone())
                    }),
            ),
            loops: BTreeMap::new(),
            dim_divisors: BTreeMap::new(),
        };
        if let Some(body) = &kernel.root.body {
            prover.collect_loops(body);
        }
        for requirement in &kernel.requirements {
            match requirement {
                ir::Requirement::Divisible { value, divisor, .. } => {
                    if let (Expr::Var(Var::Dim(i)), Some(d)) = (value, divisor.as_const()) {
                        let known = prover.dim_divisors.entry(*i).or_insert(1);
                        *known = lcm(*known, d.max(1));
                    }
                }
                ir::Requirement::Positive { .. } => {}
            }
        }
        prover
    }

    /// Facts for a block of `threads` threads and nothing else (tests).
    pub fn with_threads(threads: i64) -> Prover {
        Prover {
            threads,
            blocks: None,
            grid: None,
            loops: BTreeMap::new(),
            dim_divisors: BTreeMap::new(),
        }
    }

    /// Adds the facts of loop `var`: `lo ≤ var < hi`, stepping by `step`.
    pub fn with_loop(mut self, var: u32, lo: i64, hi: Option<i64>, step: i64) -> Prover {
        self.add_loop(var, lo, hi, step);
        self
    }

    fn add_loop(&mut self, var: u32, lo: i64, hi: Option<i64>, step: i64) {
        let step = step.max(1);
        let last = hi.map(|hi| {
            if hi <= lo {
                lo
            } else {
                lo + (hi - 1 - lo) / step * step
            }
        });
        self.loops.insert(var, LoopFact { lo, last, step });
    }

    fn collect_loops(&mut self, body: &[ir::Stmt]) {
        for stmt in body {
            match stmt {
                ir::Stmt::For(each) => {
                    if let (Some(lo), Some(step)) = (each.lo.as_const(), each.step.as_const()) {
                        self.add_loop(each.var, lo, each.hi.as_const(), step);
                    }
                    self.collect_loops(&each.body);
                }
                ir::Stmt::If(branch) => {
                    self.collect_loops(&branch.then_body);
                    self.collect_loops(&branch.else_body);
                }
                ir::Stmt::Spec(spec) => {
                    if let Some(body) = &spec.body {
                        self.collect_loops(body);
                    }
                }
                ir::Stmt::Sync(_) | ir::Stmt::AsyncCommit(_) | ir::Stmt::AsyncWait { .. } => {}
            }
        }
    }

    /// Threads per block.
    pub fn threads(&self) -> i64 {
        self.threads
    }

    /// An equivalent expression, as small as the facts allow, ready for
    /// emission: divisions and remainders by powers of two become shifts and
    /// masks.
    pub fn prepare(&self, expr: &Expr) -> Expr {
        strength_reduce(&self.simplify(expr))
    }

    /// An equivalent expression with the facts applied: `x % n → x` and
    /// `x / n → 0` when `x < n`, nested divisions merged, constants folded.
    pub fn simplify(&self, expr: &Expr) -> Expr {
        let both = |a: &Expr, b: &Expr| (self.simplify(a), self.simplify(b));
        match expr {
            Expr::Const(_) | Expr::Var(_) => expr.clone(),
            Expr::Add(a, b) => {
                let (a, b) = both(a, b);
                Expr::add(a, b)
            }
            Expr::Sub(a, b) => {
                let (a, b) = both(a, b);
                Expr::sub(a, b)
            }
            Expr::Mul(a, b) => {
                let (a, b) = both(a, b);
                // Distribute constants over sums, so that a sum's terms can
                // be hoisted separately: (r + 16p) * 64 → 64r + 1024p.
                if let (Expr::Add(x, y), Some(_)) = (&a, b.as_const()) {
                    return self.simplify(&Expr::add(
                        Expr::mul((**x).clone(), b.clone()),
                        Expr::mul((**y).clone(), b),
                    ));
                }
                // Constants to the right, and (x * c1) * c2 → x * (c1 c2).
                let (a, b) = match (a.as_const(), b.as_const()) {
                    (Some(_), None) => (b, a),
                    (None, Some(_)) | (None, None) | (Some(_), Some(_)) => (a, b),
                };
                if let (Some((x, c1)), Some(c2)) = (constant_factor(&a), b.as_const()) {
                    if let Some(product) = c1.checked_mul(c2) {
                        return Expr::mul(x.clone(), Expr::Const(product));
                    }
                }
                Expr::mul(a, b)
            }
            Expr::Div(a, b) if self.is_grid(a, b) => Expr::Const(0),
            Expr::Rem(a, b) if self.is_grid(a, b) => Expr::var(Var::BlockId),
            Expr::Div(a, b) => {
                let (a, b) = both(a, b);
                match (b.as_const(), &a) {
                    (Some(n), _) if n > 0 && self.range(&a).hi.is_some_and(|hi| hi < n) => {
                        Expr::Const(0)
                    }
                    (Some(n), Expr::Div(inner, m)) if n > 0 => match m.as_const() {
                        Some(m) if m > 0 && m.checked_mul(n).is_some() => {
                            Expr::div((**inner).clone(), Expr::Const(m * n))
                        }
                        Some(_) | None => Expr::div(a, b),
                    },
                    _ => Expr::div(a, b),
                }
            }
            Expr::Rem(a, b) => {
                let (a, b) = both(a, b);
                match b.as_const() {
                    Some(n) if n > 0 && self.range(&a).hi.is_some_and(|hi| hi < n) => a,
                    Some(_) | None => Expr::rem(a, b),
                }
            }
            Expr::And(a, b) => {
                let (a, b) = both(a, b);
                Expr::and(a, b)
            }
            Expr::Xor(a, b) => {
                let (a, b) = both(a, b);
                Expr::xor(a, b)
            }
            Expr::Shr(a, b) => {
                let (a, b) = both(a, b);
                Expr::shr(a, b)
            }
            Expr::Shl(a, b) => {
                let (a, b) = both(a, b);
                Expr::shl(a, b)
            }
        }
    }

    /// Whether `a` is the block id and `b` the grid's size: `bid < grid`
    /// even when the grid is symbolic.
    fn is_grid(&self, a: &Expr, b: &Expr) -> bool {
        *a == Expr::var(Var::BlockId) && self.grid.as_ref() == Some(b)
    }

    fn var_range(&self, var: Var) -> Range {
        match var {
            Var::ThreadId => Range {
                lo: 0,
                hi: Some(self.threads - 1),
            },
            Var::BlockId => Range {
                lo: 0,
                hi: self.blocks.map(|blocks| blocks - 1),
            },
            Var::Dim(_) => Range { lo: 1, hi: None },
            Var::Loop(i) => match self.loops.get(&i) {
                Some(fact) => Range {
                    lo: fact.lo.max(0),
                    hi: fact.last,
                },
                None => Range { lo: 0, hi: None },
            },
        }
    }

    /// Inclusive bounds of every value of `expr` (values are non-negative).
    pub fn range(&self, expr: &Expr) -> Range {
        let unbounded = |lo: i64| Range { lo, hi: None };
        let pair = |a: &Expr, b: &Expr| (self.range(a), self.range(b));
        match expr {
            Expr::Const(value) => Range {
                lo: (*value).max(0),
                hi: Some((*value).max(0)),
            },
            Expr::Var(var) => self.var_range(*var),
            Expr::Add(a, b) => {
                let (a, b) = pair(a, b);
                Range {
                    lo: a.lo.saturating_add(b.lo),
                    hi: a.hi.zip(b.hi).and_then(|(x, y)| x.checked_add(y)),
                }
            }
            Expr::Sub(a, b) => {
                let (a, b) = pair(a, b);
                Range {
                    lo: b.hi.map_or(0, |hi| (a.lo - hi).max(0)),
                    hi: a.hi.map(|hi| (hi - b.lo).max(0)),
                }
            }
            Expr::Mul(a, b) => {
                let (a, b) = pair(a, b);
                Range {
                    lo: a.lo.saturating_mul(b.lo),
                    hi: a.hi.zip(b.hi).and_then(|(x, y)| x.checked_mul(y)),
                }
            }
            Expr::Div(a, b) => {
                let (a, b) = pair(a, b);
                let divisor_lo = b.lo.max(1);
                Range {
                    lo: b.hi.map_or(0, |hi| a.lo / hi.max(1)),
                    hi: a.hi.map(|hi| hi / divisor_lo),
                }
            }
            Expr::Rem(a, b) => {
                let (a, b) = pair(a, b);
                match (a.hi, b.hi) {
                    (Some(hi), _) if hi < b.lo => a,
                    (Some(hi), Some(modulus)) => Range {
                        lo: 0,
                        hi: Some(hi.min(modulus - 1)),
                    },
                    (None, Some(modulus)) => Range {
                        lo: 0,
                        hi: Some(modulus - 1),
                    },
                    (Some(hi), None) => Range {
                        lo: 0,
                        hi: Some(hi),
                    },
                    (None, None) => unbounded(0),
                }
            }
            Expr::And(a, b) => {
                let (a, b) = pair(a, b);
                Range {
                    lo: 0,
                    hi: match (a.hi, b.hi) {
                        (Some(x), Some(y)) => Some(x.min(y)),
                        (Some(x), None) | (None, Some(x)) => Some(x),
                        (None, None) => None,
                    },
                }
            }
            Expr::Xor(a, b) => {
                let (a, b) = pair(a, b);
                Range {
                    lo: 0,
                    hi: a.hi.zip(b.hi).map(|(x, y)| low_mask(x.max(y)) as i64),
                }
            }
            Expr::Shr(a, b) => {
                let (a, b) = pair(a, b);
                Range {
                    lo: b.hi.map_or(0, |k| a.lo >> k.clamp(0, 62)),
                    hi: a.hi.map(|hi| hi >> b.lo.clamp(0, 62)),
                }
            }
            Expr::Shl(a, b) => {
                let (a, b) = pair(a, b);
                Range {
                    lo: a.lo.checked_shl(b.lo.clamp(0, 62) as u32).unwrap_or(0),
                    hi: a.hi.zip(b.hi).and_then(|(x, k)| {
                        let k = u32::try_from(k).ok().filter(|k| *k < 62)?;
                        x.checked_mul(1 << k)
                    }),
                }
            }
        }
    }

    /// A positive divisor of every value of `expr` (1 when nothing is known).
    pub fn divisor(&self, expr: &Expr) -> i64 {
        let pair = |a: &Expr, b: &Expr| (self.divisor(a), self.divisor(b));
        let divisor = match expr {
            Expr::Const(0) => ANY_DIVISOR,
            Expr::Const(value) => value.abs(),
            Expr::Var(Var::ThreadId | Var::BlockId) => 1,
            Expr::Var(Var::Dim(i)) => self.dim_divisors.get(i).copied().unwrap_or(1),
            Expr::Var(Var::Loop(i)) => self.loops.get(i).map_or(1, |fact| {
                if fact.lo == 0 {
                    fact.step
                } else {
                    gcd(fact.lo, fact.step)
                }
            }),
            Expr::Add(a, b) | Expr::Sub(a, b) => {
                let (a, b) = pair(a, b);
                gcd(a, b)
            }
            Expr::Mul(a, b) => {
                let (a, b) = pair(a, b);
                a.checked_mul(b).unwrap_or(ANY_DIVISOR).min(ANY_DIVISOR)
            }
            Expr::Shl(a, b) => match b.as_const() {
                Some(k) if (0..40).contains(&k) => self.divisor(a).saturating_mul(1 << k),
                Some(_) | None => self.divisor(a),
            },
            Expr::Rem(a, b) => match b.as_const() {
                Some(n) if n > 0 => gcd(self.divisor(a), n),
                Some(_) | None => 1,
            },
            Expr::And(a, b) => {
                let (a, b) = pair(a, b);
                1 << two_adic(a).max(two_adic(b))
            }
            Expr::Xor(a, b) => {
                let (a, b) = pair(a, b);
                1 << two_adic(a).min(two_adic(b))
            }
            Expr::Div(..) | Expr::Shr(..) => 1,
        };
        divisor.clamp(1, ANY_DIVISOR)
    }

    /// The bits that may be set in some value of `expr`.
    pub fn possible_ones(&self, expr: &Expr) -> u64 {
        let structural = match expr {
            Expr::Const(value) => *value as u64,
            Expr::And(a, b) => self.possible_ones(a) & self.possible_ones(b),
            Expr::Xor(a, b) => self.possible_ones(a) | self.possible_ones(b),
            Expr::Add(a, b) => {
                let (x, y) = (self.possible_ones(a), self.possible_ones(b));
                if x & y == 0 { x | y } else { u64::MAX }
            }
            Expr::Shl(a, b) => match b.as_const() {
                Some(k) if (0..63).contains(&k) => self.possible_ones(a) << k,
                Some(_) | None => u64::MAX,
            },
            Expr::Shr(a, b) => match b.as_const() {
                Some(k) if (0..63).contains(&k) => self.possible_ones(a) >> k,
                Some(_) | None => u64::MAX,
            },
            Expr::Mul(a, b) => match b.as_const().or(a.as_const()) {
                Some(c) if c > 0 && (c as u64).is_power_of_two() => {
                    let other = if b.as_const().is_some() { a } else { b };
                    self.possible_ones(other) << c.trailing_zeros()
                }
                Some(_) | None => u64::MAX,
            },
            Expr::Var(_) | Expr::Sub(..) | Expr::Div(..) | Expr::Rem(..) => u64::MAX,
        };
        let by_range = self.range(expr).hi.map_or(u64::MAX, low_mask);
        let by_divisor = !((1u64 << two_adic(self.divisor(expr))) - 1);
        structural & by_range & by_divisor
    }

    /// Whether no bit can be set in both `a` and `b`.
    pub fn disjoint(&self, a: &Expr, b: &Expr) -> bool {
        self.possible_ones(a) & self.possible_ones(b) == 0
    }
}

/// Divisions and remainders by powers of two as shifts and masks (values
/// are non-negative, so they agree); multiplications stay, so that the
/// emitter can fuse them into `mad`.
pub fn strength_reduce(expr: &Expr) -> Expr {
    let both = |a: &Expr, b: &Expr| (strength_reduce(a), strength_reduce(b));
    let power = |e: &Expr| {
        e.as_const()
            .filter(|c| *c > 0 && (*c as u64).is_power_of_two())
    };
    match expr {
        Expr::Const(_) | Expr::Var(_) => expr.clone(),
        Expr::Div(a, b) => {
            let (a, b) = both(a, b);
            match power(&b) {
                Some(c) => Expr::shr(a, Expr::Const(i64::from(c.trailing_zeros()))),
                None => Expr::div(a, b),
            }
        }
        Expr::Rem(a, b) => {
            let (a, b) = both(a, b);
            match power(&b) {
                Some(c) => Expr::and(a, Expr::Const(c - 1)),
                None => Expr::rem(a, b),
            }
        }
        Expr::Add(a, b) => {
            let (a, b) = both(a, b);
            Expr::add(a, b)
        }
        Expr::Sub(a, b) => {
            let (a, b) = both(a, b);
            Expr::sub(a, b)
        }
        Expr::Mul(a, b) => {
            let (a, b) = both(a, b);
            Expr::mul(a, b)
        }
        Expr::And(a, b) => {
            let (a, b) = both(a, b);
            Expr::and(a, b)
        }
        Expr::Xor(a, b) => {
            let (a, b) = both(a, b);
            Expr::xor(a, b)
        }
        Expr::Shr(a, b) => {
            let (a, b) = both(a, b);
            Expr::shr(a, b)
        }
        Expr::Shl(a, b) => {
            let (a, b) = both(a, b);
            Expr::shl(a, b)
        }
    }
}

/// `x * c` or `c * x` as `(x, c)`.
pub fn constant_factor(expr: &Expr) -> Option<(&Expr, i64)> {
    match expr {
        Expr::Mul(a, b) => match (a.as_const(), b.as_const()) {
            (None, Some(c)) => Some((&**a, c)),
            (Some(c), None) => Some((&**b, c)),
            (Some(_), Some(_)) | (None, None) => None,
        },
        Expr::Const(_)
        | Expr::Var(_)
        | Expr::Add(..)
        | Expr::Sub(..)
        | Expr::Div(..)
        | Expr::Rem(..)
        | Expr::And(..)
        | Expr::Xor(..)
        | Expr::Shr(..)
        | Expr::Shl(..) => None,
    }
}

/// The number of threads or blocks of a group, when constant.
pub fn group_size(group: &ir::GroupType) -> Option<i64> {
    group
        .levels
        .iter()
        .flat_map(|level| level.shape.leaves())
        .try_fold(1i64, |size, extent| size.checked_mul(extent.as_const()?))
}

/// All bits up to the highest set bit of `value` (`0b1011` → `0b1111`).
fn low_mask(value: i64) -> u64 {
    if value <= 0 {
        0
    } else {
        u64::MAX >> (value as u64).leading_zeros()
    }
}

/// The exponent of the largest power of two dividing `value` (≥ 1).
fn two_adic(value: i64) -> u32 {
    value.max(1).trailing_zeros().min(40)
}

fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

fn lcm(a: i64, b: i64) -> i64 {
    (a / gcd(a, b)).saturating_mul(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tid() -> Expr {
        Expr::var(Var::ThreadId)
    }

    fn each_value(prover: &Prover, expr: &Expr, threads: i64, check: impl Fn(i64)) {
        for t in 0..threads {
            let value = expr
                .eval(&|v| (v == Var::ThreadId).then_some(t))
                .expect("evaluates");
            let range = prover.range(expr);
            assert!(value >= range.lo && range.hi.is_none_or(|hi| value <= hi));
            check(value);
        }
    }

    #[test]
    fn remainders_below_their_modulus_disappear() {
        let prover = Prover::with_threads(256);
        let e = Expr::rem(Expr::div(tid(), 1.into()), 256.into());
        assert_eq!(prover.simplify(&e), tid());
        // 512 threads: the remainder must stay.
        let prover = Prover::with_threads(512);
        assert_eq!(prover.simplify(&e), e);
    }

    #[test]
    fn constants_distribute_over_sums() {
        let prover = Prover::with_threads(128).with_loop(0, 0, Some(4), 1);
        let row = Expr::add(
            Expr::div(tid(), 8.into()),
            Expr::mul(Expr::var(Var::Loop(0)), 16.into()),
        );
        let e = Expr::mul(row, 64.into());
        assert_eq!(
            prover.simplify(&e).to_string(),
            "(((tid / 8) * 64) + (k0 * 1024))"
        );
    }

    #[test]
    fn divisors_and_bits_hold_for_every_thread() {
        let prover = Prover::with_threads(128);
        // (tid % 8) * 8 + (tid / 8) * 64: the swizzle-friendly chunk offset.
        let chunk = Expr::mul(Expr::rem(tid(), 8.into()), 8.into());
        let row = Expr::mul(Expr::div(tid(), 8.into()), 64.into());
        let e = Expr::add(chunk.clone(), row.clone());
        assert_eq!(prover.divisor(&e), 8);
        assert!(prover.disjoint(&chunk, &row));
        let bits = prover.possible_ones(&e);
        each_value(&prover, &e, 128, |v| {
            assert_eq!(v % 8, 0);
            assert_eq!(v as u64 & !bits, 0);
        });
        // tid and tid + 1 overlap.
        assert!(!prover.disjoint(&tid(), &Expr::add(tid(), 1.into())));
    }

    #[test]
    fn loop_variables_carry_their_step() {
        let prover = Prover::with_threads(32).with_loop(0, 0, Some(64), 16);
        let k = Expr::var(Var::Loop(0));
        assert_eq!(prover.divisor(&k), 16);
        assert_eq!(
            prover.range(&k),
            Range {
                lo: 0,
                hi: Some(48)
            }
        );
        assert_eq!(prover.divisor(&Expr::add(k, 4.into())), 4);
    }

    #[test]
    fn strength_reduction_uses_shifts_and_masks_for_powers_of_two() {
        let e = Expr::add(
            Expr::rem(tid(), 8.into()),
            Expr::mul(Expr::div(tid(), 8.into()), 3.into()),
        );
        let reduced = strength_reduce(&e);
        assert_eq!(reduced.to_string(), "((tid & 7) + ((tid >> 3) * 3))");
        for t in 0..64 {
            let env = |v: Var| (v == Var::ThreadId).then_some(t);
            assert_eq!(reduced.eval(&env), e.eval(&env));
        }
        let odd = Expr::div(tid(), 3.into());
        assert_eq!(strength_reduce(&odd), odd);
    }
}
