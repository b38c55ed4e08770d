//! Index arithmetic: what is known about the variables
//! of one kernel — the premises of every analysis and simplification of its
//! index expressions.
//!
//! Facts are built from plain numbers (the launch sizes, loop bounds, the
//! divisibility requirements on symbolic dimensions) through
//! [`FactsBuilder`]; nothing here depends on the checker.

use std::collections::BTreeMap;
use std::fmt;

use super::congruence::Congruence;
use super::interval::Interval;
use crate::expr::Var;
use crate::ir::Requirement;

/// What is known about one variable: an inclusive range and a congruence.
///
/// Rule: the two never contradict each other (the builder refuses facts
/// that leave a variable no value).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct VarFacts {
    /// Every value the variable takes lies here.
    pub range: Interval,
    /// Every value satisfies this (e.g. a multiple of 128).
    pub congruence: Congruence,
}

/// The facts of one kernel: per variable, a [`VarFacts`].
///
/// Rule: a variable not mentioned has the IR's defaults — `ThreadId`,
/// `BlockId` and `Loop(i)` lie in `[0, ∞)`, `Dim(i)` in `[1, ∞)`
/// (docs/language.md: all index values are non-negative, every extent
/// positive). Every explicit fact narrows these defaults; one that would
/// widen them is refused.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Facts {
    vars: BTreeMap<Var, VarFacts>,
}

/// Why a set of facts was refused.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum FactsError {
    /// A launch size (threads per block, blocks per grid) below 1.
    #[error("{what} must be at least 1, got {value}")]
    NonPositiveSize {
        /// "block size" or "grid size".
        what: &'static str,
        /// The value given.
        value: i64,
    },
    /// A loop step below 1.
    #[error("the step of loop k{var} must be at least 1, got {step}")]
    NonPositiveStep {
        /// The loop's index.
        var: u32,
        /// The step given.
        step: i64,
    },
    /// A range reaching below what the IR allows the variable (0, or 1 for
    /// a symbolic dimension): index values are never negative.
    #[error("{var} cannot go below {bound} (its range starts at {lo})")]
    BelowIrBound {
        /// The variable.
        var: Var,
        /// The lowest value the IR allows.
        bound: i64,
        /// The range's start.
        lo: i64,
    },
    /// A divisor or modulus below 1.
    #[error("a divisor of {var} must be at least 1, got {divisor}")]
    NonPositiveDivisor {
        /// The variable.
        var: Var,
        /// The divisor given.
        divisor: i64,
    },
    /// The facts leave a variable without any value (an empty range, a loop
    /// that never runs, or contradicting divisibility).
    #[error("the facts leave {var} without any value")]
    Contradiction {
        /// The variable.
        var: Var,
    },
}

impl Facts {
    /// Starts a set of facts from the IR's defaults.
    pub fn builder() -> FactsBuilder {
        FactsBuilder::default()
    }

    /// No facts beyond the IR's defaults.
    pub fn none() -> Facts {
        Facts::default()
    }

    /// What is known about `var`.
    pub fn of(&self, var: Var) -> VarFacts {
        self.vars
            .get(&var)
            .copied()
            .unwrap_or_else(|| default_facts(var))
    }

    /// Whether `env` satisfies every fact about the variables it binds (for
    /// tests and the REPL; variables it leaves unbound are not checked).
    pub fn admits(&self, env: &dyn Fn(Var) -> Option<i64>) -> bool {
        self.vars.iter().all(|(&var, facts)| {
            env(var).is_none_or(|v| facts.range.contains(v) && facts.congruence.contains(v))
        })
    }
}

fn default_facts(var: Var) -> VarFacts {
    let lo = match var {
        Var::ThreadId | Var::BlockId | Var::Loop(_) => 0,
        Var::Dim(_) => 1,
    };
    VarFacts {
        range: Interval::new(Some(lo), Some(INDEX_LIMIT - 1)).unwrap_or_else(Interval::full),
        congruence: Congruence::unknown(),
    }
}

