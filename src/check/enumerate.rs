//! Stage 2, check: a checked kernel run on paper, for sample values of its
//! dims — which thread of which block writes which element of a buffer, and
//! where the barriers fall (docs/language.md §5, "Coverage").
//!
//! The walk follows the kernel's statements once for all threads together,
//! as the hardware does: each `(block, thread)` pair is live or not (an `if`
//! whose condition is false for it leaves it out of the branch), loops run
//! with their variables bound, and an atomic spec whose output is a followed
//! buffer reports, for every live pair, the buffer offsets of its view. A
//! loop whose variable no followed write, condition or inner bound mentions
//! repeats the same writes each time: it runs twice (enough to show a
//! repetition) rather than its full count. Every thread of the block runs
//! every statement of a body (specs are executed by groups derived from the
//! launch groups, which name every thread), so only `if` narrows the pairs.
//!
//! A walk may follow reads too (`Follows::reads`): then an atomic
//! spec's inputs in followed buffers are reported before its outputs, and a
//! collective spec's lanes that name the same view report it once.
//!
//! An index expression is split into its terms over the thread id alone,
//! the block id alone, and both, with the dims and loop variables bound: the
//! first two are tabulated once per visit, so a write costs additions.

use crate::expr::{Expr, Var};
use crate::ir::{self, AsyncQueue, BufferId, Cond, Kernel, Requirement, SpecStmt, Stmt};
use crate::layout::Swizzle;

use super::blockwide::is_block_reduction;

/// The most element writes (and statement visits) one walk follows before
/// it gives up: large enough for every example at its sample dims, small
/// enough that the walk stays within milliseconds.
pub(super) const WRITE_BUDGET: u64 = 1 << 22;

/// How many times a broken requirement may raise the sample dims.
const MAX_RAISES: usize = 16;

/// Why a walk could not decide.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(super) enum Undecided {
    /// More than [`WRITE_BUDGET`] writes.
    TooLarge,
    /// An expression the walk cannot evaluate here (a loop bound that
    /// depends on the thread, a division by zero, …): the reason.
    Unevaluable(String),
}

/// One execution of an atomic spec that writes a followed buffer.
#[derive(Clone, Debug)]
pub(super) struct Visit<'k> {
    /// The spec.
    pub spec: &'k SpecStmt,
    /// The loop variables bound at the time, outermost first.
    pub loops: Vec<(u32, i64)>,
    /// Whether the lanes of one instance of its executing group write
    /// together (a collective instruction writes an element they share once).
    pub collective: bool,
    /// Which execution of an atomic spec this is (the visits of its inputs
    /// and outputs share it).
    pub execution: usize,
}

