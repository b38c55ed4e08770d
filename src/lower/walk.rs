//! Stage 3, lowering: the walk over a kernel's statements. Decomposed specs
//! are walked into; atomic specs go to instruction selection; run-time loops
//! become PTX loops with a counter register (each a scope, with a preheader
//! for what is invariant in it); unrolled loops are walked once per
//! iteration with their variable substituted everywhere; `if` becomes a
//! predicate and branches, each branch a scope (or nothing, when the
//! condition is known at compile time); `sync`, `async_commit` and
//! `async_wait` become single instructions.

use super::error::LowerError;
use super::isel;
use super::kernel::KernelLowering;
use crate::diag::Span;
use crate::expr::{Expr, Var};
use crate::ir::print::Print;
use crate::ir::{AsyncQueue, BarrierScope, CompareOp, Cond, ForStmt, IfStmt, SpecStmt, Stmt, View};
use crate::ptx::{Guard, Reg, RegClass, imm};

/// The most iterations an unrolled loop may have.
pub const MAX_UNROLL: i64 = 1 << 16;

impl KernelLowering<'_, '_> {
    /// Lowers a spec: its body when decomposed, else the instructions it
    /// matches. A spec that matches nothing is recorded and the walk goes on,
    /// so one run reports every such spec.
    pub fn spec(&mut self, spec: &SpecStmt) -> Result<(), LowerError> {
        self.out.at(spec.span);
        match &spec.body {
            Some(body) => {
                self.annotate(spec.span, |this| {
                    format!("{} {{", spec.display(&this.names))
                })?;
                self.body(body)
            }
            None => {
                let spec = self.substitute_spec(spec);
                self.annotate(spec.span, |this| spec.display(&this.names).to_string())?;
                match isel::lower_atomic(self, &spec) {
                    Ok(()) => Ok(()),
                    Err(error @ (LowerError::NoMatch(_) | LowerError::Unsupported { .. })) => {
                        self.errors.push(error);
                        Ok(())
                    }
                    Err(
                        error @ (LowerError::SharedMemory { .. }
                        | LowerError::TooLarge { .. }
                        | LowerError::Registers { .. }
                        | LowerError::Ptx { .. }),
                    ) => Err(error),
                }
            }
        }
    }

    /// Lowers statements in order.
    pub fn body(&mut self, body: &[Stmt]) -> Result<(), LowerError> {
        body.iter().try_for_each(|stmt| self.statement(stmt))
    }

    fn statement(&mut self, stmt: &Stmt) -> Result<(), LowerError> {
        if let Stmt::Spec(spec) = stmt {
            // A warpgroup multiply keeps a batch open; anything else an
            // atomic spec emits closes it (`isel::lower_atomic`).
            return self.spec(spec);
        }
        // Control flow joins paths and the other statements are not
        // multiplies: the next warpgroup multiply opens a new batch.
        self.wgmma_batch_open = false;
        self.control_statement(stmt)?;
        self.wgmma_batch_open = false;
        Ok(())
    }

