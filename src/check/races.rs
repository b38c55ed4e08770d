//! Stage 2, check: no thread reads a shared element that another thread of
//! its block wrote, or writes one that another read, between two barriers,
//! and none reads an element nothing in its block has written
//! (docs/language.md §5, "Coverage"); nor do two threads write one element
//! between two barriers (`E0282`).
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
//! another thread still needs the `sync` after it. A read of an element
//! that no write met so far in the walk reads nothing (`E0298`), unless a
//! bulk copy writes the element anywhere in the walk, or the kernel's
//! outermost spec takes the tensor as an input. Where the walk cannot
//! decide at a small sample (too many accesses even in one block, or an
//! expression it cannot evaluate), a note (`E0283`) says the races were not
//! checked, and the kernel is accepted. Blocks share no shared memory, so
//! where all of them do not fit the bound together the walk follows as many
//! as do: the first ones and the last ([`Blocks`]).

use crate::diag::Diagnostic;
use crate::ir::{BufferId, BufferKind, Kernel, Scalar};

use super::codes;
use super::coverage::{
    SharedLayout, Writer as Who, describe_writer, element_name, not_proved, sample_text,
};
use super::enumerate::{DEEPER, Follows, Observer, Undecided, Visit, Walk, larger_sample, samples};

/// One access: by which pair, in which visit, in which barrier interval.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Access {
    interval: u32,
    who: Who,
}

/// What one shared element of one block remembers.
#[derive(Clone, Copy, Default)]
struct Element {
    /// The last write ordered by barriers (a bulk copy's is not: it lands
    /// on its own barrier).
    write: Option<Access>,
    /// Whether anything wrote the element so far, a bulk copy included.
    written: bool,
    /// Whether a bulk copy wrote it: such a copy lands when its barrier
    /// completes, not where the walk meets it.
    bulk: bool,
    /// The first read while nothing had written the element yet.
    read_unwritten: Option<Who>,
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
    /// The walked blocks: each a slot of `per_block` elements.
    blocks: &'l Blocks,
    elements: Vec<Element>,
    interval: u32,
    race: Option<Race>,
    /// Per pair: its `async_commit`s so far (the number of its open copy
    /// group), and the groups below which an `async_wait` saw complete.
    opened: Vec<u32>,
    landed: Vec<u32>,
    early: Option<EarlyRead>,
    /// The shared tensors the kernel's outermost spec takes as inputs: they
    /// hold their values before the kernel starts.
    given: Vec<BufferId>,
    /// The first write of an element by a second thread in one barrier
    /// interval: the element's buffer and offset, the earlier write, the
    /// later.
    double: Option<(BufferId, i64, Who, Who)>,
    /// Reads and writes followed so far.
    accesses: u64,
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
        let block = self.blocks.slot(pair / self.layout.launch.block)?;
        let at = block * self.layout.per_block + start + usize::try_from(offset).ok()?;
        (at < self.elements.len()).then_some(at)
    }

    /// The earliest read (in the walk's order) of an element that nothing
    /// had written: the element's buffer and offset, and the reader. The
    /// walk meets ordinary writes in the order the block executes them
    /// (where it does not — the two branches of an `if` — the race rule
    /// sees the pair), so a read before all of them reads nothing; a bulk
    /// copy's writes land later than the walk meets them, so an element a
    /// bulk copy writes counts only when nothing ever writes it.
    fn first_unwritten_read(&self) -> Option<(BufferId, i64, Who)> {
        let (at, reader) = self
            .elements
            .iter()
            .enumerate()
            .filter(|(_, element)| !element.bulk)
            .filter_map(|(at, element)| Some((at, element.read_unwritten?)))
            .min_by_key(|(at, reader)| (reader.visit, reader.pair, *at))?;
        let within = at % self.layout.per_block;
        let (buffer, start) = self
            .layout
            .start
            .iter()
            .enumerate()
            .filter_map(|(index, start)| Some((BufferId(index as u32), (*start)?)))
            .filter(|(_, start)| *start <= within)
            .max_by_key(|(_, start)| *start)?;
        Some((buffer, (within - start) as i64, reader))
    }
}

/// The blocks the race walk follows. Blocks share no shared memory, so each
/// is checked on its own: all of them where their shared elements fit the
/// enumeration's bound together, else as many as fit — the first ones and
/// the last (a persistent kernel's blocks with 100 KB of shared memory
/// each).
struct Blocks {
    /// Blocks in the grid.
    grid: usize,
    /// Walked: blocks `0 .. first` and, when `last`, block `grid − 1`.
    first: usize,
    last: bool,
}