/// What the walk reports.
pub(super) trait Observer {
    /// `pair` (`block · block_size + thread`) writes `offset` of `buffer`
    /// during visit `visit`.
    fn write(
        &mut self,
        visits: &[Visit<'_>],
        visit: usize,
        buffer: BufferId,
        pair: usize,
        offset: i64,
    );
    /// `pair` reads `offset` of `buffer` during visit `visit` (reported by
    /// a walk that follows reads only).
    fn read(
        &mut self,
        _visits: &[Visit<'_>],
        _visit: usize,
        _buffer: BufferId,
        _pair: usize,
        _offset: i64,
    ) {
    }
    /// An `async_commit` executed by the `live` pairs (reported to every
    /// observer; a walk that follows reads walks every loop that has one).
    fn commit(&mut self, _live: &[bool]) {}
    /// An `async_wait(pending)` executed by the `live` pairs.
    fn wait(&mut self, _live: &[bool], _pending: u32) {}
    /// A `sync` executed by the block.
    fn barrier(&mut self);
}

/// The launch at one sample of the dims.
#[derive(Clone, Debug)]
pub(super) struct Launch {
    /// The value of each dim.
    pub dims: Vec<i64>,
    /// Blocks in the grid.
    pub grid: usize,
    /// Threads in a block.
    pub block: usize,
}

/// The samples of the dims the kernel is walked at: each dim the least
/// common multiple of the constant divisors its requirements name (the
/// smallest value they allow when each dim is divided alone), raised by
/// that step while another requirement is broken; then every dim doubled. A kernel without dims has one sample. `None` when the first
/// sample breaks a requirement.
pub(super) fn samples(kernel: &Kernel) -> Option<Vec<Vec<i64>>> {
    let mut smallest = vec![1i64; kernel.dims.len()];
    for requirement in &kernel.requirements {
        if let Requirement::Divisible { value, divisor, .. } = requirement
            && let Some(divisor) = divisor.as_const()
        {
            for var in value.vars() {
                if let Var::Dim(dim) = var
                    && let Some(slot) = smallest.get_mut(dim as usize)
                {
                    *slot = lcm(*slot, divisor.max(1));
                }
            }
        }
    }
    // A requirement still broken (`K/64 - 1 ≥ 1`) raises the dims it names
    // by their steps, a few times at most.
    let steps = smallest.clone();
    for _ in 0..MAX_RAISES {
        let Some(broken) = kernel
            .requirements
            .iter()
            .find(|requirement| !satisfies(&smallest, std::slice::from_ref(requirement)))
        else {
            break;
        };
        let value = match broken {
            Requirement::Divisible { value, .. } | Requirement::Positive { value, .. } => value,
        };
        for var in value.vars() {
            if let Var::Dim(dim) = var {
                smallest[dim as usize] += steps[dim as usize];
            }
        }
    }
    if !satisfies(&smallest, &kernel.requirements) {
        return None;
    }
    if smallest.is_empty() {
        return Some(vec![smallest]);
    }
    let doubled: Vec<i64> = smallest.iter().map(|value| value * 2).collect();
    let mut out = vec![smallest];
    if satisfies(&doubled, &kernel.requirements) {
        out.push(doubled);
    }
    Some(out)
}

/// What a dim reaches in the coverage walk's [`larger_sample`]: past one
/// 128-wide tile, so that a tiled mode has two whole tiles and a partial
/// one.
pub(super) const LARGER: i64 = 130;

/// What a dim reaches in the race walk's [`larger_sample`]: a loop over
/// 64-wide k-tiles runs five times, so that a pipeline of up to four
/// stages refills a stage it has read (a missing `sync` before the refill
/// is a race only then).
pub(super) const DEEPER: i64 = 260;

/// A third, larger sample, walked on a best-effort basis: each dim of the
/// first sample raised to its least multiple of at least `at_least`
/// ([`LARGER`], [`DEEPER`]); `None` when that breaks a requirement. What a
/// walk there finds is as true as at the small samples; where it cannot
/// decide (too large), nothing is said, since the small samples were
/// decided.
pub(super) fn larger_sample(kernel: &Kernel, first: &[i64], at_least: i64) -> Option<Vec<i64>> {
    if first.is_empty() {
        return None;
    }
    let larger: Vec<i64> = first
        .iter()
        .map(|value| {
            let step = (*value).max(1);
            step * ((at_least + step - 1) / step).max(1)
        })
        .collect();
    satisfies(&larger, &kernel.requirements).then_some(larger)
}

fn lcm(a: i64, b: i64) -> i64 {
    let gcd = |mut x: i64, mut y: i64| {
        while y != 0 {
            (x, y) = (y, x % y);
        }
        x
    };
    a / gcd(a, b) * b
}

fn satisfies(dims: &[i64], requirements: &[Requirement]) -> bool {
    let env = |var: Var| match var {
        Var::Dim(dim) => dims.get(dim as usize).copied(),
        Var::ThreadId | Var::BlockId | Var::Loop(_) => None,
    };
    requirements.iter().all(|requirement| match requirement {
        Requirement::Divisible { value, divisor, .. } => {
            matches!((value.eval(&env), divisor.eval(&env)), (Ok(v), Ok(d)) if d != 0 && v % d == 0)
        }
        Requirement::Positive { value, .. } => value.eval(&env).is_ok_and(|v| v >= 1),
    })
}

/// The element offsets of a view's levels relative to its base, in element
/// order (innermost level fastest, first mode fastest), with `env` binding
/// the variables its extents and strides name; and each mode's extent,
/// innermost level first.
pub(super) fn level_offsets(
    levels: &[ir::Level],
    env: &dyn Fn(Var) -> Option<i64>,
) -> Result<(Vec<i64>, Vec<i64>), Undecided> {
    let mut offsets = vec![0i64];
    let mut extents = Vec::new();
    for level in levels.iter().rev() {
        for (shape, stride) in level.shape.modes().into_iter().zip(level.stride.modes()) {
            let mut mode_extent = 1i64;
            for (extent, stride) in shape.leaves().into_iter().zip(stride.leaves()) {
                let extent = evaluate(extent, env)?;
                let stride = evaluate(stride, env)?;
                if extent < 1 || offsets.len() as u64 * extent as u64 > WRITE_BUDGET {
                    return Err(Undecided::TooLarge);
                }
                offsets = (0..extent)
                    .flat_map(|digit| offsets.iter().map(move |offset| offset + digit * stride))
                    .collect();
                mode_extent *= extent;
            }
            extents.push(mode_extent);
        }
    }
    Ok((offsets, extents))
}

fn evaluate(expr: &Expr, env: &dyn Fn(Var) -> Option<i64>) -> Result<i64, Undecided> {
    expr.eval(env)
        .map_err(|error| Undecided::Unevaluable(format!("`{expr}`: {error}")))
}

/// An expression over the thread and block ids, ready to evaluate for every
/// pair: `constant + by_thread[t] + by_block[b] + mixed(t, b)`.
struct PerPair {
    constant: i64,
    by_thread: Option<Vec<i64>>,
    by_block: Option<Vec<i64>>,
    mixed: Vec<Expr>,
}

impl PerPair {
    fn value(&self, launch: &Launch, pair: usize) -> Result<i64, Undecided> {
        let (block, thread) = (pair / launch.block, pair % launch.block);
        let mut value = self.constant;
        if let Some(table) = &self.by_thread {
            value += table[thread];
        }
        if let Some(table) = &self.by_block {
            value += table[block];
        }
        for term in &self.mixed {
            value += evaluate(term, &|var| match var {
                Var::ThreadId => Some(thread as i64),
                Var::BlockId => Some(block as i64),
                Var::Dim(_) | Var::Loop(_) => None,
            })?;
        }
        Ok(value)
    }
}

/// The walk's state for one sample.
pub(super) struct Walk<'k, 'o> {
    launch: &'k Launch,
    follows: Follows<'k>,
    observer: &'o mut dyn Observer,
    loops: Vec<(u32, i64)>,
    visits: Vec<Visit<'k>>,
    /// Atomic spec executions so far.
    executions: usize,
    spent: u64,
}

impl<'k, 'o> Walk<'k, 'o> {
    /// Walks `kernel` at `launch`, reporting the accesses `follows` names;
    /// returns the visits the reports index.
    pub(super) fn run(
        kernel: &'k Kernel,
        launch: &'k Launch,
        follows: Follows<'k>,
        observer: &'o mut dyn Observer,
    ) -> Result<Vec<Visit<'k>>, Undecided> {
        let live: Vec<bool> = (0..launch.grid * launch.block)
            .map(|pair| (follows.blocks)(pair / launch.block))
            .collect();
        let mut walk = Walk {
            launch,
            follows,
            observer,
            loops: Vec::new(),
            visits: Vec::new(),
            executions: 0,
            spent: 0,
        };
        match &kernel.root.body {
            Some(body) => walk.stmts(body, &live)?,
            None => walk.spec(&kernel.root, &live)?,
        }
        Ok(walk.visits)
    }

    fn env(&self) -> impl Fn(Var) -> Option<Expr> + '_ {
        |var| match var {
            Var::Dim(dim) => self.launch.dims.get(dim as usize).copied().map(Expr::Const),
            Var::Loop(index) => self
                .loops
                .iter()
                .rev()
                .find(|(bound, _)| *bound == index)
                .map(|(_, value)| Expr::Const(*value)),
            Var::ThreadId | Var::BlockId => None,
        }
    }

