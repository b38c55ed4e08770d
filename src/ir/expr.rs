//! Shared by stages 2–3: integer index expressions over runtime values.
//!
//! The checker builds them (tensor base offsets, index bindings, symbolic
//! dims); the lowering simplifies them and emits PTX arithmetic; the REPL and
//! the CPU reference evaluate them for concrete thread ids.

use std::fmt;

/// A runtime integer the expression language can name.
///
/// Rule: `ThreadId` ranges over `[0, block size)` and `BlockId` over
/// `[0, grid size)` of the kernel's launch; `Dim(i)` is the kernel's i-th
/// symbolic dimension (a `.u32` parameter, ≥ 1); `Loop(i)` is the i-th loop
/// variable of the kernel (numbered in source order), within its loop's bounds.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Var {
    /// `%tid.x`: the linear thread id in the block.
    ThreadId,
    /// `%ctaid.x`: the linear block id in the grid.
    BlockId,
    /// A symbolic dimension, by its position in the kernel's dimension list.
    Dim(u32),
    /// A loop variable, by its position in the kernel's loop list.
    Loop(u32),
}

/// An integer expression.
///
/// Rule: all values are non-negative 64-bit integers in the programs we
/// accept (offsets, coordinates, sizes); `Div` and `Rem` are floor division and
/// remainder with a positive divisor. Build through the smart constructors
/// (`Expr::add` …), which fold constants and drop identities, so that equal
/// simple expressions compare equal.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Expr {
    /// A literal.
    Const(i64),
    /// A runtime value.
    Var(Var),
    /// `a + b`.
    Add(Box<Expr>, Box<Expr>),
    /// `a - b` (only where the checker knows `a ≥ b`).
    Sub(Box<Expr>, Box<Expr>),
    /// `a * b`.
    Mul(Box<Expr>, Box<Expr>),
    /// `a / b`, floor.
    Div(Box<Expr>, Box<Expr>),
    /// `a % b`.
    Rem(Box<Expr>, Box<Expr>),
    /// `a & b`, for swizzles.
    And(Box<Expr>, Box<Expr>),
    /// `a ^ b`, for swizzles.
    Xor(Box<Expr>, Box<Expr>),
    /// `a >> b`, for swizzles.
    Shr(Box<Expr>, Box<Expr>),
    /// `a << b`, for swizzles.
    Shl(Box<Expr>, Box<Expr>),
}

/// Why an expression could not be evaluated.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum EvalError {
    /// The environment gave no value for a variable.
    #[error("no value for {0}")]
    Unbound(Var),
    /// Division or remainder by zero.
    #[error("division by zero in `{0}`")]
    DivisionByZero(String),
    /// An intermediate result left the 64-bit range.
    #[error("integer overflow in `{0}`")]
    Overflow(String),
}

impl Expr {
    /// The literal `value`.
    pub fn constant(value: i64) -> Expr {
        Expr::Const(value)
    }

    /// The variable `var`.
    pub fn var(var: Var) -> Expr {
        Expr::Var(var)
    }

    /// The value, if the expression is a literal.
    pub fn as_const(&self) -> Option<i64> {
        match self {
            Expr::Const(value) => Some(*value),
            Expr::Var(_)
            | Expr::Add(..)
            | Expr::Sub(..)
            | Expr::Mul(..)
            | Expr::Div(..)
            | Expr::Rem(..)
            | Expr::And(..)
            | Expr::Xor(..)
            | Expr::Shr(..)
            | Expr::Shl(..) => None,
        }
    }

    /// The variable, if the expression is one.
    pub fn as_var(&self) -> Option<Var> {
        match self {
            Expr::Var(var) => Some(*var),
            Expr::Const(_)
            | Expr::Add(..)
            | Expr::Sub(..)
            | Expr::Mul(..)
            | Expr::Div(..)
            | Expr::Rem(..)
            | Expr::And(..)
            | Expr::Xor(..)
            | Expr::Shr(..)
            | Expr::Shl(..) => None,
        }
    }

    /// `a + b`, folding constants and zeros.
    #[allow(clippy::should_implement_trait)]
    pub fn add(a: Expr, b: Expr) -> Expr {
        match (a.as_const(), b.as_const()) {
            (Some(x), Some(y)) if x.checked_add(y).is_some() => Expr::Const(x + y),
            (Some(0), _) => b,
            (_, Some(0)) => a,
            _ => Expr::Add(Box::new(a), Box::new(b)),
        }
    }

