//! Stage 2, check: the REPL's incremental checker. A `Session` is kernel
//! scope kept open: each line (a constant, a statement, an expression to
//! show, a whole kernel) is checked against the names defined so far, and
//! either adds its names and returns what it computed, or returns its
//! diagnostics and leaves the session exactly as it was.

use std::collections::BTreeMap;

use crate::diag::Diagnostic;
use crate::expr::Expr;
use crate::ir::{self, BufferId};
use crate::syntax::Line;
use crate::syntax::ast::{self, ConstDef, IndexPattern, IndexPatternKind, Stmt, StmtKind};

use super::env::{Binding, Checked, Checker, Namespace};
use super::views::Value;
use crate::ir::print::Names;

/// What a REPL line computed, for the REPL to show.
#[derive(Clone, PartialEq, Debug)]
pub enum Shown {
    /// Nothing to show (an empty line).
    Nothing,
    /// A constant and its value.
    Const {
        /// The constant's name.
        name: String,
        /// Its value.
        value: i64,
    },
    /// A tensor view: named by a definition, or an expression shown.
    Tensor {
        /// The name defined, if the line was a definition.
        name: Option<String>,
        /// Its buffer, base offset and type.
        view: ir::View,
    },
    /// A thread group: named by a definition, or an expression shown.
    Group {
        /// The name defined, if the line was a definition.
        name: Option<String>,
        /// Its type.
        ty: ir::GroupType,
    },
    /// Index names bound by `.indices()`, in pattern order, each with the
    /// current thread's (or block's) coordinate.
    Indices(Vec<(String, Expr)>),
    /// A checked spec (checked as a kernel's outermost spec).
    Spec(Box<ir::SpecStmt>),
    /// A checked kernel.
    Kernel(Box<ir::Kernel>),
}

/// The REPL's checker: kernel scope kept open across lines.
///
/// Rule: a line that fails changes nothing; a line that succeeds adds its
/// names (and buffers, dims) for the lines after it.
#[derive(Clone, Debug)]
pub struct Session {
    checker: Checker,
}

impl Default for Session {
    fn default() -> Session {
        Session::new()
    }
}

fn pattern_names(pattern: &IndexPattern, out: &mut Vec<String>) {
    match &pattern.kind {
        IndexPatternKind::Bind(name) => out.push(name.text.clone()),
        IndexPatternKind::Ignore => {}
        IndexPatternKind::Tuple(parts) => parts.iter().for_each(|p| pattern_names(p, out)),
    }
}

impl Session {
    /// An empty session.
    pub fn new() -> Session {
        Session {
            checker: Checker::new(BTreeMap::new(), BTreeMap::new()),
        }
    }

    /// Runs `f` on a copy of the checker; keeps the copy only if it
    /// reported no error.
    fn transaction<T>(
        &mut self,
        f: impl FnOnce(&mut Checker) -> Checked<T>,
    ) -> Result<T, Vec<Diagnostic>> {
        let mut trial = self.checker.clone();
        trial.diags.clear();
        let result = f(&mut trial);
        let mut diags = std::mem::take(&mut trial.diags);
        match result {
            Ok(value) if !diags.iter().any(Diagnostic::is_error) => {
                self.checker = trial;
                Ok(value)
            }
            Ok(_) | Err(_) => {
                diags.sort_by_key(|d| d.primary.span.start);
                Err(diags)
            }
        }
    }

    /// Checks one parsed REPL line.
    pub fn line(&mut self, line: &Line) -> Result<Shown, Vec<Diagnostic>> {
        match line {
            Line::Empty => Ok(Shown::Nothing),
            Line::Const(def) => self.constant(def),
            Line::Kernel(kernel) => self.kernel(kernel),
            Line::Stmt(stmt) => self.statement(stmt),
            Line::Expr(expr) => self.expression(expr),
        }
    }

    /// `const NAME = value`.
    pub fn constant(&mut self, def: &ConstDef) -> Result<Shown, Vec<Diagnostic>> {
        self.transaction(|checker| {
            let entry = checker.const_def(def, None).ok_or(super::env::Poisoned)?;
            let value = entry.value.ok_or(super::env::Poisoned)?;
            checker.consts.insert(def.name.text.clone(), entry);
            Ok(Shown::Const {
                name: def.name.text.clone(),
                value,
            })
        })
    }

    /// A statement at kernel scope: a declaration or definition (shown as
    /// the value it names), index bindings, or a spec (checked as a
    /// kernel's outermost spec, its body included).
    pub fn statement(&mut self, stmt: &Stmt) -> Result<Shown, Vec<Diagnostic>> {
        self.transaction(|checker| {
            let Some(spec) = checker.kernel_stmt(stmt) else {
                return Ok(shown_definition(checker, stmt));
            };
            let checked = checker.spec(spec, stmt.span, true);
            checker.launch = None;
            checked.map(|spec| Shown::Spec(Box::new(spec)))
        })
    }

    /// An expression to show, e.g. `#4.tile(8)`; defines nothing.
    pub fn expression(&self, expr: &ast::Expr) -> Result<Shown, Vec<Diagnostic>> {
        let mut trial = self.checker.clone();
        trial.diags.clear();
        let value = trial.value(expr);
        match value {
            // Expressions name no dims (tile sizes and reshapes are
            // constants), so there is nothing to keep from the trial.
            Ok(value) if trial.diags.is_empty() => Ok(match value {
                Value::Tensor(view) => Shown::Tensor { name: None, view },
                Value::Group(group) => Shown::Group {
                    name: None,
                    ty: group.ty,
                },
            }),
            Ok(_) | Err(_) => {
                trial.diags.sort_by_key(|d| d.primary.span.start);
                Err(trial.diags)
            }
        }
    }

