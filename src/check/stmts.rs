//! Stage 2, check: statements and kernels — specs (operands, launch or
//! executing groups, the kind's rules, the body), loops, conditionals and
//! synchronisation, and the assembly of a checked `ir::Kernel`: kernel scope
//! holds declarations, definitions and exactly one spec, the outermost,
//! whose groups are the launch.

use crate::diag::{Diagnostic, Span};
use crate::expr::Expr;
use crate::ir::{self, NamedSpan};
use crate::syntax::ast::{
    self, AsyncQueue, BarrierScope, Block, Cond, CondKind, ForLoop, IfStmt, IntExpr, RequireKind,
    Stmt, StmtKind,
};

use super::codes;
use super::env::{Binding, Checked, Checker, Guard, LoopInfo, Namespace, Poisoned};
use super::ints::IntContext;
use super::symbolic::needs_positive_check;

/// What a statement that cannot stand at kernel scope is called.
fn control_name(kind: &StmtKind) -> Option<&'static str> {
    match kind {
        StmtKind::For(_) => Some("`for`"),
        StmtKind::If(_) => Some("`if`"),
        StmtKind::Sync(BarrierScope::Block) => Some("`sync`"),
        StmtKind::Sync(BarrierScope::Grid) => Some("`grid_sync`"),
        StmtKind::Commit(AsyncQueue::Copies) => Some("`async_commit`"),
        StmtKind::Commit(AsyncQueue::Mma) => Some("`mma_commit`"),
        StmtKind::Wait(AsyncQueue::Copies, _) => Some("`async_wait`"),
        StmtKind::Wait(AsyncQueue::Mma, _) => Some("`mma_wait`"),
        StmtKind::Arrive(_) => Some("`mbarrier_arrive`"),
        StmtKind::WaitPhase(..) => Some("`mbarrier_wait`"),
        StmtKind::SetMaxRegisters(_) => Some("`setmaxnreg`"),
        StmtKind::Contract(_) => Some("`contract`"),
        StmtKind::Require(RequireKind::Launch, _) => Some("`require`"),
        StmtKind::Require(RequireKind::Specialize, _) => Some("`specialize`"),
        StmtKind::Let(_) => Some("`let`"),
        StmtKind::Tensor(_) | StmtKind::Group(_) | StmtKind::Indices(_) | StmtKind::Spec(_) => None,
    }
}

/// Which branch of an `if` constants choose (`Checker::decided_branch`).
pub(crate) enum Decided<'a> {
    /// This block runs.
    Taken(&'a Block),
    /// No branch runs (every condition false, no `else`).
    NoneTaken,
    /// A condition names a run-time value: only the launch decides.
    AtRunTime,
    /// A condition has an error (reported).
    Failed,
}

impl Checker {
    /// A whole kernel: its kernel-scope statements, then the assembly.
    pub(crate) fn kernel(&mut self, kernel: &ast::Kernel) -> Checked<ir::Kernel> {
        self.scan_definitions(&kernel.body);
        let mut root: Option<(Checked<ir::SpecStmt>, Span)> = None;
        self.kernel_block(&kernel.body.stmts, &mut root);
        let block_size = self.launch.as_ref().map(|launch| launch.block_size);
        let occupancy = self.occupancy(kernel, block_size);
        let Some((root, _)) = root else {
            let span = if kernel.name.span.is_empty() {
                kernel.span
            } else {
                kernel.name.span
            };
            return Err(self.fail(
                Diagnostic::error(
                    codes::NO_SPEC,
                    format!("the kernel `{}` has no spec", kernel.name.text),
                    span,
                )
                .with_label("nothing to launch")
                .with_note(
                    "a kernel's outermost spec names its launch groups and states what it computes",
                )
                .with_help("add the spec, e.g. `%c <- MatMul<<<#b, #t>>>(%a, %b) { … }`"),
            ));
        };
        let root = root?;
        let contract = self.kernel_contract.take();
        if let Some(contract) = &contract {
            self.contract_fits_root(contract, &root);
        }
        for diagnostic in super::pending::check_pending(&root, &self.kernel.buffers) {
            self.report(diagnostic);
        }
        let occupancy = occupancy?;
        let launch = self.launch.clone().ok_or(Poisoned)?;
        let checked = ir::Kernel {
            name: kernel.name.text.clone(),
            span: kernel.span,
            dims: self.kernel.dims.clone(),
            loops: self.kernel.loops.clone(),
            buffers: self.kernel.buffers.clone(),
            params: self.kernel.params.clone(),
            requirements: self.kernel.requirements.clone(),
            specializations: self.kernel.specializations.clone(),
            grid: launch.grid,
            block: launch.block,
            occupancy,
            root,
            contract,
            tensor_maps: self.kernel.tensor_maps.clone(),
        };
        for diagnostic in super::barriers::check_barriers(&checked) {
            self.report(diagnostic);
        }
        for diagnostic in super::tma::check_kernel(&checked) {
            self.report(diagnostic);
        }
        // Coverage walks the kernel with its types known: only a kernel
        // otherwise free of errors gets it, so no fault is reported twice.
        if !self.diags.iter().any(Diagnostic::is_error) {
            for diagnostic in super::coverage::check_writes(&checked) {
                self.report(diagnostic);
            }
            for diagnostic in super::races::check_races(&checked) {
                self.report(diagnostic);
            }
            for diagnostic in super::unwritten::check_register_reads(&checked) {
                self.report(diagnostic);
            }
        }
        Ok(checked)
    }

