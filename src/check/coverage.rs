//! Stage 2, check: a decomposition writes every element of its output
//! exactly once (docs/language.md §5, "Coverage").
//!
//! The kernel is walked ([`super::enumerate`]) at sample values of its dims,
//! following the outermost spec's output. Each
//! element of the output must be written, and by one thread only: a second
//! overwriting write (`Move`, `Init`, a pointwise or reduction spec) of the
//! same element is a double write, wherever it comes from; an accumulating
//! `MatMul` may add into an element many times (over its reduction loop),
//! but only from the thread that owns it — a second thread adding in is a
//! lost update. Lanes of one collective instruction that name an element
//! together write it once. An accumulating store (`Move<add>`, an atomic
//! read-modify-write) commutes with other such stores: any number of
//! threads, of any blocks, may add into one element — a split K's partial
//! sums — provided that the outermost spec accumulates (`C = C + A·B`, so
//! the old value belongs in the sum) and that nothing overwrites the
//! element beside the adds (whose order against them is undefined). When
//! the walk cannot decide, a note says why; nothing is rejected on a guess.
//! (Two threads writing one shared element between barriers is the race
//! walk's, `super::races`, which walks every kernel.)

use crate::diag::{Diagnostic, Span};
use crate::expr::Var;
use crate::ir::{BufferId, BufferKind, Kernel, SpecKind, View};
use crate::layout::Swizzle;

use super::codes;
use super::enumerate::{
    Follows, LARGER, Launch, Observer, Undecided, Visit, Walk, larger_sample, level_offsets,
    samples,
};

/// The most elements listed as never written.
const SHOWN_MISSING: usize = 3;

/// One write: by which `(block, thread)` pair, in which visit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Writer {
    pub pair: u32,
    pub visit: u32,
}

/// The elements of a view: which element lives at each buffer offset, and
/// how to name it.
struct Elements {
    /// The elements' offsets, in element order.
    offsets: Vec<i64>,
    /// Each mode's extent, innermost level first, first mode first.
    extents: Vec<i64>,
    /// Modes per level, innermost level first.
    modes: Vec<usize>,
    /// `%name`.
    name: String,
}

impl Elements {
    fn of(
        kernel: &Kernel,
        view: &View,
        swizzle: Option<Swizzle>,
        dims: &[i64],
    ) -> Result<Elements, Undecided> {
        let env = |var: Var| match var {
            Var::Dim(dim) => dims.get(dim as usize).copied(),
            Var::ThreadId | Var::BlockId | Var::Loop(_) => None,
        };
        let (relative, extents) = level_offsets(&view.ty.levels, &env)?;
        let base = view
            .base
            .eval(&env)
            .map_err(|error| Undecided::Unevaluable(format!("`{}`: {error}", view.base)))?;
        let offsets: Vec<i64> = relative
            .iter()
            .map(|offset| {
                let unswizzled = base + offset;
                swizzle.map_or(unswizzled, |s| s.apply(unswizzled))
            })
            .collect();
        if offsets.iter().any(|offset| *offset < 0) {
            return Err(Undecided::Unevaluable(format!(
                "the offsets of {} (one is negative)",
                view_name(kernel, view.buffer)
            )));
        }
        let modes = view
            .ty
            .levels
            .iter()
            .rev()
            .map(|level| level.shape.modes().len())
            .collect();
        Ok(Elements {
            name: view_name(kernel, view.buffer),
            offsets,
            extents,
            modes,
        })
    }

    /// The first element at `offset` (a search: for naming one element).
    fn index(&self, offset: i64) -> Option<usize> {
        self.offsets.iter().position(|at| *at == offset)
    }

    /// Element `index` as written in the language: `%x[i, j]`, one bracket
    /// per level, outermost first.
    fn describe(&self, index: usize) -> String {
        let mut rest = index as i64;
        let mut coordinates: Vec<i64> = Vec::with_capacity(self.extents.len());
        for extent in &self.extents {
            coordinates.push(rest % extent);
            rest /= extent;
        }
        let mut levels = Vec::new();
        let mut at = 0;
        for count in &self.modes {
            let level: Vec<String> = coordinates[at..at + count]
                .iter()
                .map(i64::to_string)
                .collect();
            levels.push(format!("[{}]", level.join(", ")));
            at += count;
        }
        levels.reverse();
        format!("{}{}", self.name, levels.concat())
    }
}

fn view_name(kernel: &Kernel, buffer: BufferId) -> String {
    kernel
        .buffers
        .get(buffer.0 as usize)
        .map_or_else(String::new, |buffer| format!("%{}", buffer.name))
}

/// The state of one offset of the output buffer, packed in a `u64` so the
/// walk touches one word per write: outside the output, not yet written,
/// or the first writer (`pair << 32 | visit`).
const OUTSIDE: u64 = u64::MAX;
const UNWRITTEN: u64 = u64::MAX - 1;

