//! Stage 2, check: how a spec's operands count over the lanes of the group
//! that executes it (docs/language.md §5, "The rules of the kinds").
//!
//! Operands inside a body are per-thread views. An operand that differs
//! from lane to lane (registers, or a view whose base moves with the lane)
//! counts once per lane of the executing group's innermost level when it is
//! compared with one the lanes share: the warp's 32 rows of 8 registers are
//! the 256 elements of a shared 16×16 tile.
//!
//! A *collective move* — a `Move` executed by more than one lane whose
//! operands hold different numbers of elements per thread, such as
//! `ldmatrix.x2` (8 shared elements in, 4 registers out, per lane) — is
//! compared over the whole unit instead: a memory operand counts the
//! distinct elements its lanes name together, registers count once per lane.

use crate::diag::Diagnostic;
use crate::expr::{Expr, Var};
use crate::ir::{Memory, View};

use super::env::{Checker, GroupVal};
use super::groups::MAX_BLOCK_SIZE;
use super::symbolic::{constant_flat_layout, constant_layout, levels_size, normalize};

/// The most (lane, element) pairs the checker enumerates to count the
/// distinct elements of a collective operand; past it, the lanes' views are
/// taken to be disjoint. A block has at most 1024 threads, so this allows
/// 1024 elements per thread.
const MAX_ENUMERATED: i64 = 1 << 20;

/// The lanes of an executing group. Rule: `ids` are the offsets of the
/// group's innermost level (the thread ids of its first instance);
/// `instances` are the offsets of its outer levels, one per instance, or
/// `None` where an outer level is not constant.
pub(crate) struct Lanes {
    ids: Vec<i64>,
    instances: Option<Vec<i64>>,
}

impl Lanes {
    /// The number of lanes of one instance.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// The thread ids of the first instance.
    pub(crate) fn ids(&self) -> &[i64] {
        &self.ids
    }

    /// The first thread of every instance, when the outer levels are
    /// constant.
    pub(crate) fn starts(&self) -> Option<&[i64]> {
        self.instances.as_deref()
    }
}

/// How an operand's elements are counted over the lanes of one instance.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Spread {
    /// Every lane names the same elements: counted once.
    Shared,
    /// Registers: each lane's are its own, so they count once per lane.
    EachLane,
    /// A memory view that moves with the lane: the distinct elements its
    /// lanes name together, each counted once.
    Distinct,
    /// A memory view that moves with the lane in a way the checker cannot
    /// enumerate (symbolic layout or base): counted once per lane, as if no
    /// two lanes named the same element.
    AssumedDisjoint,
}

impl Spread {
    /// Whether the operand is memory that moves with the lane, the one kind
    /// of operand a collective move counts differently.
    pub(crate) fn is_memory_per_lane(self) -> bool {
        match self {
            Spread::Distinct | Spread::AssumedDisjoint => true,
            Spread::Shared | Spread::EachLane => false,
        }
    }
}

/// An operand's count over one instance of the executing group. Rule:
/// `total` is `own` for [`Spread::Shared`], `own × lanes` for
/// [`Spread::EachLane`] and [`Spread::AssumedDisjoint`], and the number of
/// distinct elements for [`Spread::Distinct`].
pub(crate) struct UnitCount {
    /// The elements of one thread's view.
    pub own: Expr,
    /// The elements of the whole instance.
    pub total: Expr,
    /// How `total` was counted.
    pub spread: Spread,
}

impl Checker {
    /// The lanes of a thread group, if its innermost level is constant.
    pub(crate) fn lanes(&self, group: &GroupVal) -> Option<Lanes> {
        let (innermost, outer) = group.ty.levels.split_last()?;
        let ids: Vec<i64> = constant_layout(innermost)
            .filter(|layout| layout.size() <= MAX_BLOCK_SIZE)?
            .offsets()
            .collect();
        let instances = if outer.is_empty() {
            Some(vec![0])
        } else {
            constant_flat_layout(outer)
                .filter(|layout| layout.size() <= MAX_BLOCK_SIZE)
                .map(|layout| layout.offsets().collect())
        };
        Some(Lanes { ids, instances })
    }

    /// Whether a view holds different elements in different lanes of one
    /// instance: registers always; other memories when the base, evaluated
    /// for each lane, changes.
    pub(crate) fn per_lane(&self, view: &View, lanes: &Lanes) -> bool {
        if view.ty.memory == Memory::Registers {
            return true;
        }
        if !view.base.vars().contains(&Var::ThreadId) || !self.divisors_positive(&view.base) {
            return false;
        }
        let mut values = lanes.ids.iter().map(|&lane| self.base_at(view, lane));
        let first = values.next().flatten();
        values.any(|value| value != first)
    }

    /// The view's base in thread `tid`, other variables at a value of their
    /// range (block 0, the loop's start, 64 for a dim): where only the lanes
    /// are compared with each other, as `per_lane` does, any value serves.
    fn base_at(&self, view: &View, tid: i64) -> Option<i64> {
        view.base
            .eval(&|var| match var {
                Var::ThreadId => Some(tid),
                Var::BlockId => Some(0),
                Var::Dim(_) => Some(64),
                Var::Loop(i) => Some(self.loop_start(i)),
            })
            .ok()
    }

    /// Whether every division in `e` is by a value known to be positive,
    /// so that evaluating it is the arithmetic the rules of `Expr` assume.
    fn divisors_positive(&self, e: &Expr) -> bool {
        match e {
            Expr::Const(_) | Expr::Var(_) => true,
            Expr::Div(a, b) | Expr::Rem(a, b) => {
                self.bounds(b).is_positive()
                    && self.divisors_positive(a)
                    && self.divisors_positive(b)
            }
            Expr::Add(a, b)
            | Expr::Sub(a, b)
            | Expr::Mul(a, b)
            | Expr::And(a, b)
            | Expr::Xor(a, b)
            | Expr::Shr(a, b)
            | Expr::Shl(a, b) => self.divisors_positive(a) && self.divisors_positive(b),
        }
    }

