//! Stage 2, check: a fused kernel's `contract { … }` — the built-in specs
//! over whole tensors that say what the kernel computes, checked as specs
//! (arity, shapes, broadcasts) but with no threads, no body and no
//! storage: `ptxgen run --check` evaluates them in f64 (docs/language.md,
//! "Contracts").

use crate::diag::{Diagnostic, Span};
use crate::ir::{self, BufferId, BufferKind, GroupKind, Level, Memory};
use crate::layout::Tuple;
use crate::syntax::ast::{self, Block, ForLoop, RequireKind, Stmt, StmtKind};

use super::codes;
use super::env::{Binding, Checked, Checker, GroupVal, Namespace, Origin};
use super::stmts::Decided;

const CONTRACT_HELP: &str = "a contract holds tensor declarations (`%t:[M, N].fp32.GL`), built-in specs without launch groups or bodies (`%t <- MatMul<overwrite>(%a, %b)`) and `for` loops of constant bounds around them";

/// The most steps a contract's loops may unroll into.
const MAX_CONTRACT_STEPS: usize = 1 << 12;

/// A group of one element: the contract's steps run on no threads, and the
/// rules that count elements per instance then count whole tensors.
fn scalar_group(kind: GroupKind) -> ir::GroupType {
    ir::GroupType {
        levels: vec![Level {
            shape: Tuple::Node(Vec::new()),
            stride: Tuple::Node(Vec::new()),
        }],
        kind,
    }
}

/// What a statement is called in a diagnostic, for those a contract refuses.
fn refused_statement(kind: &StmtKind) -> Option<&'static str> {
    match kind {
        StmtKind::Tensor(_) | StmtKind::Spec(_) => None,
        StmtKind::Group(_) => Some("a thread group"),
        StmtKind::Indices(_) => Some("indices"),
        StmtKind::For(_) => None,
        StmtKind::If(_) => Some("an `if`"),
        StmtKind::Sync(_) => Some("a barrier"),
        StmtKind::Commit(_) => Some("a commit"),
        StmtKind::Wait(..) => Some("a wait"),
        StmtKind::Arrive(_) | StmtKind::WaitPhase(..) => Some("a barrier statement"),
        StmtKind::SetMaxRegisters(_) => Some("a `setmaxnreg`"),
        StmtKind::Contract(_) => Some("a nested `contract`"),
        StmtKind::Require(RequireKind::Launch, _) => Some("a `require`"),
        StmtKind::Require(RequireKind::Specialize, _) => Some("a `specialize`"),
        StmtKind::Let(_) => Some("a `let`"),
    }
}

/// Why a checked kind has no whole-tensor contract, if it has none.
fn kind_refusal(kind: &ir::SpecKind) -> Option<&'static str> {
    match kind {
        ir::SpecKind::Move {
            asynchronous: true, ..
        } => Some("`Move<async>` is a copy instruction, not a computation"),
        ir::SpecKind::MatMul {
            asynchronous: true, ..
        } => Some("`MatMul<async>` is a warpgroup instruction, not a computation"),
        ir::SpecKind::Move { add: true, .. } => Some(
            "`Move<add>` is an atomic store instruction; a contract adds with `BinaryPointwise<add>`",
        ),
        ir::SpecKind::Shfl { .. } => Some("`Shfl` exchanges registers between lanes"),
        ir::SpecKind::Generic => Some("the generic `Spec` has no built-in meaning"),
        ir::SpecKind::Move {
            asynchronous: false,
            ..
        }
        | ir::SpecKind::MatMul {
            asynchronous: false,
            ..
        }
        | ir::SpecKind::Unary(_)
        | ir::SpecKind::Binary(_)
        | ir::SpecKind::Ternary(_)
        | ir::SpecKind::Select(_)
        | ir::SpecKind::Reduction { .. }
        | ir::SpecKind::Init { .. } => None,
    }
}

impl Checker {
    /// A `contract { … }` block at kernel scope. Its temporaries live in a
    /// scope of their own, so the kernel's body cannot name them.
    pub(crate) fn contract(&mut self, block: &Block, span: Span) -> Option<ir::Contract> {
        if let Some(first) = self.contract_span {
            self.report(
                Diagnostic::error(codes::CONTRACT_FORM, "a second `contract`", span)
                    .with_label("a kernel states its contract once")
                    .with_secondary(first, "the kernel's contract")
                    .with_help("put every step into the first `contract` block"),
            );
            return None;
        }
        self.contract_span = Some(span);
        self.push_scope();
        self.in_contract = true;
        let mut steps = Vec::new();
        self.contract_stmts(block, &mut steps);
        self.in_contract = false;
        self.pop_scope();
        let steps: Checked<Vec<ir::SpecStmt>> = steps.into_iter().collect();
        let steps = steps.ok()?;
        self.temporaries_written_before_read(&steps);
        Some(ir::Contract { steps, span })
    }

