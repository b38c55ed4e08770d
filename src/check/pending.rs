//! Stage 2, check: the accumulators of a `MatMul<async>` are not touched
//! while it may still be running (docs/language.md §5, `MatMul<async>`).
//!
//! A warpgroup multiply issued with `MatMul<async>` writes its C when the
//! hardware gets to it; the program learns it has finished only when an
//! `mma_wait(N)` leaves its group — closed by `mma_commit` — no longer among
//! the N newest. This pass follows the kernel's statements in order with the
//! set of accumulator buffers still in flight: the multiplies issued since
//! the last `mma_commit` (not yet in any group) and the committed groups,
//! oldest first. Another spec that reads or writes one of those buffers is
//! an error. Loops are followed for two iterations (what the first leaves in
//! flight meets the second), branches on both arms, and where paths join the
//! buffers in flight are the union of theirs.
//!
//! A multiply whose A comes from registers (`wgmma` with A in registers:
//! attention's P) reads them when the hardware gets to it, too: until its
//! group is waited for, another spec may read them but not write them.
//!
//! Only registers are followed: a multiply's shared A and B may be
//! overwritten in a stage the program knows is no longer read (the GEMM
//! refills stage `(k + AHEAD) % STAGES` while stage `k % STAGES` is in
//! flight), which needs the stage arithmetic to prove, and is left to the
//! program.

use std::collections::{BTreeMap, BTreeSet};

use crate::diag::{Diagnostic, Span};
use crate::ir::{self, AsyncQueue, BufferId, SpecKind, Stmt};

use super::codes;

/// The most groups followed one by one; older ones are united (programs
/// keep one or two groups in flight).
const MAX_GROUPS: usize = 8;

/// The most statements one kernel's walk visits.
const VISIT_BUDGET: usize = 1 << 20;

/// How a multiply in flight uses a register buffer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Use {
    /// Its accumulators: no other spec may read or write them.
    Writes,
    /// Its A: no other spec may write them.
    Reads,
}

/// Register buffers of multiplies in flight, each with the multiply that
/// used it last and how (writing wins over reading).
type InFlight = BTreeMap<BufferId, (Span, Use)>;

/// What may still be running at one point of the program.
///
/// Rule: `groups` are the committed groups, oldest first; `open` the
/// multiplies issued since the last commit.
#[derive(Clone, Default, PartialEq, Debug)]
struct Pending {
    open: InFlight,
    groups: Vec<InFlight>,
}

impl Pending {
    /// Keeps at most [`MAX_GROUPS`] groups by uniting the oldest two: a
    /// wait then retires the united group later than it would have retired
    /// the older one, never earlier, so nothing still running is forgotten.
    fn bound_groups(&mut self) {
        while self.groups.len() > MAX_GROUPS {
            let oldest = self.groups.remove(0);
            self.groups[0].extend(oldest);
        }
    }

    /// The multiply that may still be using `buffer`, if any: how, where,
    /// and whether it is in a committed group. A use that writes anywhere
    /// is reported before one that reads.
    fn user(&self, buffer: BufferId) -> Option<(Use, Span, bool)> {
        let open = self
            .open
            .get(&buffer)
            .map(|(span, how)| (*how, *span, false));
        let committed = self
            .groups
            .iter()
            .rev()
            .filter_map(|group| group.get(&buffer).map(|(span, how)| (*how, *span, true)));
        let mut users: Vec<_> = open.into_iter().chain(committed).collect();
        users.sort_by_key(|(how, _, _)| *how != Use::Writes);
        users.first().copied()
    }

    /// Either path's multiplies: the open ones united, the groups united
    /// newest with newest.
    fn join(mut self, other: Pending) -> Pending {
        self.open.extend(other.open);
        let length = self.groups.len().max(other.groups.len());
        let pad = |groups: Vec<InFlight>| {
            let mut padded = vec![InFlight::new(); length - groups.len()];
            padded.extend(groups);
            padded
        };
        let (mine, theirs) = (pad(self.groups), pad(other.groups));
        self.groups = mine
            .into_iter()
            .zip(theirs)
            .map(|(mut a, b)| {
                a.extend(b);
                a
            })
            .collect();
        self.bound_groups();
        self
    }
}

/// The diagnostics of `root`'s body; `buffers` names the buffers.
pub(crate) fn check_pending(root: &ir::SpecStmt, buffers: &[ir::Buffer]) -> Vec<Diagnostic> {
    let mut walk = Walk {
        budget: VISIT_BUDGET,
        buffers,
        reported: BTreeSet::new(),
        diagnostics: Vec::new(),
    };
    if let Some(body) = &root.body {
        walk.block(body, Pending::default());
    }
    walk.diagnostics
}

struct Walk<'a> {
    /// Statements still to visit: loops nested deep around multiplies are
    /// followed twice per level, so the walk stops (reporting what it found)
    /// rather than take exponential time.
    budget: usize,
    buffers: &'a [ir::Buffer],
    /// The statements already reported, so a loop followed twice reports once.
    reported: BTreeSet<(u32, u32)>,
    diagnostics: Vec<Diagnostic>,
}