    fn scalar(&self, expr: &Expr) -> Result<i64, Undecided> {
        let bound = expr.substitute(&self.env());
        bound.as_const().ok_or_else(|| {
            Undecided::Unevaluable(format!("`{expr}` depends on the thread or block"))
        })
    }

    fn per_pair(&self, expr: &Expr) -> Result<PerPair, Undecided> {
        let bound = expr.substitute(&self.env());
        let mut terms = Vec::new();
        flatten_sum(&bound, 1, &mut terms);
        let mut split = PerPair {
            constant: 0,
            by_thread: None,
            by_block: None,
            mixed: Vec::new(),
        };
        let mut thread_terms = Expr::Const(0);
        let mut block_terms = Expr::Const(0);
        for term in terms {
            let vars = term.vars();
            match vars[..] {
                [] => split.constant += evaluate(&term, &|_| None)?,
                [Var::ThreadId] => thread_terms = Expr::add(thread_terms, term),
                [Var::BlockId] => block_terms = Expr::add(block_terms, term),
                _ if vars
                    .iter()
                    .all(|v| matches!(v, Var::ThreadId | Var::BlockId)) =>
                {
                    split.mixed.push(term);
                }
                _ => {
                    return Err(Undecided::Unevaluable(format!(
                        "`{term}` names a variable unbound here"
                    )));
                }
            }
        }
        let table = |expr: &Expr, var: Var, count: usize| -> Result<Option<Vec<i64>>, Undecided> {
            if expr.as_const() == Some(0) {
                return Ok(None);
            }
            (0..count)
                .map(|id| evaluate(expr, &|v| (v == var).then_some(id as i64)))
                .collect::<Result<Vec<_>, _>>()
                .map(Some)
        };
        split.by_thread = table(&thread_terms, Var::ThreadId, self.launch.block)?;
        split.by_block = table(&block_terms, Var::BlockId, self.launch.grid)?;
        Ok(split)
    }