fn pack(writer: Writer) -> u64 {
    (u64::from(writer.pair) << 32) | u64::from(writer.visit)
}

fn unpack(word: u64) -> Writer {
    Writer {
        pair: (word >> 32) as u32,
        visit: word as u32,
    }
}

/// What the walk found.
struct Tally {
    output: BufferId,
    /// Each offset of the output buffer: [`OUTSIDE`], [`UNWRITTEN`] or
    /// its first writer.
    first: Vec<u64>,
    double: Option<(i64, Writer, Writer)>,
    /// Whether the outermost spec adds into its output, so that an
    /// accumulating store's old value belongs in the sum.
    accumulates: bool,
    /// An accumulating store into an output the outermost spec overwrites.
    stray_add: Option<(i64, Writer)>,
    /// An element both added into and overwritten: the earlier and the
    /// later write.
    mixed: Option<(i64, Writer, Writer)>,
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
        let writer = Writer {
            pair: pair as u32,
            visit: visit as u32,
        };
        // Lanes of one collective instruction write an element they share once.
        let together = |earlier: Writer| earlier.visit == writer.visit && visits[visit].collective;
        if buffer == self.output
            && let Some(word) = usize::try_from(offset)
                .ok()
                .and_then(|at| self.first.get_mut(at))
        {
            let atomic = visits[visit].spec.kind.adds_atomically();
            if atomic && !self.accumulates && *word != OUTSIDE && self.stray_add.is_none() {
                self.stray_add = Some((offset, writer));
            }
            match *word {
                OUTSIDE => {}
                UNWRITTEN => *word = pack(writer),
                packed => {
                    let earlier = unpack(packed);
                    let earlier_atomic = visits[earlier.visit as usize].spec.kind.adds_atomically();
                    if atomic || earlier_atomic {
                        // Atomic adds commute with each other, with nothing else.
                        if !(atomic && earlier_atomic) && self.mixed.is_none() {
                            self.mixed = Some((offset, earlier, writer));
                        }
                    } else {
                        let adds = visits[visit].spec.kind.accumulates();
                        let same_thread = earlier.pair == writer.pair;
                        // An accumulating write by the owning thread adds; anything else repeats.
                        let repeated = !(together(earlier) || (same_thread && adds));
                        if repeated && self.double.is_none() {
                            self.double = Some((offset, earlier, writer));
                        }
                    }
                }
            }
        }
    }

    fn barrier(&mut self) {}
}

/// The coverage and race diagnostics of a checked kernel: errors where the
/// walk shows a fault, a note where it cannot decide, nothing otherwise.
pub(super) fn check_writes(kernel: &Kernel) -> Vec<Diagnostic> {
    let Some(body_owner) = kernel.root.body.as_ref().map(|_| &kernel.root) else {
        return Vec::new();
    };
    if !promises_every_element(&body_owner.kind) {
        return Vec::new();
    }
    let Some(samples) = samples(kernel) else {
        return vec![undecided(
            kernel,
            "no values of the dims meet the launch requirements when each is set alone",
        )];
    };
    for dims in &samples {
        for output in &body_owner.outputs {
            match check_sample(kernel, output, dims) {
                Ok(found) if found.is_empty() => {}
                Ok(found) => return found,
                Err(Undecided::TooLarge) => {
                    return vec![undecided(
                        kernel,
                        &format!(
                            "too large to enumerate (more than {} writes{})",
                            super::enumerate::WRITE_BUDGET,
                            sample_text(kernel, dims)
                        ),
                    )];
                }
                Err(Undecided::Unevaluable(reason)) => {
                    return vec![undecided(kernel, &format!("cannot evaluate {reason}"))];
                }
            }
        }
    }
    if let Some(dims) = samples
        .first()
        .and_then(|first| larger_sample(kernel, first, LARGER))
    {
        for output in &body_owner.outputs {
            if let Ok(found) = check_sample(kernel, output, &dims)
                && !found.is_empty()
            {
                return found;
            }
        }
    }
    Vec::new()
}

