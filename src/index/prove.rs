//! Index arithmetic: what the lowering may assume about one kernel's index
//! values, and the proofs it asks for — simplification before emission,
//! ranges, divisors (alignment of vector accesses) and possibly-set bits
//! (whether a swizzle distributes over a sum).
//!
//! Every question the lowering asks about an index expression goes through
//! [`Prover`]: the kernel's [`Facts`] and the analyses of `analysis`,
//! `simplify` and `strength` (docs/index-arithmetic.md), plus the one fact
//! those cannot state — the block id is below the grid's size even when
//! that size is symbolic.

use super::analysis;
use super::facts::{Facts, FactsBuilder};
use super::simplify::simplify;
use super::strength::strength_reduce;
use crate::expr::{Expr, Var};
use crate::ir;

/// Facts about the variables of one kernel and the proofs built on them.
///
/// Rule: every answer holds for every value the kernel's variables can take
/// (`tid < block size`, `bid < grid size`, loop variables within their
/// bounds and steps, dims ≥ 1 and multiples of what the kernel's
/// requirements divide them by).
#[derive(Clone, Debug)]
pub struct Prover {
    facts: Facts,
    threads: i64,
    blocks: Option<i64>,
    loops: Vec<(u32, i64, Option<i64>, i64)>,
    requirements: Vec<ir::Requirement>,
    /// The grid's size as an expression, for `bid % grid` and `bid / grid`.
    grid: Option<Expr>,
}

/// An inclusive range of non-negative values; `hi` is `None` when unbounded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Range {
    /// Smallest value.
    pub lo: i64,
    /// Largest value, if bounded.
    pub hi: Option<i64>,
}

impl Prover {
    /// The facts of `kernel`: its launch sizes, every loop's bounds and every
    /// requirement on its dims.
    pub fn for_kernel(kernel: &ir::Kernel) -> Prover {
        let mut prover = Prover {
            facts: Facts::none(),
            threads: group_size(&kernel.block).unwrap_or(1024),
            blocks: group_size(&kernel.grid),
            loops: Vec::new(),
            requirements: kernel.requirements.clone(),
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
        };
        if let Some(body) = &kernel.root.body {
            prover.collect_loops(body);
        }
        prover.rebuild();
        prover
    }

    /// The same facts and `extra` as further requirements: what the
    /// specialized version of a kernel knows (`specialize`).
    pub fn with_requirements(mut self, extra: &[ir::Requirement]) -> Prover {
        self.requirements.extend(extra.iter().cloned());
        self.rebuild();
        self
    }

    /// Facts for a block of `threads` threads and nothing else (tests).
    pub fn with_threads(threads: i64) -> Prover {
        let mut prover = Prover {
            facts: Facts::none(),
            threads,
            blocks: None,
            loops: Vec::new(),
            requirements: Vec::new(),
            grid: None,
        };
        prover.rebuild();
        prover
    }

    /// Adds the facts of loop `var`: `lo ≤ var < hi`, stepping by `step`.
    pub fn with_loop(mut self, var: u32, lo: i64, hi: Option<i64>, step: i64) -> Prover {
        self.loops.push((var, lo, hi, step));
        self.rebuild();
        self
    }

