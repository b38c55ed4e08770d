//! Stage 3, lowering (instruction selection): `Move<add>`, the accumulating
//! store — fp32 registers added into global memory, each element by one
//! atomic read-modify-write (`red.global.add.f32`), or two or four
//! contiguous, aligned ones by one vector instruction
//! (`red.global.add.v2.f32`, `.v4.f32`, sm_90 and PTX 8.1). Atomic, so
//! several blocks may add into one element (split-K, docs/split-k.md).
//!
//! `Move<masked, add>` skips the elements past the output's bounds like a
//! masked store (docs/lowering.md, "Masked moves"): the vector form where
//! every element exists and the address is aligned (tested at run time
//! where not proven), each existing element alone otherwise.

use super::super::error::LowerError;
use super::super::kernel::KernelLowering;
use super::super::views::OperandInfo;
use super::{Family, Matched, Plan, Progress, Reject, Request};
use super::{alignment_reject, expect_operands, expect_scalar, expect_thread};
use crate::ir::{Memory, Scalar};
use crate::ptx::{Guard, Operand, Reg, Sm};

/// An accumulating store of `lanes` elements per instruction.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ReducePattern {
    /// 4 or 2 (one vector instruction for the whole operand), or 1 (one
    /// instruction per element, any number of elements).
    lanes: u32,
}

/// Every accumulating store, widest first.
pub fn patterns() -> Vec<ReducePattern> {
    [4, 2, 1]
        .into_iter()
        .map(|lanes| ReducePattern { lanes })
        .collect()
}

/// The PTX name of an accumulating store of `count` fp32 elements.
pub fn red_name(count: usize) -> String {
    match count {
        2 => "red.global.add.v2.f32".to_string(),
        4 => "red.global.add.v4.f32".to_string(),
        _ => "red.global.add.f32".to_string(),
    }
}

impl ReducePattern {
    /// The entry's name.
    pub fn name(&self) -> String {
        match self.lanes {
            1 => "red.global.add.f32 (each element)".to_string(),
            lanes => red_name(lanes as usize),
        }
    }

    /// Its spec family.
    pub fn family(&self) -> Family {
        Family::AddMove
    }

    /// The lowest target it runs on: the vector forms are Hopper's.
    pub fn needs(&self) -> Sm {
        if self.lanes > 1 { Sm(90) } else { Sm(70) }
    }

    /// Matches a request: fp32 registers → global memory, each thread
    /// alone; a vector form needs the whole operand contiguous, and aligned
    /// unless masked (a masked one tests the alignment at run time).
    pub fn check(&self, request: &Request) -> Matched {
        expect_operands(
            request,
            &[&[Memory::Global]],
            &[&[Memory::Registers]],
            "adds registers into global memory",
        )?;
        expect_scalar(request, &[Scalar::Fp32])?;
        expect_thread(request)?;
        let (out, input) = (&request.outputs[0], &request.inputs[0]);
        if out.count != input.count {
            return Err(Reject::new(
                Progress::Size,
                format!(
                    "adds as many elements as it reads; the output has {}, the input {}",
                    out.count, input.count
                ),
            ));
        }
        input
            .register_slots()
            .map_err(|reason| Reject::new(Progress::Layout, reason))?;
        let masked = masked(request);
        if masked {
            super::masked::prefix_bounds(out)?;
        }
        if self.lanes == 1 {
            return Ok(Plan::Reduce(*self));
        }
        if out.count != self.lanes as usize {
            return Err(Reject::new(
                Progress::Size,
                format!(
                    "adds {} elements per thread; the output has {}",
                    self.lanes, out.count
                ),
            ));
        }
        let place = out
            .memory_place()
            .map_err(|reason| Reject::new(Progress::Layout, reason))?;
        if !place.contiguous {
            return Err(Reject::new(
                Progress::Layout,
                format!("the {} {}", out.role, place.why_not_contiguous(out.count)),
            ));
        }
        if !masked && place.align < out.bytes() {
            return Err(alignment_reject(out, out.bytes()));
        }
        Ok(Plan::Reduce(*self))
    }
}

/// Whether the request is a `Move<masked, add>` whose output may reach
/// past a partial tile.
fn masked(request: &Request) -> bool {
    request.kind.masked() && !request.outputs[0].bounds.is_empty()
}

/// Emits an accepted accumulating store.
pub fn emit(
    lowering: &mut KernelLowering,
    request: &Request,
    plan: &ReducePattern,
) -> Result<(), LowerError> {
    let (out, input) = (&request.outputs[0], &request.inputs[0]);
    let masked = masked(request);
    match (plan.lanes, masked) {
        (1, false) => {
            let words = lowering.read_words(input)?;
            each_element(lowering, out, &words, None)
        }
        (1, true) => {
            let words = lowering.read_words(input)?;
            let valid = lowering.valid_count(out)?;
            let exists = lowering.element_predicates(out.count, valid)?;
            each_element(lowering, out, &words, Some(&exists))
        }
        (_, false) => {
            let words = lowering.read_words(input)?;
            let address = lowering.address(out, 0)?;
            lowering.out.emit(
                &red_name(words.len()),
                vec![address.into(), Operand::Vector(words)],
            )
        }
        (_, true) => {
            let valid = lowering.valid_count(out)?;
            let proven = out
                .memory_place()
                .map(|place| place.align >= out.bytes())
                .unwrap_or(false);
            lowering.predicated_store(out, input, valid, proven, &|count, _| red_name(count))
        }
    }
}

/// One `red.global.add.f32` per element, each under its predicate when
/// given.
fn each_element(
    lowering: &mut KernelLowering,
    out: &OperandInfo,
    words: &[Reg],
    exists: Option<&[Reg]>,
) -> Result<(), LowerError> {
    for (e, word) in words.iter().enumerate() {
        let address = lowering.address(out, e)?;
        let operands = vec![address.into(), (*word).into()];
        match exists {
            Some(exists) => {
                lowering
                    .out
                    .emit_guarded(Guard::when(exists[e]), &red_name(1), operands)?
            }
            None => lowering.out.emit(&red_name(1), operands)?,
        }
    }
    Ok(())
}