fn check_sample(
    kernel: &Kernel,
    output: &View,
    dims: &[i64],
) -> Result<Vec<Diagnostic>, Undecided> {
    let SharedLayout { launch, .. } = SharedLayout::at(kernel, dims)?;
    let elements = Elements::of(kernel, output, output.ty.swizzle, dims)?;
    let top = elements.offsets.iter().copied().max().unwrap_or(0);
    if top as u64 >= super::enumerate::WRITE_BUDGET {
        return Err(Undecided::TooLarge);
    }
    let mut first = vec![OUTSIDE; top as usize + 1];
    for offset in &elements.offsets {
        first[*offset as usize] = UNWRITTEN;
    }
    let mut tally = Tally {
        output: output.buffer,
        first,
        double: None,
        accumulates: kernel.root.kind.accumulates(),
        stray_add: None,
        mixed: None,
    };
    let followed = |buffer: BufferId| buffer == output.buffer;
    let follows = Follows {
        buffers: &followed,
        reads: false,
        blocks: &|_| true,
    };
    let visits = Walk::run(kernel, &launch, follows, &mut tally)?;
    let writer = |who: Writer| describe_writer(kernel, &launch, &visits, who);
    let at = sample_text(kernel, dims);
    let mut found = Vec::new();
    if let Some((offset, earlier, later)) = tally.double {
        let index = elements.index(offset).unwrap_or(0);
        found.push(
            Diagnostic::error(
                codes::WRITTEN_TWICE,
                format!("`{}` is written twice", elements.describe(index)),
                visits[later.visit as usize].spec.span,
            )
            .with_label(format!("written again here by {}", writer(later)))
            .with_secondary(
                visits[earlier.visit as usize].spec.span,
                format!("first written here by {}", writer(earlier)),
            )
            .with_note(format!(
                "a decomposition writes each element of its output exactly once \
                 (a `MatMul` adds into its elements from the one thread that owns them){at}"
            ))
            .with_help("check how the tiles are assigned to blocks, threads and loop iterations"),
        );
    }
    found.extend(add_diagnostics(
        kernel, &tally, &visits, &elements, &writer, &at,
    ));
    let missing: Vec<usize> = (0..elements.offsets.len())
        .filter(|index| tally.first[elements.offsets[*index] as usize] == UNWRITTEN)
        .collect();
    if !missing.is_empty() {
        let mut shown: Vec<String> = missing
            .iter()
            .take(SHOWN_MISSING)
            .map(|index| elements.describe(*index))
            .collect();
        if missing.len() > SHOWN_MISSING {
            shown.push("…".to_string());
        }
        found.push(
            Diagnostic::error(
                codes::NOT_COVERED,
                format!(
                    "the decomposition leaves {} of the {} elements of `{}` unwritten",
                    missing.len(),
                    elements.offsets.len(),
                    elements.name
                ),
                output.span,
            )
            .with_label(format!("never written: {}", shown.join(", ")))
            .with_note(format!(
                "a decomposition writes each element of its output exactly once, \
                 across its blocks, threads and loop iterations{at}"
            ))
            .with_help("check the launch groups' sizes against the tiles they are given"),
        );
    }
    Ok(found)
}

/// The launch at one sample of the dims, and the shared buffers of a block
/// laid side by side: what a walk that follows shared memory indexes.
pub(super) struct SharedLayout {
    pub launch: Launch,
    /// Where each shared buffer's elements start (`None`: not shared).
    pub start: Vec<Option<usize>>,
    /// The shared elements of one block.
    pub per_block: usize,
}

impl SharedLayout {
    pub(super) fn at(kernel: &Kernel, dims: &[i64]) -> Result<SharedLayout, Undecided> {
        let env = |var: Var| match var {
            Var::Dim(dim) => dims.get(dim as usize).copied(),
            Var::ThreadId | Var::BlockId | Var::Loop(_) => None,
        };
        let size = |levels: &[crate::ir::Level]| -> Result<usize, Undecided> {
            let (offsets, _) = level_offsets(levels, &env)?;
            Ok(offsets.len())
        };
        let launch = Launch {
            dims: dims.to_vec(),
            grid: size(&kernel.grid.levels)?,
            block: size(&kernel.block.levels)?,
        };
        let mut start = vec![None; kernel.buffers.len()];
        let mut per_block = 0usize;
        for (index, buffer) in kernel.buffers.iter().enumerate() {
            if buffer.kind == BufferKind::Shared {
                let elements = buffer.elements.eval(&env).map_err(|error| {
                    Undecided::Unevaluable(format!("`{}`: {error}", buffer.elements))
                })?;
                start[index] = Some(per_block);
                per_block += usize::try_from(elements).unwrap_or(0);
            }
        }
        Ok(SharedLayout {
            launch,
            start,
            per_block,
        })
    }
}

/// Element `offset` of a buffer as written in the language (`%tile[3, 0]`),
/// or the offset itself where it cannot be told.
pub(super) fn element_name(kernel: &Kernel, buffer: BufferId, offset: i64, dims: &[i64]) -> String {
    match kernel.buffers.get(buffer.0 as usize) {
        Some(declared) => {
            let declared_view = View {
                buffer,
                base: crate::expr::Expr::Const(0),
                ty: declared.ty.clone(),
                bounds: Vec::new(),
                span: declared.span,
            };
            Elements::of(kernel, &declared_view, declared.ty.swizzle, dims)
                .ok()
                .and_then(|all| all.index(offset).map(|index| all.describe(index)))
                .unwrap_or_else(|| format!("%{} at offset {offset}", declared.name))
        }
        None => format!("offset {offset}"),
    }
}