    fn control_statement(&mut self, stmt: &Stmt) -> Result<(), LowerError> {
        match stmt {
            Stmt::Spec(spec) => self.spec(spec),
            Stmt::For(each) if each.unroll => self.unrolled_loop(each),
            Stmt::For(each) => self.runtime_loop(each),
            Stmt::If(branch) => self.branch(branch),
            Stmt::Sync {
                scope: BarrierScope::Block,
                span,
            } => self.single(*span, "sync", "bar.sync", vec![imm(0)]),
            Stmt::Sync {
                scope: BarrierScope::Grid,
                span,
            } => self.grid_barrier(*span),
            Stmt::Commit { queue, span } => {
                let instruction = match queue {
                    AsyncQueue::Copies => "cp.async.commit_group",
                    AsyncQueue::Mma => {
                        self.register_work_since_mma_commit = false;
                        "wgmma.commit_group.sync.aligned"
                    }
                };
                self.single(*span, queue.commit_keyword(), instruction, Vec::new())
            }
            Stmt::Arrive { barrier, span } => {
                self.out.at(*span);
                self.annotate(*span, |this| {
                    format!("mbarrier_arrive({})", barrier.display(&this.names))
                })?;
                let barrier = self.substitute_view(barrier);
                self.arrive(&barrier)
            }
            Stmt::WaitPhase {
                barrier,
                parity,
                span,
            } => {
                self.out.at(*span);
                self.annotate(*span, |this| {
                    format!(
                        "mbarrier_wait({}, {})",
                        barrier.display(&this.names),
                        parity.display(&this.names)
                    )
                })?;
                let parity = self.substitute(parity);
                let barrier = self.substitute_view(barrier);
                self.wait_phase(&barrier, &parity)
            }
            Stmt::SetMaxRegisters { count, span } => {
                self.out.at(*span);
                self.annotate(*span, |_| format!("setmaxnreg({count})"))?;
                self.set_max_registers(*count)
            }
            Stmt::Wait {
                queue,
                pending,
                span,
            } => {
                let instruction = match queue {
                    AsyncQueue::Copies => "cp.async.wait_group",
                    AsyncQueue::Mma => "wgmma.wait_group.sync.aligned",
                };
                let text = format!("{}({pending})", queue.wait_keyword());
                if *queue == AsyncQueue::Mma && self.register_work_since_mma_commit {
                    // Register work between the commit and this wait is
                    // meant to run while the multiplies do (attention's
                    // softmax beside O += P·V). ptxas hoists a wait above
                    // such work, which it may, and so serialises them; a
                    // CTA memory barrier, which the wait may not pass,
                    // holds it here.
                    self.out.emit("membar.cta", Vec::new())?;
                }
                self.single(*span, &text, instruction, vec![imm(i64::from(*pending))])?;
                match queue {
                    // The copies that landed were written through the
                    // generic proxy; `wgmma` reads through the async one.
                    AsyncQueue::Copies if self.async_proxy_reads => {
                        self.out.emit("fence.proxy.async.shared::cta", Vec::new())
                    }
                    AsyncQueue::Copies | AsyncQueue::Mma => Ok(()),
                }
            }
        }
    }

    /// `grid_sync`: the block's threads meet (`bar.sync`); thread 0 orders
    /// the block's writes before its arrival (`fence.acq_rel.gpu`, then a
    /// release add on the kernel's counter), polls the counter with acquire
    /// loads until the last block has arrived, and fences again; the
    /// block's threads meet once more. Block 0 adds `2^31 − (blocks − 1)`,
    /// every other block 1: the arrivals sum to `2^31`, so the counter's top
    /// bit flips exactly when the last one lands and its low bits are back
    /// where they started — the counter needs no reset between barriers or
    /// launches (it is zero when the module is loaded). Every block must be
    /// resident at once: the kernel is launched cooperatively.
    fn grid_barrier(&mut self, span: Span) -> Result<(), LowerError> {
        self.out.at(span);
        self.annotate(span, |_| BarrierScope::Grid.keyword().to_string())?;
        let counter = self.grid_counter.clone().ok_or_else(|| {
            LowerError::unsupported(
                span,
                "a `grid_sync` in a kernel with no grid barrier counter",
                "this is a lowering bug: every kernel holding a `grid_sync` declares one",
            )
        })?;
        self.out.emit("bar.sync", vec![imm(0)])?;
        // Both ids before the branch: the emitter may reuse an id's register
        // after it, where threads other than 0 must find it written.
        let thread = self.out.int(&Expr::var(Var::ThreadId))?;
        let block = self.out.int(&Expr::var(Var::BlockId))?;
        let others = self.out.reg(RegClass::Pred);
        self.out
            .emit("setp.ne.u32", vec![others.into(), thread, imm(0)])?;
        let arrived = self.out.label("grid_sync_done");
        self.out
            .emit_guarded(Guard::when(others), "bra", vec![arrived.clone().into()])?;
        let address = self.out.reg(RegClass::B64);
        self.out
            .emit("mov.u64/gsym", vec![address.into(), counter.into()])?;
        let blocks = self.out.reg(RegClass::B32);
        self.out.emit("mov.u32/nctaid.x", vec![blocks.into()])?;
        let top = self.out.reg(RegClass::B32);
        self.out
            .emit("mov.u32", vec![top.into(), imm(0x8000_0001)])?;
        let first_share = self.out.reg(RegClass::B32);
        self.out.emit(
            "sub.u32",
            vec![first_share.into(), top.into(), blocks.into()],
        )?;
        let first = self.out.reg(RegClass::Pred);
        self.out
            .emit("setp.eq.u32", vec![first.into(), block, imm(0)])?;
        let share = self.out.reg(RegClass::B32);
        self.out.emit(
            "selp.b32",
            vec![share.into(), first_share.into(), imm(1), first.into()],
        )?;
        self.out.emit("fence.acq_rel.gpu", Vec::new())?;
        let before = self.out.reg(RegClass::B32);
        self.out.emit(
            "atom.release.gpu.global.add.u32",
            vec![before.into(), address.at(0).into(), share.into()],
        )?;
        let poll = self.out.label("grid_sync_poll");
        self.out.place(&poll)?;
        let now = self.out.reg(RegClass::B32);
        self.out.emit(
            "ld.acquire.gpu.global.u32",
            vec![now.into(), address.at(0).into()],
        )?;
        let changed = self.out.reg(RegClass::B32);
        self.out
            .emit("xor.b32", vec![changed.into(), before.into(), now.into()])?;
        let flipped = self.out.reg(RegClass::B32);
        self.out.emit(
            "and.b32",
            vec![flipped.into(), changed.into(), imm(0x8000_0000)],
        )?;
        let waiting = self.out.reg(RegClass::Pred);
        self.out
            .emit("setp.eq.u32", vec![waiting.into(), flipped.into(), imm(0)])?;
        self.out
            .emit_guarded(Guard::when(waiting), "bra", vec![poll.into()])?;
        self.out.emit("fence.acq_rel.gpu", Vec::new())?;
        self.out.place(&arrived)?;
        self.out.emit("bar.sync", vec![imm(0)])
    }

