//! 32-bit bounds: the lowering computes index values — element offsets,
//! loop counters and their step increments — in `.u32` registers
//! (docs/lowering.md, "Index arithmetic"), so the checker proves that the
//! values they can take fit, with the interval domain. A value past 32 bits
//! for constant extents is an error (E0265); a loop counter whose bound
//! depends on the dims gets a launch requirement, checked by `ptxgen run`.
//! (The grid's size is checked with the launch: `groups.rs`.)

use crate::diag::{Diagnostic, Span};
use crate::expr::{Expr, Var};
use crate::index::analysis::range;
use crate::index::facts::{Facts, INDEX_LIMIT};
use crate::ir::{Level, Requirement};

use super::codes;
use super::env::Checker;
use super::symbolic::{cosize, normalize};

/// What a value that must fit is, for the diagnostic.
struct Bounded<'a> {
    /// The value, over the dims and loop variables.
    value: Expr,
    /// One past its largest allowed value.
    limit: i64,
    /// Where it was written.
    span: Span,
    /// What it is, in words ("the loop counter after its last step").
    what: &'a str,
    /// The fix.
    help: &'a str,
}

impl Checker {
    /// A loop `k < hi; k += step` increments its `.u32` counter past the
    /// bound once: `hi − 1 + step` must stay below 2^32, or the counter
    /// wraps to a small value and the loop never ends.
    pub(crate) fn loop_counter_fits(&mut self, hi: &Expr, step: &Expr, span: Span) {
        self.fits(Bounded {
            value: normalize(&Expr::add(
                Expr::sub(hi.clone(), Expr::Const(1)),
                step.clone(),
            )),
            limit: INDEX_LIMIT,
            span,
            what: "the loop counter after its last step",
            help: "use a smaller step or bound; the counter is a 32-bit register",
        });
    }

    /// A tensor's elements are numbered by `.u32` offsets: it must span
    /// fewer than 2^32 elements (one past its largest offset), as in CUDA
    /// C++ with `int` indices, so that a count or bound over it fits too.
    /// A constant tensor past that is an error; a symbolic one gets a
    /// launch requirement (`2^32 − cosize ≥ 1`) unless its dims' ranges
    /// already keep it below.
    pub(crate) fn tensor_fits(&mut self, levels: &[Level], span: Span) {
        let value = cosize(levels);
        self.fits(Bounded {
            value,
            limit: INDEX_LIMIT,
            span,
            what: "the number of elements the tensor spans",
            help: "split the tensor into parts of fewer than 2^32 elements; offsets are 32-bit",
        });
    }

    /// Proves `value < limit`: by the interval of its constant form, or of
    /// its dims (each a `.u32` parameter); a bound over the dims that is not
    /// proved becomes a launch requirement `limit − value ≥ 1`.
    fn fits(&mut self, bounded: Bounded) {
        let Bounded {
            value,
            limit,
            span,
            what,
            help,
        } = bounded;
        if let Some(constant) = value.as_const() {
            if constant >= limit {
                self.report(
                    Diagnostic::error(
                        codes::PAST_32_BITS,
                        format!("{what} is {constant}, past 32-bit index arithmetic"),
                        span,
                    )
                    .with_label(format!("must be at most {}", limit - 1))
                    .with_note("index values are computed in 32-bit registers and would wrap")
                    .with_help(help),
                );
            }
            return;
        }
        let over_dims = value.vars().iter().all(|var| matches!(var, Var::Dim(_)));
        let largest = if over_dims {
            range(&value, &Facts::none()).hi()
        } else {
            self.bounds(&value).hi()
        };
        if largest.is_some_and(|largest| largest < limit) {
            return;
        }
        // A value over loop variables is bounded by an expression over the
        // dims (each loop variable replaced by its extreme value), which the
        // launch checks; one the intervals and that bound cannot reach (a
        // block id in a symbolic grid, a product of differences) is left to
        // the lowering's checks of constants.
        let over_dims_bound = if over_dims {
            Some(value)
        } else {
            self.upper_over_dims(&value)
        };
        if let Some(upper) = over_dims_bound {
            if range(&upper, &Facts::none())
                .hi()
                .is_some_and(|largest| largest < limit)
            {
                return;
            }
            self.require(Requirement::Positive {
                value: normalize(&Expr::sub(Expr::Const(limit), upper)),
                span,
            });
        }
    }

    /// An expression over the dims alone that is at least `e` for every
    /// value of the loop variables and thread ids in it: each loop variable
    /// at its largest value where it adds, its first where it subtracts.
    /// `None` where no such bound is found (a block id, a division by a
    /// variable, a product whose factors may be negative).
    pub(crate) fn upper_over_dims(&self, e: &Expr) -> Option<Expr> {
        self.extreme_over_dims(e, true)
    }

    fn extreme_over_dims(&self, e: &Expr, upper: bool) -> Option<Expr> {
        let nonnegative = |e: &Expr| self.bounds(e).lo().is_some_and(|lo| lo >= 0);
        Some(match e {
            Expr::Const(_) | Expr::Var(Var::Dim(_)) => e.clone(),
            Expr::Var(Var::ThreadId) => {
                let block = self.launch.as_ref()?.block_size;
                Expr::Const(if upper { block - 1 } else { 0 })
            }
            Expr::Var(Var::BlockId) => return None,
            Expr::Var(Var::Loop(i)) => {
                let info = self.kernel.loop_info.get(*i as usize)?;
                if upper {
                    info.last.clone()?
                } else {
                    Expr::Const(info.range.0?)
                }
            }
            Expr::Add(a, b) => Expr::add(
                self.extreme_over_dims(a, upper)?,
                self.extreme_over_dims(b, upper)?,
            ),
            Expr::Sub(a, b) => Expr::sub(
                self.extreme_over_dims(a, upper)?,
                self.extreme_over_dims(b, !upper)?,
            ),
            Expr::Mul(a, b) => match (a.as_const(), b.as_const()) {
                (Some(c), _) | (_, Some(c)) => {
                    let other = if a.as_const().is_some() { b } else { a };
                    Expr::mul(
                        Expr::Const(c),
                        self.extreme_over_dims(other, upper == (c >= 0))?,
                    )
                }
                (None, None) if nonnegative(a) && nonnegative(b) => Expr::mul(
                    self.extreme_over_dims(a, upper)?,
                    self.extreme_over_dims(b, upper)?,
                ),
                (None, None) => return None,
            },
            Expr::Div(a, b) => match b.as_const() {
                Some(c) if c > 0 => Expr::div(self.extreme_over_dims(a, upper)?, Expr::Const(c)),
                Some(_) | None => return None,
            },
            Expr::Rem(_, _)
            | Expr::And(_, _)
            | Expr::Xor(_, _)
            | Expr::Shr(_, _)
            | Expr::Shl(_, _) => return None,
        })
    }
}
