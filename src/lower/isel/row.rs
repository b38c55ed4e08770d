//! Stage 3, lowering (instruction selection): a warp stores a row from
//! shared to global memory whose start need not be 16-byte aligned
//! (docs/lowering.md, "Rows realigned to their destination").
//!
//! A row of an fp16 matrix with an odd number of columns starts at any
//! 2-byte offset, so no thread's 16-byte piece of it is aligned, and a
//! per-thread store falls back to one 2-byte store per element (a 16-bit C
//! with N = 4095 cost the warpgroup GEMM a quarter of its time that way).
//! Here the warp takes the row's *destination* 16-byte chunks instead: lane
//! `l` writes chunks `l, l + 32, …` of the aligned chunks the row touches,
//! and assembles each from the two shared-memory chunks it straddles, shifted
//! by the row's misalignment `s` (the same in every lane): two
//! `ld.shared.v4.b32`, a selection of five of their eight words by the word
//! shift, a funnel shift (`shf`) by the half-word shift, one
//! `st.global.v4.b32`. Only the first and the last chunk of a row (which it
//! shares with its neighbours) and the elements past a partial tile's end
//! are stored element by element; where the row's chunks fill whole turns
//! of the warp, its last chunk rides with its first, so that no turn is
//! taken for one lane.

use std::collections::BTreeSet;

use super::super::error::LowerError;
use super::super::kernel::KernelLowering;
use super::super::views::OperandInfo;
use super::values::access_name;
use super::{Family, Matched, Plan, Progress, Reject, Request};
use super::{expect_operands, expect_same_count, expect_same_scalar, expect_warp};
use crate::expr::{Expr, Var};
use crate::ir::Memory;
use crate::ptx::operand::AddressBase;
use crate::ptx::{Address, Guard, Operand, Reg, RegClass, Sm, imm};

/// Bytes of one chunk: what one lane stores at once.
const CHUNK: i64 = 16;

/// Lanes of a warp.
const LANES: i64 = 32;

/// The thread ids over which a view's base is compared lane by lane: every
/// thread a block can have.
const MAX_THREADS: i64 = 1024;

/// The one entry: a warp's row store, realigned to its destination.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RowPattern;

/// What an accepted row store emits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RowPlan {
    /// Bytes per element: 2 or 4.
    element: u32,
    /// Bytes of the row: a multiple of [`CHUNK`].
    row: u32,
}

/// What the chunks of one row store share: the first aligned chunk of the
/// destination, the shared row, the lane, the misalignment `s` in bytes,
/// the bytes that exist.
struct Row {
    first_chunk: Reg,
    source: Reg,
    lane: Reg,
    skew: Reg,
    valid_bytes: Reg,
    plan: RowPlan,
}

/// Every row pattern.
pub fn patterns() -> Vec<RowPattern> {
    vec![RowPattern]
}

impl RowPattern {
    /// The entry's name.
    pub fn name(&self) -> String {
        "ld.shared.v4.b32 ×2 + st.global.v4.b32 (a warp's row, realigned)".into()
    }

    /// Its spec family.
    pub fn family(&self) -> Family {
        Family::Move
    }

    /// The lowest target it runs on.
    pub fn needs(&self) -> Sm {
        Sm(70)
    }

