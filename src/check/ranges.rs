//! Stage 2, check: coordinate ranges — whether a coordinate can leave its
//! mode. Constant bounds (the interval domain) decide it against a constant
//! extent; otherwise the coordinate is bounded by an expression over the
//! dims (thread and block ids by their launch groups, loop variables by
//! their bounds, the conditions of enclosing `if`s by what they guard, from
//! above and, for a constant minus a guarded value, from below) and
//! compared with the extent by form: in range, out of range for every value
//! of the dims (E0227), or a launch requirement.

use crate::diag::{Diagnostic, Span};
use crate::expr::{Expr, Var};
use crate::index::interval::Interval;
use crate::ir;

use super::codes;
use super::env::Checker;
use super::symbolic::{self, Sign};

impl Checker {
    /// The bound an enclosing `if` gives `e`: a guard `g ≤ b` bounds
    /// `g + c` by `b + c` for a constant `c`.
    ///
    /// Among several guards of `e` (`k + 1 < ceil_div(S, 64) && k + 1 <
    /// @bq + 1`), the innermost whose bound is over the dims alone: a bound
    /// by a block, thread or loop value compares with no extent.
    pub(crate) fn guard_bound(&self, e: &Expr) -> Option<Expr> {
        // A guard on a constant (`0 <= @t`, from `@t == 0`) bounds nothing
        // variable: taking it as a bound of the constant `c` would give
        // `@t + c`, a bound in thread ids where the constant is its own.
        let mut bounds = self.guards.iter().rev().filter_map(|guard| {
            guard.value.as_const().is_none().then_some(())?;
            let offset =
                symbolic::normalize(&Expr::sub(e.clone(), guard.value.clone())).as_const()?;
            Some(symbolic::normalize(&Expr::add(
                guard.at_most.clone(),
                Expr::Const(offset),
            )))
        });
        let first = bounds.next()?;
        let over_dims = |bound: &Expr| bound.vars().iter().all(|v| matches!(v, Var::Dim(_)));
        if over_dims(&first) {
            return Some(first);
        }
        bounds.find(over_dims).or(Some(first))
    }

    /// The least value an enclosing `if` leaves `e`, where `e` is a
    /// constant minus a guarded value: a guard `g ≤ b` (b constant) keeps
    /// `c − g` at least `c − b` — `%order[1 − @wg]` under `if (@wg < 2)`.
    fn guard_lower_bound(&self, e: &Expr) -> Option<i64> {
        self.guards
            .iter()
            .rev()
            .filter(|guard| guard.value.as_const().is_none())
            .filter_map(|guard| {
                let sum = symbolic::normalize(&Expr::add(e.clone(), guard.value.clone()));
                Some(sum.as_const()? - guard.at_most.as_const()?)
            })
            .max()
    }

    /// Whether `e` is at least 0 wherever it is evaluated: by the interval
    /// domain, or by an enclosing `if` that keeps it there — a guard
    /// `c ≤ g` (c constant) keeps `g + r` at least `c + min r`, so
    /// `(s·KT + k - 1) % STAGES` under `if (k > 0)` divides no negative
    /// value.
    pub(crate) fn is_non_negative(&self, e: &Expr) -> bool {
        self.bounds(e).is_non_negative()
            || self.guards.iter().any(|guard| {
                let Some(least) = guard.value.as_const() else {
                    return false;
                };
                let rest = symbolic::normalize(&Expr::sub(e.clone(), guard.at_most.clone()));
                self.bounds(&rest)
                    .lo()
                    .and_then(|lo| lo.checked_add(least))
                    .is_some_and(|lo| lo >= 0)
            })
    }

    /// An upper bound of `e` as an expression over the dims alone (thread
    /// and block ids by their launch groups' sizes, loop variables by their
    /// bounds), or `None` where the form gives none. Sound for the values
    /// of a running kernel: every value of `e` is ≤ the bound with the dims
    /// bound.
    pub(crate) fn upper_bound(&self, e: &Expr) -> Option<Expr> {
        if let Some(guarded) = self.guard_bound(e) {
            return Some(guarded);
        }
        let known = || self.bounds(e).hi().map(Expr::Const);
        let non_negative = |x: &Expr| self.bounds(x).is_non_negative();
        match e {
            Expr::Const(value) => Some(Expr::Const(*value)),
            Expr::Var(Var::Dim(_)) => Some(e.clone()),
            Expr::Var(Var::ThreadId) => known(),
            Expr::Var(Var::BlockId) => {
                let launch = self.launch.as_ref()?;
                Some(Expr::sub(
                    symbolic::levels_size(&launch.grid.levels),
                    Expr::Const(1),
                ))
            }
            Expr::Var(Var::Loop(i)) => {
                let info = self.kernel.loop_info.get(*i as usize)?;
                info.last.clone().or_else(known)
            }
            Expr::Add(a, b) => Some(Expr::add(self.upper_bound(a)?, self.upper_bound(b)?)),
            Expr::Sub(a, b) => {
                let least = self.bounds(b).lo()?;
                Some(Expr::sub(self.upper_bound(a)?, Expr::Const(least)))
            }
            Expr::Mul(a, b) if non_negative(a) && non_negative(b) => {
                Some(Expr::mul(self.upper_bound(a)?, self.upper_bound(b)?))
            }
            Expr::Div(a, d) if non_negative(a) && self.bounds(d).is_positive() => {
                let top = self.upper_bound(a)?;
                match d.as_const() {
                    Some(_) => Some(Expr::div(top, (**d).clone())),
                    // ⌊(d·q − 1) / d⌋ = q − 1.
                    None => symbolic::exact_quotient(&Expr::add(top, Expr::Const(1)), d)
                        .map(|q| Expr::sub(q, Expr::Const(1)))
                        .or_else(known),
                }
            }
            Expr::Rem(a, d) if non_negative(a) && self.bounds(d).is_positive() => match known() {
                Some(hi) => Some(hi),
                None => Some(Expr::sub(self.upper_bound(d)?, Expr::Const(1))),
            },
            Expr::Mul(..)
            | Expr::Div(..)
            | Expr::Rem(..)
            | Expr::And(..)
            | Expr::Xor(..)
            | Expr::Shr(..)
            | Expr::Shl(..) => known(),
        }
    }