    /// The statements at kernel scope, in order; an `if` that constants
    /// decide stands for the statements of the branch it takes, which
    /// belong to kernel scope (a parameter declared there is the kernel's).
    fn kernel_block(&mut self, stmts: &[Stmt], root: &mut Option<(Checked<ir::SpecStmt>, Span)>) {
        for stmt in stmts {
            if let StmtKind::If(if_stmt) = &stmt.kind {
                match self.decided_branch(if_stmt) {
                    Decided::Taken(block) => {
                        self.kernel_block(&block.stmts, root);
                        continue;
                    }
                    Decided::NoneTaken | Decided::Failed => continue,
                    // Reported by `kernel_stmt`, like any control flow there.
                    Decided::AtRunTime => {}
                }
            }
            let Some(spec) = self.kernel_stmt(stmt) else {
                continue;
            };
            match root {
                Some((_, first)) => {
                    let first = *first;
                    self.report(
                        Diagnostic::error(
                            codes::KERNEL_SCOPE,
                            "a second spec at kernel scope",
                            stmt.span,
                        )
                        .with_label("a kernel has exactly one outermost spec")
                        .with_secondary(first, "the kernel's spec")
                        .with_help("put further specs inside the body of the first one"),
                    );
                }
                None => *root = Some((self.spec(spec, stmt.span, true), stmt.span)),
            }
        }
    }