impl Walk<'_> {
    fn block(&mut self, stmts: &[Stmt], mut pending: Pending) -> Pending {
        for stmt in stmts {
            if self.budget == 0 {
                return pending;
            }
            self.budget -= 1;
            pending = self.stmt(stmt, pending);
        }
        pending
    }

    fn stmt(&mut self, stmt: &Stmt, mut pending: Pending) -> Pending {
        match stmt {
            Stmt::Spec(spec) => self.spec(spec, pending),
            Stmt::For(each) => {
                let first = self.block(&each.body, pending.clone());
                // A body that leaves nothing new in flight is its own second
                // iteration; following only the others keeps nested loops linear
                // unless they issue multiplies.
                let second = if first == pending {
                    first
                } else {
                    self.block(&each.body, first)
                };
                if runs_at_least_once(each) {
                    second
                } else {
                    pending.join(second)
                }
            }
            Stmt::If(branch) => {
                let then = self.block(&branch.then_body, pending.clone());
                let otherwise = self.block(&branch.else_body, pending);
                then.join(otherwise)
            }
            Stmt::Commit {
                queue: AsyncQueue::Mma,
                ..
            } => {
                // An `mma_commit` with nothing issued closes an empty group,
                // which `mma_wait(N)` counts like any other.
                let group = std::mem::take(&mut pending.open);
                pending.groups.push(group);
                pending.bound_groups();
                pending
            }
            Stmt::Wait {
                queue: AsyncQueue::Mma,
                pending: newest,
                ..
            } => {
                let keep = (*newest as usize).min(pending.groups.len());
                pending.groups.drain(..pending.groups.len() - keep);
                pending
            }
            Stmt::Sync { .. }
            | Stmt::Commit {
                queue: AsyncQueue::Copies,
                ..
            }
            | Stmt::Wait {
                queue: AsyncQueue::Copies,
                ..
            }
            | Stmt::Arrive { .. }
            | Stmt::WaitPhase { .. }
            | Stmt::SetMaxRegisters { .. } => pending,
        }
    }

    fn spec(&mut self, spec: &ir::SpecStmt, mut pending: Pending) -> Pending {
        if let Some(body) = &spec.body {
            return self.block(body, pending);
        }
        let asynchronous = matches!(
            spec.kind,
            SpecKind::MatMul {
                asynchronous: true,
                ..
            }
        );
        if asynchronous {
            // Further multiplies into the same accumulators, or reading the
            // same A, are ordered after it by the hardware.
            for view in &spec.outputs {
                pending.open.insert(view.buffer, (spec.span, Use::Writes));
            }
            for view in &spec.inputs {
                if self.in_registers(view.buffer) {
                    pending
                        .open
                        .entry(view.buffer)
                        .or_insert((spec.span, Use::Reads));
                }
            }
            return pending;
        }
        let uses = spec
            .outputs
            .iter()
            .map(|view| (view, true))
            .chain(spec.inputs.iter().map(|view| (view, false)));
        for (view, written) in uses {
            match pending.user(view.buffer) {
                Some((how, issued, committed)) if written || how == Use::Writes => {
                    self.report(spec.span, view, how, issued, committed);
                    break;
                }
                Some(_) | None => {}
            }
        }
        pending
    }

    fn in_registers(&self, buffer: BufferId) -> bool {
        self.buffers
            .get(buffer.0 as usize)
            .is_some_and(|b| b.kind == ir::BufferKind::Registers)
    }

    fn report(&mut self, at: Span, view: &ir::View, how: Use, issued: Span, committed: bool) {
        if !self.reported.insert((at.start, at.end)) {
            return;
        }
        let name = self
            .buffers
            .get(view.buffer.0 as usize)
            .map_or_else(|| "this tensor".to_string(), |b| format!("`%{}`", b.name));
        let help = if committed {
            "wait for its group first, e.g. `mma_wait(0)` before this statement"
        } else {
            "close its group with `mma_commit` and wait for it with `mma_wait(0)` before this \
             statement"
        };
        let (message, label, note) = match how {
            Use::Writes => (
                format!("{name} is used while a `MatMul<async>` may still be writing it"),
                "read or written here",
                "a `MatMul<async>` has written its C only once an `mma_wait(N)` leaves its group \
                 (closed by `mma_commit`) out of the N newest",
            ),
            Use::Reads => (
                format!("{name} is overwritten while a `MatMul<async>` may still be reading it"),
                "written here",
                "a `MatMul<async>` whose A is in registers has read it only once an \
                 `mma_wait(N)` leaves its group (closed by `mma_commit`) out of the N newest",
            ),
        };
        self.diagnostics.push(
            Diagnostic::error(codes::PENDING_ACCUMULATOR, message, view.span)
                .with_label(label)
                .with_secondary(
                    issued,
                    "issued here, and not waited for on every path to the use",
                )
                .with_note(note)
                .with_help(help),
        );
    }
}

/// Whether the loop's bounds are constants with at least one iteration.
fn runs_at_least_once(each: &ir::ForStmt) -> bool {
    match (each.lo.as_const(), each.hi.as_const()) {
        (Some(lo), Some(hi)) => lo < hi,
        _ => false,
    }
}