    /// Reports a coordinate that can leave `0 .. extent`, when both its
    /// bounds and the extent are known.
    pub(super) fn check_range(&mut self, value: &Expr, extent_expr: &Expr, span: Span) {
        let mut bounds = self.bounds(value);
        // An enclosing `if` may bound the value more tightly — below its
        // least value when the `if` is never taken (`if (k + 2 < 1)` in a
        // loop whose k is 0: an unrolled pipeline's refill past its last
        // k-tile): then no execution reaches the coordinate.
        if let Some(guarded) = self.guard_bound(value).as_ref().and_then(Expr::as_const) {
            if bounds.lo().is_some_and(|lo| guarded < lo) {
                return;
            }
            let hi = bounds.hi().map_or(guarded, |hi| hi.min(guarded));
            bounds = Interval::new(bounds.lo(), Some(hi)).unwrap_or(bounds);
        }
        // And from below, where the value is a constant minus what a guard
        // bounds (no execution reaches it if that leaves no value).
        if let Some(least) = self.guard_lower_bound(value) {
            if bounds.hi().is_some_and(|hi| hi < least) {
                return;
            }
            let lo = bounds.lo().map_or(least, |lo| lo.max(least));
            bounds = Interval::new(Some(lo), bounds.hi()).unwrap_or(bounds);
        }
        let extent = extent_expr.as_const();
        // Constant bounds against a constant extent decide it below; a
        // symbolic largest value or extent is compared by its form.
        let decided_by_constants = bounds.hi().is_some() && extent.is_some();
        if bounds.is_non_negative() && !decided_by_constants {
            self.check_symbolic_range(value, extent_expr, span);
            return;
        }
        let range = match (bounds.lo(), bounds.hi()) {
            (Some(lo), Some(hi)) if lo == hi => format!("is {lo}"),
            (Some(lo), Some(hi)) => format!("takes the values {lo} to {hi}"),
            (Some(lo), None) => format!("can be as small as {lo}"),
            (None, Some(hi)) => format!("can be as large as {hi}"),
            (None, None) => return,
        };
        let label = match value.as_const() {
            Some(_) => format!("this coordinate {range}"),
            None => format!("`{}` {range}", self.expr_text(value)),
        };
        let message = match (bounds.lo(), bounds.hi(), extent) {
            (Some(lo), _, _) if lo < 0 => format!("a coordinate that can be {lo}"),
            (_, Some(hi), Some(extent)) if hi >= extent => {
                format!("a coordinate that can reach {hi} in a mode of extent {extent}")
            }
            _ => return,
        };
        let valid = match extent {
            Some(extent) => format!("the mode's coordinates are 0 to {}", extent - 1),
            None => "coordinates start at 0".to_string(),
        };
        let diagnostic = Diagnostic::error(codes::OUT_OF_RANGE, message, span)
            .with_label(label)
            .with_note(valid)
            .with_help("tile the tensor so that the mode matches the range of the index");
        self.report(diagnostic);
    }

    /// A coordinate whose largest value or whose mode's extent is symbolic:
    /// in range when `extent − 1 − max(value) ≥ 0` follows from the form of
    /// both (for every value of the dims); out of range, an error, when it
    /// is negative for every value of the dims; otherwise a launch
    /// requirement (`extent − max(value) ≥ 1`) that `run` checks with the
    /// dims bound.
    fn check_symbolic_range(&mut self, value: &Expr, extent: &Expr, span: Span) {
        let Some(top) = self.upper_bound(value) else {
            return;
        };
        let slack = Expr::sub(Expr::sub(extent.clone(), Expr::Const(1)), top.clone());
        match symbolic::sign(&slack) {
            Sign::NonNegative => {}
            Sign::Negative(_) => {
                let top_text = self.expr_text(&symbolic::normalize(&top));
                let extent_text = self.expr_text(extent);
                let label = match value.as_const() {
                    Some(_) => format!("this coordinate is {top_text}"),
                    None => format!("`{}` can reach {top_text}", self.expr_text(value)),
                };
                let diagnostic = Diagnostic::error(
                    codes::OUT_OF_RANGE,
                    format!(
                        "a coordinate that can reach {top_text} in a mode of extent {extent_text}"
                    ),
                    span,
                )
                .with_label(label)
                .with_note(format!(
                    "the mode's coordinates are 0 to {extent_text} - 1, whatever the dims"
                ))
                .with_help("tile the tensor so that the mode matches the range of the index");
                self.report(diagnostic);
            }
            Sign::Unknown => self.require(ir::Requirement::Positive {
                value: symbolic::normalize(&Expr::sub(extent.clone(), top)),
                span,
            }),
        }
    }
}