    /// Matches a request: a whole warp moves one contiguous row, the same
    /// in every lane, from shared memory (16-byte aligned, a whole number of
    /// chunks) to global memory (any alignment; masked where it has bounds).
    pub fn check(&self, request: &Request) -> Matched {
        expect_operands(
            request,
            &[&[Memory::Global]],
            &[&[Memory::Shared]],
            "moves shared → global",
        )?;
        let (out, input) = (&request.outputs[0], &request.inputs[0]);
        expect_same_scalar(request)?;
        let element = input.scalar.bytes();
        if element != 2 && element != 4 {
            return Err(Reject::new(
                Progress::Types,
                format!(
                    "moves 16- or 32-bit elements; they are {}",
                    input.scalar.name()
                ),
            ));
        }
        expect_warp(request)?;
        expect_same_count(request)?;
        if !input.bounds.is_empty() {
            return Err(Reject::new(
                Progress::Layout,
                "reads a shared row that exists whole; the input has bounds",
            ));
        }
        super::masked::prefix_bounds(out)?;
        for operand in [out, input] {
            let place = operand
                .memory_place()
                .map_err(|reason| Reject::new(Progress::Layout, reason))?;
            if !place.contiguous || place.swizzle.is_some() {
                return Err(Reject::new(
                    Progress::Layout,
                    format!(
                        "moves a contiguous, unswizzled row; the {} {}",
                        operand.role,
                        if place.swizzle.is_some() {
                            "is swizzled".to_string()
                        } else {
                            place.why_not_contiguous(operand.count)
                        }
                    ),
                ));
            }
            if !same_in_every_lane(&place.base, &request.lane_dependent_loops) {
                return Err(Reject::new(
                    Progress::Layout,
                    format!(
                        "moves one row per warp; the {} is not the same in every lane",
                        operand.role
                    ),
                )
                .with_help("index the row by the warp, not by the lane"));
            }
        }
        let row = input.bytes();
        let input_place = input
            .memory_place()
            .map_err(|reason| Reject::new(Progress::Layout, reason))?;
        if i64::from(row) % CHUNK != 0 || input_place.align < CHUNK as u32 {
            return Err(Reject::new(
                Progress::Alignment,
                format!(
                    "reads whole 16-byte chunks of shared memory; the input row has {row} bytes, \
                     its start is proven {}-byte aligned",
                    input_place.align
                ),
            )
            .with_help(
                "stage rows whose length is a multiple of 16 bytes, from a 16-byte aligned start",
            ));
        }
        Ok(Plan::Row(RowPlan { element, row }))
    }
}

/// Whether a view's base offset is the same in the 32 lanes of every warp:
/// every largest part of it that depends on the thread id alone (`tid /
/// 128`, `tid / 32 % 4`, but not a product of the thread id with a dim)
/// takes one value in the 32 lanes of each warp of any block, checked for
/// every thread id. The rest does not depend on the thread, nor on a loop
/// variable of `lane_dependent_loops` (whose value may differ by lane).
fn same_in_every_lane(base: &Expr, lane_dependent_loops: &BTreeSet<u32>) -> bool {
    let vars = base.vars();
    if vars
        .iter()
        .any(|var| matches!(var, Var::Loop(id) if lane_dependent_loops.contains(id)))
    {
        return false;
    }
    if !vars.contains(&Var::ThreadId) {
        return true;
    }
    if vars.iter().all(|var| *var == Var::ThreadId) {
        let at = |thread: i64| base.eval(&|var| (var == Var::ThreadId).then_some(thread));
        return (0..MAX_THREADS).all(|thread| {
            let value = at(thread);
            value.is_ok() && value == at(thread - thread % LANES)
        });
    }
    if matches!(base, Expr::Var(_) | Expr::Const(_)) {
        return false;
    }
    let mut uniform = true;
    base.map_operands(&mut |operand| {
        uniform = uniform && same_in_every_lane(operand, lane_dependent_loops);
        operand.clone()
    });
    uniform
}

/// Emits an accepted row store.
pub fn emit(
    lowering: &mut KernelLowering,
    request: &Request,
    plan: &RowPlan,
) -> Result<(), LowerError> {
    lowering.realigned_row(&request.outputs[0], &request.inputs[0], *plan)
}

