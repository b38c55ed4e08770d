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
    /// C++ with `int` indices, so that a count or bound over it fits too. Checked for constant extents; a symbolic
    /// tensor's size is the launcher's to check (docs/lowering.md).
    pub(crate) fn tensor_fits(&mut self, levels: &[Level], span: Span) {
        let value = cosize(levels);
        if value.as_const().is_none() {
            return;
        }
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
        if over_dims {
            self.require(Requirement::Positive {
                value: normalize(&Expr::sub(Expr::Const(limit), value)),
                span,
            });
        }
        // A bound over loop variables or ids that the intervals cannot
        // prove is left to the lowering's checks of constants.
    }
}
