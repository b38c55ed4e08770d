//! Stage 3, lowering: addresses of memory operands. The byte address of an
//! element is `buffer base + swizzle(offset) * element bytes`. Its constant
//! part becomes the instruction's immediate displacement; the rest is summed
//! level by level (a thread's part once before the outermost loop it is
//! invariant in, each loop adding its own), as 64-bit partial addresses for
//! global memory and 32-bit shared-window addresses for shared memory.
//!
//! Swizzles go through the same path. A swizzle is linear over XOR, so when
//! the thread part `a`, the loop parts and the constant `c` of an offset have
//! pairwise disjoint bits (proven with the kernel's facts), `sw(a + … + c) =
//! sw(a) ^ … ^ sw(c)`: the swizzle of the thread part is computed once, and
//! when the swizzled parts are disjoint too they are added like any other
//! offset, `sw(c)` ending up in the displacement.

use std::collections::BTreeMap;

use super::emitter::Key;
use super::error::LowerError;
use super::kernel::{KernelLowering, Storage};
use super::views::OperandInfo;
use crate::expr::Expr;
use crate::index::chain::split_sum;
use crate::index::prove::{Prover, constant_factor};
use crate::index::strength::strength_reduce;
use crate::layout::Swizzle;
use crate::ptx::operand::AddressBase;
use crate::ptx::{Address, Operand, Reg, RegClass, Space, Symbol, imm};

/// `sw(x)` as an index expression.
pub fn swizzle_expr(x: Expr, swizzle: Swizzle) -> Expr {
    let moved = if swizzle.shift() >= 0 {
        Expr::shr(x.clone(), Expr::Const(swizzle.shift()))
    } else {
        Expr::shl(x.clone(), Expr::Const(-swizzle.shift()))
    };
    Expr::xor(x, Expr::and(moved, Expr::Const(swizzle.target_mask())))
}

impl KernelLowering<'_, '_> {
    /// The address of element `element` of the memory operand `op`.
    pub fn address(&mut self, op: &OperandInfo, element: usize) -> Result<Address, LowerError> {
        self.element_address(op, element, true)
    }

    /// The shared-window address of element 0 of the shared operand `op`
    /// as if its buffer were not swizzled, in a register: what hardware
    /// that applies the swizzle to addresses itself (`wgmma`'s matrix
    /// descriptors) starts from.
    pub fn unswizzled_shared_address(&mut self, op: &OperandInfo) -> Result<Reg, LowerError> {
        let address = self.element_address(op, 0, false)?;
        let base = match address.base {
            AddressBase::Reg(reg) => reg,
            AddressBase::Symbol(symbol) => self.shared_base(&symbol)?,
        };
        if address.offset == 0 {
            return Ok(base);
        }
        let sum = self.out.reg(RegClass::B32);
        self.out.emit(
            "add.u32",
            vec![sum.into(), base.into(), imm(address.offset)],
        )?;
        Ok(sum)
    }

    /// The address of 4-byte slot `slot` (an index expression) of the block
    /// reductions' scratch, placed and shared like any shared address.
    pub fn scratch_address(&mut self, slot: &Expr) -> Result<Address, LowerError> {
        let scratch = self.scratch.clone().ok_or_else(|| {
            LowerError::unsupported(
                self.out.span(),
                "a block reduction without the kernel's reduction scratch",
                "this is a lowering bug: the shared plan reserves it for every block reduction",
            )
        })?;
        let (terms, constant) = split_sum(&self.out.prover.simplify(slot));
        let symbol = Symbol {
            name: scratch.array.clone(),
            space: Space::Shared,
        };
        let mut address = self.chain_address(
            &format!("shared {}", scratch.array),
            Start::Symbol(symbol),
            terms,
            constant,
            4,
        )?;
        address.offset += i64::from(scratch.offset);
        Ok(address)
    }