    /// The statements of a contract block (or of a loop's body in it).
    fn contract_stmts(&mut self, block: &Block, steps: &mut Vec<Checked<ir::SpecStmt>>) {
        for stmt in &block.stmts {
            match &stmt.kind {
                StmtKind::Tensor(def) => self.tensor_def(def),
                StmtKind::Spec(spec) => steps.push(self.contract_step(spec, stmt.span)),
                StmtKind::For(each) => self.contract_loop(each, steps),
                StmtKind::If(if_stmt) => match self.decided_branch(if_stmt) {
                    Decided::Taken(block) => self.contract_stmts(block, steps),
                    Decided::NoneTaken | Decided::Failed => {}
                    Decided::AtRunTime => self.refuse_in_contract(stmt),
                },
                StmtKind::Group(_)
                | StmtKind::Indices(_)
                | StmtKind::Sync(_)
                | StmtKind::Commit(_)
                | StmtKind::Wait(..)
                | StmtKind::Arrive(_)
                | StmtKind::WaitPhase(..)
                | StmtKind::SetMaxRegisters(_)
                | StmtKind::Contract(_)
                | StmtKind::Require(..)
                | StmtKind::Let(_) => self.refuse_in_contract(stmt),
            }
        }
    }

    /// A statement a contract cannot hold (E0268).
    fn refuse_in_contract(&mut self, stmt: &Stmt) {
        let what = refused_statement(&stmt.kind).unwrap_or("this statement");
        let mut diagnostic = Diagnostic::error(
            codes::CONTRACT_FORM,
            format!("{what} inside a contract"),
            stmt.span,
        )
        .with_label("a contract states what is computed, not how");
        if matches!(stmt.kind, StmtKind::If(_)) {
            diagnostic =
                diagnostic.with_note("an `if` stands in a contract only where constants decide it");
        }
        self.report(diagnostic.with_help(CONTRACT_HELP));
    }

    /// `for (l = 0; l < L; l += 1) { … }` in a contract: the body once per
    /// value, with the variable a constant in each copy (the steps of a
    /// 20-layer network, `%W[l]` naming layer l's weights). The bounds and
    /// step are compile-time constants; a body that fails is reported once.
    fn contract_loop(&mut self, each: &ForLoop, steps: &mut Vec<Checked<ir::SpecStmt>>) {
        const WHAT: &str = "the bounds of a contract's loop";
        let lo = self.constant(&each.init, WHAT);
        let hi = self.constant(&each.bound, WHAT);
        let step = self.constant(&each.step, WHAT);
        let (Ok(lo), Ok(hi), Ok(step)) = (lo, hi, step) else {
            return;
        };
        if step < 1 {
            self.report(
                Diagnostic::error(
                    codes::LOOP_STEP,
                    format!("a loop step of {step}"),
                    each.step.span,
                )
                .with_label("the step must be positive")
                .with_help("count upward, e.g. `l += 1`"),
            );
            return;
        }
        let mut value = lo;
        while value < hi {
            if steps.len() > MAX_CONTRACT_STEPS {
                self.report(
                    Diagnostic::error(
                        codes::CONTRACT_FORM,
                        format!("a contract of more than {MAX_CONTRACT_STEPS} steps"),
                        each.bound.span,
                    )
                    .with_label("this loop unrolls into too many steps")
                    .with_help("state the contract over fewer, larger steps"),
                );
                return;
            }
            let reported = self.diags.len();
            self.push_scope();
            self.define(Namespace::Ident, &each.var, Binding::Unrolled(value), false);
            self.contract_stmts(&each.body, steps);
            self.pop_scope();
            if self.diags.len() > reported {
                return;
            }
            value += step;
        }
    }

    /// One step: a built-in kind over whole global tensors, without launch
    /// groups or a body, that fits the kind's rules.
    fn contract_step(&mut self, spec: &ast::SpecStmt, span: Span) -> Checked<ir::SpecStmt> {
        if let Some(launch) = &spec.launch {
            self.report(
                Diagnostic::error(
                    codes::CONTRACT_FORM,
                    "launch groups on a contract's step",
                    launch.blocks.span.join(launch.threads.span),
                )
                .with_label("a contract runs on no threads")
                .with_help(format!(
                    "drop the launch groups: `… <- {}(…)`",
                    spec.kind.name()
                )),
            );
        }
        if let Some(body) = &spec.body {
            self.report(
                Diagnostic::error(
                    codes::CONTRACT_FORM,
                    "a body on a contract's step",
                    body.span,
                )
                .with_label("a contract's steps are not decomposed")
                .with_note("the kernel's outermost spec holds the implementation")
                .with_help("drop the body; the step's kind says what it computes"),
            );
        }
        let outputs: Vec<Checked<ir::View>> =
            spec.outputs.iter().map(|e| self.tensor_value(e)).collect();
        let inputs: Vec<Checked<ir::View>> =
            spec.inputs.iter().map(|e| self.tensor_value(e)).collect();
        let kind = self.contract_kind(spec)?;
        let outputs: Vec<ir::View> = outputs.into_iter().collect::<Checked<_>>()?;
        let inputs: Vec<ir::View> = inputs.into_iter().collect::<Checked<_>>()?;
        for view in outputs.iter().chain(&inputs) {
            self.whole_global_tensor(view)?;
        }
        let threads = GroupVal {
            ty: scalar_group(GroupKind::Thread),
            origin: Origin {
                name: "contract".to_string(),
                span,
            },
        };
        self.spec_rules(spec, &kind, &outputs, &inputs, &threads);
        Ok(ir::SpecStmt {
            kind,
            outputs,
            inputs,
            blocks: scalar_group(GroupKind::Block),
            threads: threads.ty,
            body: None,
            span,
        })
    }