    fn charge(&mut self, amount: u64) -> Result<(), Undecided> {
        self.spent += amount;
        if self.spent > WRITE_BUDGET {
            return Err(Undecided::TooLarge);
        }
        Ok(())
    }

    fn stmts(&mut self, stmts: &'k [Stmt], live: &[bool]) -> Result<(), Undecided> {
        for stmt in stmts {
            self.charge(1)?;
            match stmt {
                Stmt::Spec(spec) => match &spec.body {
                    Some(body) => self.stmts(body, live)?,
                    None => {
                        self.spec(spec, live)?;
                        if is_block_reduction(spec) {
                            self.observer.barrier();
                        }
                    }
                },
                Stmt::For(for_stmt) => self.for_stmt(for_stmt, live)?,
                Stmt::If(if_stmt) => {
                    let taken = self.cond(&if_stmt.cond, live)?;
                    let otherwise: Vec<bool> =
                        live.iter().zip(&taken).map(|(l, t)| *l && !t).collect();
                    if taken.iter().any(|t| *t) {
                        self.stmts(&if_stmt.then_body, &taken)?;
                    }
                    if otherwise.iter().any(|o| *o) {
                        self.stmts(&if_stmt.else_body, &otherwise)?;
                    }
                }
                Stmt::Sync { .. } => self.observer.barrier(),
                Stmt::Commit {
                    queue: AsyncQueue::Copies,
                    ..
                } => self.observer.commit(live),
                Stmt::Wait {
                    queue: AsyncQueue::Copies,
                    pending,
                    ..
                } => self.observer.wait(live, *pending),
                Stmt::Commit {
                    queue: AsyncQueue::Mma,
                    ..
                }
                | Stmt::Wait {
                    queue: AsyncQueue::Mma,
                    ..
                }
                | Stmt::Arrive { .. }
                | Stmt::WaitPhase { .. }
                | Stmt::SetMaxRegisters { .. } => {}
            }
        }
        Ok(())
    }

    fn for_stmt(&mut self, for_stmt: &'k ir::ForStmt, live: &[bool]) -> Result<(), Undecided> {
        let follows = &self.follows;
        // A walk of reads counts each thread's copy groups, so it walks
        // every commit and wait, each time.
        let groups = follows.reads && has_copy_groups(&for_stmt.body);
        if !follows.touched(&for_stmt.body) && !has_sync(&for_stmt.body) && !groups {
            return Ok(());
        }
        let lo = self.scalar(&for_stmt.lo)?;
        let hi = self.scalar(&for_stmt.hi)?;
        let step = self.scalar(&for_stmt.step)?.max(1);
        // Extreme bounds (near i64::MAX) would overflow the trip count:
        // such a loop is too large to enumerate anyway.
        let mut count = if hi > lo {
            hi.checked_sub(lo)
                .and_then(|span| span.checked_add(step - 1))
                .map(|rounded| rounded / step)
                .ok_or(Undecided::TooLarge)?
        } else {
            0
        };
        if !follows.mentions_loop(&for_stmt.body, for_stmt.var) && !groups {
            // The same writes again: a second time shows an overwrite
            // repeated or a race across iterations; a body that only adds
            // into its elements shows nothing new after the first (a walk
            // of reads repeats any body it follows: a read of one
            // iteration may race with a write of the next).
            let repeats = follows.reads
                || overwrites_followed(&for_stmt.body, follows.buffers)
                || has_sync(&for_stmt.body);
            count = count.min(if repeats { 2 } else { 1 });
        }
        for iteration in 0..count {
            self.loops.push((for_stmt.var, lo + iteration * step));
            let walked = self.stmts(&for_stmt.body, live);
            self.loops.pop();
            walked?;
        }
        Ok(())
    }

