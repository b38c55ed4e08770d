//! Stage 2, check: a shared tile a bulk copy writes is read only once the
//! copy has landed — after a wait on its barrier that waits for it
//! (`E0292`; docs/language.md, "Bulk tensor copies and barriers").
//!
//! The read-before-wait rule follows buffers, not stages: a `Move<tma>`
//! puts its destination buffer in flight on its barrier's buffer, a wait on
//! any element of that barrier buffer lands every copy in flight on it.
//! Other threads copy too (a producer warp fills what consumer warps read),
//! so every buffer some `Move<tma>` of the kernel writes starts in flight,
//! and one that a copy inside a loop refills goes back in flight at the top
//! of each turn of a loop that waits on its barrier: each turn's reads rest
//! on that turn's wait (a tile copied once, like attention's Q, stays
//! landed). A wait for parity 1 on a barrier element this path has not
//! waited on before passes at once — a fresh barrier's phase before the
//! first counts as complete — and lands nothing. A loop whose first value
//! and step are constants is followed turn by turn for its first turns (all
//! of them where its bound is a constant and they are few), its variable
//! bound, which decides conditions like `k == 0` and the element and parity
//! of a wait, then once for all its other turns; other loops are followed
//! twice; branches on both arms, joined by union — as `pending.rs` does for
//! multiplies. A program that waits on stage `s` and reads stage `s + 1`
//! passes here; the CPU executor catches it.

use std::collections::{BTreeMap, BTreeSet};

use crate::diag::{Diagnostic, Span};
use crate::expr::{Expr, Var};
use crate::ir::{BufferId, Cond, ForStmt, Kernel, Stmt, View};

use super::codes;

/// The budget of statements one kernel's read-before-wait walk visits.
const VISIT_BUDGET: usize = 1 << 20;

/// Reports into `found` each shared buffer read while a bulk copy may
/// still be writing it: `copied` is every buffer a `Move<tma>` writes (with
/// its barrier buffer and first copy), `refilled` those a copy inside a
/// loop writes.
pub(super) fn early_reads(
    kernel: &Kernel,
    copied: &InFlight,
    refilled: &BTreeSet<BufferId>,
    found: &mut Vec<Diagnostic>,
) {
    let mut walk = EarlyReads {
        kernel,
        found,
        reported: BTreeSet::new(),
        budget: VISIT_BUDGET,
        copied,
        refilled,
        turns: Vec::new(),
    };
    if let Some(body) = &kernel.root.body {
        walk.block(
            body,
            Path {
                flight: copied.clone(),
                waited: BTreeSet::new(),
                passed: BTreeMap::new(),
            },
        );
    }
}

/// Shared buffers a `Move<tma>` may still be writing: each with its
/// barrier buffer and the copy that put it in flight.
pub(super) type InFlight = BTreeMap<BufferId, (BufferId, Span)>;

/// What the walk knows at a point of one path.
#[derive(Clone)]
struct Path {
    /// The buffers in flight.
    flight: InFlight,
    /// The barriers this path has waited on, by buffer and element (`None`:
    /// an element the walk could not tell, which counts as every one); on
    /// some path to here: a barrier is fresh only where no path waited on it.
    waited: BTreeSet<(BufferId, Option<i64>)>,
    /// Barrier buffers whose last wait on this path passed at once (parity
    /// 1 on a fresh barrier), with that wait: what a read it did not order
    /// is told.
    passed: BTreeMap<BufferId, Span>,
}

/// The read-before-wait walk (the module's comment).
struct EarlyReads<'k, 'f> {
    kernel: &'k Kernel,
    found: &'f mut Vec<Diagnostic>,
    reported: BTreeSet<BufferId>,
    budget: usize,
    /// Every buffer a `Move<tma>` writes, with its barrier buffer.
    copied: &'k InFlight,
    /// Those a `Move<tma>` inside a loop writes.
    refilled: &'k BTreeSet<BufferId>,
    /// The loops whose turns are being walked one by one: each variable
    /// with its value in the turn.
    turns: Vec<(u32, i64)>,
}