    fn single(
        &mut self,
        span: Span,
        text: &str,
        name: &str,
        operands: Vec<crate::ptx::Operand>,
    ) -> Result<(), LowerError> {
        self.out.at(span);
        self.annotate(span, |_| text.to_string())?;
        self.out.emit(name, operands)
    }

    /// Writes the statement at `span` as a comment when annotating: its
    /// source line when the source is known, else `ir()`.
    pub fn annotate(
        &mut self,
        span: Span,
        ir: impl FnOnce(&Self) -> String,
    ) -> Result<(), LowerError> {
        if !self.options.annotate {
            return Ok(());
        }
        let line = match &self.options.source {
            Some(source) => source_line(source, span),
            None => None,
        };
        let text = line.unwrap_or_else(|| ir(self));
        self.out.comment(&text)
    }

    /// `expr` with the unrolled loop variables in scope replaced by their
    /// values.
    pub fn substitute(&self, expr: &Expr) -> Expr {
        if self.unrolled.is_empty() {
            return expr.clone();
        }
        expr.substitute(&|var| match var {
            Var::Loop(i) => self.unrolled.get(&i).map(|value| Expr::Const(*value)),
            Var::ThreadId | Var::BlockId | Var::Dim(_) => None,
        })
    }

    fn substitute_view(&self, view: &View) -> View {
        let mut view = view.clone();
        view.base = self.substitute(&view.base);
        for level in &mut view.ty.levels {
            level.shape = level.shape.map(&mut |e| self.substitute(e));
            level.stride = level.stride.map(&mut |e| self.substitute(e));
        }
        for bound in &mut view.bounds {
            bound.origin = self.substitute(&bound.origin);
            bound.extent = self.substitute(&bound.extent);
            for level in &mut bound.levels {
                level.stride = level.stride.map(&mut |e| self.substitute(e));
            }
        }
        view
    }

    fn substitute_spec(&self, spec: &SpecStmt) -> SpecStmt {
        SpecStmt {
            kind: spec.kind.clone(),
            outputs: spec
                .outputs
                .iter()
                .map(|v| self.substitute_view(v))
                .collect(),
            inputs: spec
                .inputs
                .iter()
                .map(|v| self.substitute_view(v))
                .collect(),
            blocks: spec.blocks.clone(),
            threads: spec.threads.clone(),
            body: None,
            span: spec.span,
        }
    }

