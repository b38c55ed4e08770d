//! Stage 2, check: no thread reads a shared element that another thread of
//! its block wrote, or writes one that another read, between two barriers
//! (docs/language.md §5, "Coverage").
//!
//! The kernel is walked ([`super::enumerate`]) at sample values of its dims
//! as coverage walks it, following the reads of shared buffers as well as
//! the writes. Each shared element of each block remembers its last write
//! and its last read, each with the barrier interval it fell in (a `sync`,
//! or a block reduction's own barrier, starts the next). A read of an
//! element written in the same interval by another thread, or a write of
//! one read in the same interval by another thread, is a race: nothing
//! orders the two. Lanes of one collective instruction (an `ldmatrix`, a
//! warpgroup's `wgmma`) that touch an element together do not race with
//! each other.
//!
//! What `sync` does not order is left to the rules that see it: a
//! `Move<tma>` lands when its barrier's phase completes, which the
//! read-before-wait rule (`E0292`) and the CPU executor follow, so its
//! writes are not counted here; barriers themselves (`mbarrier`) are
//! synchronisation, not data. A `cp.async` is counted where it is issued:
//! the `async_wait` that lands it orders it for its own thread only, and
//! another thread still needs the `sync` after it. Where the walk cannot
//! decide (too many accesses, an expression it cannot evaluate), nothing is
//! said: coverage's walk, which has the same limits, already notes why.

use crate::diag::Diagnostic;
use crate::ir::{BufferId, BufferKind, Kernel, Scalar};

use super::codes;
use super::coverage::{SharedLayout, Writer as Who, describe_writer, element_name, sample_text};
use super::enumerate::{Follows, Observer, Visit, Walk, larger_sample, samples};

/// One access: by which pair, in which visit, in which barrier interval.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Access {
    interval: u32,
    who: Who,
}

/// What one shared element of one block remembers.
#[derive(Clone, Copy, Default)]
struct Element {
    write: Option<Access>,
    /// The last read, and whether another thread read it in the same
    /// interval too.
    read: Option<(Access, bool)>,
    /// The last write, when it was a `cp.async`: with the issuing thread's
    /// copy group it belongs to.
    copy: Option<(Who, u32)>,
}

/// The first race the walk found: the element's buffer and offset, the
/// earlier access, the later one, and whether the later one is the read.
type Race = (BufferId, i64, Access, Access, bool);

/// The first read of a `cp.async`'s element before it landed: the
/// element's buffer and offset, the copy, the read.
type EarlyRead = (BufferId, i64, Who, Who);

struct Tally<'l> {
    layout: &'l SharedLayout,
    elements: Vec<Element>,
    interval: u32,
    race: Option<Race>,
    /// Per pair: its `async_commit`s so far (the number of its open copy
    /// group), and the groups below which an `async_wait` saw complete.
    opened: Vec<u32>,
    landed: Vec<u32>,
    early: Option<EarlyRead>,
}

impl Tally<'_> {
    /// An access by `pair` in `visit`, now.
    fn access(&self, visit: usize, pair: usize) -> Access {
        Access {
            interval: self.interval,
            who: Who {
                pair: pair as u32,
                visit: visit as u32,
            },
        }
    }

    /// Where element `offset` of `buffer` of `pair`'s block is remembered.
    fn slot(&self, buffer: BufferId, pair: usize, offset: i64) -> Option<usize> {
        let start = self
            .layout
            .start
            .get(buffer.0 as usize)
            .copied()
            .flatten()?;
        let block = pair / self.layout.launch.block;
        let at = block * self.layout.per_block + start + usize::try_from(offset).ok()?;
        (at < self.elements.len()).then_some(at)
    }
}