    /// The pairs for which `cond` holds, among the `live` ones.
    fn cond(&self, cond: &Cond, live: &[bool]) -> Result<Vec<bool>, Undecided> {
        match cond {
            Cond::Compare(op, a, b) => {
                let (a, b) = (self.per_pair(a)?, self.per_pair(b)?);
                let mut out = vec![false; live.len()];
                for (pair, slot) in out.iter_mut().enumerate() {
                    if live[pair] {
                        let (x, y) = (a.value(self.launch, pair)?, b.value(self.launch, pair)?);
                        *slot = op.holds(x, y);
                    }
                }
                Ok(out)
            }
            Cond::And(a, b) => {
                let first = self.cond(a, live)?;
                self.cond(b, &first)
            }
            Cond::Or(a, b) => {
                let (first, second) = (self.cond(a, live)?, self.cond(b, live)?);
                Ok(first.iter().zip(&second).map(|(x, y)| *x || *y).collect())
            }
        }
    }

    fn spec(&mut self, spec: &'k SpecStmt, live: &[bool]) -> Result<(), Undecided> {
        let execution = self.executions;
        self.executions += 1;
        let accesses: Vec<(bool, &'k ir::View)> = self.follows.accesses(spec).collect();
        for (writes, view) in accesses {
            self.view(spec, execution, view, writes, live)?;
        }
        Ok(())
    }

    /// Reports each element of `view` for every live pair: a write of the
    /// spec's output, or a read of its input.
    fn view(
        &mut self,
        spec: &'k SpecStmt,
        execution: usize,
        output: &'k ir::View,
        writes: bool,
        live: &[bool],
    ) -> Result<(), Undecided> {
        let (offsets, _) = level_offsets(&output.ty.levels, &|var| match self.env()(var) {
            Some(Expr::Const(value)) => Some(value),
            Some(_) | None => None,
        })?;
        let base = self.per_pair(&output.base)?;
        // A view of a partial tile writes only its elements inside the
        // tensor (a masked move skips the others; a guard keeps them in).
        let mut bounds = Vec::with_capacity(output.bounds.len());
        for bound in &output.bounds {
            let (coordinates, _) = level_offsets(&bound.levels, &|var| match self.env()(var) {
                Some(Expr::Const(value)) => Some(value),
                Some(_) | None => None,
            })?;
            let origin = self.per_pair(&bound.origin)?;
            let extent = self.scalar(&bound.extent)?;
            bounds.push((coordinates, origin, extent));
        }
        let visit = self.visits.len();
        let collective = instance_size(&spec.threads) != Some(1);
        self.visits.push(Visit {
            spec,
            loops: self.loops.clone(),
            collective,
            execution,
        });
        // The lanes of a collective spec that name one view in memory read
        // it once.
        let mut seen = std::collections::BTreeSet::new();
        let swizzle: Option<Swizzle> = output.ty.swizzle;
        for (pair, _) in live.iter().enumerate().filter(|(_, l)| **l) {
            let origin = base.value(self.launch, pair)?;
            let starts = bounds
                .iter()
                .map(|(_, start, _)| start.value(self.launch, pair))
                .collect::<Result<Vec<i64>, Undecided>>()?;
            // (Registers are each lane's own: every lane reads its own.)
            if !writes
                && collective
                && output.ty.memory != ir::Memory::Registers
                && !seen.insert((pair / self.launch.block, origin, starts.clone()))
            {
                continue;
            }
            self.charge(offsets.len() as u64)?;
            for (element, offset) in offsets.iter().enumerate() {
                let outside =
                    bounds
                        .iter()
                        .zip(&starts)
                        .any(|((coordinates, _, extent), start)| {
                            start + coordinates[element] >= *extent
                        });
                if outside {
                    continue;
                }
                let unswizzled = origin + offset;
                let offset = swizzle.map_or(unswizzled, |s| s.apply(unswizzled));
                if writes {
                    self.observer
                        .write(&self.visits, visit, output.buffer, pair, offset);
                } else {
                    self.observer
                        .read(&self.visits, visit, output.buffer, pair, offset);
                }
            }
        }
        Ok(())
    }
}

/// The terms of `factor · expr`, constant factors distributed over sums so
/// that `(tid % 16 + bid) * 8` splits into a thread term and a block term.
fn flatten_sum(expr: &Expr, factor: i64, out: &mut Vec<Expr>) {
    match expr {
        Expr::Add(a, b) => {
            flatten_sum(a, factor, out);
            flatten_sum(b, factor, out);
        }
        Expr::Mul(a, b)
            if b.as_const()
                .is_some_and(|c| c.checked_mul(factor).is_some()) =>
        {
            flatten_sum(a, factor * b.as_const().unwrap_or(1), out);
        }
        Expr::Mul(a, b)
            if a.as_const()
                .is_some_and(|c| c.checked_mul(factor).is_some()) =>
        {
            flatten_sum(b, factor * a.as_const().unwrap_or(1), out);
        }
        Expr::Const(_)
        | Expr::Var(_)
        | Expr::Sub(..)
        | Expr::Mul(..)
        | Expr::Div(..)
        | Expr::Rem(..)
        | Expr::And(..)
        | Expr::Xor(..)
        | Expr::Shr(..)
        | Expr::Shl(..) => out.push(Expr::mul(expr.clone(), Expr::Const(factor))),
    }
}

/// Threads in one instance of an executing group (its innermost level),
/// when constant.
fn instance_size(group: &ir::GroupType) -> Option<i64> {
    let innermost = group.levels.last()?;
    innermost
        .shape
        .leaves()
        .into_iter()
        .try_fold(1i64, |size, extent| Some(size * extent.as_const()?))
}

/// What a walk follows: writes into some buffers, and perhaps reads.
pub(super) struct Follows<'f> {
    /// The buffers whose accesses are reported.
    pub buffers: &'f dyn Fn(BufferId) -> bool,
    /// Whether inputs are reported as well as outputs.
    pub reads: bool,
    /// The blocks walked (by block id): the others execute nothing.
    pub blocks: &'f dyn Fn(usize) -> bool,
}

