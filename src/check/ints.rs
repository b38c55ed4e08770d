//! Stage 2, check: integer expressions — from the AST's `IntExpr` to
//! `expr::Expr`, folding constants, resolving identifiers by context, and
//! recording the divisions a launch must find exact; plus the value ranges
//! of expressions, used to catch coordinates that leave their modes.

use crate::diag::{Diagnostic, Span};
use crate::expr::{Expr, Var};
use crate::index::interval::Interval;
use crate::ir::Requirement;
use crate::syntax::ast::{Cond, CondKind, IntExpr, IntExprKind, IntOp, Name};

use super::codes;
use super::env::{Checked, Checker, Ident, Namespace, Poisoned};

/// Where an integer expression stands, which decides what its names may be.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum IntContext {
    /// Dims and strides of a written type: constants and symbolic dims (an
    /// unknown name becomes a new dim); divisions must be exact.
    Type,
    /// Coordinates, loop bounds, conditions: constants, known dims, loop
    /// variables and indices.
    Runtime,
    /// Compile-time values only (tile sizes, reshape layouts, spec
    /// parameters); the text says what needs the constant.
    Constant(&'static str),
}

impl Checker {
    /// The expression `e` in context `cx`, or poison after a diagnostic.
    /// Both operands of a binary operator are checked, so that one bad
    /// operand does not hide an error in the other.
    pub(crate) fn int(&mut self, e: &IntExpr, cx: IntContext) -> Checked<Expr> {
        match &e.kind {
            IntExprKind::Literal(value) => Ok(Expr::Const(*value)),
            IntExprKind::Var(name) => self.ident(name, cx),
            IntExprKind::Index(name) => match cx {
                IntContext::Runtime => match self.lookup(Namespace::Index, name)? {
                    crate::check::env::Binding::Index(Some(expr)) => Ok(expr),
                    crate::check::env::Binding::Index(None)
                    | crate::check::env::Binding::Tensor(_)
                    | crate::check::env::Binding::Group(_)
                    | crate::check::env::Binding::Loop(_)
                    | crate::check::env::Binding::Unrolled(_)
                    | crate::check::env::Binding::Let(_) => Err(Poisoned),
                },
                IntContext::Type => Err(self.fail(
                    Diagnostic::error(
                        codes::WRONG_KIND,
                        format!("the index `@{}` cannot appear in a type", name.text),
                        name.span,
                    )
                    .with_label("an index differs from thread to thread")
                    .with_note("types are the same for every thread of the kernel")
                    .with_help(format!(
                        "keep the type constant and index the tensor with `@{}` instead",
                        name.text
                    )),
                )),
                IntContext::Constant(what) => {
                    Err(self.not_constant(name, "an index, different in each thread", what))
                }
            },
            IntExprKind::Neg(inner) => {
                let value = self.int(inner, cx)?;
                match value.as_const() {
                    Some(c) => c
                        .checked_neg()
                        .map(Expr::Const)
                        .ok_or_else(|| self.overflow(e.span)),
                    None => Ok(Expr::sub(Expr::Const(0), value)),
                }
            }
            IntExprKind::Binary(op, a, b) => {
                let a = self.int(a, cx);
                let b = self.int(b, cx);
                self.arith(*op, a?, b?, e.span, cx)
            }
            // Only the chosen operand is checked: the other may name what
            // the define left out (a stride of the other majorness).
            IntExprKind::Select(cond, a, b) => {
                if self.constant_cond(cond, "the condition of `select`")? {
                    self.int(a, cx)
                } else {
                    self.int(b, cx)
                }
            }
        }
    }

    /// A condition of constants only, decided now (`what` says what needs it).
    pub(crate) fn constant_cond(&mut self, cond: &Cond, what: &'static str) -> Checked<bool> {
        match &cond.kind {
            CondKind::Compare(op, a, b) => {
                let a = self.constant(a, what);
                let b = self.constant(b, what);
                Ok(op.holds(a?, b?))
            }
            CondKind::And(a, b) => {
                let a = self.constant_cond(a, what);
                let b = self.constant_cond(b, what);
                Ok(a? && b?)
            }
            CondKind::Or(a, b) => {
                let a = self.constant_cond(a, what);
                let b = self.constant_cond(b, what);
                Ok(a? || b?)
            }
        }
    }

