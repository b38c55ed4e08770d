//! Index arithmetic: chains of one associative, commutative operation
//! (sums, XORs) taken apart into their terms and constant, and rebuilt —
//! what reassociation in the emitter and the prover's below-grid rewrite
//! both read an expression as.

use crate::expr::Expr;

/// The two associative, commutative operations whose chains are
/// reassociated.
#[derive(Clone, Copy, Debug)]
pub enum Chain {
    Sum,
    Xor,
}

impl Chain {
    pub fn identity(self) -> i64 {
        0
    }

    pub fn split(self, expr: &Expr, terms: &mut Vec<Expr>, constant: &mut i64) {
        let links = match (self, expr) {
            (Chain::Sum, Expr::Add(a, b)) | (Chain::Xor, Expr::Xor(a, b)) => Some((a, b)),
            (Chain::Sum | Chain::Xor, Expr::Const(value)) => {
                *constant = match self {
                    Chain::Sum => constant.wrapping_add(*value),
                    Chain::Xor => *constant ^ value,
                };
                return;
            }
            (Chain::Sum, Expr::Xor(..))
            | (Chain::Xor, Expr::Add(..))
            | (
                Chain::Sum | Chain::Xor,
                Expr::Var(_)
                | Expr::Sub(..)
                | Expr::Mul(..)
                | Expr::Div(..)
                | Expr::Rem(..)
                | Expr::And(..)
                | Expr::Shr(..)
                | Expr::Shl(..),
            ) => None,
        };
        match links {
            Some((a, b)) => {
                self.split(a, terms, constant);
                self.split(b, terms, constant);
            }
            None => terms.push(expr.clone()),
        }
    }

    /// The chain `prefix op term`, built without folding so that equal
    /// prefixes give equal keys.
    pub fn join(self, prefix: Expr, term: Expr) -> Expr {
        match self {
            Chain::Sum => Expr::Add(Box::new(prefix), Box::new(term)),
            Chain::Xor => Expr::Xor(Box::new(prefix), Box::new(term)),
        }
    }
}

/// The terms of a sum and its constant part (`a + 3 + b` → `[a, b]`, 3).
pub fn split_sum(expr: &Expr) -> (Vec<Expr>, i64) {
    let mut terms = Vec::new();
    let mut constant = 0;
    Chain::Sum.split(expr, &mut terms, &mut constant);
    (terms, constant)
}