impl KernelLowering<'_, '_> {
    /// The row store of [`RowPattern`]: see the module documentation.
    fn realigned_row(
        &mut self,
        out: &OperandInfo,
        input: &OperandInfo,
        plan: RowPlan,
    ) -> Result<(), LowerError> {
        let valid = self.valid_count(out)?;
        let valid_bytes = self.out.reg(RegClass::B32);
        self.out.emit(
            "mul.lo.u32",
            vec![
                valid_bytes.into(),
                valid.into(),
                imm(i64::from(plan.element)),
            ],
        )?;
        let destination = self.global_address_reg(out)?;
        // The row's misalignment `s` in bytes and its first aligned chunk.
        let low = self.out.reg(RegClass::B32);
        self.out
            .emit("cvt.u32.u64", vec![low.into(), destination.into()])?;
        let skew = self.out.reg(RegClass::B32);
        self.out
            .emit("and.b32", vec![skew.into(), low.into(), imm(CHUNK - 1)])?;
        let first_chunk = self.out.reg(RegClass::B64);
        self.out.emit(
            "and.b64",
            vec![first_chunk.into(), destination.into(), imm(!(CHUNK - 1))],
        )?;
        let source = self.unswizzled_shared_address(input)?;
        let lane = self
            .out
            .int_reg(&Expr::rem(Expr::var(Var::ThreadId), Expr::Const(LANES)))?;
        let row = Row {
            first_chunk,
            source,
            lane,
            skew,
            valid_bytes,
            plan,
        };
        // `s` is the same in every lane (one row per warp), so this branch
        // does not diverge: a row that starts aligned takes each shared
        // chunk as it is.
        let aligned = self.out.reg(RegClass::Pred);
        self.out
            .emit("setp.eq.u32", vec![aligned.into(), skew.into(), imm(0)])?;
        self.either(
            "row_shifted",
            aligned,
            true,
            |this| this.aligned_chunks(&row),
            |this| this.shifted_chunks(&row),
        )
    }

    /// The chunks of a row that starts 16-byte aligned: chunk j is shared
    /// chunk j.
    fn aligned_chunks(&mut self, row: &Row) -> Result<(), LowerError> {
        let row_chunks = i64::from(row.plan.row) / CHUNK;
        for iteration in 0..(row_chunks + LANES - 1) / LANES {
            let chunk = self.out.reg(RegClass::B32);
            self.out.emit(
                "add.u32",
                vec![chunk.into(), row.lane.into(), imm(iteration * LANES)],
            )?;
            let index = self.out.reg(RegClass::B32);
            self.out.emit(
                "min.u32",
                vec![index.into(), chunk.into(), imm(row_chunks - 1)],
            )?;
            let data = self.shared_chunk(row.source, index, 0)?;
            self.store_chunk(row, chunk, &data, None)?;
        }
        Ok(())
    }

    /// The chunks of a row that starts `s` bytes past a 16-byte boundary:
    /// chunk j's bytes start at byte 16 − s of shared chunks j − 1 and j,
    /// in word `wd = (16 − s) / 4`, shifted by `(16 − s) % 4` bytes.
    fn shifted_chunks(&mut self, row: &Row) -> Result<(), LowerError> {
        let start = self.out.reg(RegClass::B32);
        self.out
            .emit("neg.s32", vec![start.into(), row.skew.into()])?;
        self.out
            .emit("add.s32", vec![start.into(), start.into(), imm(CHUNK)])?;
        let word_bit = |this: &mut Self, bit: i64| -> Result<Reg, LowerError> {
            let masked = this.out.reg(RegClass::B32);
            this.out
                .emit("and.b32", vec![masked.into(), start.into(), imm(4 * bit)])?;
            let set = this.out.reg(RegClass::Pred);
            this.out
                .emit("setp.ne.u32", vec![set.into(), masked.into(), imm(0)])?;
            Ok(set)
        };
        let bits = [word_bit(self, 1)?, word_bit(self, 2)?, word_bit(self, 4)?];
        let shift = if row.plan.element == 2 {
            let right = self.out.reg(RegClass::B32);
            self.out
                .emit("and.b32", vec![right.into(), start.into(), imm(3)])?;
            self.out
                .emit("shl.b32", vec![right.into(), right.into(), imm(3)])?;
            Some(right)
        } else {
            None
        };
        let row_chunks = i64::from(row.plan.row) / CHUNK;
        // A misaligned row touches one chunk more than it has. Where its
        // chunks fill whole turns of the warp, that last chunk (the row's
        // tail) rides with the first (its head) instead of taking a turn of
        // its own for one lane: lane 0 of the first turn reads shared chunks
        // `row_chunks - 1` and 0, whose shifted bytes are the tail's and
        // the head's, and stores each where it belongs.
        let folded = row_chunks % LANES == 0;
        let turns = if folded {
            row_chunks / LANES
        } else {
            (row_chunks + LANES) / LANES
        };
        for turn in 0..turns {
            let chunk = self.out.reg(RegClass::B32);
            self.out.emit(
                "add.u32",
                vec![chunk.into(), row.lane.into(), imm(turn * LANES)],
            )?;
            let tail = (folded && turn == 0).then_some(row_chunks);
            let words = if folded {
                self.previous_and_own_words(row.source, chunk, tail)?
            } else {
                self.straddled_words(row.source, chunk, row_chunks)?
            };
            let picked = self.pick_words(&words, bits)?;
            let data = match shift {
                Some(right) => self.funnel(&picked, right)?,
                None => picked[..4].to_vec(),
            };
            self.store_chunk(row, chunk, &data, tail)?;
        }
        Ok(())
    }