    /// `a - b`, folding constants and zeros.
    #[allow(clippy::should_implement_trait)]
    pub fn sub(a: Expr, b: Expr) -> Expr {
        match (a.as_const(), b.as_const()) {
            (Some(x), Some(y)) if x.checked_sub(y).is_some() => Expr::Const(x - y),
            (_, Some(0)) => a,
            _ if a == b => Expr::Const(0),
            _ => Expr::Sub(Box::new(a), Box::new(b)),
        }
    }

    /// `a * b`, folding constants, ones and zeros.
    #[allow(clippy::should_implement_trait)]
    pub fn mul(a: Expr, b: Expr) -> Expr {
        match (a.as_const(), b.as_const()) {
            (Some(x), Some(y)) if x.checked_mul(y).is_some() => Expr::Const(x * y),
            (Some(0), _) | (_, Some(0)) => Expr::Const(0),
            (Some(1), _) => b,
            (_, Some(1)) => a,
            _ => Expr::Mul(Box::new(a), Box::new(b)),
        }
    }

    /// `a / b` (floor), folding constants and division by one.
    #[allow(clippy::should_implement_trait)]
    pub fn div(a: Expr, b: Expr) -> Expr {
        match (a.as_const(), b.as_const()) {
            (Some(x), Some(y)) if y > 0 => Expr::Const(x.div_euclid(y)),
            (Some(0), _) => Expr::Const(0),
            (_, Some(1)) => a,
            _ => Expr::Div(Box::new(a), Box::new(b)),
        }
    }

    /// `a % b`, folding constants and remainders by one.
    #[allow(clippy::should_implement_trait)]
    pub fn rem(a: Expr, b: Expr) -> Expr {
        match (a.as_const(), b.as_const()) {
            (Some(x), Some(y)) if y > 0 => Expr::Const(x.rem_euclid(y)),
            (Some(0), _) | (_, Some(1)) => Expr::Const(0),
            _ => Expr::Rem(Box::new(a), Box::new(b)),
        }
    }

    /// `a & b`, folding constants.
    pub fn and(a: Expr, b: Expr) -> Expr {
        match (a.as_const(), b.as_const()) {
            (Some(x), Some(y)) => Expr::Const(x & y),
            (Some(0), _) | (_, Some(0)) => Expr::Const(0),
            _ => Expr::And(Box::new(a), Box::new(b)),
        }
    }

    /// `a ^ b`, folding constants and zeros.
    pub fn xor(a: Expr, b: Expr) -> Expr {
        match (a.as_const(), b.as_const()) {
            (Some(x), Some(y)) => Expr::Const(x ^ y),
            (Some(0), _) => b,
            (_, Some(0)) => a,
            _ => Expr::Xor(Box::new(a), Box::new(b)),
        }
    }

    /// `a >> b`, folding constants and zero shifts.
    #[allow(clippy::should_implement_trait)]
    pub fn shr(a: Expr, b: Expr) -> Expr {
        match (a.as_const(), b.as_const()) {
            (Some(x), Some(y)) if (0..63).contains(&y) => Expr::Const(x >> y),
            (_, Some(0)) => a,
            _ => Expr::Shr(Box::new(a), Box::new(b)),
        }
    }

    /// `a << b`, folding constants and zero shifts.
    #[allow(clippy::should_implement_trait)]
    pub fn shl(a: Expr, b: Expr) -> Expr {
        match (a.as_const(), b.as_const()) {
            (Some(x), Some(y)) if (0..63).contains(&y) && x.checked_shl(y as u32).is_some() => {
                Expr::Const(x << y)
            }
            (_, Some(0)) => a,
            _ => Expr::Shl(Box::new(a), Box::new(b)),
        }
    }