/// The faults of accumulating stores (`Move<add>`) the walk found: an add
/// into an output the outermost spec overwrites, or an element both added
/// into and overwritten.
fn add_diagnostics(
    kernel: &Kernel,
    tally: &Tally,
    visits: &[Visit<'_>],
    elements: &Elements,
    writer: &dyn Fn(Writer) -> String,
    at: &str,
) -> Vec<Diagnostic> {
    let span = |who: Writer| visits[who.visit as usize].spec.span;
    let name = |offset: i64| elements.describe(elements.index(offset).unwrap_or(0));
    let mut found = Vec::new();
    if let Some((offset, who)) = tally.stray_add {
        found.push(
            Diagnostic::error(
                codes::ADD_NOT_ACCUMULATED,
                format!(
                    "`{}` is added into, but the outermost `{}` overwrites its output",
                    name(offset),
                    kernel.root.kind
                ),
                span(who),
            )
            .with_label(format!("an accumulating store, by {}", writer(who)))
            .with_note(format!(
                "the element's old value stays in the sum; only an accumulating `MatMul` (`C = C + A·B`) states that{at}"
            ))
            .with_help("drop `<overwrite>` from the outermost `MatMul`, or store with a plain `Move`"),
        );
    }
    if let Some((offset, earlier, later)) = tally.mixed {
        found.push(
            Diagnostic::error(
                codes::ADD_NOT_ACCUMULATED,
                format!("`{}` is both added into and overwritten", name(offset)),
                span(later),
            )
            .with_label(format!("written here by {}", writer(later)))
            .with_secondary(
                span(earlier),
                format!("and here by {}", writer(earlier)),
            )
            .with_note(format!(
                "accumulating stores (`Move<add>`) commute with each other only: the result of an overwrite beside them depends on an order no barrier sets{at}"
            ))
            .with_help("write the element with `Move<add>` only (the caller zeroes the output first)"),
        );
    }
    found
}

/// `block B, thread T (k = 1, i = 0)`.
pub(super) fn describe_writer(
    kernel: &Kernel,
    launch: &Launch,
    visits: &[Visit<'_>],
    who: Writer,
) -> String {
    let mut text = format!(
        "block {}, thread {}",
        who.pair as usize / launch.block,
        who.pair as usize % launch.block
    );
    let loops: Vec<String> = visits[who.visit as usize]
        .loops
        .iter()
        .map(|(var, value)| {
            let name = kernel
                .loops
                .get(*var as usize)
                .map_or("?", |named| named.name.as_str());
            format!("{name} = {value}")
        })
        .collect();
    if !loops.is_empty() {
        text.push_str(&format!(" ({})", loops.join(", ")));
    }
    text
}

/// `"; checked with B = 1, K = 64"`, or nothing for a kernel without dims.
pub(super) fn sample_text(kernel: &Kernel, dims: &[i64]) -> String {
    if dims.is_empty() {
        return String::new();
    }
    let values: Vec<String> = kernel
        .dims
        .iter()
        .zip(dims)
        .map(|(dim, value)| format!("{} = {value}", dim.name))
        .collect();
    format!("; checked with {}", values.join(", "))
}

fn undecided(kernel: &Kernel, reason: &str) -> Diagnostic {
    not_proved(
        kernel,
        format!("coverage not proved: {reason}"),
        "whether each element is written once was not checked",
    )
}

/// A note at the kernel's first output (or its outermost spec) that a
/// property of its decomposition was not proved.
pub(super) fn not_proved(kernel: &Kernel, message: String, label: &str) -> Diagnostic {
    let span: Span = kernel
        .root
        .outputs
        .first()
        .map_or(kernel.root.span, |output| output.span);
    Diagnostic::new(
        crate::diag::Severity::Note,
        codes::COVERAGE_NOT_PROVED,
        message,
        span,
    )
    .with_label(label)
}

/// Whether a spec's meaning is "every element of the output written", which
/// its decomposition must then do exactly once. The generic `Spec` has no
/// built-in contract (docs/language.md §5): what it writes is its
/// decomposition's business, so coverage is not asked of it; nor of `Shfl`,
/// whose output is each lane's own value.
/// Whether the coverage walk judges a kernel whose outermost spec is of
/// `kind` (the generic `Spec` promises nothing of its outputs).
fn promises_every_element(kind: &SpecKind) -> bool {
    match kind {
        SpecKind::Move { .. }
        | SpecKind::MatMul { .. }
        | SpecKind::Unary(_)
        | SpecKind::Binary(_)
        | SpecKind::Ternary(_)
        | SpecKind::Select(_)
        | SpecKind::Reduction { .. }
        | SpecKind::Init { .. } => true,
        SpecKind::Shfl { .. } | SpecKind::Generic => false,
    }
}