    fn loop_start(&self, id: u32) -> i64 {
        self.kernel
            .loop_info
            .get(id as usize)
            .and_then(|info| info.constant_bounds)
            .map_or(0, |(lo, _, _)| lo)
    }

    /// The number of elements of `view` the lanes of one instance hold
    /// together: its size, times the lanes if it is per lane.
    pub(crate) fn lane_count(&self, view: &View, lanes: &Lanes) -> Expr {
        let count = levels_size(&view.ty.levels);
        if self.per_lane(view, lanes) {
            Expr::mul(count, Expr::Const(lanes.len() as i64))
        } else {
            count
        }
    }

    /// "N elements (type)"; with `scaled`, a per-lane operand is counted
    /// over the lanes, as it was compared with a shared one.
    pub(crate) fn count_label(&self, view: &View, lanes: &Lanes, scaled: bool) -> String {
        let ty = self.tensor_text(&view.ty);
        let own = self.expr_text(&normalize(&levels_size(&view.ty.levels)));
        if scaled && self.per_lane(view, lanes) {
            let total = self.expr_text(&normalize(&self.lane_count(view, lanes)));
            format!(
                "{total} elements: {own} per thread ({ty}) over {} threads",
                lanes.len()
            )
        } else {
            format!("{own} elements ({ty})")
        }
    }

    /// The count of `view` over one instance when it is an operand of a
    /// collective move.
    pub(crate) fn unit_count(&self, view: &View, lanes: &Lanes) -> UnitCount {
        let own = levels_size(&view.ty.levels);
        let every_lane = || Expr::mul(own.clone(), Expr::Const(lanes.len() as i64));
        let (total, spread) = if view.ty.memory == Memory::Registers {
            (every_lane(), Spread::EachLane)
        } else if !self.per_lane(view, lanes) {
            (own.clone(), Spread::Shared)
        } else {
            match self.distinct_elements(view, lanes) {
                Some(distinct) => (Expr::Const(distinct), Spread::Distinct),
                None => (every_lane(), Spread::AssumedDisjoint),
            }
        };
        UnitCount { own, total, spread }
    }

    /// The number of distinct elements the lanes of an instance name
    /// through `view`, when it is the same for every instance and can be
    /// enumerated: the view's levels are constant, and its base moves with
    /// the thread by a term of the thread id alone (so that the other
    /// variables shift every lane alike and cannot change the count).
    fn distinct_elements(&self, view: &View, lanes: &Lanes) -> Option<i64> {
        let layout = constant_flat_layout(&view.ty.levels)?;
        let instances = lanes.instances.as_ref()?;
        if !self.divisors_positive(&view.base) || !moves_with_the_thread_alone(&view.base) {
            return None;
        }
        let work = layout
            .size()
            .checked_mul(lanes.len() as i64)?
            .checked_mul(instances.len() as i64)?;
        if work > MAX_ENUMERATED {
            return None;
        }
        let offsets: Vec<i64> = layout.offsets().collect();
        let count_in = |first: i64| -> Option<i64> {
            let mut named = Vec::with_capacity(offsets.len() * lanes.len());
            for &lane in &lanes.ids {
                let base = self.base_at(view, first + lane)?;
                named.extend(offsets.iter().map(|offset| base + offset));
            }
            named.sort_unstable();
            named.dedup();
            Some(named.len() as i64)
        };
        let mut counts = instances.iter().map(|&first| count_in(first));
        let count = counts.next()??;
        counts.all(|other| other == Some(count)).then_some(count)
    }

    /// "N elements: …" for an operand of a collective move.
    pub(crate) fn unit_label(&self, view: &View, count: &UnitCount, lanes: &Lanes) -> String {
        let ty = self.tensor_text(&view.ty);
        let own = self.expr_text(&normalize(&count.own));
        let total = self.expr_text(&normalize(&count.total));
        let threads = lanes.len();
        match count.spread {
            Spread::Shared => format!("{own} elements ({ty}), the same in every thread"),
            Spread::EachLane | Spread::AssumedDisjoint => {
                format!("{total} elements: {own} per thread ({ty}) over {threads} threads")
            }
            Spread::Distinct => {
                format!("{total} distinct elements: {own} per thread ({ty}) over {threads} threads")
            }
        }
    }

    /// The notes that explain a collective comparison that failed.
    pub(crate) fn unit_notes(
        &self,
        mut diagnostic: Diagnostic,
        counts: &[&UnitCount],
        lanes: &Lanes,
    ) -> Diagnostic {
        diagnostic = diagnostic.with_note(format!(
            "the operands hold different numbers of elements per thread, so this move is \
             collective: they are compared over the {} threads of the executing group's innermost \
             level, registers once per thread and an element of memory once however many \
             threads name it",
            lanes.len()
        ));
        if counts
            .iter()
            .any(|count| count.spread == Spread::AssumedDisjoint)
        {
            diagnostic = diagnostic.with_note(
                "where a view's layout or its per-thread base is not constant, its threads are \
                 counted as naming different elements",
            );
        }
        diagnostic
    }
}

/// Whether `base` minus its value in thread 0 depends on the thread id
/// alone: then every other variable moves all lanes by the same amount.
fn moves_with_the_thread_alone(base: &Expr) -> bool {
    let in_thread_zero = base.substitute(&|var| (var == Var::ThreadId).then_some(Expr::Const(0)));
    let difference = normalize(&Expr::sub(base.clone(), in_thread_zero));
    difference.vars().iter().all(|var| *var == Var::ThreadId)
}
