//! Stage 3, lowering: the code under construction for one entry — a tree of
//! scopes (the kernel, one per run-time loop, one per branch of an `if`),
//! flattened into PTX at the end.
//!
//! Why a tree: a value is computed where it is needed, but never inside a
//! loop in which it is invariant. Its *home* is the preheader of the
//! outermost open loop that it does not depend on (code placed just before
//! that loop), or, when every open loop defines one of its variables, the
//! current position of the innermost scope. So an epilogue's addresses are
//! computed after the main loop, not at the kernel's entry, and a value
//! needed only inside an `if` is computed inside it. Values are remembered
//! in the scope whose straight-line code holds them, and found from any
//! scope nested in it later on: a definition dominates exactly the rest of
//! its scope (common subexpressions are computed once where that is sound).

use std::collections::BTreeMap;

use super::error::LowerError;
use crate::diag::Span;
use crate::expr::Expr;
use crate::index::prove::Prover;
use crate::ptx::{
    Catalogue, Entry, EntryBuilder, Guard, Instruction, Label, Operand, ParamType, Reg, RegClass,
    Statement, Symbol,
};

/// What a remembered value is: the key of common-subexpression elimination.
///
/// Rule: equal keys denote equal values within the scope that remembers
/// them, so a key names everything its value depends on.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Key {
    /// The 32-bit value of a prepared index expression.
    Int(Expr),
    /// A global buffer's base address, converted to the global window.
    GlobalBase(String),
    /// A shared array's address in the shared window (32 bits).
    SharedBase(String),
    /// `base + prefix * scale`: an address partial sum (`base` is the key of
    /// the base's name, `prefix` the element offset summed so far).
    Address {
        /// Which base (a parameter or shared array name).
        base: String,
        /// Bytes per element.
        scale: u32,
        /// The offset, in elements.
        prefix: Expr,
    },
}

/// A run-time loop variable in scope: its counter register and the depth of
/// the scope its loop opened (the *level* of any expression mentioning it).
#[derive(Clone, Copy, Debug)]
struct LoopVar {
    reg: Reg,
    depth: usize,
}

/// What opened a scope.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
enum ScopeKind {
    /// The kernel's body.
    #[default]
    Kernel,
    /// A run-time loop: values invariant in it are placed in its preheader.
    Loop,
    /// A branch of an `if`: its values do not outlive it.
    Branch,
}

/// Rule: `preheader` runs once before the scope's `body` (for a loop: before
/// its counter is set, so it also dominates the code after the loop); values
/// in `values` were computed in `body`, or in the preheader of a loop
/// nested in it, and are valid from there to the end of `body`.
#[derive(Default, Debug)]
struct Scope {
    kind: ScopeKind,
    preheader: Vec<Node>,
    body: Vec<Node>,
    values: BTreeMap<Key, Reg>,
}

#[derive(Debug)]
enum Node {
    Statement(Statement),
    /// A closed inner scope, written in place: its preheader, then its body
    /// (for a loop: counter set-up, head label, iteration and latch).
    Scope(Scope),
}

/// Where a value of a given level is computed and remembered.
///
/// Rule: `preheader_of` is the outermost open loop deeper than the value's
/// level (none: the value is computed at the current position); `keep` is
/// the scope whose code then holds it: the one enclosing that loop, or the
/// current one.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Home {
    preheader_of: Option<usize>,
    keep: usize,
}

/// The most statements one entry may have; unrolling beyond it is an error
/// rather than an endless compilation.
pub const STATEMENT_LIMIT: usize = 1_000_000;

/// Builds the body of one entry.
///
/// Rule: instructions go to the current scope's body (`emit`), or, for
/// values, to their [`Home`] (`emit_value`); `finish` writes every scope as
/// `preheader, body` in place, so a value is computed before its first use
/// and once per iteration of the innermost loop it depends on.
pub struct Emitter<'c> {
    builder: EntryBuilder<'c>,
    catalogue: &'c Catalogue,
    /// The kernel's facts and the proofs built on them.
    pub prover: Prover,
    scopes: Vec<Scope>,
    loops: BTreeMap<u32, LoopVar>,
    dims: Vec<Symbol>,
    statements: usize,
    span: Span,
    /// Mark each loop preheader with a comment (`--annotate`).
    pub annotate: bool,
}