    /// Shared chunks `chunk - 1` and `chunk` of a row whose every chunk a
    /// lane of some turn stores, as eight words: no chunk lies past the
    /// row, and chunk 0's predecessor is the row's last chunk where the
    /// turn carries the tail (`tail`: the row's chunks), the first chunk
    /// otherwise (a lane of a later turn never has chunk 0).
    fn previous_and_own_words(
        &mut self,
        source: Reg,
        chunk: Reg,
        tail: Option<i64>,
    ) -> Result<Vec<Reg>, LowerError> {
        let mut words = match tail {
            Some(row_chunks) => {
                let first = self.out.reg(RegClass::Pred);
                self.out
                    .emit("setp.eq.u32", vec![first.into(), chunk.into(), imm(0)])?;
                let before = self.out.reg(RegClass::B32);
                self.out
                    .emit("sub.u32", vec![before.into(), chunk.into(), imm(1)])?;
                let previous = self.select(imm(row_chunks - 1), before.into(), first)?;
                self.shared_chunk(source, previous, 0)?
            }
            None => self.shared_chunk(source, chunk, -1)?,
        };
        words.extend(self.shared_chunk(source, chunk, 0)?);
        Ok(words)
    }

    /// Shared chunks `chunk - 1` and `chunk` of the row, as eight words.
    /// Indices are clamped into the row: a lane whose chunk lies past it
    /// (or before it) loads a chunk of the row whose bytes it never stores.
    fn straddled_words(
        &mut self,
        source: Reg,
        chunk: Reg,
        row_chunks: i64,
    ) -> Result<Vec<Reg>, LowerError> {
        let mut words = Vec::with_capacity(8);
        for (delta, lowest) in [(-1, 1), (0, 0)] {
            let index = self.out.reg(RegClass::B32);
            self.out
                .emit("max.u32", vec![index.into(), chunk.into(), imm(lowest)])?;
            self.out.emit(
                "min.u32",
                vec![index.into(), index.into(), imm(row_chunks - 1 - delta)],
            )?;
            words.extend(self.shared_chunk(source, index, delta)?);
        }
        Ok(words)
    }

    /// Shared chunk `index + delta` of the row at `source`, as four words.
    fn shared_chunk(
        &mut self,
        source: Reg,
        index: Reg,
        delta: i64,
    ) -> Result<Vec<Reg>, LowerError> {
        let at = self.out.reg(RegClass::B32);
        self.out.emit(
            "mad.lo.u32",
            vec![at.into(), index.into(), imm(CHUNK), source.into()],
        )?;
        let four = self.out.regs(RegClass::B32, 4);
        let address = Address {
            base: AddressBase::Reg(at),
            offset: delta * CHUNK,
        };
        self.out.emit(
            &access_name("ld", Memory::Shared, 4, RegClass::B32),
            vec![Operand::Vector(four.clone()), address.into()],
        )?;
        Ok(four)
    }

