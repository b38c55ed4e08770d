//! Index arithmetic: strength reduction, the last step
//! before an index expression is emitted — multiplications, divisions and
//! remainders by powers of two become shifts and masks (`shl`, `shr`,
//! `and` in PTX, one cycle each, where `div`/`rem` are long sequences).

use super::analysis::log2_exact;
use crate::expr::Expr;

/// `expr` with, at every node, `x / 2^k → x >> k`, `x % 2^k → x & (2^k − 1)`
/// and `x · 2^k → x << k` (`k ≥ 1`, the power of two a literal on either
/// side of `·`). Every other node is left as it is.
///
/// Rule: equal wherever `expr` evaluates: for `Expr`'s floor division and
/// non-negative remainder these are identities of two's complement
/// arithmetic for every value, negative ones included (an arithmetic
/// `>>` is a floor division); for the values of the IR, all non-negative,
/// a logical shift gives the same.
pub fn strength_reduce(expr: &Expr) -> Expr {
    let pair = |a: &Expr, b: &Expr| (Box::new(strength_reduce(a)), Box::new(strength_reduce(b)));
    let power = |e: &Expr| e.as_const().and_then(log2_exact).filter(|&k| k >= 1);
    let shift = |k: u32| Box::new(Expr::Const(i64::from(k)));
    match expr {
        Expr::Const(_) | Expr::Var(_) => expr.clone(),
        Expr::Div(a, b) => match power(b) {
            Some(k) => Expr::Shr(Box::new(strength_reduce(a)), shift(k)),
            None => {
                let (a, b) = pair(a, b);
                Expr::Div(a, b)
            }
        },
        Expr::Rem(a, b) => match power(b) {
            Some(k) => Expr::And(
                Box::new(strength_reduce(a)),
                Box::new(Expr::Const((1 << k) - 1)),
            ),
            None => {
                let (a, b) = pair(a, b);
                Expr::Rem(a, b)
            }
        },
        Expr::Mul(a, b) => match (power(a), power(b)) {
            (_, Some(k)) => Expr::Shl(Box::new(strength_reduce(a)), shift(k)),
            (Some(k), None) => Expr::Shl(Box::new(strength_reduce(b)), shift(k)),
            (None, None) => {
                let (a, b) = pair(a, b);
                Expr::Mul(a, b)
            }
        },
        Expr::Add(a, b) => {
            let (a, b) = pair(a, b);
            Expr::Add(a, b)
        }
        Expr::Sub(a, b) => {
            let (a, b) = pair(a, b);
            Expr::Sub(a, b)
        }
        Expr::And(a, b) => {
            let (a, b) = pair(a, b);
            Expr::And(a, b)
        }
        Expr::Xor(a, b) => {
            let (a, b) = pair(a, b);
            Expr::Xor(a, b)
        }
        Expr::Shr(a, b) => {
            let (a, b) = pair(a, b);
            Expr::Shr(a, b)
        }
        Expr::Shl(a, b) => {
            let (a, b) = pair(a, b);
            Expr::Shl(a, b)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Var;

    fn tid() -> Expr {
        Expr::var(Var::ThreadId)
    }

    #[test]
    fn powers_of_two_become_shifts_and_masks() {
        let e = Expr::add(
            Expr::mul(Expr::rem(Expr::div(tid(), 8.into()), 4.into()), 16.into()),
            Expr::mul(32.into(), Expr::var(Var::Loop(0))),
        );
        assert_eq!(
            strength_reduce(&e).to_string(),
            "((((tid >> 3) & 3) << 4) + (k0 << 5))"
        );
    }

    #[test]
    fn other_forms_are_left_alone() {
        let e = Expr::add(
            Expr::mul(Expr::rem(Expr::div(tid(), 3.into()), 6.into()), 12.into()),
            Expr::Add(Box::new(tid()), Box::new(Expr::Const(0))),
        );
        assert_eq!(strength_reduce(&e), e);
        let by_one = Expr::Div(Box::new(tid()), Box::new(Expr::Const(1)));
        assert_eq!(strength_reduce(&by_one), by_one);
    }

    #[test]
    fn identities_hold_for_negative_values_too() {
        let x = Expr::var(Var::Dim(0));
        for (e, name) in [
            (
                Expr::Div(Box::new(x.clone()), Box::new(Expr::Const(8))),
                "div",
            ),
            (
                Expr::Rem(Box::new(x.clone()), Box::new(Expr::Const(8))),
                "rem",
            ),
            (
                Expr::Mul(Box::new(x.clone()), Box::new(Expr::Const(8))),
                "mul",
            ),
        ] {
            let reduced = strength_reduce(&e);
            for v in -40..40 {
                let env = move |_: Var| Some(v);
                assert_eq!(e.eval(&env), reduced.eval(&env), "{name} at {v}");
            }
        }
    }
}