/// Whether two accesses are ordered with no barrier: the same thread, or
/// lanes of one execution of a collective instruction.
fn together(visits: &[Visit<'_>], a: Who, b: Who) -> bool {
    let (first, second) = (&visits[a.visit as usize], &visits[b.visit as usize]);
    a.pair == b.pair || (first.execution == second.execution && first.collective)
}

impl Observer for Tally<'_> {
    fn write(
        &mut self,
        visits: &[Visit<'_>],
        visit: usize,
        buffer: BufferId,
        pair: usize,
        offset: i64,
    ) {
        if visits[visit].spec.kind.is_bulk_copy() {
            return;
        }
        let interval = self.interval;
        let now = self.access(visit, pair);
        let copy = visits[visit]
            .spec
            .kind
            .is_async_copy()
            .then(|| (now.who, self.opened[pair]));
        let mut found = None;
        let Some(at) = self.slot(buffer, pair, offset) else {
            return;
        };
        let element = &mut self.elements[at];
        if let Some((read, several)) = element.read
            && read.interval == interval
            && (several || !together(visits, read.who, now.who))
        {
            found = Some((buffer, offset, read, now, false));
        }
        element.write = Some(now);
        element.copy = copy;
        if self.race.is_none() {
            self.race = found;
        }
    }

    fn read(
        &mut self,
        visits: &[Visit<'_>],
        visit: usize,
        buffer: BufferId,
        pair: usize,
        offset: i64,
    ) {
        let interval = self.interval;
        let now = self.access(visit, pair);
        let mut found = None;
        let Some(at) = self.slot(buffer, pair, offset) else {
            return;
        };
        let element = &mut self.elements[at];
        // A collective read hands each lane elements other lanes name:
        // only a write of its own execution is ordered before it.
        let collective = visits[visit].collective;
        let unordered = |write: Access| {
            let same_execution =
                visits[write.who.visit as usize].execution == visits[visit].execution;
            write.interval == interval
                && if collective {
                    !same_execution
                } else {
                    !together(visits, write.who, now.who)
                }
        };
        if let Some(write) = element.write
            && unordered(write)
        {
            found = Some((buffer, offset, write, now, true));
        }
        // A copy lands when its own thread's `async_wait` sees its group
        // complete (a copy not yet committed is in no group a wait sees).
        let early = element
            .copy
            .filter(|(copier, group)| *group >= self.landed[copier.pair as usize])
            .map(|(copier, _)| (buffer, offset, copier, now.who));
        element.read = match element.read {
            Some((read, several)) if read.interval == interval => {
                Some((read, several || !together(visits, read.who, now.who)))
            }
            Some(_) | None => Some((now, false)),
        };
        if self.race.is_none() {
            self.race = found;
        }
        if self.early.is_none() {
            self.early = early;
        }
    }

    fn commit(&mut self, live: &[bool]) {
        for (opened, _) in self.opened.iter_mut().zip(live).filter(|(_, l)| **l) {
            *opened += 1;
        }
    }

    fn wait(&mut self, live: &[bool], pending: u32) {
        for ((landed, opened), _) in self
            .landed
            .iter_mut()
            .zip(&self.opened)
            .zip(live)
            .filter(|(_, l)| **l)
        {
            *landed = (*landed).max(opened.saturating_sub(pending));
        }
    }

    fn barrier(&mut self) {
        self.interval += 1;
    }
}

/// The race diagnostic of a checked kernel, if its walk finds one.
pub(super) fn check_races(kernel: &Kernel) -> Vec<Diagnostic> {
    let followed = |buffer: BufferId| {
        kernel
            .buffers
            .get(buffer.0 as usize)
            .is_some_and(|declared| {
                declared.kind == BufferKind::Shared && declared.ty.scalar != Scalar::Mbarrier
            })
    };
    let shares = (0..kernel.buffers.len()).any(|index| followed(BufferId(index as u32)));
    if kernel.root.body.is_none() || !shares {
        return Vec::new();
    }
    let Some(mut samples) = samples(kernel) else {
        return Vec::new();
    };
    if let Some(larger) = samples
        .first()
        .and_then(|first| larger_sample(kernel, first))
    {
        samples.push(larger);
    }
    for dims in samples {
        let Ok(layout) = SharedLayout::at(kernel, &dims) else {
            return Vec::new();
        };
        let pairs = layout.launch.grid * layout.launch.block;
        let mut tally = Tally {
            layout: &layout,
            elements: vec![Element::default(); layout.per_block * layout.launch.grid],
            interval: 0,
            race: None,
            opened: vec![0; pairs],
            landed: vec![0; pairs],
            early: None,
        };
        let follows = Follows {
            buffers: &followed,
            reads: true,
        };
        let Ok(visits) = Walk::run(kernel, &layout.launch, follows, &mut tally) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        if let Some(early) = tally.early {
            found.push(early_read(kernel, &layout, &visits, early, &dims));
        }
        if let Some(race) = tally.race {
            found.push(diagnostic(kernel, &layout, &visits, race, &dims));
        }
        if !found.is_empty() {
            return found;
        }
    }
    Vec::new()
}

fn early_read(
    kernel: &Kernel,
    layout: &SharedLayout,
    visits: &[Visit<'_>],
    (buffer, offset, copier, reader): EarlyRead,
    dims: &[i64],
) -> Diagnostic {
    let who = |who: Who| describe_writer(kernel, &layout.launch, visits, who);
    let span = |who: Who| visits[who.visit as usize].spec.span;
    let element = element_name(kernel, buffer, offset, dims);
    Diagnostic::error(
        codes::ASYNC_EARLY_READ,
        format!("`{element}` is read before the `cp.async` that writes it has landed"),
        span(reader),
    )
    .with_label(format!("read here by {}", who(reader)))
    .with_secondary(span(copier), format!("copied here by {}", who(copier)))
    .with_note(format!(
        "a `cp.async` lands when an `async_wait` of the thread that issued it sees its group \
         complete; its group closes at the next `async_commit`{}",
        sample_text(kernel, dims)
    ))
    .with_help(
        "close the copy's group with `async_commit`, then `async_wait(N)` with N no more than the \
         groups committed after it (and a `sync` when other threads read it)",
    )
}

fn diagnostic(
    kernel: &Kernel,
    layout: &SharedLayout,
    visits: &[Visit<'_>],
    (buffer, offset, earlier, later, later_reads): Race,
    dims: &[i64],
) -> Diagnostic {
    let who = |access: Access| describe_writer(kernel, &layout.launch, visits, access.who);
    let span = |access: Access| visits[access.who.visit as usize].spec.span;
    let element = element_name(kernel, buffer, offset, dims);
    let (message, label, secondary) = if later_reads {
        (
            format!(
                "a thread reads `{element}`, which another thread wrote, with no `sync` between"
            ),
            format!("read here by {}", who(later)),
            format!("written here by {}", who(earlier)),
        )
    } else {
        (
            format!(
                "a thread writes `{element}`, which another thread read, with no `sync` between"
            ),
            format!("written here by {}", who(later)),
            format!("read here by {}", who(earlier)),
        )
    };
    Diagnostic::error(codes::UNSYNCHRONISED_READ, message, span(later))
        .with_label(label)
        .with_secondary(span(earlier), secondary)
        .with_note(format!(
            "threads of a block see each other's shared writes only across a barrier{}",
            sample_text(kernel, dims)
        ))
        .with_help(
            "put a `sync` between the write and the read (after the `async_wait` of a `cp.async`)",
        )
}