/// Every index value the emitted code holds is below this: thread and block
/// ids, dims (`.u32` parameters) and loop counters live in 32-bit registers.
/// It also bounds what a rewrite may divide: `/` and `%` by other than a power
/// of two do not survive a wrap-around, so a rule that forms a new dividend
/// must prove it below this limit (`docs/index-arithmetic.md`).
pub const INDEX_LIMIT: i64 = 1 << 32;

/// `tid ∈ [0, 127]; k0 ∈ [0, 992] ≡ 0 (mod 32)`, in variable order.
impl fmt::Display for Facts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (var, facts)) in self.vars.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{var} ∈ {}", facts.range)?;
            if facts.congruence != Congruence::unknown() {
                write!(f, " {}", facts.congruence)?;
            }
        }
        Ok(())
    }
}

/// Collects facts one at a time; [`FactsBuilder::build`] checks them.
///
/// Rule: each call narrows what was known (facts about one variable are
/// intersected); the first invalid call is reported by `build`.
#[derive(Clone, Debug, Default)]
pub struct FactsBuilder {
    facts: Facts,
    error: Option<FactsError>,
}

impl FactsBuilder {
    fn fail(&mut self, error: FactsError) {
        self.error.get_or_insert(error);
    }

    fn narrow(mut self, var: Var, range: Interval, congruence: Congruence) -> FactsBuilder {
        let old = self.facts.of(var);
        let merged = old
            .range
            .intersect(range)
            .zip(old.congruence.meet(congruence))
            .and_then(|(range, congruence)| tighten(range, congruence));
        match merged {
            Some(facts) => {
                self.facts.vars.insert(var, facts);
            }
            None => self.fail(FactsError::Contradiction { var }),
        }
        self
    }

    /// `var ∈ [lo, hi]`, inclusive; `hi = None` leaves it unbounded above.
    /// `lo` may not be below the IR's bound for `var` (an error, rather
    /// than a range silently cut short).
    pub fn range(mut self, var: Var, lo: i64, hi: Option<i64>) -> FactsBuilder {
        let bound = default_facts(var).range.lo().unwrap_or(0);
        if lo < bound {
            self.fail(FactsError::BelowIrBound { var, bound, lo });
            return self;
        }
        match Interval::new(Some(lo), hi) {
            Some(range) => self.narrow(var, range, Congruence::unknown()),
            None => {
                self.fail(FactsError::Contradiction { var });
                self
            }
        }
    }

    /// `var` is a multiple of `divisor`.
    pub fn multiple_of(self, var: Var, divisor: i64) -> FactsBuilder {
        self.congruent(var, divisor, 0)
    }

    /// `var ≡ residue (mod modulus)`.
    pub fn congruent(mut self, var: Var, modulus: i64, residue: i64) -> FactsBuilder {
        match Congruence::new(modulus, residue) {
            Some(congruence) => self.narrow(var, Interval::full(), congruence),
            None => {
                self.fail(FactsError::NonPositiveDivisor {
                    var,
                    divisor: modulus,
                });
                self
            }
        }
    }

    /// A block of `threads` threads: `ThreadId ∈ [0, threads - 1]`.
    pub fn threads(mut self, threads: i64) -> FactsBuilder {
        if threads < 1 {
            self.fail(FactsError::NonPositiveSize {
                what: "block size",
                value: threads,
            });
            return self;
        }
        self.range(Var::ThreadId, 0, Some(threads - 1))
    }

    /// A grid of `blocks` blocks: `BlockId ∈ [0, blocks - 1]`. A symbolic
    /// grid is simply not stated (`BlockId` stays unbounded above).
    pub fn blocks(mut self, blocks: i64) -> FactsBuilder {
        if blocks < 1 {
            self.fail(FactsError::NonPositiveSize {
                what: "grid size",
                value: blocks,
            });
            return self;
        }
        self.range(Var::BlockId, 0, Some(blocks - 1))
    }