    fn element_address(
        &mut self,
        op: &OperandInfo,
        element: usize,
        swizzled: bool,
    ) -> Result<Address, LowerError> {
        let place = op
            .memory_place()
            .map_err(|reason| LowerError::unsupported(op.span, reason, "this is a lowering bug"))?;
        let offset = Expr::add(place.base.clone(), place.offsets[element].clone());
        let offset = self.out.prover.simplify(&offset);
        let swizzle = place.swizzle.filter(|_| swizzled);
        let scale = op.scalar.bytes();
        match self.storage[op.buffer.0 as usize].clone() {
            Storage::Global { param } => {
                let (terms, constant) = split_sum(&offset);
                let base = self.global_base(&param)?;
                let start = Start::Reg(base);
                self.chain_address(&format!("global {param}"), start, terms, constant, scale)
            }
            Storage::Shared {
                array,
                offset: slice,
            } => {
                let (terms, constant) = split_sum(&offset);
                let (terms, constant) = match swizzle {
                    Some(swizzle) => self.swizzled_terms(terms, constant, swizzle)?,
                    None => (terms, constant),
                };
                let symbol = Symbol {
                    name: array.clone(),
                    space: Space::Shared,
                };
                let mut address = self.chain_address(
                    &format!("shared {array}"),
                    Start::Symbol(symbol),
                    terms,
                    constant,
                    scale,
                )?;
                address.offset += i64::from(slice);
                Ok(address)
            }
            Storage::Registers => Err(LowerError::unsupported(
                op.span,
                "a register operand has no address",
                "this is a lowering bug",
            )),
        }
    }

    /// The global buffer behind parameter `param`, converted to the global
    /// window once, before the outermost loop that needs it.
    fn global_base(&mut self, param: &str) -> Result<Reg, LowerError> {
        let key = Key::GlobalBase(param.to_string());
        if let Some(reg) = self.out.recall(&key) {
            return Ok(reg);
        }
        let raw = self.out.reg(RegClass::B64);
        let symbol = Symbol {
            name: param.to_string(),
            space: Space::Param,
        };
        self.out
            .emit_value(0, "ld.param.u64", vec![raw.into(), symbol.at(0).into()])?;
        let base = self.out.reg(RegClass::B64);
        self.out
            .emit_value(0, "cvta.to.global.u64", vec![base.into(), raw.into()])?;
        self.out.remember(0, key, base)?;
        Ok(base)
    }

    /// A shared array's shared-window address in a register, once.
    fn shared_base(&mut self, symbol: &Symbol) -> Result<Reg, LowerError> {
        let key = Key::SharedBase(symbol.name.clone());
        if let Some(reg) = self.out.recall(&key) {
            return Ok(reg);
        }
        let reg = self.out.reg(RegClass::B32);
        self.out.emit_value(
            0,
            "mov.u32/ssym",
            vec![reg.into(), Operand::Symbol(symbol.clone())],
        )?;
        self.out.remember(0, key, reg)?;
        Ok(reg)
    }

    /// `start + Σ terms · scale + constant · scale`, the terms summed level
    /// by level from the outermost, each partial address remembered.
    fn chain_address(
        &mut self,
        name: &str,
        start: Start,
        terms: Vec<Expr>,
        constant: i64,
        scale: u32,
    ) -> Result<Address, LowerError> {
        let mut groups: BTreeMap<usize, Vec<Expr>> = BTreeMap::new();
        for term in terms {
            let term = strength_reduce(&term);
            groups
                .entry(self.out.depth_of(&term)?)
                .or_default()
                .push(term);
        }
        let displacement = constant
            .checked_mul(i64::from(scale))
            .ok_or_else(|| self.too_far(constant))?;
        let mut acc: Option<Reg> = None;
        let mut prefix: Option<Expr> = None;
        for (depth, mut group) in groups {
            group.sort();
            let sum = group
                .into_iter()
                .reduce(|a, b| Expr::Add(Box::new(a), Box::new(b)))
                .expect("groups are never empty");
            let next = match prefix {
                None => sum.clone(),
                Some(prefix) => Expr::Add(Box::new(prefix), Box::new(sum.clone())),
            };
            let key = Key::Address {
                base: name.to_string(),
                scale,
                prefix: next.clone(),
            };
            prefix = Some(next);
            if let Some(reg) = self.out.recall(&key) {
                acc = Some(reg);
                continue;
            }
            let from = match (acc, &start) {
                (Some(reg), _) | (None, &Start::Reg(reg)) => reg,
                (None, Start::Symbol(symbol)) => self.shared_base(symbol)?,
            };
            let (factor, times) = match constant_factor(&sum) {
                Some((x, c)) if c > 0 && c * i64::from(scale) <= i64::from(u32::MAX) => {
                    (x.clone(), c * i64::from(scale))
                }
                Some(_) | None => (sum.clone(), i64::from(scale)),
            };
            let x = self.out.reg_of(&factor)?;
            let (class, name) = match from.class {
                RegClass::B64 => (RegClass::B64, "mad.wide.u32"),
                RegClass::Pred | RegClass::B16 | RegClass::F16 | RegClass::B32 | RegClass::F32 => {
                    (RegClass::B32, "mad.lo.u32")
                }
            };
            let d = self.out.reg(class);
            self.out.emit_value(
                depth,
                name,
                vec![d.into(), x.into(), imm(times), from.into()],
            )?;
            self.out.remember(depth, key, d)?;
            acc = Some(d);
        }
        let base = match (acc, start) {
            (Some(reg), _) | (None, Start::Reg(reg)) => AddressBase::Reg(reg),
            (None, Start::Symbol(symbol)) => AddressBase::Symbol(symbol),
        };
        Ok(Address {
            base,
            offset: displacement,
        })
    }

