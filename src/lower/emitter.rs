//! Stage 3, lowering: the code under construction for one entry — a tree of
//! scopes (the kernel, then one per run-time loop), each with a *hoisted*
//! section that runs before its body, flattened into PTX at the end.
//!
//! Why a tree: a value that depends only on variables of outer scopes is
//! computed in the hoisted section of the outermost scope where all of them
//! are defined (the preheader of the loops inside it), even when it is first
//! needed deep inside a loop nest. Values are remembered per scope (common
//! subexpressions are computed once); a scope's values die with it.

use std::collections::BTreeMap;

use super::error::LowerError;
use super::prove::Prover;
use crate::diag::Span;
use crate::expr::Expr;
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
/// the scope its loop opened.
#[derive(Clone, Copy, Debug)]
struct LoopVar {
    reg: Reg,
    depth: usize,
}

#[derive(Default, Debug)]
struct Scope {
    /// The label a loop's latch branches back to (none for the kernel).
    head: Option<Label>,
    hoisted: Vec<Node>,
    body: Vec<Node>,
    values: BTreeMap<Key, Reg>,
}

#[derive(Debug)]
enum Node {
    Statement(Statement),
    /// A run-time loop: its scope (head label, hoisted section, body, and
    /// the latch the walker appended to the body).
    Loop(Scope),
}

/// The most statements one entry may have; unrolling beyond it is an error
/// rather than an endless compilation.
pub const STATEMENT_LIMIT: usize = 1_000_000;

/// Builds the body of one entry.
///
/// Rule: instructions go to the current scope's body, or to the hoisted
/// section of an enclosing scope (`emit_at`); `finish` writes every scope as
/// `head label, hoisted section, body`, so a hoisted value is computed before
/// any use in its scope and recomputed once per iteration of its loop.
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
    /// Mark each hoisted section with a comment (`--annotate`).
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

    /// Declares a static shared array.
    pub fn shared_array(&mut self, name: &str, bytes: u32) -> Result<Symbol, LowerError> {
        self.builder
            .shared_array(name, bytes, None)
            .map_err(|error| self.ptx_error(error))
    }

    /// Declares the dynamic shared array.
    pub fn dynamic_shared(&mut self, name: &str) -> Result<Symbol, LowerError> {
        self.builder
            .dynamic_shared(name, None)
            .map_err(|error| self.ptx_error(error))
    }

    /// Sets `.maxntid`.
    pub fn max_threads(&mut self, threads: u32) -> Result<(), LowerError> {
        self.builder
            .max_threads(threads)
            .map_err(|error| self.ptx_error(error))
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

    /// The depth of the current scope (0: the kernel).
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

    /// Appends `name` to the hoisted section of the scope at `depth`.
    pub fn emit_at(
        &mut self,
        depth: usize,
        name: &str,
        operands: Vec<Operand>,
    ) -> Result<(), LowerError> {
        let instruction = self.instruction(name, operands)?;
        self.count()?;
        let scope = self.scope_at(depth)?;
        scope
            .hoisted
            .push(Node::Statement(Statement::Instruction(instruction)));
        Ok(())
    }

    fn scope_at(&mut self, depth: usize) -> Result<&mut Scope, LowerError> {
        let span = self.span;
        self.scopes.get_mut(depth).ok_or_else(|| {
            LowerError::unsupported(
                span,
                format!("a value is needed in loop scope {depth}, which is not open"),
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

    /// The value remembered under `key` in the scope at `depth`.
    pub fn recall(&self, depth: usize, key: &Key) -> Option<Reg> {
        self.scopes.get(depth)?.values.get(key).copied()
    }

    /// Remembers `reg` as the value of `key` in the scope at `depth`.
    pub fn remember(&mut self, depth: usize, key: Key, reg: Reg) -> Result<(), LowerError> {
        self.scope_at(depth)?.values.insert(key, reg);
        Ok(())
    }

    /// Opens the scope of a run-time loop over `var`, whose counter is
    /// `counter`; the loop's body starts at `head`.
    pub fn open_loop(&mut self, var: u32, counter: Reg, head: Label) {
        self.scopes.push(Scope {
            head: Some(head),
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
        if self.scopes.len() < 2 {
            return Err(LowerError::unsupported(
                self.span,
                "a loop was closed that was never opened",
                "this is a lowering bug",
            ));
        }
        let scope = self.scopes.pop().expect("checked above");
        self.loops.remove(&var);
        self.push(Node::Loop(scope))
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
    let is_loop = scope.head.is_some();
    out.extend(scope.head.map(Statement::Label));
    if annotate && !scope.hoisted.is_empty() {
        let what = if is_loop {
            "hoisted: index arithmetic of this loop's iteration"
        } else {
            "hoisted: index arithmetic of the whole kernel"
        };
        out.push(Statement::Comment(what.to_string()));
    }
    for node in scope.hoisted.into_iter().chain(scope.body) {
        match node {
            Node::Statement(statement) => out.push(statement),
            Node::Loop(inner) => flatten(inner, out, annotate),
        }
    }
}