    /// Which branch of `if_stmt` runs, where its conditions are constants
    /// (defines included) — how kernel scope and contracts, which hold no
    /// control flow, choose between declarations and steps.
    pub(crate) fn decided_branch<'a>(&mut self, if_stmt: &'a IfStmt) -> Decided<'a> {
        for (cond, block) in &if_stmt.branches {
            let Ok(checked) = self.cond(cond) else {
                return Decided::Failed;
            };
            match checked.known() {
                Some(true) => return Decided::Taken(block),
                Some(false) => {}
                None => return Decided::AtRunTime,
            }
        }
        match &if_stmt.otherwise {
            Some(block) => Decided::Taken(block),
            None => Decided::NoneTaken,
        }
    }

    /// A statement at kernel scope; returns the spec, if it is one.
    pub(crate) fn kernel_stmt<'a>(&mut self, stmt: &'a Stmt) -> Option<&'a ast::SpecStmt> {
        match &stmt.kind {
            StmtKind::Tensor(def) => self.tensor_def(def),
            StmtKind::Group(def) => self.group_def(def),
            StmtKind::Indices(def) => self.indices_def(def),
            StmtKind::Spec(spec) => return Some(spec),
            StmtKind::Contract(block) => {
                if let Some(contract) = self.contract(block, stmt.span) {
                    self.kernel_contract = Some(contract);
                }
            }
            StmtKind::Require(kind, cond) => self.require_stmt(*kind, cond),
            StmtKind::For(_)
            | StmtKind::If(_)
            | StmtKind::Sync(_)
            | StmtKind::Commit(_)
            | StmtKind::Wait(..)
            | StmtKind::Arrive(_)
            | StmtKind::WaitPhase(..)
            | StmtKind::SetMaxRegisters(_)
            | StmtKind::Let(_) => {
                let what = control_name(&stmt.kind).unwrap_or("this statement");
                let mut diagnostic = Diagnostic::error(codes::KERNEL_SCOPE, format!("{what} at kernel scope"), stmt.span)
                    .with_label("outside every spec")
                    .with_note("kernel scope declares the parameters and groups and holds the outermost spec; what runs is in that spec's body");
                if matches!(stmt.kind, StmtKind::If(_)) {
                    diagnostic = diagnostic.with_note(
                        "an `if` stands at kernel scope only where constants decide it (it chooses declarations, such as a parameter some variants have)",
                    );
                }
                if matches!(stmt.kind, StmtKind::Let(_)) {
                    diagnostic = diagnostic.with_note(
                        "a `let` names a value the body computes; a value known when compiling is a `const` above the kernel",
                    );
                }
                self.report(diagnostic.with_help("move it into the body of the kernel's spec"));
            }
        }
        None
    }

    /// The statements of a block, in a scope of their own.
    pub(crate) fn block(&mut self, block: &Block) -> Vec<ir::Stmt> {
        self.push_scope();
        let mut out = Vec::new();
        for stmt in &block.stmts {
            out.extend(self.body_stmt(stmt));
        }
        self.pop_scope();
        out
    }

    fn body_stmt(&mut self, stmt: &Stmt) -> Option<ir::Stmt> {
        match &stmt.kind {
            StmtKind::Tensor(def) => {
                self.tensor_def(def);
                None
            }
            StmtKind::Group(def) => {
                self.group_def(def);
                None
            }
            StmtKind::Indices(def) => {
                self.indices_def(def);
                None
            }
            StmtKind::Spec(spec) => self.spec(spec, stmt.span, false).ok().map(ir::Stmt::Spec),
            StmtKind::For(for_loop) => self.for_loop(for_loop, stmt.span),
            StmtKind::If(if_stmt) => self.if_stmt(if_stmt, stmt.span),
            StmtKind::Sync(scope) => Some(ir::Stmt::Sync {
                scope: *scope,
                span: stmt.span,
            }),
            StmtKind::Commit(queue) => Some(ir::Stmt::Commit {
                queue: *queue,
                span: stmt.span,
            }),
            StmtKind::Wait(queue, count) => self.wait(*queue, count, stmt.span),
            StmtKind::Arrive(barrier) => self.arrive(barrier, stmt.span),
            StmtKind::WaitPhase(barrier, parity) => self.wait_phase(barrier, parity, stmt.span),
            StmtKind::SetMaxRegisters(count) => self.set_max_registers(count, stmt.span),
            StmtKind::Let(def) => {
                let value = self.int(&def.value, IntContext::Runtime).ok();
                self.define(Namespace::Ident, &def.name, Binding::Let(value), false);
                None
            }
            StmtKind::Require(kind, cond) => {
                let keyword = kind.keyword();
                self.report(
                    Diagnostic::error(
                        codes::BAD_REQUIREMENT,
                        format!("`{keyword}` inside a spec body"),
                        cond.span,
                    )
                    .with_label(match kind {
                        RequireKind::Launch => "a requirement is on the whole launch",
                        RequireKind::Specialize => {
                            "a specialization is a version of the whole kernel"
                        }
                    })
                    .with_help(format!(
                        "move the `{keyword}` to kernel scope, beside the kernel's tensors"
                    )),
                );
                None
            }
            StmtKind::Contract(_) => {
                self.report(
                    Diagnostic::error(
                        codes::CONTRACT_FORM,
                        "`contract` inside a spec body",
                        stmt.span,
                    )
                    .with_label("a contract describes the whole kernel")
                    .with_help("move the `contract { … }` block to kernel scope, before the outermost spec"),
                );
                None
            }
        }
    }

    /// A spec: operands, groups (the launch if `outermost`), the kind's
    /// rules, then the body.
    pub(crate) fn spec(
        &mut self,
        spec: &ast::SpecStmt,
        span: Span,
        outermost: bool,
    ) -> Checked<ir::SpecStmt> {
        let outputs: Vec<Checked<ir::View>> =
            spec.outputs.iter().map(|e| self.tensor_value(e)).collect();
        let inputs: Vec<Checked<ir::View>> =
            spec.inputs.iter().map(|e| self.tensor_value(e)).collect();
        let kind = self.spec_kind(&spec.kind, spec.kind_span);
        // The parser gives launch groups to every spec outside a contract.
        let groups = spec.launch.as_ref().ok_or(Poisoned)?;
        let blocks = self.group_value(&groups.blocks);
        let threads = self.group_value(&groups.threads);
        if outermost {
            self.launch = self.launch(groups, &blocks, &threads).ok();
        } else {
            // Reported inside; the spec's operands are still worth checking.
            let _ = self.executing_groups(groups, &blocks, &threads);
        }
        let outputs: Checked<Vec<ir::View>> = outputs.into_iter().collect();
        let inputs: Checked<Vec<ir::View>> = inputs.into_iter().collect();
        if let (Ok(kind), Ok(outs), Ok(ins), Ok(group)) = (&kind, &outputs, &inputs, &threads) {
            self.spec_rules(spec, kind, outs, ins, group);
            if kind.adds_atomically() {
                self.add_move_rules(spec, &outs[0], outermost);
            }
        }
        let body = spec.body.as_ref().map(|block| self.block(block));
        Ok(ir::SpecStmt {
            kind: kind?,
            outputs: outputs?,
            inputs: inputs?,
            blocks: blocks?.ty,
            threads: threads?.ty,
            body,
            span,
        })
    }

    pub(crate) fn spec_kind(&mut self, kind: &ast::SpecKind, span: Span) -> Checked<ir::SpecKind> {
        Ok(match kind {
            ast::SpecKind::Move {
                asynchronous,
                masked,
                tma,
                add,
            } => ir::SpecKind::Move {
                asynchronous: *asynchronous,
                masked: *masked,
                tma: *tma,
                add: *add,
            },
            ast::SpecKind::MatMul {
                overwrite,
                asynchronous,
            } => ir::SpecKind::MatMul {
                accumulate: !overwrite,
                asynchronous: *asynchronous,
            },
            ast::SpecKind::UnaryPointwise(op) => ir::SpecKind::Unary(*op),
            ast::SpecKind::BinaryPointwise(op) => ir::SpecKind::Binary(*op),
            ast::SpecKind::TernaryPointwise(op) => ir::SpecKind::Ternary(*op),
            ast::SpecKind::Select(op) => ir::SpecKind::Select(*op),
            ast::SpecKind::Reduction(op, axes) => {
                let values: Vec<Checked<i64>> = axes
                    .iter()
                    .map(|axis| self.constant(axis, "reduction axes"))
                    .collect();
                let mut out = Vec::with_capacity(values.len());
                for (value, axis) in values.into_iter().zip(axes) {
                    let value = value?;
                    let Ok(value) = u32::try_from(value) else {
                        return Err(self.fail(
                            Diagnostic::error(
                                codes::REDUCTION_AXES,
                                format!("axis {value}"),
                                axis.span,
                            )
                            .with_label("axes are numbered from 0")
                            .with_help("name the input's modes 0, 1, …"),
                        ));
                    };
                    out.push(value);
                }
                ir::SpecKind::Reduction { op: *op, axes: out }
            }
            ast::SpecKind::Shfl(ast::ShflMode::Bfly, mask) => {
                let value = self.constant(mask, "a shuffle mask")?;
                let Ok(mask) = u32::try_from(value) else {
                    return Err(self.fail(
                        Diagnostic::error(codes::SHFL, format!("butterfly mask {value}"), span)
                            .with_label("masks are lane numbers, 0 to 31")
                            .with_help("use a mask such as 16, 8, 4, 2 or 1"),
                    ));
                };
                ir::SpecKind::Shfl { mask }
            }
            ast::SpecKind::Init(ast::InitValue::Number(value)) => ir::SpecKind::Init {
                value: ir::InitValue::Number(*value),
            },
            ast::SpecKind::Init(ast::InitValue::Constant(value)) => ir::SpecKind::Init {
                value: ir::InitValue::Number(self.constant(value, "an `Init` value")? as f64),
            },
            ast::SpecKind::Init(ast::InitValue::Index(axis)) => ir::SpecKind::Init {
                value: ir::InitValue::Index(*axis),
            },
            ast::SpecKind::Generic => ir::SpecKind::Generic,
        })
    }

    fn for_loop(&mut self, for_loop: &ForLoop, span: Span) -> Option<ir::Stmt> {
        let lo = self.int(&for_loop.init, IntContext::Runtime);
        let hi = self.int(&for_loop.bound, IntContext::Runtime);
        let step = self.int(&for_loop.step, IntContext::Runtime);
        if let Ok(value) = &step {
            match value.as_const() {
                Some(v) if v <= 0 => self.report(
                    Diagnostic::error(
                        codes::LOOP_STEP,
                        format!("a loop step of {v}"),
                        for_loop.step.span,
                    )
                    .with_label("the step must be positive")
                    .with_note("loops count upward to their exclusive bound")
                    .with_help("count upward, e.g. `k += 1`"),
                ),
                Some(_) => {}
                None if needs_positive_check(value) => self.require(ir::Requirement::Positive {
                    value: value.clone(),
                    span: for_loop.step.span,
                }),
                None => {}
            }
        }
        if let (Ok(hi), Ok(step)) = (&hi, &step)
            && step.as_const().is_none_or(|step| step > 0)
        {
            self.loop_counter_fits(hi, step, for_loop.step.span);
        }
        let constant = |value: &Checked<Expr>| value.as_ref().ok().and_then(Expr::as_const);
        let constant_bounds = match (constant(&lo), constant(&hi), constant(&step)) {
            (Some(lo), Some(hi), Some(step)) => Some((lo, hi, step)),
            _ => None,
        };
        let id = self.kernel.loops.len() as u32;
        self.kernel.loops.push(NamedSpan {
            name: for_loop.var.text.clone(),
            span: for_loop.var.span,
        });
        let first = lo.as_ref().ok().and_then(|lo| self.bounds(lo).lo());
        let last = hi
            .as_ref()
            .ok()
            .and_then(|hi| self.bounds(hi).hi())
            .and_then(|hi| hi.checked_sub(1));
        // The largest value over the dims, through enclosing loops' own
        // largest values: a bound on the loops nested inside.
        let symbolic_last = hi
            .as_ref()
            .ok()
            .and_then(|hi| self.upper_over_dims(hi))
            .map(|hi| Expr::sub(hi, Expr::Const(1)));
        self.kernel.loop_info.push(LoopInfo {
            last: symbolic_last,
            range: (first, last),
            header: Span::new(span.start, for_loop.bound.span.end),
            unroll: false,
            constant_bounds,
        });
        self.push_scope();
        self.define(Namespace::Ident, &for_loop.var, Binding::Loop(id), false);
        let body = self.block(&for_loop.body);
        self.pop_scope();
        let info = &self.kernel.loop_info[id as usize];
        let unroll = info.unroll || is_short_constant_loop(info.constant_bounds);
        Some(ir::Stmt::For(ir::ForStmt {
            var: id,
            lo: lo.ok()?,
            hi: hi.ok()?,
            step: step.ok()?,
            unroll,
            body,
            span,
        }))
    }

    /// `if … else if … else …` becomes nested `IfStmt`s, one per branch.
    fn if_stmt(&mut self, if_stmt: &IfStmt, span: Span) -> Option<ir::Stmt> {
        let mut branches: Vec<(Checked<ir::Cond>, Vec<ir::Stmt>, Span)> = Vec::new();
        let mut decided = false;
        for (cond, block) in &if_stmt.branches {
            let checked = self.cond(cond);
            // A condition of constants decides the `if` now, like C++'s
            // `if constexpr`: the branches not taken are not checked, so a
            // define may choose between code for different layouts.
            let known = checked.as_ref().ok().and_then(ir::Cond::known);
            let body = match known {
                Some(false) => Vec::new(),
                Some(true) | None => {
                    let depth = self.guards.len();
                    if let Ok(condition) = &checked {
                        guards_of(condition, &mut self.guards);
                    }
                    let body = self.block(block);
                    self.guards.truncate(depth);
                    body
                }
            };
            branches.push((checked, body, cond.span));
            if known == Some(true) {
                decided = true;
                break;
            }
        }
        let mut else_body = match (&if_stmt.otherwise, decided) {
            (Some(block), false) => self.block(block),
            (Some(_), true) | (None, _) => Vec::new(),
        };
        let mut failed = false;
        for (index, (cond, then_body, cond_span)) in branches.into_iter().enumerate().rev() {
            let Ok(cond) = cond else {
                failed = true;
                continue;
            };
            let node_span = if index == 0 {
                span
            } else {
                Span::new(cond_span.start, span.end)
            };
            else_body = vec![ir::Stmt::If(ir::IfStmt {
                cond,
                then_body,
                else_body,
                span: node_span,
            })];
        }
        if failed { None } else { else_body.pop() }
    }

    fn cond(&mut self, cond: &Cond) -> Checked<ir::Cond> {
        match &cond.kind {
            CondKind::Compare(op, a, b) => {
                let a = self.int(a, IntContext::Runtime);
                let b = self.int(b, IntContext::Runtime);
                Ok(ir::Cond::Compare(*op, a?, b?))
            }
            CondKind::And(a, b) => {
                let a = self.cond(a);
                let b = self.cond(b);
                Ok(ir::Cond::And(Box::new(a?), Box::new(b?)))
            }
            CondKind::Or(a, b) => {
                let a = self.cond(a);
                let b = self.cond(b);
                Ok(ir::Cond::Or(Box::new(a?), Box::new(b?)))
            }
        }
    }

    fn wait(&mut self, queue: AsyncQueue, count: &IntExpr, span: Span) -> Option<ir::Stmt> {
        let what = match queue {
            AsyncQueue::Copies => "the number of pending copy groups",
            AsyncQueue::Mma => "the number of pending groups of matrix multiplies",
        };
        let value = self.constant(count, what).ok()?;
        match u32::try_from(value) {
            Ok(pending) => Some(ir::Stmt::Wait {
                queue,
                pending,
                span,
            }),
            Err(_) => {
                let keyword = queue.wait_keyword();
                self.report(
                    Diagnostic::error(codes::ASYNC_WAIT, format!("`{keyword}({value})`"), count.span)
                        .with_label(format!("the number of {} left pending: 0 to 4294967295", queue.groups()))
                        .with_help(format!("`{keyword}(0)` waits for every group; `{keyword}(1)` leaves the newest group in flight")),
                );
                None
            }
        }
    }
}

