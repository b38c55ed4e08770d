//! Stage 3, lowering (instruction selection): `Move<masked>` of an operand
//! that may reach past a partial tile (docs/lowering.md, "Masked moves").
//!
//! The elements that exist are a prefix of the operand (each bound either
//! steps by one coordinate per element or is the same for all of them), so
//! one count, `valid`, says which: the first `valid` elements exist. A
//! `cp.async` copies `valid · size` bytes and zero-fills the rest; a load
//! or store moves the whole vector when `valid` is the whole operand and
//! element by element, each under its own predicate, otherwise. Where the
//! global address is not proven aligned for the vector, the lowering tests
//! the alignment at run time and takes the element-by-element path when it
//! fails: a partial tile of a matrix whose rows are not 16-byte aligned
//! (K = 1001 in fp16) is then still correct, only slower. A `cp.async`'s
//! two paths are both emitted under predicates, without a branch, so that
//! the loads of consecutive copies overlap.

use super::super::error::LowerError;
use super::super::kernel::KernelLowering;
use super::super::registers::half_class;
use super::super::views::{ElementBound, OperandInfo};
use super::memory::{MemoryPattern, check_access, check_size};
use super::values::{access_name, registers_operand};
use super::{Matched, Plan, Progress, Reject, Request};
use crate::ir::Memory;
use crate::ptx::operand::AddressBase;
use crate::ptx::{Guard, Operand, Reg, RegClass, imm};

/// Whether `request` is a `Move<masked>` with an operand that may reach
/// past a partial tile: the moves this module lowers.
pub fn applies(request: &Request) -> bool {
    request.kind.masked()
        && request
            .outputs
            .iter()
            .chain(&request.inputs)
            .any(|operand| !operand.bounds.is_empty())
}

/// How one bound decides which elements exist.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Step {
    /// Every element has the coordinate of element 0.
    Same,
    /// Element `e` is `e` coordinates past element 0.
    Unit,
}

fn step(bound: &ElementBound) -> Option<Step> {
    let differences = &bound.from_first;
    if differences.iter().all(|d| *d == Some(0)) {
        Some(Step::Same)
    } else if differences
        .iter()
        .enumerate()
        .all(|(e, d)| *d == Some(e as i64))
    {
        Some(Step::Unit)
    } else {
        None
    }
}

/// Matches a masked move: a load from or a store to global memory, or a
/// `cp.async`, whose bounded side is contiguous with bounds of prefix form.
/// Its alignment need not be proven (it is tested at run time).
pub fn check(
    pattern: MemoryPattern,
    bytes: u32,
    out: &OperandInfo,
    input: &OperandInfo,
) -> Matched {
    let bounded_input = !input.bounds.is_empty();
    let bounded_output = !out.bounds.is_empty();
    let fits = match pattern {
        MemoryPattern::Load {
            from: Memory::Global,
            ..
        }
        | MemoryPattern::Async { .. } => bounded_input && !bounded_output,
        MemoryPattern::Store {
            to: Memory::Global, ..
        } => bounded_output && !bounded_input,
        MemoryPattern::Load { .. }
        | MemoryPattern::Store { .. }
        | MemoryPattern::Staged { .. }
        | MemoryPattern::RegisterMove => false,
    };
    if !fits {
        return Err(Reject::new(
            Progress::Operands,
            "is not a masked move: those load a partial tile of global memory into registers, \
             store registers to one, or copy one into shared memory with `cp.async`",
        ));
    }
    if input.broadcast.is_some() {
        return Err(Reject::new(
            Progress::Layout,
            "masks contiguous elements; the input is a broadcast view",
        ));
    }
    check_size(bytes, input)?;
    let (bounded, other) = if bounded_input {
        (input, out)
    } else {
        (out, input)
    };
    let place = bounded
        .memory_place()
        .map_err(|reason| Reject::new(Progress::Layout, reason))?;
    if !place.contiguous {
        return Err(Reject::new(
            Progress::Layout,
            format!(
                "the {} {}",
                bounded.role,
                place.why_not_contiguous(bounded.count)
            ),
        ));
    }
    prefix_bounds(bounded)?;
    if other.memory == Memory::Registers {
        if other.scalar.bytes() == 2 && bytes >= 4 {
            other
                .packed_pairs()
                .map_err(|reason| Reject::new(Progress::Layout, reason))?;
        }
    } else {
        check_access(bytes, other)?;
    }
    Ok(Plan::Memory(super::memory::MemoryPlan::new(pattern)))
}

