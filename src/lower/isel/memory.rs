//! Stage 3, lowering (instruction selection): `Move` between memories of the
//! same scalar type, each thread alone — scalar and vector loads and stores
//! of global and shared memory (`ld/st.{global,shared}[.v2|.v4]`), memory
//! to memory through registers, register to register, and `Move<async>`
//! from global to shared memory (`cp.async`).

use super::super::error::LowerError;
use super::super::kernel::KernelLowering;
use super::super::registers::{Slot, half_class, word_class};
use super::super::views::OperandInfo;
use super::{Family, Matched, Plan, Progress, Reject, Request};
use super::{
    alignment_reject, expect_operands, expect_same_count, expect_same_scalar, expect_thread,
};
use crate::ir::Memory;
use crate::ptx::{Reg, RegClass, Sm};

/// The memory-moving entries of the catalogue.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MemoryPattern {
    /// Global or shared memory → registers, `bytes` per thread.
    Load {
        /// Where from.
        from: Memory,
        /// 2, 4, 8 or 16.
        bytes: u32,
    },
    /// Registers → global or shared memory.
    Store {
        /// Where to.
        to: Memory,
        /// 2, 4, 8 or 16.
        bytes: u32,
    },
    /// Memory → memory through registers: one load and one store.
    Staged {
        /// Where from.
        from: Memory,
        /// Where to.
        to: Memory,
        /// 2, 4, 8 or 16.
        bytes: u32,
    },
    /// Registers → registers.
    RegisterMove,
    /// `cp.async` global → shared, `bytes` per thread.
    Async {
        /// 4, 8 or 16.
        bytes: u32,
    },
}

/// What an accepted memory pattern emits: the pattern itself says it all.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct MemoryPlan(MemoryPattern);

impl MemoryPlan {
    /// The plan of an accepted `pattern`.
    pub(super) fn new(pattern: MemoryPattern) -> MemoryPlan {
        MemoryPlan(pattern)
    }
}

const WIDTHS: [u32; 4] = [16, 8, 4, 2];

/// Every memory pattern, widest first.
pub fn patterns() -> Vec<MemoryPattern> {
    let spaces = [Memory::Global, Memory::Shared];
    let mut all = Vec::new();
    for bytes in WIDTHS {
        all.extend(spaces.map(|from| MemoryPattern::Load { from, bytes }));
        all.extend(spaces.map(|to| MemoryPattern::Store { to, bytes }));
    }
    for bytes in WIDTHS {
        for from in spaces {
            all.extend(spaces.map(|to| MemoryPattern::Staged { from, to, bytes }));
        }
    }
    all.push(MemoryPattern::RegisterMove);
    all.extend([16, 8, 4].map(|bytes| MemoryPattern::Async { bytes }));
    all
}

fn space(memory: Memory) -> &'static str {
    match memory {
        Memory::Global => "global",
        Memory::Shared => "shared",
        Memory::Registers => "registers",
    }
}

/// `ld.global.v4.b32`, `st.shared.b16` — the b32 form names 32-bit words.
fn access(op: &str, memory: Memory, bytes: u32) -> String {
    match bytes {
        2 => format!("{op}.{}.b16", space(memory)),
        4 => format!("{op}.{}.b32", space(memory)),
        8 => format!("{op}.{}.v2.b32", space(memory)),
        _ => format!("{op}.{}.v4.b32", space(memory)),
    }
}

impl MemoryPattern {
    /// The entry's name.
    pub fn name(&self) -> String {
        match *self {
            MemoryPattern::Load { from, bytes } => access("ld", from, bytes),
            MemoryPattern::Store { to, bytes } => access("st", to, bytes),
            MemoryPattern::Staged { from, to, bytes } => {
                format!(
                    "{} + {}",
                    access("ld", from, bytes),
                    access("st", to, bytes)
                )
            }
            MemoryPattern::RegisterMove => "mov.b32 (register to register)".into(),
            MemoryPattern::Async { bytes: 16 } => "cp.async.cg.shared.global/16".into(),
            MemoryPattern::Async { bytes } => format!("cp.async.ca.shared.global/{bytes}"),
        }
    }

    /// Its spec family.
    pub fn family(&self) -> Family {
        match self {
            MemoryPattern::Async { .. } => Family::AsyncMove,
            MemoryPattern::Load { .. }
            | MemoryPattern::Store { .. }
            | MemoryPattern::Staged { .. }
            | MemoryPattern::RegisterMove => Family::Move,
        }
    }

    /// The lowest target it runs on.
    pub fn needs(&self) -> Sm {
        match self {
            MemoryPattern::Async { .. } => Sm(80),
            MemoryPattern::Load { .. }
            | MemoryPattern::Store { .. }
            | MemoryPattern::Staged { .. }
            | MemoryPattern::RegisterMove => Sm(70),
        }
    }