    /// A whole kernel, checked on its own with the session's constants;
    /// its names do not join the session.
    pub fn kernel(&mut self, kernel: &ast::Kernel) -> Result<Shown, Vec<Diagnostic>> {
        let mut checker = Checker::new(self.checker.consts.clone(), BTreeMap::new());
        let checked = checker.kernel(kernel);
        match checked {
            Ok(kernel) if !checker.diags.iter().any(Diagnostic::is_error) => {
                Ok(Shown::Kernel(Box::new(kernel)))
            }
            Ok(_) | Err(_) => {
                checker.diags.sort_by_key(|d| d.primary.span.start);
                Err(checker.diags)
            }
        }
    }

    /// The view named `%name` (without `%`).
    pub fn tensor(&self, name: &str) -> Option<&ir::View> {
        match &self.checker.find(Namespace::Tensor, name)?.binding {
            Binding::Tensor(view) => view.as_ref(),
            Binding::Group(_)
            | Binding::Index(_)
            | Binding::Loop(_)
            | Binding::Unrolled(_)
            | Binding::Let(_) => None,
        }
    }

    /// The type of the group named `#name` (without `#`): its levels, for
    /// drawing.
    pub fn group(&self, name: &str) -> Option<&ir::GroupType> {
        match &self.checker.find(Namespace::Group, name)?.binding {
            Binding::Group(group) => group.as_ref().map(|g| &g.ty),
            Binding::Tensor(_)
            | Binding::Index(_)
            | Binding::Loop(_)
            | Binding::Unrolled(_)
            | Binding::Let(_) => None,
        }
    }

    /// The expression bound to `@name` (without `@`).
    pub fn index(&self, name: &str) -> Option<&Expr> {
        match &self.checker.find(Namespace::Index, name)?.binding {
            Binding::Index(expr) => expr.as_ref(),
            Binding::Tensor(_)
            | Binding::Group(_)
            | Binding::Loop(_)
            | Binding::Unrolled(_)
            | Binding::Let(_) => None,
        }
    }

    /// The value of the constant `name`.
    pub fn const_value(&self, name: &str) -> Option<i64> {
        self.checker.consts.get(name)?.value
    }

    /// A buffer created by a declaration.
    pub fn buffer(&self, id: BufferId) -> Option<&ir::Buffer> {
        self.checker.kernel.buffers.get(id.0 as usize)
    }

    /// Every buffer declared so far, indexed by [`BufferId`] (what
    /// [`crate::check::tma::bulk_copy`] reads a copy's parameter from).
    pub fn buffers(&self) -> &[ir::Buffer] {
        &self.checker.kernel.buffers
    }

    /// The names of the symbolic dims met so far, for printing expressions.
    pub fn names(&self) -> Names<'_> {
        self.checker.names()
    }

    /// The defined tensors, groups and indices, each sorted by name, with
    /// their sigils (`%1`, `#warp`, `@i`).
    pub fn defined(&self) -> Vec<String> {
        [Namespace::Tensor, Namespace::Group, Namespace::Index]
            .into_iter()
            .flat_map(|ns| {
                self.checker
                    .visible(ns)
                    .into_iter()
                    .map(move |(name, _)| ns.show(&name))
            })
            .collect()
    }
}

/// What a successful definition statement shows.
fn shown_definition(checker: &Checker, stmt: &Stmt) -> Shown {
    match &stmt.kind {
        StmtKind::Tensor(def) => match checker
            .find(Namespace::Tensor, &def.name.text)
            .map(|e| &e.binding)
        {
            Some(Binding::Tensor(Some(view))) => Shown::Tensor {
                name: Some(def.name.text.clone()),
                view: view.clone(),
            },
            Some(_) | None => Shown::Nothing,
        },
        StmtKind::Group(def) => match checker
            .find(Namespace::Group, &def.name.text)
            .map(|e| &e.binding)
        {
            Some(Binding::Group(Some(group))) => Shown::Group {
                name: Some(def.name.text.clone()),
                ty: group.ty.clone(),
            },
            Some(_) | None => Shown::Nothing,
        },
        StmtKind::Indices(def) => {
            let mut names = Vec::new();
            def.patterns
                .iter()
                .for_each(|p| pattern_names(p, &mut names));
            Shown::Indices(
                names
                    .into_iter()
                    .filter_map(|name| {
                        let expr = match &checker.find(Namespace::Index, &name)?.binding {
                            Binding::Index(expr) => expr.clone()?,
                            Binding::Tensor(_)
                            | Binding::Group(_)
                            | Binding::Loop(_)
                            | Binding::Unrolled(_)
                            | Binding::Let(_) => {
                                return None;
                            }
                        };
                        Some((name, expr))
                    })
                    .collect(),
            )
        }
        StmtKind::Spec(_)
        | StmtKind::For(_)
        | StmtKind::If(_)
        | StmtKind::Sync(_)
        | StmtKind::Commit(_)
        | StmtKind::Wait(..)
        | StmtKind::Arrive(_)
        | StmtKind::WaitPhase(..)
        | StmtKind::SetMaxRegisters(_)
        | StmtKind::Contract(_)
        | StmtKind::Require(..)
        | StmtKind::Let(_) => Shown::Nothing,
    }
}