/// Constant-bounded loops of at most this many iterations are unrolled even
/// when their body indexes no register tensor.
pub(crate) const SHORT_LOOP_TRIP_COUNT: i64 = 8;

/// Whether a loop with these constant bounds runs at most
/// [`SHORT_LOOP_TRIP_COUNT`] iterations. Unrolled, such a loop costs no
/// counter, compare or branch, and its instructions join the straight-line
/// code around it, where the assembler can interleave them with independent
/// work (a block's `cp.async` copies between a warp's `mma`s).
fn is_short_constant_loop(bounds: Option<(i64, i64, i64)>) -> bool {
    let Some((lo, hi, step)) = bounds else {
        return false;
    };
    if step <= 0 || hi <= lo {
        return false;
    }
    let trips = hi
        .checked_sub(lo)
        .and_then(|span| span.checked_add(step - 1))
        .map(|rounded| rounded / step);
    trips.is_some_and(|trips| trips <= SHORT_LOOP_TRIP_COUNT)
}

/// The bounds a condition guarantees inside its branch: `a < b` gives
/// `a ≤ b - 1`, `a >= b` gives `b ≤ a`, `==` both ways, `&&` both sides;
/// `||` and `!=` guarantee no bound.
fn guards_of(condition: &ir::Cond, out: &mut Vec<Guard>) {
    let at_most = |value: &Expr, bound: Expr| Guard {
        value: value.clone(),
        at_most: bound,
    };
    let less = |bound: &Expr| Expr::sub(bound.clone(), Expr::Const(1));
    match condition {
        ir::Cond::Compare(op, a, b) => match op {
            ir::CompareOp::Lt => out.push(at_most(a, less(b))),
            ir::CompareOp::Le => out.push(at_most(a, b.clone())),
            ir::CompareOp::Gt => out.push(at_most(b, less(a))),
            ir::CompareOp::Ge => out.push(at_most(b, a.clone())),
            ir::CompareOp::Eq => {
                out.push(at_most(a, b.clone()));
                out.push(at_most(b, a.clone()));
            }
            ir::CompareOp::Ne => {}
        },
        ir::Cond::And(a, b) => {
            guards_of(a, out);
            guards_of(b, out);
        }
        ir::Cond::Or(..) => {}
    }
}