    /// A compile-time integer (`what` says what needs it).
    pub(crate) fn constant(&mut self, e: &IntExpr, what: &'static str) -> Checked<i64> {
        // Every leaf is a constant here, so the value has been folded.
        self.int(e, IntContext::Constant(what))?
            .as_const()
            .ok_or(Poisoned)
    }

    fn arith(&mut self, op: IntOp, a: Expr, b: Expr, span: Span, cx: IntContext) -> Checked<Expr> {
        let divides = matches!(op, IntOp::Div | IntOp::Rem | IntOp::CeilDiv);
        if op == IntOp::CeilDiv && b.as_const().is_some_and(|b| b < 0) {
            return Err(self.fail(
                Diagnostic::error(
                    codes::BAD_ARITHMETIC,
                    "`ceil_div` by a negative value",
                    span,
                )
                .with_label("the divisor is negative")
                .with_help("divide by a positive value, the size of a tile"),
            ));
        }
        if divides && b.as_const() == Some(0) {
            return Err(self.fail(
                Diagnostic::error(codes::BAD_ARITHMETIC, "division by zero", span)
                    .with_label("the divisor is 0")
                    .with_help("divide by a positive value"),
            ));
        }
        if let (Some(x), Some(y)) = (a.as_const(), b.as_const()) {
            // Division and remainder round toward zero, like `div.s32`.
            let value = match op {
                IntOp::Add => x.checked_add(y),
                IntOp::Sub => x.checked_sub(y),
                IntOp::Mul => x.checked_mul(y),
                IntOp::Div => x.checked_div(y),
                IntOp::Rem => x.checked_rem(y),
                IntOp::CeilDiv => x.checked_div(y).map(|q| if x % y > 0 { q + 1 } else { q }),
            };
            let value = value.ok_or_else(|| self.overflow(span))?;
            if op == IntOp::Div && cx == IntContext::Type && x % y != 0 {
                return Err(self.fail(
                    Diagnostic::error(
                        codes::INEXACT_DIVISION,
                        format!("{x}/{y} is not exact in a type"),
                        span,
                    )
                    .with_label(format!("{x} = {value}·{y} + {}", x % y))
                    .with_note("an extent or stride written as a quotient must divide exactly; the remainder would be lost")
                    .with_help(format!("use a dividend that {y} divides, e.g. {}", value * y)),
                ));
            }
            return Ok(Expr::Const(value));
        }
        // The lowering divides 32-bit unsigned values (`div.u32`,
        // `rem.u32`, `and` by a power of two), which agree with the
        // checker's floor division only for a dividend that is not negative.
        if divides && !self.is_non_negative(&a) {
            return Err(self.fail(
                Diagnostic::error(
                    codes::BAD_ARITHMETIC,
                    "a division of a value that may be negative",
                    span,
                )
                .with_label(format!("`{a}` may be below 0 here"))
                .with_note("index arithmetic is unsigned: `/` and `%` of a negative value do not floor")
                .with_help("add a multiple of the divisor that keeps the dividend at 0 or more: `(k + STAGES - 1) % STAGES`"),
            ));
        }
        Ok(match op {
            IntOp::Add => Expr::add(a, b),
            IntOp::Sub => Expr::sub(a, b),
            IntOp::Mul => Expr::mul(a, b),
            IntOp::Div => {
                if cx == IntContext::Type {
                    self.require(Requirement::Divisible {
                        value: a.clone(),
                        divisor: b.clone(),
                        span,
                    });
                }
                Expr::div(a, b)
            }
            IntOp::Rem => Expr::rem(a, b),
            // ⌈a / b⌉ = ⌊(a + b − 1) / b⌋ for b ≥ 1; never a launch
            // requirement, since a partial last tile is what it counts.
            IntOp::CeilDiv => match b.as_const() {
                Some(divisor) => Expr::div(Expr::add(a, Expr::Const(divisor - 1)), b),
                None => Expr::div(Expr::sub(Expr::add(a, b.clone()), Expr::Const(1)), b),
            },
        })
    }