impl<'c> Emitter<'c> {
    /// An emitter for entry `name` whose index values obey `prover`.
    pub fn new(
        name: &str,
        catalogue: &'c Catalogue,
        prover: Prover,
        span: Span,
    ) -> Result<Self, LowerError> {
        let builder = EntryBuilder::with_catalogue(name, catalogue)
            .map_err(|error| LowerError::Ptx { span, error })?;
        Ok(Emitter {
            builder,
            catalogue,
            prover,
            scopes: vec![Scope::default()],
            loops: BTreeMap::new(),
            dims: Vec::new(),
            statements: 0,
            span,
            annotate: false,
        })
    }

    /// Sets the statement that errors are reported at.
    pub fn at(&mut self, span: Span) {
        self.span = span;
    }

    /// The statement being lowered.
    pub fn span(&self) -> Span {
        self.span
    }

    /// Wraps a PTX-model error as a lowering error at the current statement.
    pub fn ptx_error(&self, error: crate::ptx::PtxError) -> LowerError {
        LowerError::Ptx {
            span: self.span,
            error,
        }
    }

    /// Declares a parameter of the entry.
    pub fn param(&mut self, name: &str, ty: ParamType) -> Result<Symbol, LowerError> {
        self.builder
            .param(name, ty)
            .map_err(|error| self.ptx_error(error))
    }

    /// Declares a symbolic dimension's `.u32` parameter; dims are numbered in
    /// declaration order (`Var::Dim(i)` reads the i-th).
    pub fn dim_param(&mut self, name: &str) -> Result<(), LowerError> {
        let symbol = self.param(name, ParamType::U32)?;
        self.dims.push(symbol);
        Ok(())
    }

    /// The parameter of dimension `i`.
    pub fn dim_symbol(&self, i: u32) -> Result<Symbol, LowerError> {
        self.dims.get(i as usize).cloned().ok_or_else(|| {
            LowerError::unsupported(
                self.span,
                format!("the kernel has no symbolic dimension number {i}"),
                "this is a checker bug: every dimension used must be declared",
            )
        })
    }

    /// Declares a static shared array aligned to `align` bytes.
    pub fn shared_array(
        &mut self,
        name: &str,
        bytes: u32,
        align: u32,
    ) -> Result<Symbol, LowerError> {
        self.builder
            .shared_array(name, bytes, Some(align))
            .map_err(|error| self.ptx_error(error))
    }

    /// Declares a module-scope `.global` variable (zero when the module is
    /// loaded).
    pub fn global_variable(
        &mut self,
        name: &str,
        bytes: u32,
        align: u32,
    ) -> Result<Symbol, LowerError> {
        self.builder
            .global_variable(name, bytes, align)
            .map_err(|error| self.ptx_error(error))
    }

    /// Declares the dynamic shared array of `bytes` bytes aligned to `align`.
    pub fn dynamic_shared(
        &mut self,
        name: &str,
        align: u32,
        bytes: u32,
    ) -> Result<Symbol, LowerError> {
        self.builder
            .dynamic_shared(name, Some(align), bytes)
            .map_err(|error| self.ptx_error(error))
    }

    /// Sets `.maxntid`.
    pub fn max_threads(&mut self, threads: u32) -> Result<(), LowerError> {
        self.builder
            .max_threads(threads)
            .map_err(|error| self.ptx_error(error))
    }

    /// Sets `.minnctapersm` and `.maxnreg` from the kernel's occupancy
    /// request (after `max_threads`).
    pub fn occupancy(&mut self, occupancy: crate::ir::Occupancy) -> Result<(), LowerError> {
        if let Some(blocks) = occupancy.min_blocks_per_sm {
            self.builder
                .min_blocks_per_sm(blocks)
                .map_err(|error| self.ptx_error(error))?;
        }
        if let Some(registers) = occupancy.max_registers {
            self.builder
                .max_registers(registers)
                .map_err(|error| self.ptx_error(error))?;
        }
        Ok(())
    }