    /// `for (k_var = lo; k_var < hi; k_var += step)`: `Loop(var)` takes
    /// `lo, lo + step, …` up to the last value below `hi` (unbounded above
    /// when `hi` is `None`, a symbolic bound), so it is `≡ lo (mod step)`.
    pub fn counted_loop(mut self, var: u32, lo: i64, hi: Option<i64>, step: i64) -> FactsBuilder {
        let loop_var = Var::Loop(var);
        if step < 1 {
            self.fail(FactsError::NonPositiveStep { var, step });
            return self;
        }
        let last = match hi {
            Some(hi) if hi <= lo => {
                self.fail(FactsError::Contradiction { var: loop_var });
                return self;
            }
            Some(hi) => {
                // The last value reached, ≤ hi - 1 (computed wide: hi - lo may
                // not fit an i64).
                let (lo, hi, step) = (i128::from(lo), i128::from(hi), i128::from(step));
                i64::try_from(lo + (hi - 1 - lo) / step * step).ok()
            }
            None => None,
        };
        let congruence = Congruence::new(step, lo).unwrap_or_else(Congruence::unknown);
        self.range(loop_var, lo, last)
            .narrow(loop_var, Interval::full(), congruence)
    }

    /// Records what a launch requirement of the IR says about a single
    /// variable: `Divisible { value: v, divisor: d }` with a variable `v`
    /// and a constant `d` makes `v` a multiple of `d`; `Positive { value:
    /// v }` makes `v ≥ 1`. Returns the builder and whether the requirement
    /// had that form (others say nothing about a single variable and are
    /// left out).
    pub fn requirement(self, requirement: &Requirement) -> (FactsBuilder, bool) {
        match requirement {
            Requirement::Divisible { value, divisor, .. } => {
                match value.as_var().zip(divisor.as_const()) {
                    Some((var, d)) => (self.multiple_of(var, d), true),
                    None => (self, false),
                }
            }
            Requirement::Positive { value, .. } => match value.as_var() {
                Some(var) => (self.range(var, 1, None), true),
                None => (self, false),
            },
        }
    }

    /// The facts, or the first invalid one.
    pub fn build(self) -> Result<Facts, FactsError> {
        match self.error {
            Some(error) => Err(error),
            None => Ok(self.facts),
        }
    }
}