impl Follows<'_> {
    /// The views of an atomic spec that the walk reports, inputs first,
    /// each with whether it is written.
    fn accesses<'s>(&self, spec: &'s SpecStmt) -> impl Iterator<Item = (bool, &'s ir::View)> {
        let inputs: &'s [ir::View] = if self.reads { &spec.inputs } else { &[] };
        inputs
            .iter()
            .map(|view| (false, view))
            .chain(spec.outputs.iter().map(|view| (true, view)))
            .filter(|(_, view)| (self.buffers)(view.buffer))
    }

    /// The views of an atomic spec that the walk reports.
    fn views<'s>(&self, spec: &'s SpecStmt) -> impl Iterator<Item = &'s ir::View> {
        self.accesses(spec).map(|(_, view)| view)
    }

    /// Whether an atomic spec among `stmts` touches a followed buffer.
    fn touched(&self, stmts: &[Stmt]) -> bool {
        stmts.iter().any(|stmt| match stmt {
            Stmt::Spec(spec) => match &spec.body {
                Some(body) => self.touched(body),
                None => self.views(spec).next().is_some(),
            },
            Stmt::For(for_stmt) => self.touched(&for_stmt.body),
            Stmt::If(if_stmt) => {
                self.touched(&if_stmt.then_body) || self.touched(&if_stmt.else_body)
            }
            Stmt::Sync { .. }
            | Stmt::Commit { .. }
            | Stmt::Wait { .. }
            | Stmt::Arrive { .. }
            | Stmt::WaitPhase { .. }
            | Stmt::SetMaxRegisters { .. } => false,
        })
    }

    /// Whether loop variable `var` decides anything the walk sees in
    /// `stmts`: a followed view's base or levels, a condition, an inner
    /// loop's bounds. A loop whose variable does not repeats the same
    /// accesses and barriers.
    fn mentions_loop(&self, stmts: &[Stmt], var: u32) -> bool {
        let names = |expr: &Expr| expr.vars().contains(&Var::Loop(var));
        let level_names = |level: &ir::Level| {
            level.shape.leaves().into_iter().any(names)
                || level.stride.leaves().into_iter().any(names)
        };
        stmts.iter().any(|stmt| match stmt {
            Stmt::Spec(spec) => match &spec.body {
                Some(body) => self.mentions_loop(body, var),
                None => self
                    .views(spec)
                    .any(|view| names(&view.base) || view.ty.levels.iter().any(level_names)),
            },
            Stmt::For(inner) => {
                names(&inner.lo)
                    || names(&inner.hi)
                    || names(&inner.step)
                    || self.mentions_loop(&inner.body, var)
            }
            Stmt::If(if_stmt) => {
                cond_names(&if_stmt.cond, &names)
                    || self.mentions_loop(&if_stmt.then_body, var)
                    || self.mentions_loop(&if_stmt.else_body, var)
            }
            Stmt::Sync { .. }
            | Stmt::Commit { .. }
            | Stmt::Wait { .. }
            | Stmt::Arrive { .. }
            | Stmt::WaitPhase { .. }
            | Stmt::SetMaxRegisters { .. } => false,
        })
    }
}