    fn constant(&self, expr: &Expr, what: &str, span: Span) -> Result<i64, LowerError> {
        let value = self.out.prover.simplify(&self.substitute(expr));
        value.as_const().ok_or_else(|| {
            LowerError::unsupported(
                span,
                format!("this loop must be unrolled, but its {what} `{value}` is not a constant"),
                "a loop whose body indexes a register tensor needs constant bounds and step",
            )
        })
    }

    fn unrolled_loop(&mut self, each: &ForStmt) -> Result<(), LowerError> {
        let lo = self.constant(&each.lo, "start", each.span)?;
        let hi = self.constant(&each.hi, "bound", each.span)?;
        let step = self.constant(&each.step, "step", each.span)?;
        if step < 1 || (hi - lo) / step > MAX_UNROLL {
            return Err(LowerError::unsupported(
                each.span,
                format!(
                    "this loop would unroll into {} iterations",
                    (hi - lo) / step.max(1)
                ),
                format!("unrolled loops have a positive step and at most {MAX_UNROLL} iterations"),
            ));
        }
        let var = Expr::var(Var::Loop(each.var))
            .display(&self.names)
            .to_string();
        self.out.at(each.span);
        self.annotate(each.span, |_| {
            format!("for ({var} = {lo}; {var} < {hi}; {var} += {step}) // unrolled")
        })?;
        let mut value = lo;
        while value < hi {
            if self.options.annotate {
                self.out.comment(&format!("{var} = {value} (unrolled)"))?;
            }
            self.unrolled.insert(each.var, value);
            let walked = self.body(&each.body);
            self.unrolled.remove(&each.var);
            walked?;
            value += step;
        }
        Ok(())
    }

    fn runtime_loop(&mut self, each: &ForStmt) -> Result<(), LowerError> {
        self.out.at(each.span);
        let (lo, hi, step) = (
            self.substitute(&each.lo),
            self.substitute(&each.hi),
            self.substitute(&each.step),
        );
        self.annotate(each.span, |this| {
            let names = &this.names;
            let var = Expr::var(Var::Loop(each.var));
            let var = var.display(names);
            format!(
                "for ({var} = {}; {var} < {}; {var} += {})",
                lo.display(names),
                hi.display(names),
                step.display(names)
            )
        })?;
        let uniform = ![&lo, &hi, &step]
            .iter()
            .any(|e| self.lane_dependent(&e.vars()));
        let branch = if uniform { "bra.uni" } else { "bra" };
        // Every active lane sees the same value of the variable where its
        // start and step are the same in every lane (a bound that differs
        // only ends the loop sooner for some lanes).
        let var_lane_dependent =
            self.lane_dependent(&lo.vars()) || self.lane_dependent(&step.vars());
        let counter = self.out.reg(RegClass::B32);
        // The set-up is part of the loop's scope, so that what it computes
        // (start, bound) lands in the loop's preheader, which also dominates
        // the code after the loop (the guard may skip the loop, not it).
        self.out.open_loop(each.var, counter);
        let start = self.out.int(&lo)?;
        self.out.emit("mov.u32", vec![counter.into(), start])?;
        let prover = &self.out.prover;
        let runs = prover
            .range(&prover.simplify(&lo))
            .hi
            .is_some_and(|last| last < prover.range(&prover.simplify(&hi)).lo);
        let exit = self.out.label("loop_exit");
        if !runs {
            let bound = self.out.int(&hi)?;
            let skip = self.out.reg(RegClass::Pred);
            self.out
                .emit("setp.ge.u32", vec![skip.into(), counter.into(), bound])?;
            self.out
                .emit_guarded(Guard::when(skip), branch, vec![exit.clone().into()])?;
        }
        let head = self.out.label("loop");
        self.out.place(&head)?;
        if var_lane_dependent {
            self.lane_dependent_loops.insert(each.var);
        }
        let walked = self.body(&each.body);
        self.lane_dependent_loops.remove(&each.var);
        walked?;
        self.out.at(each.span);
        let step = self.out.int(&step)?;
        self.out
            .emit("add.u32", vec![counter.into(), counter.into(), step])?;
        let bound = self.out.int(&hi)?;
        let again = self.out.reg(RegClass::Pred);
        self.out
            .emit("setp.lt.u32", vec![again.into(), counter.into(), bound])?;
        self.out
            .emit_guarded(Guard::when(again), branch, vec![head.into()])?;
        self.out.close_loop(each.var)?;
        if !runs {
            self.out.place(&exit)?;
        }
        Ok(())
    }