    fn too_far(&self, constant: i64) -> LowerError {
        LowerError::unsupported(
            self.out.span(),
            format!("the element offset {constant} is too large for an address"),
            "keep tensors below 2^32 elements",
        )
    }

    /// The terms and constant of `swizzle(Σ terms + constant)`, the terms
    /// grouped by scope depth first (see [`swizzle_pieces`]).
    fn swizzled_terms(
        &self,
        terms: Vec<Expr>,
        constant: i64,
        swizzle: Swizzle,
    ) -> Result<(Vec<Expr>, i64), LowerError> {
        let mut by_depth: BTreeMap<usize, Expr> = BTreeMap::new();
        for term in &terms {
            let depth = self.out.depth_of(term)?;
            let sum = match by_depth.remove(&depth) {
                Some(sum) => Expr::add(sum, term.clone()),
                None => term.clone(),
            };
            by_depth.insert(depth, sum);
        }
        let groups = by_depth.into_values().collect();
        Ok(swizzle_pieces(groups, constant, swizzle, &self.out.prover))
    }
}

/// `swizzle(Σ groups + constant)` as pieces to add plus a constant. The
/// swizzle is linear over XOR, so when the groups (outermost scope first)
/// and the constant have pairwise disjoint bits, it distributes: each group
/// is swizzled on its own, the constant at compile time. A constant that
/// overlaps only the outermost group joins it (that group's swizzle is then
/// computed once per constant, still outside the loops). When the swizzled
/// pieces are disjoint too they are summed like any offset (`sw(c)` into the
/// displacement); otherwise they are joined by one XOR chain; when even the
/// groups overlap, the whole sum is swizzled where it is needed.
pub fn swizzle_pieces(
    groups: Vec<Expr>,
    constant: i64,
    swizzle: Swizzle,
    prover: &Prover,
) -> (Vec<Expr>, i64) {
    let disjoint = |pieces: &[Expr]| pairwise_disjoint(pieces, |a, b| prover.disjoint(a, b));
    let with_constant = |groups: &[Expr], constant: i64| {
        let mut pieces = groups.to_vec();
        pieces.push(Expr::Const(constant));
        pieces
    };
    let (groups, constant) = if disjoint(&with_constant(&groups, constant)) {
        (groups, constant)
    } else {
        let mut merged = groups.clone();
        if let Some(first) = merged.first_mut() {
            *first = Expr::add(first.clone(), Expr::Const(constant));
        }
        if merged.is_empty() || !disjoint(&merged) {
            let whole = groups.into_iter().fold(Expr::Const(constant), Expr::add);
            return (vec![swizzle_expr(whole, swizzle)], 0);
        }
        (merged, 0)
    };
    let source = swizzle.source_mask() as u64;
    let swizzled: Vec<Expr> = groups
        .into_iter()
        .map(|group| {
            if prover.possible_ones(&group) & source == 0 {
                group
            } else {
                swizzle_expr(group, swizzle)
            }
        })
        .collect();
    let moved_constant = swizzle.apply(constant);
    if disjoint(&with_constant(&swizzled, moved_constant)) {
        return (swizzled, moved_constant);
    }
    let chain = swizzled
        .into_iter()
        .reduce(Expr::xor)
        .map_or(Expr::Const(moved_constant), |chain| {
            Expr::xor(chain, Expr::Const(moved_constant))
        });
    (vec![chain], 0)
}

