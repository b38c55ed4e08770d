//! Stage 2, check: no thread reads an element of one of its register
//! tensors before it wrote that element (docs/language.md §5, "Coverage").
//!
//! A register tensor holds nothing until a spec writes it: its registers are
//! whatever they were. The kernel is walked ([`super::enumerate`]) at sample
//! values of its dims, as coverage and races walk it, following the reads
//! and writes of register tensors; each thread's elements remember whether
//! it wrote them. A spec that accumulates into its output (`MatMul`,
//! `MatMul<async>`: `C = C + A·B`) reads it first. A read of an element not
//! yet written — a fragment loaded from a loop that starts one step late, an
//! accumulator never initialised — is `E0296`. Where the walk cannot decide
//! (too many accesses, an expression it cannot evaluate) the rule says
//! nothing: the CPU executor still reports such reads when the kernel runs.
//! Blocks run the same code on their own registers, so the first block and
//! the last are walked.

use crate::diag::Diagnostic;
use crate::ir::{BufferId, BufferKind, Kernel};

use super::codes;
use super::coverage::{SharedLayout, Writer, describe_writer, element_name, sample_text};
use super::enumerate::{Follows, Observer, Visit, Walk, samples};

/// The first read of an unwritten element: its buffer, offset and reader.
type Unwritten = (BufferId, i64, Writer);

/// Each walked thread's register elements, laid side by side.
struct Tally {
    /// Where each register tensor's elements start in a thread's slot.
    start: Vec<Option<usize>>,
    per_thread: usize,
    block: usize,
    /// The walked blocks' first pair (block 0's, then the last block's).
    walked: Vec<usize>,
    written: Vec<bool>,
    first: Option<Unwritten>,
}

impl Tally {
    fn slot(&self, buffer: BufferId, pair: usize, offset: i64) -> Option<usize> {
        let start = (*self.start.get(buffer.0 as usize)?)?;
        let block = pair / self.block;
        let index = self
            .walked
            .iter()
            .position(|first| *first == block * self.block)?;
        let thread = index * self.block + pair % self.block;
        let offset = usize::try_from(offset).ok()?;
        Some(thread * self.per_thread + start + offset)
    }

    fn read_at(&mut self, visit: usize, buffer: BufferId, pair: usize, offset: i64) {
        if self.first.is_some() {
            return;
        }
        if let Some(slot) = self.slot(buffer, pair, offset)
            && !self.written.get(slot).copied().unwrap_or(true)
        {
            let who = Writer {
                pair: pair as u32,
                visit: visit as u32,
            };
            self.first = Some((buffer, offset, who));
        }
    }
}

impl Observer for Tally {
    fn write(
        &mut self,
        visits: &[Visit<'_>],
        visit: usize,
        buffer: BufferId,
        pair: usize,
        offset: i64,
    ) {
        if visits[visit].spec.kind.accumulates() {
            self.read_at(visit, buffer, pair, offset);
        }
        if let Some(slot) = self.slot(buffer, pair, offset)
            && let Some(written) = self.written.get_mut(slot)
        {
            *written = true;
        }
    }

    fn read(
        &mut self,
        _visits: &[Visit<'_>],
        visit: usize,
        buffer: BufferId,
        pair: usize,
        offset: i64,
    ) {
        self.read_at(visit, buffer, pair, offset);
    }

    fn barrier(&mut self) {}
}

/// The unwritten-register diagnostic of a checked kernel, if its walk finds
/// such a read.
pub(super) fn check_register_reads(kernel: &Kernel) -> Vec<Diagnostic> {
    let mut start = vec![None; kernel.buffers.len()];
    let mut per_thread = 0usize;
    for (index, buffer) in kernel.buffers.iter().enumerate() {
        if buffer.kind == BufferKind::Registers
            && let Some(elements) = buffer.elements.as_const()
        {
            start[index] = Some(per_thread);
            per_thread += usize::try_from(elements).unwrap_or(0);
        }
    }
    if kernel.root.body.is_none() || per_thread == 0 {
        return Vec::new();
    }
    let Some(samples) = samples(kernel) else {
        return Vec::new();
    };
    for dims in samples {
        let Ok(layout) = SharedLayout::at(kernel, &dims) else {
            return Vec::new();
        };
        let launch = &layout.launch;
        let mut walked = vec![0];
        if launch.grid > 1 {
            walked.push((launch.grid - 1) * launch.block);
        }
        let mut tally = Tally {
            start: start.clone(),
            per_thread,
            block: launch.block,
            written: vec![false; per_thread * launch.block * walked.len()],
            walked,
            first: None,
        };
        let last = launch.grid.saturating_sub(1);
        let in_walk = |block: usize| block == 0 || block == last;
        let followed = |buffer: BufferId| start.get(buffer.0 as usize).is_some_and(Option::is_some);
        let follows = Follows {
            buffers: &followed,
            reads: true,
            blocks: &in_walk,
        };
        let Ok(visits) = Walk::run(kernel, launch, follows, &mut tally) else {
            return Vec::new();
        };
        if let Some((buffer, offset, who)) = tally.first {
            let element = element_name(kernel, buffer, offset, &dims);
            let span = visits[who.visit as usize].spec.span;
            return vec![
                Diagnostic::error(
                    codes::UNWRITTEN_REGISTER_READ,
                    format!("`{element}` is read before anything wrote it"),
                    span,
                )
                .with_label(format!(
                    "read here by {}",
                    describe_writer(kernel, launch, &visits, who)
                ))
                .with_note(format!(
                    "a register tensor holds whatever its registers held until a spec writes \
                     it; this thread wrote no value to this element before{}",
                    sample_text(kernel, &dims)
                ))
                .with_help(
                    "write the element first (`Init`, a `Move`), or read only the elements \
                     written",
                ),
            ];
        }
    }
    Vec::new()
}