    /// Evaluates with `env` giving each variable's value.
    pub fn eval(&self, env: &dyn Fn(Var) -> Option<i64>) -> Result<i64, EvalError> {
        let binary = |a: &Expr, b: &Expr| -> Result<(i64, i64), EvalError> {
            Ok((a.eval(env)?, b.eval(env)?))
        };
        let overflow = || EvalError::Overflow(self.to_string());
        match self {
            Expr::Const(value) => Ok(*value),
            Expr::Var(var) => env(*var).ok_or(EvalError::Unbound(*var)),
            Expr::Add(a, b) => {
                let (x, y) = binary(a, b)?;
                x.checked_add(y).ok_or_else(overflow)
            }
            Expr::Sub(a, b) => {
                let (x, y) = binary(a, b)?;
                x.checked_sub(y).ok_or_else(overflow)
            }
            Expr::Mul(a, b) => {
                let (x, y) = binary(a, b)?;
                x.checked_mul(y).ok_or_else(overflow)
            }
            Expr::Div(a, b) | Expr::Rem(a, b) => {
                let (x, y) = binary(a, b)?;
                if y == 0 {
                    return Err(EvalError::DivisionByZero(self.to_string()));
                }
                // `i64::MIN / -1` overflows: an error, not a panic.
                if matches!(self, Expr::Div(..)) {
                    x.checked_div_euclid(y)
                } else {
                    x.checked_rem_euclid(y)
                }
                .ok_or_else(overflow)
            }
            Expr::And(a, b) => binary(a, b).map(|(x, y)| x & y),
            Expr::Xor(a, b) => binary(a, b).map(|(x, y)| x ^ y),
            Expr::Shr(a, b) => {
                let (x, y) = binary(a, b)?;
                u32::try_from(y)
                    .ok()
                    .and_then(|y| x.checked_shr(y))
                    .ok_or_else(overflow)
            }
            Expr::Shl(a, b) => {
                let (x, y) = binary(a, b)?;
                u32::try_from(y)
                    .ok()
                    .and_then(|y| x.checked_shl(y))
                    .ok_or_else(overflow)
            }
        }
    }

    /// Number of nodes in the tree (literals and variables count one, each
    /// operator one more than its operands): the size that simplification
    /// never increases.
    pub fn node_count(&self) -> usize {
        match self {
            Expr::Const(_) | Expr::Var(_) => 1,
            Expr::Add(a, b)
            | Expr::Sub(a, b)
            | Expr::Mul(a, b)
            | Expr::Div(a, b)
            | Expr::Rem(a, b)
            | Expr::And(a, b)
            | Expr::Xor(a, b)
            | Expr::Shr(a, b)
            | Expr::Shl(a, b) => 1 + a.node_count() + b.node_count(),
        }
    }

    /// Every variable the expression mentions, sorted, without repeats.
    pub fn vars(&self) -> Vec<Var> {
        let mut out = Vec::new();
        self.collect_vars(&mut out);
        out.sort();
        out.dedup();
        out
    }

    fn collect_vars(&self, out: &mut Vec<Var>) {
        match self {
            Expr::Const(_) => {}
            Expr::Var(var) => out.push(*var),
            Expr::Add(a, b)
            | Expr::Sub(a, b)
            | Expr::Mul(a, b)
            | Expr::Div(a, b)
            | Expr::Rem(a, b)
            | Expr::And(a, b)
            | Expr::Xor(a, b)
            | Expr::Shr(a, b)
            | Expr::Shl(a, b) => {
                a.collect_vars(out);
                b.collect_vars(out);
            }
        }
    }

    /// The same expression with each variable replaced by `f(var)` (or kept
    /// where `f` gives `None`), re-folded through the smart constructors.
    pub fn substitute(&self, f: &dyn Fn(Var) -> Option<Expr>) -> Expr {
        match self {
            Expr::Var(var) => f(*var).unwrap_or(Expr::Var(*var)),
            Expr::Const(_)
            | Expr::Add(..)
            | Expr::Sub(..)
            | Expr::Mul(..)
            | Expr::Div(..)
            | Expr::Rem(..)
            | Expr::And(..)
            | Expr::Xor(..)
            | Expr::Shr(..)
            | Expr::Shl(..) => self.map_operands(&mut |operand| operand.substitute(f)),
        }
    }