    fn overflow(&mut self, span: Span) -> Poisoned {
        self.fail(
            Diagnostic::error(
                codes::BAD_ARITHMETIC,
                "integer overflow in a constant expression",
                span,
            )
            .with_label("the value does not fit in 64 bits")
            .with_help("use smaller values"),
        )
    }

    fn not_constant(&mut self, name: &Name, what_it_is: &str, needed: &'static str) -> Poisoned {
        self.fail(
            Diagnostic::error(
                codes::NOT_CONSTANT,
                format!("`{}` is not a compile-time constant", name.text),
                name.span,
            )
            .with_label(what_it_is.to_string())
            .with_note(format!(
                "{needed} must be known when the kernel is compiled"
            ))
            .with_help("use a literal or a `const` defined at the top of the file"),
        )
    }

    /// A plain identifier: a loop variable, a constant, a symbolic dim —
    /// or, in a type, a new symbolic dim.
    fn ident(&mut self, name: &Name, cx: IntContext) -> Checked<Expr> {
        match (self.find_ident(&name.text), cx) {
            (Some(Ident::Const(Some(value))), _) => Ok(Expr::Const(value)),
            (Some(Ident::Const(None)) | Some(Ident::Let(None)), _) => Err(Poisoned),
            (Some(Ident::Let(Some(value))), IntContext::Runtime) => Ok(value),
            (Some(Ident::Let(Some(value))), IntContext::Constant(what)) => match value.as_const() {
                Some(_) => Ok(value),
                None => Err(self.not_constant(name, "a `let` of a run-time value", what)),
            },
            (Some(Ident::Let(Some(_))), IntContext::Type) => Err(self.fail(
                Diagnostic::error(
                    codes::WRONG_KIND,
                    format!("the `let` name `{}` cannot appear in a type", name.text),
                    name.span,
                )
                .with_label("a `let` names a value computed in the body")
                .with_note("types are fixed for the whole kernel: their extents and strides are constants and dims")
                .with_help("write the type with constants and dims, and index the tensor with the `let` instead"),
            )),
            (Some(Ident::Loop(id)), IntContext::Runtime) => Ok(Expr::var(Var::Loop(id))),
            (Some(Ident::Loop(id)), IntContext::Type) => {
                let header = self.kernel.loop_info[id as usize].header;
                Err(self.fail(
                    Diagnostic::error(
                        codes::WRONG_KIND,
                        format!("the loop variable `{}` cannot appear in a type", name.text),
                        name.span,
                    )
                    .with_label("a loop variable changes from one iteration to the next")
                    .with_secondary(header, "the loop")
                    .with_note("types are fixed for the whole kernel")
                    .with_help(format!(
                        "keep the type constant and index the tensor with `{}` instead",
                        name.text
                    )),
                ))
            }
            (Some(Ident::Loop(_)), IntContext::Constant(what)) => {
                Err(self.not_constant(name, "a loop variable", what))
            }
            (Some(Ident::Dim(_)), IntContext::Constant(what)) => {
                Err(self.not_constant(name, "a symbolic dimension, known only at launch", what))
            }
            (Some(Ident::Dim(id)), IntContext::Type | IntContext::Runtime) => {
                Ok(Expr::var(Var::Dim(id)))
            }
            (None, IntContext::Type) if !self.later_consts.contains_key(&name.text) => {
                Ok(Expr::var(Var::Dim(self.dim(name))))
            }
            (None, IntContext::Type | IntContext::Runtime | IntContext::Constant(_)) => {
                Err(self.undefined(Namespace::Ident, name))
            }
        }
    }