/// How many turns of a loop with constant first value and step the walk
/// follows one by one, its variable bound, before one turn for all the rest.
const TURNS: i64 = 8;

impl EarlyReads<'_, '_> {
    fn block(&mut self, stmts: &[Stmt], mut path: Path) -> Path {
        for stmt in stmts {
            if self.budget == 0 {
                return path;
            }
            self.budget -= 1;
            path = self.stmt(stmt, path);
        }
        path
    }

    fn stmt(&mut self, stmt: &Stmt, mut path: Path) -> Path {
        match stmt {
            Stmt::Spec(spec) => match &spec.body {
                Some(body) => self.block(body, path),
                None => {
                    let copy = spec.kind.is_bulk_copy();
                    let reads = if copy {
                        &spec.inputs[..1]
                    } else {
                        &spec.inputs[..]
                    };
                    for view in reads
                        .iter()
                        .chain(if copy { &[][..] } else { &spec.outputs[..] })
                    {
                        if let Some((barrier, issued)) = path.flight.get(&view.buffer) {
                            self.early(view, *issued, path.passed.get(barrier).copied());
                        }
                    }
                    if let (true, Some(out), Some(barrier)) =
                        (copy, spec.outputs.first(), spec.inputs.get(1))
                    {
                        path.flight.insert(out.buffer, (barrier.buffer, spec.span));
                    }
                    path
                }
            },
            Stmt::For(each) => self.turns_of(each, path),
            Stmt::If(branch) => match self.decided(&branch.cond) {
                // In a loop's first turn `if (k == 0)` is decided.
                Some(true) => self.block(&branch.then_body, path),
                Some(false) => self.block(&branch.else_body, path),
                None => {
                    let then = self.block(&branch.then_body, path.clone());
                    let otherwise = self.block(&branch.else_body, path);
                    union(then, otherwise)
                }
            },
            Stmt::WaitPhase {
                barrier,
                parity,
                span,
            } => {
                let element = self.value(&barrier.base);
                let fresh = !path.waited.iter().any(|(buffer, waited)| {
                    *buffer == barrier.buffer
                        && (element.is_none() || waited.is_none() || *waited == element)
                });
                path.waited.insert((barrier.buffer, element));
                if fresh
                    && self
                        .value(parity)
                        .is_some_and(|value| value.rem_euclid(2) == 1)
                {
                    path.passed.insert(barrier.buffer, *span);
                } else {
                    path.flight.retain(|_, (on, _)| *on != barrier.buffer);
                    path.passed.remove(&barrier.buffer);
                }
                path
            }
            Stmt::Sync { .. }
            | Stmt::Commit { .. }
            | Stmt::Wait { .. }
            | Stmt::Arrive { .. }
            | Stmt::SetMaxRegisters { .. } => path,
        }
    }

    /// A loop: its first turns one by one, where its first value and step
    /// are constants (all of them, where its bound is too and they are at
    /// most [`TURNS`]), then one turn for all the others, each turn's reads
    /// resting on that turn's wait.
    fn turns_of(&mut self, each: &ForStmt, path: Path) -> Path {
        let waited_inside = waits_in(&each.body);
        let (copied, refilled) = (self.copied, self.refilled);
        let top = |mut state: Path| {
            for (buffer, entry) in copied {
                if refilled.contains(buffer) && waited_inside.contains(&entry.0) {
                    state.flight.insert(*buffer, *entry);
                }
            }
            state
        };
        let mut out = path.clone();
        let mut state = path;
        let (lo, step, hi) = (
            self.value(&each.lo),
            self.value(&each.step),
            self.value(&each.hi),
        );
        if let (Some(lo), Some(step)) = (lo, step.filter(|step| *step > 0)) {
            for turn in 0..TURNS {
                // A value past i64 is past any bound: the rest is one turn.
                let Some(value) = turn.checked_mul(step).and_then(|past| lo.checked_add(past))
                else {
                    break;
                };
                if hi.is_some_and(|hi| value >= hi) {
                    return out;
                }
                if turn > 0 {
                    state = top(state);
                }
                self.turns.push((each.var, value));
                state = self.block(&each.body, state);
                self.turns.pop();
                out = union(out, state.clone());
            }
        } else {
            state = self.block(&each.body, state);
            out = union(out, state.clone());
        }
        let rest = self.block(&each.body, top(state));
        union(out, rest)
    }