    fn branch(&mut self, branch: &IfStmt) -> Result<(), LowerError> {
        self.out.at(branch.span);
        let cond = branch.cond.map_sides(&|side| self.substitute(side));
        self.annotate(branch.span, |this| {
            format!("if ({})", cond.display(&this.names))
        })?;
        match self.fold(&cond) {
            Folded::Known(true) => return self.body(&branch.then_body),
            Folded::Known(false) => return self.body(&branch.else_body),
            Folded::Runtime(cond) => {
                let uniform = !self.lane_dependent(&cond_vars(&cond));
                let taken = self.predicate(&cond)?;
                if branch.else_body.is_empty() {
                    self.only_if("if", taken, uniform, |this| this.body(&branch.then_body))?;
                } else {
                    self.either(
                        "if",
                        taken,
                        uniform,
                        |this| this.body(&branch.then_body),
                        |this| this.body(&branch.else_body),
                    )?;
                }
            }
        }
        Ok(())
    }

    /// `@p` the branch `then`, in its own scope (what it computes is not
    /// reused after it, where it may not have run); nothing otherwise. Its
    /// label is named after `hint` (`<hint>_end`); with `uniform` (`pred`
    /// the same in every lane of a warp) the branch is `bra.uni`.
    pub(crate) fn only_if(
        &mut self,
        hint: &str,
        pred: Reg,
        uniform: bool,
        then: impl FnOnce(&mut Self) -> Result<(), LowerError>,
    ) -> Result<(), LowerError> {
        let jump = if uniform { "bra.uni" } else { "bra" };
        let end = self.out.label(&format!("{hint}_end"));
        self.out
            .emit_guarded(Guard::unless(pred), jump, vec![end.clone().into()])?;
        self.out.open_branch();
        let walked = then(self);
        self.out.close_branch()?;
        walked?;
        self.out.place(&end)
    }

    /// `@p` the first branch, else the second, each in its own scope; the
    /// labels are named after `hint` (`<hint>_else`, `<hint>_end`). With
    /// `uniform` (`pred` the same in every lane of a warp) the branches are
    /// `bra.uni`.
    pub(crate) fn either(
        &mut self,
        hint: &str,
        pred: Reg,
        uniform: bool,
        then: impl FnOnce(&mut Self) -> Result<(), LowerError>,
        otherwise: impl FnOnce(&mut Self) -> Result<(), LowerError>,
    ) -> Result<(), LowerError> {
        let jump = if uniform { "bra.uni" } else { "bra" };
        let other = self.out.label(&format!("{hint}_else"));
        let end = self.out.label(&format!("{hint}_end"));
        self.out
            .emit_guarded(Guard::unless(pred), jump, vec![other.clone().into()])?;
        self.out.open_branch();
        let first = then(self);
        self.out.close_branch()?;
        first?;
        self.out.emit(jump, vec![end.clone().into()])?;
        self.out.place(&other)?;
        self.out.open_branch();
        let second = otherwise(self);
        self.out.close_branch()?;
        second?;
        self.out.place(&end)
    }

    /// Whether a value of `vars` may differ between the lanes of a warp:
    /// it reads the thread id, or a loop variable whose loop starts or steps
    /// by one.
    pub(crate) fn lane_dependent(&self, vars: &[Var]) -> bool {
        vars.iter().any(|var| match var {
            Var::ThreadId => true,
            Var::Loop(id) => self.lane_dependent_loops.contains(id),
            Var::BlockId | Var::Dim(_) => false,
        })
    }