    /// What is known of the values `e` takes: thread and block ids range
    /// over the launch, dims are at least 1, loop variables stay within
    /// their bounds; the operators move the bounds by the index
    /// arithmetic's interval domain.
    pub(crate) fn bounds(&self, e: &Expr) -> Interval {
        let between =
            |lo: Option<i64>, hi: Option<i64>| Interval::new(lo, hi).unwrap_or(Interval::full());
        match e {
            Expr::Const(value) => Interval::point(*value),
            Expr::Var(Var::ThreadId) => {
                between(Some(0), self.launch.as_ref().map(|l| l.block_size - 1))
            }
            Expr::Var(Var::BlockId) => between(
                Some(0),
                self.launch
                    .as_ref()
                    .and_then(|l| l.grid_size)
                    .map(|n| n - 1),
            ),
            Expr::Var(Var::Dim(_)) => Interval::at_least(1),
            Expr::Var(Var::Loop(i)) => match self.kernel.loop_info.get(*i as usize) {
                Some(info) => between(info.range.0, info.range.1),
                None => Interval::full(),
            },
            Expr::Add(a, b) => self.bounds(a) + self.bounds(b),
            Expr::Sub(a, b) => self.bounds(a) - self.bounds(b),
            Expr::Mul(a, b) => self.bounds(a) * self.bounds(b),
            Expr::Div(a, b) => self.bounds(a) / self.bounds(b),
            Expr::Rem(a, b) => self.bounds(a) % self.bounds(b),
            Expr::And(a, b) => self.bounds(a) & self.bounds(b),
            Expr::Xor(a, b) => self.bounds(a) ^ self.bounds(b),
            Expr::Shr(a, b) => self.bounds(a) >> self.bounds(b),
            Expr::Shl(a, b) => self.bounds(a) << self.bounds(b),
        }
    }
}