/// Rounds the range's ends to values that satisfy the congruence, and makes
/// a one-value range exact; `None` when no value satisfies both.
fn tighten(range: Interval, congruence: Congruence) -> Option<VarFacts> {
    let lo = range.lo();
    let hi = range.hi();
    let (new_lo, new_hi) = congruence.round_bounds(lo.unwrap_or(0), hi.unwrap_or(0));
    let lo = lo.map(|_| i64::try_from(new_lo)).transpose().ok()?;
    let hi = hi.map(|_| i64::try_from(new_hi)).transpose().ok()?;
    let range = Interval::new(lo, hi)?;
    let congruence = match range.as_point() {
        Some(value) => Congruence::exact(value),
        None => congruence,
    };
    Some(VarFacts { range, congruence })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Expr;
    use crate::ir::Span;

    #[test]
    fn launch_sizes_and_loops_become_ranges() {
        let facts = Facts::builder()
            .threads(128)
            .blocks(64)
            .counted_loop(0, 0, Some(1000), 32)
            .build()
            .expect("valid facts");
        assert_eq!(
            facts.of(Var::ThreadId).range,
            Interval::new(Some(0), Some(127)).unwrap()
        );
        assert_eq!(facts.of(Var::BlockId).range.hi(), Some(63));
        let k = facts.of(Var::Loop(0));
        assert_eq!(k.range, Interval::new(Some(0), Some(992)).unwrap());
        assert_eq!(k.congruence.divisor(), 32);
        assert_eq!(
            facts.to_string(),
            "tid ∈ [0, 127]; bid ∈ [0, 63]; k0 ∈ [0, 992] ≡ 0 (mod 32)"
        );
    }

    #[test]
    fn defaults_follow_the_ir() {
        let facts = Facts::none();
        // Every index value is a 32-bit register's: below INDEX_LIMIT.
        let below = |lo| Interval::new(Some(lo), Some(INDEX_LIMIT - 1)).unwrap();
        assert_eq!(facts.of(Var::Dim(3)).range, below(1));
        assert_eq!(facts.of(Var::Loop(2)).range, below(0));
        assert_eq!(facts.of(Var::BlockId).range, below(0));
        assert_eq!(facts.of(Var::BlockId).congruence, Congruence::unknown());
    }

    #[test]
    fn facts_about_one_variable_are_intersected() {
        let facts = Facts::builder()
            .range(Var::Dim(0), 100, Some(1000))
            .multiple_of(Var::Dim(0), 128)
            .build()
            .unwrap();
        let d = facts.of(Var::Dim(0));
        assert_eq!(d.range, Interval::new(Some(128), Some(896)).unwrap());
        let point = Facts::builder()
            .range(Var::Loop(1), 3, Some(9))
            .congruent(Var::Loop(1), 8, 5)
            .build()
            .unwrap();
        assert_eq!(point.of(Var::Loop(1)).congruence, Congruence::exact(5));
        let offset_loop = Facts::builder()
            .counted_loop(0, 1, Some(10), 4)
            .build()
            .unwrap();
        assert_eq!(
            offset_loop.of(Var::Loop(0)).congruence,
            Congruence::new(4, 1).unwrap()
        );
        assert_eq!(offset_loop.of(Var::Loop(0)).range.hi(), Some(9));
    }

    #[test]
    fn requirements_of_the_ir_become_divisors() {
        let span = Span::default();
        let divisible = Requirement::Divisible {
            value: Expr::var(Var::Dim(0)),
            divisor: Expr::constant(128),
            span,
        };
        let (builder, used) = Facts::builder().requirement(&divisible);
        assert!(used);
        assert_eq!(
            builder
                .build()
                .unwrap()
                .of(Var::Dim(0))
                .congruence
                .divisor(),
            128
        );
        let compound = Requirement::Divisible {
            value: Expr::mul(Expr::var(Var::Dim(0)), 2.into()),
            divisor: Expr::constant(64),
            span,
        };
        assert!(!Facts::builder().requirement(&compound).1);
    }

    #[test]
    fn bad_facts_are_errors() {
        let err = |b: FactsBuilder| b.build().unwrap_err();
        assert_eq!(
            err(Facts::builder().threads(0)),
            FactsError::NonPositiveSize {
                what: "block size",
                value: 0
            }
        );
        assert_eq!(
            err(Facts::builder().counted_loop(1, 0, Some(8), 0)),
            FactsError::NonPositiveStep { var: 1, step: 0 }
        );
        assert_eq!(
            err(Facts::builder().counted_loop(1, 8, Some(8), 1)),
            FactsError::Contradiction { var: Var::Loop(1) }
        );
        assert_eq!(
            err(Facts::builder().range(Var::ThreadId, 5, Some(4))),
            FactsError::Contradiction { var: Var::ThreadId }
        );
        assert_eq!(
            err(Facts::builder()
                .range(Var::Dim(0), 1, Some(100))
                .multiple_of(Var::Dim(0), 128)),
            FactsError::Contradiction { var: Var::Dim(0) }
        );
        assert_eq!(
            err(Facts::builder().multiple_of(Var::BlockId, 0)),
            FactsError::NonPositiveDivisor {
                var: Var::BlockId,
                divisor: 0
            }
        );
        assert!(
            err(Facts::builder().threads(-3))
                .to_string()
                .contains("block size")
        );
        assert_eq!(
            err(Facts::builder().counted_loop(0, -4, Some(8), 1)),
            FactsError::BelowIrBound {
                var: Var::Loop(0),
                bound: 0,
                lo: -4
            }
        );
        assert_eq!(
            err(Facts::builder().counted_loop(0, i64::MIN, Some(i64::MAX), 1)),
            FactsError::BelowIrBound {
                var: Var::Loop(0),
                bound: 0,
                lo: i64::MIN
            }
        );
        assert_eq!(
            err(Facts::builder().range(Var::Dim(1), 0, None)),
            FactsError::BelowIrBound {
                var: Var::Dim(1),
                bound: 1,
                lo: 0
            }
        );
    }
}