    /// The condition with every comparison known at compile time decided.
    fn fold(&self, cond: &Cond) -> Folded {
        match cond {
            Cond::Compare(op, a, b) => {
                let prover = &self.out.prover;
                let (a, b) = (prover.simplify(a), prover.simplify(b));
                match (a.as_const(), b.as_const()) {
                    (Some(x), Some(y)) => Folded::Known(op.holds(x, y)),
                    (Some(_), None) | (None, Some(_)) | (None, None) => {
                        Folded::Runtime(Cond::Compare(*op, a, b))
                    }
                }
            }
            Cond::And(a, b) => match (self.fold(a), self.fold(b)) {
                (Folded::Known(false), _) | (_, Folded::Known(false)) => Folded::Known(false),
                (Folded::Known(true), other) | (other, Folded::Known(true)) => other,
                (Folded::Runtime(a), Folded::Runtime(b)) => {
                    Folded::Runtime(Cond::And(Box::new(a), Box::new(b)))
                }
            },
            Cond::Or(a, b) => match (self.fold(a), self.fold(b)) {
                (Folded::Known(true), _) | (_, Folded::Known(true)) => Folded::Known(true),
                (Folded::Known(false), other) | (other, Folded::Known(false)) => other,
                (Folded::Runtime(a), Folded::Runtime(b)) => {
                    Folded::Runtime(Cond::Or(Box::new(a), Box::new(b)))
                }
            },
        }
    }

    /// A predicate register holding `cond` (no part of it constant).
    fn predicate(&mut self, cond: &Cond) -> Result<Reg, LowerError> {
        let d = self.out.reg(RegClass::Pred);
        match cond {
            Cond::Compare(op, a, b) => {
                // `setp` wants a register first: a constant left side swaps.
                let (op, a, b) = match a.as_const() {
                    Some(_) => (mirror(*op), b, a),
                    None => (*op, a, b),
                };
                let a = self.out.int_reg(a)?;
                let b = self.out.int(b)?;
                self.out.emit(
                    &format!("setp.{}.u32", op.name()),
                    vec![d.into(), a.into(), b],
                )?;
            }
            Cond::And(a, b) => {
                let (a, b) = (self.predicate(a)?, self.predicate(b)?);
                self.out
                    .emit("and.pred", vec![d.into(), a.into(), b.into()])?;
            }
            Cond::Or(a, b) => {
                let (a, b) = (self.predicate(a)?, self.predicate(b)?);
                self.out
                    .emit("or.pred", vec![d.into(), a.into(), b.into()])?;
            }
        }
        Ok(d)
    }
}

/// A condition after compile-time folding.
enum Folded {
    Known(bool),
    Runtime(Cond),
}

/// The comparison with its sides swapped: `a < b` is `b > a`.
fn mirror(op: CompareOp) -> CompareOp {
    match op {
        CompareOp::Eq => CompareOp::Eq,
        CompareOp::Ne => CompareOp::Ne,
        CompareOp::Lt => CompareOp::Gt,
        CompareOp::Le => CompareOp::Ge,
        CompareOp::Gt => CompareOp::Lt,
        CompareOp::Ge => CompareOp::Le,
    }
}

fn cond_vars(cond: &Cond) -> Vec<Var> {
    match cond {
        Cond::Compare(_, a, b) => {
            let mut vars = a.vars();
            vars.extend(b.vars());
            vars
        }
        Cond::And(a, b) | Cond::Or(a, b) => {
            let mut vars = cond_vars(a);
            vars.extend(cond_vars(b));
            vars
        }
    }
}

/// `line N: text` of the line where `span` starts, trimmed.
fn source_line(source: &str, span: Span) -> Option<String> {
    let start = (span.start as usize).min(source.len());
    if !source.is_char_boundary(start) {
        return None;
    }
    let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = source[start..]
        .find('\n')
        .map_or(source.len(), |i| start + i);
    let number = source[..start].matches('\n').count() + 1;
    Some(format!(
        "line {number}: {}",
        source[line_start..line_end].trim()
    ))
}
