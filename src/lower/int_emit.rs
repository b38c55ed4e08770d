//! Stage 3, lowering: index expressions → 32-bit integer registers.
//!
//! Every expression is first prepared (simplified with the kernel's facts,
//! then strength-reduced), then emitted bottom-up. Each subexpression is
//! placed on its own at its home (the preheader of the outermost loop it is
//! invariant in, else where it is first needed; see `emitter.rs`) and
//! reused wherever that definition reaches (common-subexpression
//! elimination). Sums and XOR chains are reassociated outermost-first, so
//! that the part of an address that depends only on the thread is summed
//! once before the loops and each loop adds only its own terms.

use super::emitter::{Emitter, Key};
use super::error::LowerError;
use crate::expr::{Expr, Var};
use crate::index::chain::Chain;
use crate::index::prove::constant_factor;
use crate::ptx::{Operand, Reg, RegClass, imm};

impl Emitter<'_> {
    /// The value of `expr` as an operand: an immediate when constant, else a
    /// register.
    pub fn int(&mut self, expr: &Expr) -> Result<Operand, LowerError> {
        let prepared = self.prover.prepare(expr);
        self.operand(&prepared)
    }

    /// The value of `expr` in a register.
    pub fn int_reg(&mut self, expr: &Expr) -> Result<Reg, LowerError> {
        let prepared = self.prover.prepare(expr);
        self.reg_of(&prepared)
    }

    /// The level of `expr`: the depth of the scope of the deepest run-time
    /// loop whose variable it mentions (0, the kernel, when none).
    pub fn depth_of(&self, expr: &Expr) -> Result<usize, LowerError> {
        let mut depth = 0;
        for var in expr.vars() {
            match var {
                Var::ThreadId | Var::BlockId | Var::Dim(_) => {}
                Var::Loop(i) => match self.loop_var(i) {
                    Some((_, loop_depth)) => depth = depth.max(loop_depth),
                    None => {
                        return Err(LowerError::unsupported(
                            self.span(),
                            format!("loop variable number {i} is used outside its loop"),
                            "this is a lowering bug: the checker scopes loop variables",
                        ));
                    }
                },
            }
        }
        Ok(depth)
    }

    /// A prepared expression as an operand.
    pub fn operand(&mut self, expr: &Expr) -> Result<Operand, LowerError> {
        match expr {
            Expr::Const(value) => Ok(imm(self.fits_u32(*value)?)),
            Expr::Var(_)
            | Expr::Add(..)
            | Expr::Sub(..)
            | Expr::Mul(..)
            | Expr::Div(..)
            | Expr::Rem(..)
            | Expr::And(..)
            | Expr::Xor(..)
            | Expr::Shr(..)
            | Expr::Shl(..) => self.reg_of(expr).map(Operand::Reg),
        }
    }

    fn fits_u32(&self, value: i64) -> Result<i64, LowerError> {
        if (0..=i64::from(u32::MAX)).contains(&value) {
            Ok(value)
        } else {
            Err(LowerError::unsupported(
                self.span(),
                format!("the index value {value} does not fit in 32 bits"),
                "index arithmetic is 32-bit: keep every tensor below 2^32 elements",
            ))
        }
    }

    /// A prepared expression in a register: remembered, or computed at its
    /// home.
    pub fn reg_of(&mut self, expr: &Expr) -> Result<Reg, LowerError> {
        if let Expr::Var(Var::Loop(i)) = expr {
            return match self.loop_var(*i) {
                Some((reg, _)) => Ok(reg),
                None => Err(LowerError::unsupported(
                    self.span(),
                    format!("loop variable number {i} has no register here"),
                    "this is a lowering bug: unrolled loops substitute their variable",
                )),
            };
        }
        let depth = self.depth_of(expr)?;
        let key = Key::Int(expr.clone());
        if let Some(reg) = self.recall(&key) {
            return Ok(reg);
        }
        let reg = self.compute(expr, depth)?;
        self.remember(depth, key, reg)?;
        Ok(reg)
    }

    fn compute(&mut self, expr: &Expr, depth: usize) -> Result<Reg, LowerError> {
        // Operands first, so that registers are numbered in program order.
        let (name, operands) = match expr {
            Expr::Const(value) => ("mov.u32", vec![imm(self.fits_u32(*value)?)]),
            Expr::Var(Var::ThreadId) => ("mov.u32/tid.x", Vec::new()),
            Expr::Var(Var::BlockId) => ("mov.u32/ctaid.x", Vec::new()),
            Expr::Var(Var::Dim(i)) => {
                let symbol = self.dim_symbol(*i)?;
                ("ld.param.u32", vec![symbol.at(0).into()])
            }
            Expr::Var(Var::Loop(_)) => return self.reg_of(expr),
            Expr::Add(..) => return self.chain(expr, Chain::Sum),
            Expr::Xor(..) => return self.chain(expr, Chain::Xor),
            Expr::Sub(a, b) => ("sub.u32", self.binary(a, b)?),
            Expr::Mul(a, b) => match (a.as_const(), b.as_const()) {
                (Some(_), None) => ("mul.lo.u32", self.binary(b, a)?),
                (None, Some(_)) | (None, None) | (Some(_), Some(_)) => {
                    ("mul.lo.u32", self.binary(a, b)?)
                }
            },
            Expr::Div(a, b) => ("div.u32", self.binary(a, b)?),
            Expr::Rem(a, b) => ("rem.u32", self.binary(a, b)?),
            Expr::And(a, b) => match (a.as_const(), b.as_const()) {
                (Some(_), None) => ("and.b32", self.binary(b, a)?),
                (None, Some(_)) | (None, None) | (Some(_), Some(_)) => {
                    ("and.b32", self.binary(a, b)?)
                }
            },
            Expr::Shr(a, b) => ("shr.u32", self.binary(a, b)?),
            Expr::Shl(a, b) => ("shl.b32", self.binary(a, b)?),
        };
        let d = self.reg(RegClass::B32);
        let mut all = vec![d.into()];
        all.extend(operands);
        self.emit_value(depth, name, all)?;
        Ok(d)
    }

    fn binary(&mut self, a: &Expr, b: &Expr) -> Result<Vec<Operand>, LowerError> {
        let a = self.reg_of(a)?;
        let b = self.operand(b)?;
        Ok(vec![a.into(), b])
    }

    /// Emits a sum or XOR chain term by term, outermost scope first, so that
    /// every prefix of the chain is a value of the outermost scope possible
    /// and shared by every chain with the same prefix.
    fn chain(&mut self, expr: &Expr, chain: Chain) -> Result<Reg, LowerError> {
        let mut terms = Vec::new();
        let mut constant = chain.identity();
        chain.split(expr, &mut terms, &mut constant);
        let ordered = self.order_terms(terms, constant, chain)?;
        let mut acc: Option<(Expr, Operand)> = None;
        for term in ordered {
            acc = Some(match acc {
                None => {
                    let value = self.operand(&term)?;
                    (term, value)
                }
                Some((prefix, value)) => self.extend(prefix, value, term, chain)?,
            });
        }
        let whole_depth = self.depth_of(expr)?;
        match acc {
            Some((_, Operand::Reg(reg))) => {
                self.remember(whole_depth, Key::Int(expr.clone()), reg)?;
                Ok(reg)
            }
            Some(_) | None => Err(LowerError::unsupported(
                self.span(),
                format!("`{expr}` folded to a constant only at emission"),
                "this is a lowering bug: constants are folded before emission",
            )),
        }
    }

    /// Terms sorted by scope depth (then by the expression, so the order is
    /// canonical); the constant goes after the kernel-scope terms.
    fn order_terms(
        &self,
        terms: Vec<Expr>,
        constant: i64,
        chain: Chain,
    ) -> Result<Vec<Expr>, LowerError> {
        let mut keyed = Vec::with_capacity(terms.len() + 1);
        for term in terms {
            keyed.push((self.depth_of(&term)?, term));
        }
        keyed.sort();
        let mut ordered: Vec<Expr> = Vec::with_capacity(keyed.len() + 1);
        let outer = keyed.iter().take_while(|(depth, _)| *depth == 0).count();
        for (position, (_, term)) in keyed.into_iter().enumerate() {
            if position == outer && constant != chain.identity() {
                ordered.push(Expr::Const(constant));
            }
            ordered.push(term);
        }
        if ordered.len() == outer && constant != chain.identity() {
            ordered.push(Expr::Const(constant));
        }
        Ok(ordered)
    }

    fn extend(
        &mut self,
        prefix: Expr,
        value: Operand,
        term: Expr,
        chain: Chain,
    ) -> Result<(Expr, Operand), LowerError> {
        let next = chain.join(prefix, term.clone());
        let depth = self.depth_of(&next)?;
        let key = Key::Int(next.clone());
        if let Some(reg) = self.recall(&key) {
            return Ok((next, reg.into()));
        }
        let mut operands = match (chain, scaled(&term)) {
            (Chain::Sum, Some((factor, scale))) => {
                vec![self.reg_of(factor)?.into(), imm(scale), value]
            }
            (Chain::Sum, None) | (Chain::Xor, Some(_)) | (Chain::Xor, None) => {
                match value {
                    Operand::Reg(_) => vec![value, self.operand(&term)?],
                    // An immediate first operand is not PTX: swap (both
                    // operations commute).
                    Operand::Imm(_)
                    | Operand::Vector(_)
                    | Operand::F32Bits(_)
                    | Operand::Address(_)
                    | Operand::Symbol(_)
                    | Operand::Label(_) => vec![self.reg_of(&term)?.into(), value],
                }
            }
        };
        let name = match (chain, operands.len()) {
            (Chain::Sum, 3) => "mad.lo.u32",
            (Chain::Sum, _) => "add.u32",
            (Chain::Xor, _) => "xor.b32",
        };
        let d = self.reg(RegClass::B32);
        operands.insert(0, d.into());
        self.emit_value(depth, name, operands)?;
        self.remember(depth, key, d)?;
        Ok((next, d.into()))
    }
}

/// `x * c`, `c * x` or `x << k` as `(x, factor)`, for `mad`: a constant
/// factor that fits the instruction's 32-bit immediate.
fn scaled(term: &Expr) -> Option<(&Expr, i64)> {
    constant_factor(term).filter(|&(_, c)| c > 0 && c <= i64::from(u32::MAX))
}