    /// A fresh register.
    pub fn reg(&mut self, class: RegClass) -> Reg {
        self.builder.reg(class)
    }

    /// Fresh registers.
    pub fn regs(&mut self, class: RegClass, count: usize) -> Vec<Reg> {
        self.builder.regs(class, count)
    }

    /// A fresh label.
    pub fn label(&mut self, hint: &str) -> Label {
        self.builder.label(hint)
    }

    /// The depth of the current scope (0: the kernel; loops and branches
    /// each add one).
    pub fn depth(&self) -> usize {
        self.scopes.len() - 1
    }

    fn instruction(&self, name: &str, operands: Vec<Operand>) -> Result<Instruction, LowerError> {
        self.catalogue
            .instantiate(name, operands)
            .map_err(|error| self.ptx_error(error))
    }

    fn count(&mut self) -> Result<(), LowerError> {
        self.statements += 1;
        if self.statements > STATEMENT_LIMIT {
            return Err(LowerError::TooLarge {
                span: self.span,
                limit: STATEMENT_LIMIT,
            });
        }
        Ok(())
    }

    fn push(&mut self, node: Node) -> Result<(), LowerError> {
        self.count()?;
        let scope = self
            .scopes
            .last_mut()
            .expect("the kernel scope is never closed");
        scope.body.push(node);
        Ok(())
    }

    /// Appends catalogue instruction `name` to the current body.
    pub fn emit(&mut self, name: &str, operands: Vec<Operand>) -> Result<(), LowerError> {
        let instruction = self.instruction(name, operands)?;
        self.push(Node::Statement(Statement::Instruction(instruction)))
    }

    /// Appends `name` to the kernel scope's preheader: it runs once, before
    /// every other statement of the kernel, on every path.
    pub fn emit_at_entry(&mut self, name: &str, operands: Vec<Operand>) -> Result<(), LowerError> {
        let instruction = self.instruction(name, operands)?;
        self.count()?;
        self.scopes[0]
            .preheader
            .push(Node::Statement(Statement::Instruction(instruction)));
        Ok(())
    }

    /// Appends `name` executed only under `guard`.
    pub fn emit_guarded(
        &mut self,
        guard: Guard,
        name: &str,
        operands: Vec<Operand>,
    ) -> Result<(), LowerError> {
        let mut instruction = self.instruction(name, operands)?;
        instruction.guard = Some(guard);
        self.push(Node::Statement(Statement::Instruction(instruction)))
    }

    /// Where a value of level `level` goes: the preheader of the outermost
    /// open loop deeper than `level` (the value is invariant in it), else
    /// the current position.
    pub fn home(&self, level: usize) -> Home {
        let outermost_invariant_loop = (level + 1..self.scopes.len())
            .find(|&depth| self.scopes[depth].kind == ScopeKind::Loop);
        match outermost_invariant_loop {
            Some(depth) => Home {
                preheader_of: Some(depth),
                keep: depth - 1,
            },
            None => Home {
                preheader_of: None,
                keep: self.depth(),
            },
        }
    }

    /// Appends `name`, which computes a value of level `level`, at the
    /// value's [`Home`].
    pub fn emit_value(
        &mut self,
        level: usize,
        name: &str,
        operands: Vec<Operand>,
    ) -> Result<(), LowerError> {
        let instruction = self.instruction(name, operands)?;
        let node = Node::Statement(Statement::Instruction(instruction));
        match self.home(level).preheader_of {
            Some(depth) => {
                self.count()?;
                self.scope_at(depth)?.preheader.push(node);
                Ok(())
            }
            None => self.push(node),
        }
    }

    fn scope_at(&mut self, depth: usize) -> Result<&mut Scope, LowerError> {
        let span = self.span;
        self.scopes.get_mut(depth).ok_or_else(|| {
            LowerError::unsupported(
                span,
                format!("a value is needed in scope {depth}, which is not open"),
                "this is a lowering bug",
            )
        })
    }

    /// Places `label` before the next statement of the current body.
    pub fn place(&mut self, label: &Label) -> Result<(), LowerError> {
        self.push(Node::Statement(Statement::Label(label.clone())))
    }