    /// Words `wd .. wd + 4` of the eight (a ninth, zero, past them), `wd`
    /// chosen by its bits one, two and four: a selection in three levels.
    fn pick_words(&mut self, words: &[Reg], bits: [Reg; 3]) -> Result<Vec<Reg>, LowerError> {
        let [by_one, by_two, by_four] = bits;
        let word = |k: usize| -> Operand { words.get(k).map_or(imm(0), |reg| (*reg).into()) };
        let mut by_ones = Vec::with_capacity(8);
        for k in 0..8 {
            by_ones.push(self.select(word(k + 1), word(k), by_one)?);
        }
        let mut by_twos = Vec::with_capacity(5);
        for k in 0..5 {
            by_twos.push(self.select(by_ones[k + 2].into(), by_ones[k].into(), by_two)?);
        }
        // `wd` is 4 only when bits one and two are clear.
        (0..5)
            .map(|k| self.select(word(k + 4), by_twos[k].into(), by_four))
            .collect()
    }

    fn select(&mut self, when: Operand, otherwise: Operand, pred: Reg) -> Result<Reg, LowerError> {
        let picked = self.out.reg(RegClass::B32);
        self.out.emit(
            "selp.b32",
            vec![picked.into(), when, otherwise, pred.into()],
        )?;
        Ok(picked)
    }

    /// Four words, each the 32 bits of word k and its successor that start
    /// `right` bits into word k: one funnel shift each (`right = 0` leaves
    /// the words as they are).
    fn funnel(&mut self, words: &[Reg], right: Reg) -> Result<Vec<Reg>, LowerError> {
        (0..4)
            .map(|k| {
                let joined = self.out.reg(RegClass::B32);
                self.out.emit(
                    "shf.r.clamp.b32",
                    vec![
                        joined.into(),
                        words[k].into(),
                        words[k + 1].into(),
                        right.into(),
                    ],
                )?;
                Ok(joined)
            })
            .collect()
    }

    /// Stores destination chunk `chunk`: whole with one vector store where
    /// all of its bytes are the row's and exist, else — under a branch only
    /// the first and last chunk of a row and a partial tile's end take —
    /// element by element, each where its row byte `16·chunk − s + e·size`
    /// lies in `0 .. valid_bytes`. With `tail` (the row's chunks), the bytes
    /// of chunk 0 that precede the row are its tail's (see
    /// `shifted_chunks`), stored in chunk `tail`.
    fn store_chunk(
        &mut self,
        row: &Row,
        chunk: Reg,
        data: &[Reg],
        tail: Option<i64>,
    ) -> Result<(), LowerError> {
        let at = self.out.reg(RegClass::B64);
        self.out.emit(
            "mad.wide.u32",
            vec![at.into(), chunk.into(), imm(CHUNK), row.first_chunk.into()],
        )?;
        let row_byte = self.out.reg(RegClass::B32);
        self.out.emit(
            "mul.lo.u32",
            vec![row_byte.into(), chunk.into(), imm(CHUNK)],
        )?;
        self.out.emit(
            "sub.s32",
            vec![row_byte.into(), row_byte.into(), row.skew.into()],
        )?;
        let end = self.out.reg(RegClass::B32);
        self.out
            .emit("add.s32", vec![end.into(), row_byte.into(), imm(CHUNK)])?;
        let starts_inside = self.out.reg(RegClass::Pred);
        self.out.emit(
            "setp.ge.s32",
            vec![starts_inside.into(), row_byte.into(), imm(0)],
        )?;
        let ends_inside = self.out.reg(RegClass::Pred);
        self.out.emit(
            "setp.le.s32",
            vec![ends_inside.into(), end.into(), row.valid_bytes.into()],
        )?;
        let whole = self.out.reg(RegClass::Pred);
        self.out.emit(
            "and.pred",
            vec![whole.into(), starts_inside.into(), ends_inside.into()],
        )?;
        self.out.emit_guarded(
            Guard::when(whole),
            &access_name("st", Memory::Global, 4, RegClass::B32),
            vec![chunk_address(at, 0).into(), Operand::Vector(data.to_vec())],
        )?;
        // Some but not all of the chunk's bytes: it ends past the row's
        // start, starts before the end of what exists, and is not whole.
        let partial = self.out.reg(RegClass::Pred);
        self.out
            .emit("setp.gt.s32", vec![partial.into(), end.into(), imm(0)])?;
        let before_end = self.out.reg(RegClass::Pred);
        self.out.emit(
            "setp.lt.s32",
            vec![before_end.into(), row_byte.into(), row.valid_bytes.into()],
        )?;
        self.out.emit(
            "and.pred",
            vec![partial.into(), partial.into(), before_end.into()],
        )?;
        let not_whole = self.out.reg(RegClass::Pred);
        self.out
            .emit("not.pred", vec![not_whole.into(), whole.into()])?;
        self.out.emit(
            "and.pred",
            vec![partial.into(), partial.into(), not_whole.into()],
        )?;
        self.only_if("row_partial", partial, false, |this| {
            this.store_elements(row, at, row_byte, data, tail)
        })
    }