    /// Matches a request.
    pub fn check(&self, request: &Request) -> Matched {
        let memories = |memory: Memory| -> Vec<Memory> { vec![memory] };
        let (outs, ins) = match *self {
            MemoryPattern::Load { from, .. } => (memories(Memory::Registers), memories(from)),
            MemoryPattern::Store { to, .. } => (memories(to), memories(Memory::Registers)),
            MemoryPattern::Staged { from, to, .. } => (memories(to), memories(from)),
            MemoryPattern::RegisterMove => {
                (memories(Memory::Registers), memories(Memory::Registers))
            }
            MemoryPattern::Async { .. } => (memories(Memory::Shared), memories(Memory::Global)),
        };
        let direction = format!("moves {} → {}", space(ins[0]), space(outs[0]));
        expect_operands(request, &[&outs], &[&ins], &direction)?;
        let (out, input) = (&request.outputs[0], &request.inputs[0]);
        expect_same_scalar(request)?;
        expect_thread(request)?;
        expect_same_count(request)?;
        let bytes = match *self {
            MemoryPattern::Load { bytes, .. }
            | MemoryPattern::Store { bytes, .. }
            | MemoryPattern::Staged { bytes, .. }
            | MemoryPattern::Async { bytes } => bytes,
            MemoryPattern::RegisterMove => return self.check_registers(out, input),
        };
        if super::masked::applies(request) {
            return super::masked::check(*self, bytes, out, input);
        }
        if input.broadcast.is_some() {
            return self.check_broadcast_load(bytes, out, input);
        }
        check_size(bytes, input)?;
        for operand in [out, input] {
            if operand.memory != Memory::Registers {
                check_access(bytes, operand)?;
            } else if operand.scalar.bytes() == 2 && bytes >= 4 {
                operand
                    .packed_pairs()
                    .map_err(|reason| Reject::new(Progress::Layout, reason))?;
            }
        }
        Ok(Plan::Memory(MemoryPlan(*self)))
    }

    /// A broadcast input is loaded as its distinct elements, `bytes` of
    /// them, and copied into the output's registers element by element
    /// (`super::super::broadcast`); only a load into registers does that.
    fn check_broadcast_load(&self, bytes: u32, out: &OperandInfo, input: &OperandInfo) -> Matched {
        if !matches!(self, MemoryPattern::Load { .. }) {
            return Err(Reject::new(
                Progress::Layout,
                format!(
                    "moves contiguous bytes; the {} is a broadcast view (a stride-0 mode repeats                      its elements)",
                    input.role
                ),
            )
            .with_help("load the broadcast view into registers first, then move the registers"));
        }
        let distinct = input.read_access();
        check_size(bytes, distinct)?;
        check_access(bytes, distinct)?;
        out.register_slots()
            .map_err(|reason| Reject::new(Progress::Layout, reason))?;
        Ok(Plan::Memory(MemoryPlan(*self)))
    }

    fn check_registers(&self, out: &OperandInfo, input: &OperandInfo) -> Matched {
        for operand in [out, input] {
            operand
                .register_slots()
                .map_err(|reason| Reject::new(Progress::Layout, reason))?;
        }
        Ok(Plan::Memory(MemoryPlan(*self)))
    }
}

/// The operand moves exactly `bytes`; a longer operand gets the help of
/// splitting it.
pub(super) fn check_size(bytes: u32, operand: &OperandInfo) -> Result<(), Reject> {
    if operand.bytes() == bytes {
        return Ok(());
    }
    let reject = Reject::new(
        Progress::Size,
        format!(
            "moves {bytes} bytes per thread; the views have {} {} elements ({} bytes)",
            operand.count,
            operand.scalar.name(),
            operand.bytes()
        ),
    );
    if operand.bytes() > 16 {
        let piece = 16 / operand.scalar.bytes();
        return Err(reject.with_help(format!(
            "one instruction moves at most 16 bytes per thread: tile the views into pieces of \
             {piece} {} elements (e.g. `.tile([{piece}])`) and move them in a loop",
            operand.scalar.name()
        )));
    }
    Err(reject)
}

/// A memory operand that one access of `bytes` moves: contiguous and
/// aligned.
pub(super) fn check_access(bytes: u32, operand: &OperandInfo) -> Result<(), Reject> {
    let place = operand
        .memory_place()
        .map_err(|reason| Reject::new(Progress::Layout, reason))?;
    if !place.contiguous {
        return Err(Reject::new(
            Progress::Layout,
            format!(
                "the {} {}",
                operand.role,
                place.why_not_contiguous(operand.count)
            ),
        ));
    }
    if place.align < bytes {
        return Err(alignment_reject(operand, bytes));
    }
    Ok(())
}