    /// Appends a comment line to the current body.
    pub fn comment(&mut self, text: &str) -> Result<(), LowerError> {
        self.push(Node::Statement(Statement::Comment(text.to_string())))
    }

    /// The value remembered under `key` in the current scope or an
    /// enclosing one: computed earlier in straight-line code that reaches
    /// here, so it may be reused.
    pub fn recall(&self, key: &Key) -> Option<Reg> {
        self.scopes
            .iter()
            .rev()
            .find_map(|scope| scope.values.get(key).copied())
    }

    /// Remembers `reg`, a value of level `level` computed at its [`Home`],
    /// as the value of `key`.
    pub fn remember(&mut self, level: usize, key: Key, reg: Reg) -> Result<(), LowerError> {
        let keep = self.home(level).keep;
        self.scope_at(keep)?.values.insert(key, reg);
        Ok(())
    }

    /// Opens the scope of a run-time loop over `var`, whose counter is
    /// `counter`. What the walker emits next (counter set-up, head label,
    /// iteration, latch) is the loop's body; values invariant in the loop
    /// go to its preheader.
    pub fn open_loop(&mut self, var: u32, counter: Reg) {
        self.scopes.push(Scope {
            kind: ScopeKind::Loop,
            ..Scope::default()
        });
        let depth = self.depth();
        self.loops.insert(
            var,
            LoopVar {
                reg: counter,
                depth,
            },
        );
    }

    /// Closes the innermost loop scope (its latch is already in its body).
    pub fn close_loop(&mut self, var: u32) -> Result<(), LowerError> {
        self.loops.remove(&var);
        self.close(ScopeKind::Loop)
    }

    /// Opens the scope of one branch of an `if`: what it computes is not
    /// reused after it.
    pub fn open_branch(&mut self) {
        self.scopes.push(Scope {
            kind: ScopeKind::Branch,
            ..Scope::default()
        });
    }

    /// Closes the innermost branch scope.
    pub fn close_branch(&mut self) -> Result<(), LowerError> {
        self.close(ScopeKind::Branch)
    }

    fn close(&mut self, kind: ScopeKind) -> Result<(), LowerError> {
        match self.scopes.last() {
            Some(scope) if scope.kind == kind && self.scopes.len() > 1 => {
                let scope = self.scopes.pop().expect("checked above");
                self.push(Node::Scope(scope))
            }
            Some(_) | None => Err(LowerError::unsupported(
                self.span,
                format!("a {kind:?} scope was closed that is not the innermost open one"),
                "this is a lowering bug",
            )),
        }
    }

    /// The counter register and scope depth of run-time loop `var`.
    pub fn loop_var(&self, var: u32) -> Option<(Reg, usize)> {
        self.loops.get(&var).map(|bound| (bound.reg, bound.depth))
    }

    /// The finished entry: every scope flattened, then `ret`.
    pub fn finish(mut self) -> Result<Entry, LowerError> {
        if self.scopes.len() != 1 {
            return Err(LowerError::unsupported(
                self.span,
                "a loop scope was left open",
                "this is a lowering bug",
            ));
        }
        let ret = self.instruction("ret", Vec::new())?;
        let kernel = self.scopes.pop().expect("the kernel scope");
        let mut statements = Vec::new();
        flatten(kernel, &mut statements, self.annotate);
        statements.push(Statement::Instruction(ret));
        let span = self.span;
        let error = |error| LowerError::Ptx { span, error };
        for statement in statements {
            match statement {
                Statement::Instruction(instruction) => {
                    self.builder.push(instruction).map_err(error)?
                }
                Statement::Label(label) => self.builder.place(&label).map_err(error)?,
                Statement::Comment(text) => self.builder.comment(&text),
            }
        }
        self.builder.finish().map_err(error)
    }
}

fn flatten(scope: Scope, out: &mut Vec<Statement>, annotate: bool) {
    if annotate && !scope.preheader.is_empty() {
        out.push(Statement::Comment(
            "preheader: index arithmetic invariant in the loop below".to_string(),
        ));
    }
    for node in scope.preheader.into_iter().chain(scope.body) {
        match node {
            Node::Statement(statement) => out.push(statement),
            Node::Scope(inner) => flatten(inner, out, annotate),
        }
    }
}