    fn contract_kind(&mut self, spec: &ast::SpecStmt) -> Checked<ir::SpecKind> {
        let kind = self.spec_kind(&spec.kind, spec.kind_span)?;
        match kind_refusal(&kind) {
            None => Ok(kind),
            Some(reason) => Err(self.fail(
                Diagnostic::error(
                    codes::CONTRACT_FORM,
                    format!("`{}` in a contract", spec.kind.name()),
                    spec.kind_span,
                )
                .with_label(reason)
                .with_note("a contract is built from the kinds with a whole-tensor meaning: Move, MatMul, the pointwise kinds, Select, Reduction, Init")
                .with_help("state what the kernel computes with those kinds"),
            )),
        }
    }

    /// A contract's operand is a kernel parameter or a temporary, whole
    /// (no thread, block or loop moves it).
    fn whole_global_tensor(&mut self, view: &ir::View) -> Checked<()> {
        if view.ty.memory == Memory::Global {
            return Ok(());
        }
        Err(self.fail(
            Diagnostic::error(
                codes::CONTRACT_FORM,
                format!("a {} tensor in a contract", view.ty.memory.name()),
                view.span,
            )
            .with_label("not a whole tensor of global memory")
            .with_note("a contract speaks of the kernel's global tensors and its own temporaries, which are declared `.GL` inside it")
            .with_help(CONTRACT_HELP),
        ))
    }

    /// Every temporary a step reads was written by an earlier step.
    fn temporaries_written_before_read(&mut self, steps: &[ir::SpecStmt]) {
        let mut written: Vec<BufferId> = Vec::new();
        for step in steps {
            let accumulated = step.kind.accumulates().then_some(&step.outputs);
            for view in step.inputs.iter().chain(accumulated.into_iter().flatten()) {
                let buffer = &self.kernel.buffers[view.buffer.0 as usize];
                if buffer.kind == BufferKind::Temporary && !written.contains(&view.buffer) {
                    let name = buffer.name.clone();
                    self.report(
                        Diagnostic::error(
                            codes::CONTRACT_DATAFLOW,
                            format!("`%{name}` is read before a step computes it"),
                            view.span,
                        )
                        .with_label("no earlier step writes this temporary")
                        .with_help(format!(
                            "compute `%{name}` in an earlier step, e.g. `%{name} <- Init<0.0>()`"
                        )),
                    );
                }
            }
            written.extend(step.outputs.iter().map(|view| view.buffer));
        }
    }

    /// A kernel with a contract has the generic `Spec` outermost, and the
    /// contract writes each of that spec's outputs.
    pub(crate) fn contract_fits_root(&mut self, contract: &ir::Contract, root: &ir::SpecStmt) {
        if root.kind != ir::SpecKind::Generic {
            self.report(
                Diagnostic::error(
                    codes::CONTRACT_DATAFLOW,
                    "a contract beside a built-in outermost spec",
                    contract.span,
                )
                .with_label("the kernel would state two meanings")
                .with_secondary(root.span, "this spec's kind already says what the kernel computes")
                .with_help("make the outermost spec the generic `Spec<<<…>>>(…) { … }`, or drop the contract"),
            );
            return;
        }
        for output in &root.outputs {
            let written = contract
                .steps
                .iter()
                .flat_map(|step| &step.outputs)
                .any(|view| view.buffer == output.buffer);
            if !written {
                let name = &self.kernel.buffers[output.buffer.0 as usize].name;
                let message = format!("the contract never computes `%{name}`");
                self.report(
                    Diagnostic::error(codes::CONTRACT_DATAFLOW, message, contract.span)
                        .with_label("no step writes the kernel's output")
                        .with_secondary(output.span, "an output of the outermost spec")
                        .with_help(format!("end the contract with a step `%{name} <- …`")),
                );
            }
        }
    }
}