/// Emits an accepted memory plan.
pub fn emit(
    lowering: &mut KernelLowering,
    request: &Request,
    plan: &MemoryPlan,
) -> Result<(), LowerError> {
    if super::masked::applies(request) {
        return lowering.masked_move(request, plan.0);
    }
    emit_unmasked(lowering, request, plan)
}

/// Emits an accepted memory plan that moves every element.
pub(super) fn emit_unmasked(
    lowering: &mut KernelLowering,
    request: &Request,
    plan: &MemoryPlan,
) -> Result<(), LowerError> {
    let (out, input) = (&request.outputs[0], &request.inputs[0]);
    match plan.0 {
        MemoryPattern::Load { .. } if input.broadcast.is_some() => {
            broadcast_load(lowering, out, input)
        }
        MemoryPattern::Load { bytes: 2, .. } => {
            let halves = lowering.read_halves(input)?;
            lowering.write_halves(out, &halves)
        }
        MemoryPattern::Load { .. } => {
            let words = lowering.target_words(out)?;
            lowering.load_into(input, &words)
        }
        MemoryPattern::Store { bytes: 2, .. } => {
            let halves = lowering.read_halves(input)?;
            lowering.write_halves(out, &halves)
        }
        MemoryPattern::Store { .. } => {
            let words = lowering.read_words(input)?;
            lowering.store_from(out, &words)
        }
        MemoryPattern::Staged { bytes, .. } => {
            let temps = if bytes == 2 {
                vec![lowering.out.reg(half_class(input.scalar))]
            } else {
                lowering
                    .out
                    .regs(word_class(input.scalar), (bytes / 4) as usize)
            };
            lowering.load_into(input, &temps)?;
            lowering.store_from(out, &temps)
        }
        MemoryPattern::RegisterMove => register_move(lowering, out, input),
        MemoryPattern::Async { bytes } => {
            let destination = lowering.address(out, 0)?;
            let source = lowering.address(input, 0)?;
            let name = if bytes == 16 {
                "cp.async.cg.shared.global/16".to_string()
            } else {
                format!("cp.async.ca.shared.global/{bytes}")
            };
            lowering
                .out
                .emit(&name, vec![destination.into(), source.into()])
        }
    }
}

/// A broadcast input loaded once and copied into the output's registers:
/// word by word where both sides are words (or packed pairs), half by half
/// otherwise.
fn broadcast_load(
    lowering: &mut KernelLowering,
    out: &OperandInfo,
    input: &OperandInfo,
) -> Result<(), LowerError> {
    if out.scalar.bytes() == 2 && out.packed_pairs().is_err() {
        let halves = lowering.read_halves(input)?;
        return lowering.write_halves(out, &halves);
    }
    let sources = lowering.read_words(input)?;
    let targets = lowering.target_words(out)?;
    for (target, source) in targets.into_iter().zip(sources) {
        copy_word(lowering, target, source)?;
    }
    Ok(())
}

/// `mov` of one 32-bit register into another of the same class.
fn copy_word(lowering: &mut KernelLowering, target: Reg, source: Reg) -> Result<(), LowerError> {
    let name = match target.class {
        RegClass::F32 => "mov.f32",
        RegClass::Pred | RegClass::B16 | RegClass::F16 | RegClass::B32 | RegClass::B64 => "mov.b32",
    };
    lowering.out.emit(name, vec![target.into(), source.into()])
}

fn register_move(
    lowering: &mut KernelLowering,
    out: &OperandInfo,
    input: &OperandInfo,
) -> Result<(), LowerError> {
    if out.scalar.bytes() == 2 {
        if let (Ok(_), Ok(_)) = (out.packed_pairs(), input.packed_pairs()) {
            let sources = lowering.read_words(input)?;
            let targets = lowering.target_words(out)?;
            for (target, source) in targets.into_iter().zip(sources) {
                lowering
                    .out
                    .emit("mov.b32", vec![target.into(), source.into()])?;
            }
            return Ok(());
        }
        let halves = lowering.read_halves(input)?;
        return lowering.write_halves(out, &halves);
    }
    let sources = lowering.slots(input)?;
    let targets = lowering.slots(out)?;
    for (target, source) in targets.into_iter().zip(sources) {
        match (target, source) {
            (Slot::Word(target), Slot::Word(source)) => copy_word(lowering, target, source)?,
            (Slot::Half { .. }, Slot::Word(_) | Slot::Half { .. })
            | (Slot::Word(_), Slot::Half { .. }) => {
                return Err(LowerError::unsupported(
                    out.span,
                    "a 32-bit register move met a 16-bit slot",
                    "this is a lowering bug",
                ));
            }
        }
    }
    Ok(())
}