    /// `e` where the loops whose turns are walked one by one decide it.
    fn value(&self, e: &Expr) -> Option<i64> {
        e.eval(&|var| match var {
            Var::Loop(id) => self
                .turns
                .iter()
                .rev()
                .find(|(loop_var, _)| *loop_var == id)
                .map(|(_, value)| *value),
            _ => None,
        })
        .ok()
    }

    /// `cond`, where the loops whose turns are walked one by one decide it.
    fn decided(&self, cond: &Cond) -> Option<bool> {
        if self.turns.is_empty() {
            return None;
        }
        let bind = |e: &Expr| e.substitute(&|var| self.value(&Expr::var(var)).map(Expr::constant));
        cond.map_sides(&bind).known()
    }

    /// Reports `view` read while a copy may be writing it; `passed` is the
    /// wait that came between but passed at once, if one did.
    fn early(&mut self, view: &View, issued: Span, passed: Option<Span>) {
        if !self.reported.insert(view.buffer) {
            return;
        }
        let name = self
            .kernel
            .buffers
            .get(view.buffer.0 as usize)
            .map_or("?", |buffer| buffer.name.as_str());
        let diagnostic = Diagnostic::error(
            codes::TMA_EARLY_READ,
            format!("%{name} used while a `Move<tma>` may still be writing it"),
            view.span,
        );
        let diagnostic = match passed {
            None => diagnostic
                .with_label("no `mbarrier_wait` on the copy's barrier comes between")
                .with_secondary(
                    issued,
                    "the copy, which lands when its barrier's phase completes",
                )
                .with_help(
                    "wait for the phase first: `mbarrier_wait(%full[s], (k / STAGES) % 2)`",
                ),
            Some(wait) => diagnostic
                .with_label("the wait before it does not wait for the copy")
                .with_secondary(
                    wait,
                    "a wait for parity 1 on a barrier not waited on before: it passes at once",
                )
                .with_note(
                    "a fresh barrier is in phase 0 and the phase before it counts as complete, \
                     so the first wait for parity 1 passes without waiting for anything",
                )
                .with_help(
                    "the i-th use of a stage waits for parity i, from 0: `mbarrier_wait(%full[k % STAGES], k / STAGES)`",
                ),
        };
        self.found.push(diagnostic);
    }
}

/// The barrier buffers waited on anywhere in `stmts`.
fn waits_in(stmts: &[Stmt]) -> BTreeSet<BufferId> {
    let mut found = BTreeSet::new();
    for stmt in stmts {
        match stmt {
            Stmt::Spec(spec) => {
                if let Some(body) = &spec.body {
                    found.extend(waits_in(body));
                }
            }
            Stmt::For(each) => found.extend(waits_in(&each.body)),
            Stmt::If(branch) => {
                found.extend(waits_in(&branch.then_body));
                found.extend(waits_in(&branch.else_body));
            }
            Stmt::WaitPhase { barrier, .. } => {
                found.insert(barrier.buffer);
            }
            Stmt::Sync { .. }
            | Stmt::Commit { .. }
            | Stmt::Wait { .. }
            | Stmt::Arrive { .. }
            | Stmt::SetMaxRegisters { .. } => {}
        }
    }
    found
}

fn union(mut a: Path, b: Path) -> Path {
    for (buffer, entry) in b.flight {
        a.flight.entry(buffer).or_insert(entry);
    }
    a.waited.extend(b.waited);
    for (barrier, wait) in b.passed {
        a.passed.entry(barrier).or_insert(wait);
    }
    a
}