/// Whether an atomic spec among `stmts` writes a followed buffer without
/// adding into it, or writes shared memory (where a repetition may race).
fn overwrites_followed(stmts: &[Stmt], followed: &dyn Fn(BufferId) -> bool) -> bool {
    stmts.iter().any(|stmt| match stmt {
        Stmt::Spec(spec) => match &spec.body {
            Some(body) => overwrites_followed(body, followed),
            None => spec.outputs.iter().any(|view| {
                followed(view.buffer)
                    && (!spec.kind.accumulates() || view.ty.memory == crate::vocab::Memory::Shared)
            }),
        },
        Stmt::For(for_stmt) => overwrites_followed(&for_stmt.body, followed),
        Stmt::If(if_stmt) => {
            overwrites_followed(&if_stmt.then_body, followed)
                || overwrites_followed(&if_stmt.else_body, followed)
        }
        Stmt::Sync { .. }
        | Stmt::Commit { .. }
        | Stmt::Wait { .. }
        | Stmt::Arrive { .. }
        | Stmt::WaitPhase { .. }
        | Stmt::SetMaxRegisters { .. } => false,
    })
}

/// Whether `stmts` commit or wait for `cp.async` groups.
fn has_copy_groups(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|stmt| match stmt {
        Stmt::Spec(spec) => spec.body.as_deref().is_some_and(has_copy_groups),
        Stmt::For(for_stmt) => has_copy_groups(&for_stmt.body),
        Stmt::If(if_stmt) => {
            has_copy_groups(&if_stmt.then_body) || has_copy_groups(&if_stmt.else_body)
        }
        Stmt::Commit { queue, .. } | Stmt::Wait { queue, .. } => *queue == AsyncQueue::Copies,
        Stmt::Sync { .. }
        | Stmt::Arrive { .. }
        | Stmt::WaitPhase { .. }
        | Stmt::SetMaxRegisters { .. } => false,
    })
}

fn has_sync(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|stmt| match stmt {
        Stmt::Spec(spec) => match &spec.body {
            Some(body) => has_sync(body),
            None => is_block_reduction(spec),
        },
        Stmt::For(for_stmt) => has_sync(&for_stmt.body),
        Stmt::If(if_stmt) => has_sync(&if_stmt.then_body) || has_sync(&if_stmt.else_body),
        Stmt::Sync { .. } => true,
        Stmt::Commit { .. }
        | Stmt::Wait { .. }
        | Stmt::Arrive { .. }
        | Stmt::WaitPhase { .. }
        | Stmt::SetMaxRegisters { .. } => false,
    })
}

/// Whether `names` holds for an expression of `cond`.
pub(super) fn cond_names(cond: &Cond, names: &dyn Fn(&Expr) -> bool) -> bool {
    match cond {
        Cond::Compare(_, a, b) => names(a) || names(b),
        Cond::And(a, b) | Cond::Or(a, b) => cond_names(a, names) || cond_names(b, names),
    }
}