    /// The elements of a partial chunk, each under its own predicate; with
    /// `tail`, an element before the row's start is its tail's instead, at
    /// the same place of chunk `tail`.
    fn store_elements(
        &mut self,
        row: &Row,
        at: Reg,
        row_byte: Reg,
        data: &[Reg],
        tail: Option<i64>,
    ) -> Result<(), LowerError> {
        let pieces: Vec<(Reg, RegClass)> = if row.plan.element == 2 {
            let mut halves = Vec::with_capacity(8);
            for word in data {
                let pair = self.out.regs(RegClass::B16, 2);
                self.out.emit(
                    "mov.b32/unpack",
                    vec![pair[0].into(), pair[1].into(), (*word).into()],
                )?;
                halves.extend(pair.into_iter().map(|half| (half, RegClass::B16)));
            }
            halves
        } else {
            data.iter().map(|word| (*word, RegClass::B32)).collect()
        };
        let size = i64::from(row.plan.element);
        for (e, (value, class)) in pieces.into_iter().enumerate() {
            let offset = e as i64 * size;
            let byte = self.out.reg(RegClass::B32);
            self.out
                .emit("add.s32", vec![byte.into(), row_byte.into(), imm(offset)])?;
            self.store_element_if_it_exists(row, at, byte, offset, value, class)?;
            // A tail byte is a byte before the row's start moved one row on:
            // it exists where that lies below `valid_bytes` (never for a byte
            // of the row itself, which lands past the row's end).
            if let Some(tail_chunk) = tail {
                let tail_byte = self.out.reg(RegClass::B32);
                self.out.emit(
                    "add.s32",
                    vec![tail_byte.into(), byte.into(), imm(tail_chunk * CHUNK)],
                )?;
                self.store_element_if_it_exists(
                    row,
                    at,
                    tail_byte,
                    tail_chunk * CHUNK + offset,
                    value,
                    class,
                )?;
            }
        }
        Ok(())
    }

    /// Stores one element at byte `offset` of the chunk at `at` where its
    /// row byte `byte` lies in `0 .. valid_bytes`.
    fn store_element_if_it_exists(
        &mut self,
        row: &Row,
        at: Reg,
        byte: Reg,
        offset: i64,
        value: Reg,
        class: RegClass,
    ) -> Result<(), LowerError> {
        let after_start = self.out.reg(RegClass::Pred);
        self.out
            .emit("setp.ge.s32", vec![after_start.into(), byte.into(), imm(0)])?;
        let exists = self.out.reg(RegClass::Pred);
        self.out.emit(
            "setp.lt.s32",
            vec![exists.into(), byte.into(), row.valid_bytes.into()],
        )?;
        self.out.emit(
            "and.pred",
            vec![exists.into(), exists.into(), after_start.into()],
        )?;
        self.out.emit_guarded(
            Guard::when(exists),
            &access_name("st", Memory::Global, 1, class),
            vec![chunk_address(at, offset).into(), value.into()],
        )
    }
}

/// Byte `offset` of the destination chunk at `at`.
fn chunk_address(at: Reg, offset: i64) -> Address {
    Address {
        base: AddressBase::Reg(at),
        offset,
    }
}