/// The elements of `bounded` that exist are a prefix of it: along each
/// bound they step by one coordinate per element or all share one.
pub(super) fn prefix_bounds(bounded: &OperandInfo) -> Result<(), Reject> {
    let Some(bound) = bounded.bounds.iter().find(|bound| step(bound).is_none()) else {
        return Ok(());
    };
    Err(Reject::new(
        Progress::Layout,
        format!(
            "masks a prefix of the {}'s elements; along a partial mode its coordinates are {}, \
             neither all equal nor consecutive",
            bounded.role,
            bound
                .coordinates
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
    .with_help("give each masked move elements that run along the partial mode, or one element"))
}

impl KernelLowering<'_, '_> {
    /// Emits a masked move that `masked::check` accepted.
    pub fn masked_move(
        &mut self,
        request: &Request,
        pattern: MemoryPattern,
    ) -> Result<(), LowerError> {
        let (out, input) = (&request.outputs[0], &request.inputs[0]);
        let bounded = if input.bounds.is_empty() { out } else { input };
        let valid = self.valid_count(bounded)?;
        let bytes = bounded.bytes();
        let proven = bounded
            .memory_place()
            .map(|place| place.align >= bytes)
            .unwrap_or(false);
        match pattern {
            MemoryPattern::Async { bytes } => {
                // A copy that reads part of its bytes would still be checked
                // in full by a memory checker, past the tensor's end: only
                // whole or empty copies use `cp.async`.
                if proven && self.whole_or_empty(bounded) {
                    return self.zero_filling_copy(None, out, input, bytes, valid);
                }
                let count = imm(bounded.count as i64);
                let whole = self.out.reg(RegClass::Pred);
                self.out
                    .emit("setp.eq.u32", vec![whole.into(), valid.into(), count])?;
                let empty = self.out.reg(RegClass::Pred);
                self.out
                    .emit("setp.eq.u32", vec![empty.into(), valid.into(), imm(0)])?;
                let fast = self.out.reg(RegClass::Pred);
                self.out
                    .emit("or.pred", vec![fast.into(), whole.into(), empty.into()])?;
                if !proven {
                    let aligned = self.aligned(input, bytes)?;
                    self.out
                        .emit("and.pred", vec![fast.into(), fast.into(), aligned.into()])?;
                }
                // Both paths under predicates, no branch: the loads of
                // every chunk of a k-tile can then be in flight together
                // (with a branch per chunk, each chunk's loads waited for
                // the one before).
                self.zero_filling_copy(Some(fast), out, input, bytes, valid)?;
                self.copy_elements_unless(fast, out, input, valid)
            }
            MemoryPattern::Load { .. } | MemoryPattern::Store { .. } if bounded.count == 1 => {
                self.move_elements(pattern, out, input, valid)
            }
            MemoryPattern::Store { .. } => {
                self.predicated_store(out, input, valid, proven, &|count, class| {
                    access_name("st", Memory::Global, count, class)
                })
            }
            MemoryPattern::Load { .. } => {
                let whole = self.out.reg(RegClass::Pred);
                self.out.emit(
                    "setp.eq.u32",
                    vec![whole.into(), valid.into(), imm(bounded.count as i64)],
                )?;
                let fast = if proven {
                    whole
                } else {
                    let aligned = self.aligned(bounded, bytes)?;
                    let both = self.out.reg(RegClass::Pred);
                    self.out
                        .emit("and.pred", vec![both.into(), whole.into(), aligned.into()])?;
                    both
                };
                let plan = super::memory::MemoryPlan::new(pattern);
                self.either(
                    "masked",
                    fast,
                    false,
                    |this| super::memory::emit_unmasked(this, request, &plan),
                    |this| this.move_elements(pattern, out, input, valid),
                )
            }
            MemoryPattern::Staged { .. } | MemoryPattern::RegisterMove => {
                Err(LowerError::unsupported(
                    request.span,
                    "a masked move other than a load, a store or a cp.async",
                    "this is a lowering bug: `masked::check` refuses it",
                ))
            }
        }
    }

    /// Whether every element of `op` exists or none does, by the kernel's
    /// facts: each bound that steps by one starts at a multiple of the
    /// operand's length and ends at one (`K % 8 == 0` for chunks of 8).
    fn whole_or_empty(&self, op: &OperandInfo) -> bool {
        let count = op.count as i64;
        op.bounds.iter().all(|bound| match step(bound) {
            Some(Step::Same) => true,
            Some(Step::Unit) => {
                let prover = &self.out.prover;
                prover.divisor(&bound.coordinates[0]) % count == 0
                    && prover.divisor(&bound.extent) % count == 0
            }
            None => false,
        })
    }

    /// A masked store of several elements with predicates and no branch
    /// (an epilogue stores many): the vector store under `valid == n` (and
    /// alignment, where not proven), each element's store under
    /// `e < valid` and not that. `name` gives the store instruction of
    /// `count` registers of a class (`st.global…`, or `red.global.add…`
    /// for an accumulating store).
    pub(super) fn predicated_store(
        &mut self,
        out: &OperandInfo,
        input: &OperandInfo,
        valid: Reg,
        proven: bool,
        name: &dyn Fn(usize, RegClass) -> String,
    ) -> Result<(), LowerError> {
        let count = out.count;
        let fast = self.out.reg(RegClass::Pred);
        self.out.emit(
            "setp.eq.u32",
            vec![fast.into(), valid.into(), imm(count as i64)],
        )?;
        if !proven {
            let aligned = self.aligned(out, out.bytes())?;
            self.out
                .emit("and.pred", vec![fast.into(), fast.into(), aligned.into()])?;
        }
        let words = self.read_words(input)?;
        let address = self.address(out, 0)?;
        let vector = registers_operand(&words);
        self.out.emit_guarded(
            Guard::when(fast),
            &name(words.len(), words[0].class),
            vec![address.into(), vector],
        )?;
        let values = if out.scalar.bytes() == 2 {
            self.read_halves(input)?
        } else {
            words
        };
        let slow = self.out.reg(RegClass::Pred);
        self.out.emit("not.pred", vec![slow.into(), fast.into()])?;
        let exists = self.element_predicates(count, valid)?;
        for (e, (value, exists)) in values.iter().zip(exists).enumerate() {
            self.out
                .emit("and.pred", vec![exists.into(), exists.into(), slow.into()])?;
            let destination = self.address(out, e)?;
            self.out.emit_guarded(
                Guard::when(exists),
                &name(1, value.class),
                vec![destination.into(), (*value).into()],
            )?;
        }
        Ok(())
    }

    /// How many leading elements of `op` exist: the operand's count cut at
    /// each bound's end (`extent − coordinate of element 0`, clamped to
    /// `0 ..= count`), or 0 where a bound with one coordinate for all of
    /// them is passed.
    pub(super) fn valid_count(&mut self, op: &OperandInfo) -> Result<Reg, LowerError> {
        let count = op.count as i64;
        let mut valid: Option<Reg> = None;
        for bound in &op.bounds {
            let start = self.out.int_reg(&bound.coordinates[0])?;
            let extent = self.out.int_reg(&bound.extent)?;
            let limit: Operand = match valid {
                Some(reg) => reg.into(),
                None => imm(count),
            };
            let next = self.out.reg(RegClass::B32);
            match step(bound) {
                Some(Step::Unit) => {
                    self.out
                        .emit("sub.s32", vec![next.into(), extent.into(), start.into()])?;
                    self.out
                        .emit("max.s32", vec![next.into(), next.into(), imm(0)])?;
                    self.out
                        .emit("min.s32", vec![next.into(), next.into(), limit])?;
                }
                Some(Step::Same) => {
                    let inside = self.out.reg(RegClass::Pred);
                    self.out.emit(
                        "setp.lt.u32",
                        vec![inside.into(), start.into(), extent.into()],
                    )?;
                    self.out
                        .emit("selp.b32", vec![next.into(), limit, imm(0), inside.into()])?;
                }
                None => {
                    return Err(LowerError::unsupported(
                        op.span,
                        "a masked operand whose elements are not a prefix",
                        "this is a lowering bug: `masked::check` refuses it",
                    ));
                }
            }
            valid = Some(next);
        }
        match valid {
            Some(valid) => Ok(valid),
            None => {
                let all = self.out.reg(RegClass::B32);
                self.out.emit("mov.u32", vec![all.into(), imm(count)])?;
                Ok(all)
            }
        }
    }

    /// Whether element 0 of the global operand `op` is `bytes`-aligned, as
    /// a predicate computed from its address.
    fn aligned(&mut self, op: &OperandInfo, bytes: u32) -> Result<Reg, LowerError> {
        let (base, offset) = self.element_zero_base(op)?;
        let low = self.out.reg(RegClass::B32);
        self.out
            .emit("cvt.u32.u64", vec![low.into(), base.into()])?;
        if offset != 0 {
            self.out
                .emit("add.u32", vec![low.into(), low.into(), imm(offset)])?;
        }
        self.out.emit(
            "and.b32",
            vec![low.into(), low.into(), imm(i64::from(bytes) - 1)],
        )?;
        let aligned = self.out.reg(RegClass::Pred);
        self.out
            .emit("setp.eq.u32", vec![aligned.into(), low.into(), imm(0)])?;
        Ok(aligned)
    }

    /// The 64-bit address of element 0 of the global operand `op`, in a
    /// register.
    pub(super) fn global_address_reg(&mut self, op: &OperandInfo) -> Result<Reg, LowerError> {
        let (base, offset) = self.element_zero_base(op)?;
        if offset == 0 {
            return Ok(base);
        }
        let sum = self.out.reg(RegClass::B64);
        self.out
            .emit("add.u64", vec![sum.into(), base.into(), imm(offset)])?;
        Ok(sum)
    }

    /// Element 0 of the global operand `op` as a base register and a byte
    /// displacement.
    fn element_zero_base(&mut self, op: &OperandInfo) -> Result<(Reg, i64), LowerError> {
        let address = self.address(op, 0)?;
        match address.base {
            AddressBase::Reg(base) => Ok((base, address.offset)),
            AddressBase::Symbol(_) => Err(LowerError::unsupported(
                op.span,
                "a global address without a base register",
                "this is a lowering bug",
            )),
        }
    }

    /// `cp.async` of `bytes` whose source size is `valid` elements,
    /// executed only where `when` holds, if given.
    fn zero_filling_copy(
        &mut self,
        when: Option<Reg>,
        out: &OperandInfo,
        input: &OperandInfo,
        bytes: u32,
        valid: Reg,
    ) -> Result<(), LowerError> {
        let size = self.out.reg(RegClass::B32);
        let element = i64::from(input.scalar.bytes());
        self.out
            .emit("mul.lo.u32", vec![size.into(), valid.into(), imm(element)])?;
        let destination = self.address(out, 0)?;
        let source = self.address(input, 0)?;
        let name = if bytes == 16 {
            "cp.async.cg.shared.global/16/zfill".to_string()
        } else {
            format!("cp.async.ca.shared.global/{bytes}/zfill")
        };
        let operands = vec![destination.into(), source.into(), size.into()];
        match when {
            Some(pred) => self.out.emit_guarded(Guard::when(pred), &name, operands),
            None => self.out.emit(&name, operands),
        }
    }

    /// A predicate per element: element `e` exists (`e < valid`).
    pub(super) fn element_predicates(
        &mut self,
        count: usize,
        valid: Reg,
    ) -> Result<Vec<Reg>, LowerError> {
        (0..count)
            .map(|e| {
                let exists = self.out.reg(RegClass::Pred);
                self.out.emit(
                    "setp.gt.u32",
                    vec![exists.into(), valid.into(), imm(e as i64)],
                )?;
                Ok(exists)
            })
            .collect()
    }

    /// The copy of an unaligned partial tile into shared memory where
    /// `fast` does not hold, without a branch: each element loaded under
    /// its predicate (0 where it does not exist), then the chunk stored to
    /// shared memory under `!fast` as one vector of words (16-bit elements
    /// packed in pairs), as `cp.async` would have written it.
    fn copy_elements_unless(
        &mut self,
        fast: Reg,
        out: &OperandInfo,
        input: &OperandInfo,
        valid: Reg,
    ) -> Result<(), LowerError> {
        let sixteen = input.scalar.bytes() == 2;
        let class = if sixteen {
            RegClass::B16
        } else {
            RegClass::B32
        };
        let zero = if sixteen { "mov.b16" } else { "mov.b32" };
        let slow = self.out.reg(RegClass::Pred);
        self.out.emit("not.pred", vec![slow.into(), fast.into()])?;
        let exists = self.element_predicates(input.count, valid)?;
        let mut values = Vec::with_capacity(input.count);
        for (e, exists) in exists.into_iter().enumerate() {
            self.out
                .emit("and.pred", vec![exists.into(), exists.into(), slow.into()])?;
            let value = self.out.reg(class);
            self.out.emit(zero, vec![value.into(), imm(0)])?;
            let source = self.address(input, e)?;
            self.out.emit_guarded(
                Guard::when(exists),
                &access_name("ld", Memory::Global, 1, class),
                vec![value.into(), source.into()],
            )?;
            values.push(value);
        }
        let words = if sixteen {
            let mut words = Vec::with_capacity(values.len() / 2);
            for pair in values.chunks(2) {
                let word = self.out.reg(RegClass::B32);
                self.pack(word, pair[0], pair[1])?;
                words.push(word);
            }
            words
        } else {
            values
        };
        let destination = self.address(out, 0)?;
        let vector = registers_operand(&words);
        self.out.emit_guarded(
            Guard::when(slow),
            &access_name("st", Memory::Shared, words.len(), RegClass::B32),
            vec![destination.into(), vector],
        )
    }

    /// A load into or a store from registers, element by element, each
    /// under its predicate; a load zeroes the elements that do not exist.
    fn move_elements(
        &mut self,
        pattern: MemoryPattern,
        out: &OperandInfo,
        input: &OperandInfo,
        valid: Reg,
    ) -> Result<(), LowerError> {
        let load = matches!(pattern, MemoryPattern::Load { .. });
        let memory = if load { input } else { out };
        let exists = self.element_predicates(memory.count, valid)?;
        let sixteen = memory.scalar.bytes() == 2;
        if load {
            let registers = if sixteen {
                self.out.regs(half_class(memory.scalar), memory.count)
            } else {
                self.target_words(out)?
            };
            for (e, (value, exists)) in registers.iter().zip(exists).enumerate() {
                let zero = match value.class {
                    RegClass::F32 => "mov.f32",
                    RegClass::F16 => "mov.b16/half",
                    RegClass::B16 => "mov.b16",
                    RegClass::B32 | RegClass::B64 | RegClass::Pred => "mov.b32",
                };
                let zero_value = if value.class == RegClass::F32 {
                    Operand::f32(0.0)
                } else {
                    imm(0)
                };
                self.out.emit(zero, vec![(*value).into(), zero_value])?;
                let source = self.address(input, e)?;
                self.out.emit_guarded(
                    Guard::when(exists),
                    &access_name("ld", Memory::Global, 1, value.class),
                    vec![(*value).into(), source.into()],
                )?;
            }
            if sixteen {
                self.write_halves(out, &registers)?;
            }
            return Ok(());
        }
        let registers = if sixteen {
            self.read_halves(input)?
        } else {
            self.read_words(input)?
        };
        for (e, (value, exists)) in registers.iter().zip(exists).enumerate() {
            let destination = self.address(out, e)?;
            self.out.emit_guarded(
                Guard::when(exists),
                &access_name("st", Memory::Global, 1, value.class),
                vec![destination.into(), (*value).into()],
            )?;
        }
        Ok(())
    }
}