impl Checker {
    /// `require a % d == 0` at kernel scope: a launch requirement on the
    /// dims, `d` a positive constant (docs/language.md, "Partial tiles");
    /// `specialize a % d == 0`: the same condition, for the kernel's
    /// specialized version (docs/language.md, "Specializations").
    pub(crate) fn require_stmt(
        &mut self,
        kind: crate::syntax::ast::RequireKind,
        cond: &crate::syntax::ast::Cond,
    ) {
        let keyword = kind.keyword();
        use crate::syntax::ast::{CompareOp, CondKind};
        let form = match &cond.kind {
            CondKind::Compare(CompareOp::Eq, lhs, rhs) => match (&lhs.kind, &rhs.kind) {
                (IntExprKind::Binary(IntOp::Rem, value, divisor), IntExprKind::Literal(0)) => {
                    Some((value, divisor))
                }
                _ => None,
            },
            CondKind::Compare(..) | CondKind::And(..) | CondKind::Or(..) => None,
        };
        let Some((value, divisor)) = form else {
            self.report(
                Diagnostic::error(
                    codes::BAD_REQUIREMENT,
                    match kind {
                        crate::syntax::ast::RequireKind::Launch => {
                            "a requirement states a divisibility".to_string()
                        }
                        crate::syntax::ast::RequireKind::Specialize => {
                            "a specialization states a divisibility".to_string()
                        }
                    },
                    cond.span,
                )
                .with_label("not of the form `a % d == 0`")
                .with_help(match kind {
                    crate::syntax::ast::RequireKind::Launch => {
                        "write `require K % 8 == 0`: K must be a multiple of 8 at launch"
                    }
                    crate::syntax::ast::RequireKind::Specialize => {
                        "write `specialize K % 8 == 0`: a version for K a multiple of 8"
                    }
                }),
            );
            return;
        };
        let (Ok(value), Ok(divisor_value)) = (
            self.int(value, IntContext::Type),
            self.constant(divisor, "the divisor of a requirement"),
        ) else {
            return;
        };
        if divisor_value < 1 {
            self.report(
                Diagnostic::error(
                    codes::BAD_REQUIREMENT,
                    format!("a `{keyword}` with the divisor {divisor_value}"),
                    divisor.span,
                )
                .with_label("not a positive constant")
                .with_help("state a multiple of a positive constant, e.g. `K % 8 == 0`"),
            );
            return;
        }
        if let Some(constant) = value.as_const() {
            if constant % divisor_value != 0 {
                self.report(
                    Diagnostic::error(
                        codes::BAD_REQUIREMENT,
                        format!(
                            "this `{keyword}` never holds: {constant} % {divisor_value} is {}",
                            constant % divisor_value
                        ),
                        cond.span,
                    )
                    .with_label("a condition on constants")
                    .with_help("state a property of the dims, e.g. `K % 8 == 0`"),
                );
            }
            return;
        }
        let requirement = Requirement::Divisible {
            value,
            divisor: Expr::Const(divisor_value),
            span: cond.span,
        };
        match kind {
            crate::syntax::ast::RequireKind::Launch => self.require(requirement),
            crate::syntax::ast::RequireKind::Specialize => self.specialize(requirement),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::syntax::Line;
    use crate::syntax::parse_line;

    fn int_of(text: &str) -> IntExpr {
        match parse_line(&format!("const X = {text}")) {
            Ok(Line::Const(def)) => def.value,
            other => panic!("not a constant: {other:?}"),
        }
    }

    #[test]
    fn constants_fold_with_truncating_division() {
        let mut checker = Checker::new(BTreeMap::new(), BTreeMap::new());
        assert_eq!(checker.constant(&int_of("7/2 + 7 % 4 * 2"), "x"), Ok(9));
        assert_eq!(checker.constant(&int_of("-7/2"), "x"), Ok(-3));
        assert!(checker.diags.is_empty());
        assert!(checker.constant(&int_of("1/0"), "x").is_err());
        assert!(
            checker
                .constant(&int_of("9223372036854775807 + 1"), "x")
                .is_err()
        );
        assert_eq!(checker.diags.len(), 2);
        assert!(
            checker
                .diags
                .iter()
                .all(|d| d.code == codes::BAD_ARITHMETIC)
        );
    }

    #[test]
    fn types_make_dims_and_record_divisions() {
        let mut checker = Checker::new(BTreeMap::new(), BTreeMap::new());
        let e = checker.int(&int_of("M/128"), IntContext::Type).unwrap();
        assert_eq!(e, Expr::div(Expr::var(Var::Dim(0)), 128.into()));
        assert_eq!(checker.kernel.dims[0].name, "M");
        assert_eq!(checker.kernel.requirements.len(), 1);
        // The same division again adds no second requirement.
        checker.int(&int_of("M/128"), IntContext::Type).unwrap();
        assert_eq!(checker.kernel.requirements.len(), 1);
        assert!(checker.int(&int_of("130/4"), IntContext::Type).is_err());
        assert_eq!(checker.diags[0].code, codes::INEXACT_DIVISION);
        // Outside types an unknown name is an error, not a new dim.
        assert!(checker.int(&int_of("N"), IntContext::Runtime).is_err());
        assert_eq!(checker.diags[1].code, codes::UNDEFINED);
        assert!(checker.constant(&int_of("M"), "a tile size").is_err());
        assert_eq!(checker.diags[2].code, codes::NOT_CONSTANT);
    }

    #[test]
    fn bounds_follow_the_operations() {
        let checker = Checker::new(BTreeMap::new(), BTreeMap::new());
        let tid = Expr::var(Var::ThreadId);
        let digit = Expr::rem(Expr::div(tid.clone(), 8.into()), 4.into());
        assert_eq!(
            checker.bounds(&digit),
            Interval::new(Some(0), Some(3)).unwrap()
        );
        let scaled = Expr::add(Expr::mul(digit, 16.into()), 5.into());
        assert_eq!(checker.bounds(&scaled).hi(), Some(53));
        // Without a launch the thread id is unbounded above.
        assert_eq!(checker.bounds(&tid).hi(), None);
        let below_zero = Expr::sub(1.into(), Expr::var(Var::Dim(0)));
        assert_eq!(checker.bounds(&below_zero).hi(), Some(0));
    }
}