    /// The same operation over `f` of each operand, re-folded through the
    /// smart constructors; a literal or a variable is returned as it is.
    pub fn map_operands(&self, f: &mut dyn FnMut(&Expr) -> Expr) -> Expr {
        let mut both = |a: &Expr, b: &Expr| (f(a), f(b));
        match self {
            Expr::Const(_) | Expr::Var(_) => self.clone(),
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
            Expr::Div(a, b) => {
                let (a, b) = both(a, b);
                Expr::div(a, b)
            }
            Expr::Rem(a, b) => {
                let (a, b) = both(a, b);
                Expr::rem(a, b)
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
}

impl From<i64> for Expr {
    fn from(value: i64) -> Expr {
        Expr::Const(value)
    }
}

/// Writes `tid`, `bid`, `d0`, `k1`: the names used when no source names are
/// at hand (the checker's printer substitutes the user's names).
impl fmt::Display for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Var::ThreadId => f.write_str("tid"),
            Var::BlockId => f.write_str("bid"),
            Var::Dim(i) => write!(f, "d{i}"),
            Var::Loop(i) => write!(f, "k{i}"),
        }
    }
}

/// Fully parenthesised infix: `((tid / 8) % 2)`.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (a, op, b) = match self {
            Expr::Const(value) => return write!(f, "{value}"),
            Expr::Var(var) => return write!(f, "{var}"),
            Expr::Add(a, b) => (a, "+", b),
            Expr::Sub(a, b) => (a, "-", b),
            Expr::Mul(a, b) => (a, "*", b),
            Expr::Div(a, b) => (a, "/", b),
            Expr::Rem(a, b) => (a, "%", b),
            Expr::And(a, b) => (a, "&", b),
            Expr::Xor(a, b) => (a, "^", b),
            Expr::Shr(a, b) => (a, ">>", b),
            Expr::Shl(a, b) => (a, "<<", b),
        };
        write!(f, "({a} {op} {b})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tid() -> Expr {
        Expr::var(Var::ThreadId)
    }

    #[test]
    fn smart_constructors_fold() {
        assert_eq!(Expr::add(2.into(), 3.into()), Expr::Const(5));
        assert_eq!(Expr::mul(tid(), 1.into()), tid());
        assert_eq!(Expr::mul(tid(), 0.into()), Expr::Const(0));
        assert_eq!(Expr::add(0.into(), tid()), tid());
        assert_eq!(Expr::div(tid(), 1.into()), tid());
        assert_eq!(Expr::rem(tid(), 1.into()), Expr::Const(0));
        assert_eq!(Expr::sub(tid(), tid()), Expr::Const(0));
    }

    #[test]
    fn evaluates_group_coordinates() {
        // The ldmatrix grouping of seed 000 §2: thr_grp_m = (tid / 16) % 2.
        let grp_m = Expr::rem(Expr::div(tid(), 16.into()), 2.into());
        for t in 0..32 {
            let env = move |v: Var| (v == Var::ThreadId).then_some(t);
            assert_eq!(grp_m.eval(&env), Ok((t / 16) % 2));
        }
        assert_eq!(grp_m.to_string(), "((tid / 16) % 2)");
    }

    #[test]
    fn reports_unbound_and_division_by_zero() {
        let e = Expr::div(tid(), Expr::var(Var::Dim(0)));
        let env = |v: Var| (v == Var::ThreadId).then_some(3);
        assert_eq!(e.eval(&env), Err(EvalError::Unbound(Var::Dim(0))));
        let env = |v: Var| Some(if v == Var::ThreadId { 3 } else { 0 });
        assert!(matches!(e.eval(&env), Err(EvalError::DivisionByZero(_))));
        let e = Expr::Div(Box::new(Expr::Const(i64::MIN)), Box::new(Expr::Const(-1)));
        assert!(matches!(e.eval(&|_| None), Err(EvalError::Overflow(_))));
    }

    #[test]
    fn node_count_counts_leaves_and_operators() {
        assert_eq!(tid().node_count(), 1);
        let e = Expr::rem(Expr::div(tid(), 8.into()), 4.into());
        assert_eq!(e.node_count(), 5);
        assert_eq!(Expr::add(e.clone(), e).node_count(), 11);
    }

    #[test]
    fn substitution_refolds() {
        let e = Expr::add(Expr::mul(Expr::var(Var::Loop(0)), 32.into()), tid());
        let s = e.substitute(&|v| (v == Var::Loop(0)).then_some(Expr::Const(2)));
        assert_eq!(s, Expr::add(64.into(), tid()));
        assert_eq!(e.vars(), vec![Var::ThreadId, Var::Loop(0)]);
    }
}