/// Where an address chain starts.
enum Start {
    /// A register holding a base address.
    Reg(Reg),
    /// A shared array (its address is loaded only if a register is needed).
    Symbol(Symbol),
}

fn pairwise_disjoint(pieces: &[Expr], disjoint: impl Fn(&Expr, &Expr) -> bool) -> bool {
    pieces
        .iter()
        .enumerate()
        .all(|(i, a)| pieces[i + 1..].iter().all(|b| disjoint(a, b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Var;

    #[test]
    fn swizzles_distribute_over_disjoint_parts() {
        let swizzle = Swizzle::new(3, 3, 3).unwrap();
        let tid = Expr::var(Var::ThreadId);
        // chunk (tid % 8) * 8, row (tid / 8) * 64, pass p * 1024.
        let thread = Expr::add(
            Expr::mul(Expr::rem(tid.clone(), 8.into()), 8.into()),
            Expr::mul(Expr::div(tid, 8.into()), 64.into()),
        );
        let pass = Expr::mul(Expr::var(Var::Loop(0)), 1024.into());
        let mut shapes = std::collections::BTreeSet::new();
        for threads in [64, 128] {
            let prover = Prover::with_threads(threads).with_loop(0, 0, Some(4), 1);
            for constant in [0, 8, 16, 4096, 64 * 3] {
                let pieces = swizzle_pieces(
                    vec![thread.clone(), pass.clone()],
                    constant,
                    swizzle,
                    &prover,
                );
                shapes.insert((pieces.0.len(), pieces.1 != 0));
                for t in 0..threads {
                    for p in 0..4 {
                        let env = move |v: Var| match v {
                            Var::ThreadId => Some(t),
                            Var::Loop(0) => Some(p),
                            Var::BlockId | Var::Dim(_) | Var::Loop(_) => None,
                        };
                        let offset = thread.eval(&env).unwrap() + p * 1024 + constant;
                        let got =
                            pieces.0.iter().map(|e| e.eval(&env).unwrap()).sum::<i64>() + pieces.1;
                        assert_eq!(got, swizzle.apply(offset), "t={t} p={p} c={constant}");
                    }
                }
            }
        }
        // Every form was met: apart with a constant, apart without, whole.
        assert!(
            shapes.contains(&(2, true)) && shapes.contains(&(2, false)),
            "{shapes:?}"
        );
        assert!(shapes.contains(&(1, false)), "{shapes:?}");
        let prover = Prover::with_threads(128).with_loop(0, 0, Some(4), 1);
        let pieces = swizzle_pieces(vec![thread.clone(), pass.clone()], 0, swizzle, &prover);
        assert_eq!(pieces.0[1], pass, "the loop's part is not swizzled");
        // 64 threads: the constant 8 joins the thread's part (at most 512),
        // which stays apart from the loop's.
        let small = Prover::with_threads(64).with_loop(0, 0, Some(4), 1);
        let pieces = swizzle_pieces(vec![thread.clone(), pass.clone()], 8, swizzle, &small);
        assert_eq!((pieces.0.len(), pieces.1), (2, 0));
        // 128 threads: thread + 8 reaches 1024, the loop's bit: one swizzle.
        let pieces = swizzle_pieces(vec![thread, pass], 8, swizzle, &prover);
        assert_eq!((pieces.0.len(), pieces.1), (1, 0));
    }

    #[test]
    fn the_swizzle_expression_agrees_with_the_layout_swizzle() {
        for (bits, base, shift) in [(3, 3, 3), (2, 4, 3), (3, 4, -4), (1, 0, 1)] {
            let swizzle = Swizzle::new(bits, base, shift).unwrap();
            let e = swizzle_expr(Expr::var(Var::ThreadId), swizzle);
            for x in 0..2048 {
                let env = |v: Var| (v == Var::ThreadId).then_some(x);
                assert_eq!(e.eval(&env), Ok(swizzle.apply(x)), "{swizzle:?} at {x}");
            }
        }
    }
}