impl Blocks {
    /// The blocks of `layout` whose shared elements fit the bound
    /// together; `None` when not even one block's do.
    fn fitting(layout: &SharedLayout) -> Option<Blocks> {
        let fit = (super::enumerate::WRITE_BUDGET as usize) / layout.per_block.max(1);
        (fit > 0).then(|| Blocks::first(layout.launch.grid, fit))
    }

    /// Blocks `0 .. count − 1` and the last (all of them when `count` is
    /// the grid; block 0 alone when it is 1).
    fn first(grid: usize, count: usize) -> Blocks {
        if count >= grid {
            Blocks {
                grid,
                first: grid,
                last: false,
            }
        } else if count <= 1 {
            Blocks {
                grid,
                first: 1,
                last: false,
            }
        } else {
            Blocks {
                grid,
                first: count - 1,
                last: true,
            }
        }
    }

    fn walked(&self, block: usize) -> bool {
        self.slot(block).is_some()
    }

    /// The slot of a walked block's elements.
    fn slot(&self, block: usize) -> Option<usize> {
        if block < self.first {
            Some(block)
        } else if self.last && block + 1 == self.grid {
            Some(self.first)
        } else {
            None
        }
    }

    fn count(&self) -> usize {
        self.first + usize::from(self.last)
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
        self.accesses += 1;
        let Some(at) = self.slot(buffer, pair, offset) else {
            return;
        };
        self.elements[at].written = true;
        if visits[visit].spec.kind.is_bulk_copy() {
            self.elements[at].bulk = true;
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
        let element = &mut self.elements[at];
        if let Some((read, several)) = element.read
            && read.interval == interval
            && (several || !together(visits, read.who, now.who))
        {
            found = Some((buffer, offset, read, now, false));
        }
        if self.double.is_none()
            && let Some(write) = element.write
            && write.interval == interval
            && !together(visits, write.who, now.who)
        {
            self.double = Some((buffer, offset, write.who, now.who));
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
        self.accesses += 1;
        let interval = self.interval;
        let now = self.access(visit, pair);
        let mut found = None;
        let Some(at) = self.slot(buffer, pair, offset) else {
            return;
        };
        let given = self.given.contains(&buffer);
        let element = &mut self.elements[at];
        if !element.written && !given && element.read_unwritten.is_none() {
            element.read_unwritten = Some(now.who);
        }
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
    let larger = samples
        .first()
        .and_then(|first| larger_sample(kernel, first, DEEPER));
    samples.extend(larger.clone());
    for dims in samples {
        let best_effort = Some(&dims) == larger.as_ref();
        let layout = match SharedLayout::at(kernel, &dims) {
            Ok(layout) => layout,
            Err(why) => return not_checked(kernel, why, &dims, best_effort),
        };
        let Some(fitting) = Blocks::fitting(&layout) else {
            return not_checked(kernel, Undecided::TooLarge, &dims, best_effort);
        };
        // Where every block's shared elements fit the bound together, all
        // of them, unless their accesses are past it; else one block, then
        // as many as its accesses say fit (the first ones and the last).
        // At the deeper sample, whose grid the small ones already walked
        // block by block, the first block and the last: its point is the
        // loops' later iterations, which every block runs alike (the last
        // with its partial tiles).
        let walked = if best_effort {
            let ends = Blocks::first(layout.launch.grid, fitting.count().min(2));
            walk_blocks(kernel, &layout, &ends, &followed, &dims)
        } else if fitting.count() < layout.launch.grid {
            walk_by_first_block(kernel, &layout, &fitting, &followed, &dims)
        } else {
            match walk_blocks(kernel, &layout, &fitting, &followed, &dims) {
                Err(Undecided::TooLarge) if fitting.count() > 1 => {
                    walk_by_first_block(kernel, &layout, &fitting, &followed, &dims)
                }
                other => other,
            }
        };
        match walked {
            Ok((found, _)) if !found.is_empty() => return found,
            Ok(_) => {}
            Err(why) => return not_checked(kernel, why, &dims, best_effort),
        }
    }
    Vec::new()
}

/// Walks block 0 alone, then — where it found nothing — as many of the
/// `fitting` blocks as a quarter of the bound allows at block 0's accesses
/// (a quarter: the walks of large kernels stay within a compile's time).
fn walk_by_first_block(
    kernel: &Kernel,
    layout: &SharedLayout,
    fitting: &Blocks,
    followed: &dyn Fn(BufferId) -> bool,
    dims: &[i64],
) -> Result<(Vec<Diagnostic>, u64), Undecided> {
    let one = Blocks::first(layout.launch.grid, 1);
    let (found, accesses) = walk_blocks(kernel, layout, &one, followed, dims)?;
    let fit = (super::enumerate::WRITE_BUDGET / 4 / accesses.max(1)) as usize;
    if !found.is_empty() || fit < 2 {
        return Ok((found, accesses));
    }
    let more = Blocks::first(layout.launch.grid, fit.min(fitting.count()));
    walk_blocks(kernel, layout, &more, followed, dims)
}

/// Walks the kernel's `blocks` at `dims`: the race and early-read
/// diagnostics it finds, and the accesses it followed.
fn walk_blocks(
    kernel: &Kernel,
    layout: &SharedLayout,
    blocks: &Blocks,
    followed: &dyn Fn(BufferId) -> bool,
    dims: &[i64],
) -> Result<(Vec<Diagnostic>, u64), Undecided> {
    let pairs = layout.launch.grid * layout.launch.block;
    let mut tally = Tally {
        layout,
        blocks,
        elements: vec![Element::default(); layout.per_block * blocks.count()],
        interval: 0,
        race: None,
        opened: vec![0; pairs],
        landed: vec![0; pairs],
        early: None,
        given: kernel.root.inputs.iter().map(|view| view.buffer).collect(),
        double: None,
        accesses: 0,
    };
    let walked = |block: usize| blocks.walked(block);
    let follows = Follows {
        buffers: followed,
        reads: true,
        blocks: &walked,
    };
    let visits = Walk::run(kernel, &layout.launch, follows, &mut tally)?;
    let mut found = Vec::new();
    if let Some(early) = tally.early {
        found.push(early_read(kernel, layout, &visits, early, dims));
    }
    if let Some(race) = tally.race {
        found.push(diagnostic(kernel, layout, &visits, race, dims));
    }
    if let Some(double) = tally.double {
        found.push(unsynchronised_writes(kernel, layout, &visits, double, dims));
    }
    if let Some(unwritten) = tally.first_unwritten_read() {
        found.push(unwritten_read(kernel, layout, &visits, unwritten, dims));
    }
    Ok((found, tally.accesses))
}

/// Where the walk cannot decide at one of the small samples, a note says
/// that the races were not checked (and why); at the larger, best-effort
/// sample nothing is said, since the small ones were decided.
fn not_checked(
    kernel: &Kernel,
    why: Undecided,
    dims: &[i64],
    best_effort: bool,
) -> Vec<Diagnostic> {
    if best_effort {
        return Vec::new();
    }
    let reason = match why {
        Undecided::TooLarge => format!(
            "too large to enumerate (more than {} accesses, or shared memory of every block{})",
            super::enumerate::WRITE_BUDGET,
            sample_text(kernel, dims)
        ),
        Undecided::Unevaluable(reason) => format!("cannot evaluate {reason}"),
    };
    vec![not_proved(
        kernel,
        format!("races not checked: {reason}"),
        "whether threads race on shared memory was not checked",
    )]
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

/// `E0298`: a shared element read before anything in its block wrote it.
fn unwritten_read(
    kernel: &Kernel,
    layout: &SharedLayout,
    visits: &[Visit<'_>],
    (buffer, offset, reader): (BufferId, i64, Who),
    dims: &[i64],
) -> Diagnostic {
    let element = element_name(kernel, buffer, offset, dims);
    Diagnostic::error(
        codes::UNWRITTEN_SHARED_READ,
        format!("`{element}` is read before anything in its block wrote it"),
        visits[reader.visit as usize].spec.span,
    )
    .with_label(format!(
        "read here by {}",
        describe_writer(kernel, &layout.launch, visits, reader)
    ))
    .with_note(format!(
        "shared memory holds whatever an earlier block left there until a spec of this block \
         writes it; no spec of this block wrote this element before this read{}",
        sample_text(kernel, dims)
    ))
    .with_help(
        "read only the elements the block writes (a tile index or extent past the ones copied \
         in?), or write this one first",
    )
}

/// `E0282`: two threads of a block write one shared element in one barrier
/// interval, `earlier` then `later`.
fn unsynchronised_writes(
    kernel: &Kernel,
    layout: &SharedLayout,
    visits: &[Visit<'_>],
    (buffer, offset, earlier, later): (BufferId, i64, Who, Who),
    dims: &[i64],
) -> Diagnostic {
    let who = |who: Who| describe_writer(kernel, &layout.launch, visits, who);
    let element = element_name(kernel, buffer, offset, dims);
    Diagnostic::error(
        codes::UNSYNCHRONISED_WRITES,
        format!("two threads write `{element}` with no `sync` between"),
        visits[later.visit as usize].spec.span,
    )
    .with_label(format!("written here by {}", who(later)))
    .with_secondary(
        visits[earlier.visit as usize].spec.span,
        format!("and here by {}", who(earlier)),
    )
    .with_note(format!(
        "threads of a block that write one shared element race unless a barrier orders them{}",
        sample_text(kernel, dims)
    ))
    .with_help("give each thread its own elements, or put a `sync` between the two writes")
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