    fn collect_loops(&mut self, body: &[ir::Stmt]) {
        for stmt in body {
            match stmt {
                ir::Stmt::For(each) => {
                    if let (Some(lo), Some(step)) = (each.lo.as_const(), each.step.as_const()) {
                        self.loops.push((each.var, lo, each.hi.as_const(), step));
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
                ir::Stmt::Sync { .. }
                | ir::Stmt::Commit { .. }
                | ir::Stmt::Wait { .. }
                | ir::Stmt::Arrive { .. }
                | ir::Stmt::WaitPhase { .. }
                | ir::Stmt::SetMaxRegisters { .. } => {}
            }
        }
    }

    /// Builds the facts. A fact the builder refuses (a loop that never runs
    /// leaves its variable no value) is left out rather than failing the
    /// kernel: what remains is still true.
    fn rebuild(&mut self) {
        let base = || {
            let mut builder = Facts::builder().threads(self.threads);
            if let Some(blocks) = self.blocks {
                builder = builder.blocks(blocks);
            }
            builder
        };
        let with_loops = |mut builder: FactsBuilder| {
            for (var, lo, hi, step) in &self.loops {
                if hi.is_none_or(|hi| hi > *lo) && *step >= 1 && *lo >= 0 {
                    builder = builder.counted_loop(*var, *lo, *hi, *step);
                }
            }
            builder
        };
        let with_requirements = |mut builder: FactsBuilder| {
            for requirement in &self.requirements {
                builder = builder.requirement(requirement).0;
            }
            builder
        };
        self.facts = with_requirements(with_loops(base()))
            .build()
            .or_else(|_| with_loops(base()).build())
            .or_else(|_| base().build())
            .unwrap_or_else(|_| Facts::none());
    }

    /// An equivalent expression ready for emission: simplified, then
    /// strength-reduced (powers of two become shifts and masks).
    pub fn prepare(&self, expr: &Expr) -> Expr {
        strength_reduce(&self.simplify(expr))
    }

    /// An equivalent expression, as small as the facts allow, in canonical
    /// form (equal index computations compare equal).
    pub fn simplify(&self, expr: &Expr) -> Expr {
        simplify(&self.below_grid(expr), &self.facts)
    }

    /// `expr` with `bid % grid → bid` and `bid / grid → 0`.
    fn below_grid(&self, expr: &Expr) -> Expr {
        let Some(grid) = &self.grid else {
            return expr.clone();
        };
        let bid = Expr::var(Var::BlockId);
        match expr {
            Expr::Rem(a, b) if **a == bid && **b == *grid => bid,
            Expr::Div(a, b) if **a == bid && **b == *grid => Expr::Const(0),
            Expr::Const(_)
            | Expr::Var(_)
            | Expr::Add(..)
            | Expr::Sub(..)
            | Expr::Mul(..)
            | Expr::Div(..)
            | Expr::Rem(..)
            | Expr::And(..)
            | Expr::Xor(..)
            | Expr::Shr(..)
            | Expr::Shl(..) => expr.map_operands(&mut |operand| self.below_grid(operand)),
        }
    }

    /// Inclusive bounds of every value of `expr` (values are non-negative).
    pub fn range(&self, expr: &Expr) -> Range {
        let interval = analysis::range(&self.below_grid(expr), &self.facts);
        Range {
            lo: interval.lo().unwrap_or(0).max(0),
            hi: interval.hi(),
        }
    }

    /// A positive divisor of every value of `expr` (1 when nothing is known).
    pub fn divisor(&self, expr: &Expr) -> i64 {
        analysis::known_divisor(&self.below_grid(expr), &self.facts).max(1)
    }

    /// The bits that may be set in some value of `expr`.
    pub fn possible_ones(&self, expr: &Expr) -> u64 {
        analysis::known_bits(&self.below_grid(expr), &self.facts).possible_ones()
    }

    /// Whether no bit can be set in both `a` and `b`.
    pub fn disjoint(&self, a: &Expr, b: &Expr) -> bool {
        self.possible_ones(a) & self.possible_ones(b) == 0
    }
}

/// `x * c`, `c * x` or `x << k` as `(x, c)` (`c = 2^k`).
pub fn constant_factor(expr: &Expr) -> Option<(&Expr, i64)> {
    match expr {
        Expr::Mul(a, b) => match (a.as_const(), b.as_const()) {
            (None, Some(c)) => Some((&**a, c)),
            (Some(c), None) => Some((&**b, c)),
            (Some(_), Some(_)) | (None, None) => None,
        },
        Expr::Shl(x, k) => match k.as_const() {
            Some(k) if (0..31).contains(&k) => Some((&**x, 1 << k)),
            Some(_) | None => None,
        },
        Expr::Const(_)
        | Expr::Var(_)
        | Expr::Add(..)
        | Expr::Sub(..)
        | Expr::Div(..)
        | Expr::Rem(..)
        | Expr::And(..)
        | Expr::Xor(..)
        | Expr::Shr(..) => None,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tid() -> Expr {
        Expr::var(Var::ThreadId)
    }

    #[test]
    fn remainders_below_their_modulus_disappear() {
        let prover = Prover::with_threads(256);
        let e = Expr::rem(Expr::div(tid(), 1.into()), 256.into());
        assert_eq!(prover.simplify(&e), tid());
        // 512 threads: the remainder must stay.
        let prover = Prover::with_threads(512);
        assert_ne!(prover.simplify(&e), tid());
    }

    #[test]
    fn constants_distribute_over_sums() {
        let prover = Prover::with_threads(128).with_loop(0, 0, Some(4), 1);
        let row = Expr::add(
            Expr::div(tid(), 8.into()),
            Expr::mul(Expr::var(Var::Loop(0)), 16.into()),
        );
        let e = Expr::mul(row, 64.into());
        let simplified = prover.simplify(&e);
        let (terms, constant) = crate::index::chain::split_sum(&simplified);
        assert_eq!((terms.len(), constant), (2, 0), "{simplified}");
        assert!(
            terms.iter().any(|t| t.vars() == [Var::Loop(0)]),
            "{simplified}"
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
        for t in 0..128 {
            let value = e.eval(&|v| (v == Var::ThreadId).then_some(t)).unwrap();
            assert_eq!(value % 8, 0);
            assert_eq!(value as u64 & !bits, 0);
            let range = prover.range(&e);
            assert!(value >= range.lo && range.hi.is_none_or(|hi| value <= hi));
        }
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
        // A loop that never runs is left out rather than refused.
        let empty = Prover::with_threads(32).with_loop(1, 4, Some(4), 1);
        assert_eq!(
            empty.range(&tid()),
            Range {
                lo: 0,
                hi: Some(31)
            }
        );
    }

    #[test]
    fn the_block_id_is_below_a_symbolic_grid() {
        let mut prover = Prover::with_threads(32);
        let grid = Expr::var(Var::Dim(0));
        prover.grid = Some(grid.clone());
        let bid = Expr::var(Var::BlockId);
        assert_eq!(prover.simplify(&Expr::rem(bid.clone(), grid.clone())), bid);
        assert_eq!(prover.simplify(&Expr::div(bid, grid)), Expr::Const(0));
    }

    #[test]
    fn preparation_uses_shifts_and_masks_for_powers_of_two() {
        let prover = Prover::with_threads(1024);
        let e = Expr::add(
            Expr::rem(tid(), 8.into()),
            Expr::mul(Expr::div(tid(), 8.into()), 3.into()),
        );
        let prepared = prover.prepare(&e);
        let text = prepared.to_string();
        assert!(text.contains("& 7") && text.contains(">> 3"), "{text}");
        for t in 0..1024 {
            let env = |v: Var| (v == Var::ThreadId).then_some(t);
            assert_eq!(prepared.eval(&env), e.eval(&env));
        }
        assert_eq!(
            constant_factor(&Expr::shl(tid(), 3.into())),
            Some((&tid(), 8))
        );
    }
}
