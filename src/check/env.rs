//! Stage 2, check: the environment — what each name means at each point of a
//! kernel, the kernel being built (dims, loops, buffers, requirements), and
//! name resolution with its diagnostics (undefined, duplicate, used before
//! its definition).
//!
//! Scoping rule (docs/language.md §2, "Names and scopes"): a name is visible
//! from its definition to the end of the block that holds it, in nested
//! blocks too; it may not be defined again while it is visible (no
//! shadowing), but sibling blocks may reuse it. Errors poison the name they
//! were about to define, so later uses stay silent instead of cascading.

use std::collections::BTreeMap;

use crate::diag::{Diagnostic, Span, suggest};
use crate::expr::Expr;
use crate::ir::{self, NamedSpan, Requirement};
use crate::syntax::ast::{Block, IndexPattern, IndexPatternKind, Name, StmtKind};

use super::codes;

/// Marks a value whose computation failed; its diagnostic has been recorded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Poisoned;

/// The result of checking something: the value, or poison.
pub(crate) type Checked<T> = Result<T, Poisoned>;

/// The four kinds of names, each with its sigil.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub(crate) enum Namespace {
    /// `%x`.
    Tensor,
    /// `#g`.
    Group,
    /// `@i`.
    Index,
    /// Plain identifiers: loop variables (constants and dims live apart).
    Ident,
}

impl Namespace {
    /// The name as written, with its sigil.
    pub(crate) fn show(self, name: &str) -> String {
        match self {
            Namespace::Tensor => format!("%{name}"),
            Namespace::Group => format!("#{name}"),
            Namespace::Index => format!("@{name}"),
            Namespace::Ident => name.to_string(),
        }
    }

    /// What the kind is called in messages.
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Namespace::Tensor => "tensor",
            Namespace::Group => "thread group",
            Namespace::Index => "index",
            Namespace::Ident => "name",
        }
    }

    fn example(self) -> &'static str {
        match self {
            Namespace::Tensor => "declare it first, e.g. `%x:[8].fp32.RF`",
            Namespace::Group => "declare it first, e.g. `#t:[32].thread`",
            Namespace::Index => "bind it first, e.g. `@i = #t.indices()`",
            Namespace::Ident => {
                "define it as a constant (`const N = 8`), a loop variable, or use it in a declared shape"
            }
        }
    }
}

/// The declared group a group value was derived from (by `.tile`,
/// `.reshape`, `.scalar` and definitions).
#[derive(Clone, PartialEq, Debug)]
pub(crate) struct Origin {
    /// The declared group's name (without `#`).
    pub name: String,
    /// Its declaration.
    pub span: Span,
}

/// A thread-group value: its type and where it comes from.
#[derive(Clone, PartialEq, Debug)]
pub(crate) struct GroupVal {
    /// The computed type.
    pub ty: ir::GroupType,
    /// The declaration it derives from.
    pub origin: Origin,
}

/// What a name stands for; `None` payloads are poisoned definitions.
#[derive(Clone, PartialEq, Debug)]
pub(crate) enum Binding {
    /// A tensor view.
    Tensor(Option<ir::View>),
    /// A thread group.
    Group(Option<GroupVal>),
    /// An index: the current thread's (or block's) coordinate.
    Index(Option<Expr>),
    /// A loop variable, by its number in the kernel.
    Loop(u32),
    /// A contract loop's variable in one unrolled copy of its body: a
    /// constant there.
    Unrolled(i64),
    /// A `let`'s integer expression (`None` if it failed to check).
    Let(Option<Expr>),
}

/// A name's definition in a scope.
#[derive(Clone, PartialEq, Debug)]
pub(crate) struct Entry {
    /// The meaning.
    pub binding: Binding,
    /// The defining occurrence.
    pub span: Span,
    /// Whether it is a declaration without an initialiser at kernel scope
    /// (the only groups that can be launch groups).
    pub kernel_declaration: bool,
}

/// A `const` of the file: its value (`None` if its definition failed).
#[derive(Clone, PartialEq, Debug)]
pub(crate) struct ConstEntry {
    /// The folded value, after any `--define` override.
    pub value: Option<i64>,
    /// The definition.
    pub span: Span,
}

/// What the checker knows about one loop.
#[derive(Clone, PartialEq, Debug)]
pub(crate) struct LoopInfo {
    /// The smallest and largest values of the variable, where known
    /// (computed once, when the loop is entered).
    pub range: (Option<i64>, Option<i64>),
    /// The `for (…)` header.
    pub header: Span,
    /// Set when a register tensor is indexed with the variable (short
    /// constant loops are unrolled as well, decided when the loop is closed).
    pub unroll: bool,
    /// `lo`, `hi` and `step` when all three are constants.
    pub constant_bounds: Option<(i64, i64, i64)>,
    /// An upper bound of the variable over the dims (`hi − 1` where the
    /// bound depends on the dims alone, else through the enclosing loops'
    /// own bounds: `Checker::upper_over_dims`), where one is found.
    pub last: Option<Expr>,
}

/// The kernel's launch, known once its outermost spec has been checked.
#[derive(Clone, PartialEq, Debug)]
pub(crate) struct Launch {
    /// The outermost block group.
    pub grid: ir::GroupType,
    /// The outermost thread group.
    pub block: ir::GroupType,
    /// Threads per block.
    pub block_size: i64,
    /// Blocks in the grid, when constant.
    pub grid_size: Option<i64>,
    /// The declared block group.
    pub blocks_origin: Origin,
    /// The declared thread group.
    pub threads_origin: Origin,
}

/// The parts of `ir::Kernel` that fill up while its statements are checked.
#[derive(Clone, PartialEq, Debug, Default)]
pub(crate) struct KernelState {
    /// Symbolic dimensions, in order of first appearance.
    pub dims: Vec<NamedSpan>,
    /// Loop variables, in source order.
    pub loops: Vec<NamedSpan>,
    /// What is known about each loop, parallel to `loops`.
    pub loop_info: Vec<LoopInfo>,
    /// Every buffer.
    pub buffers: Vec<ir::Buffer>,
    /// The parameter buffers in ABI order.
    pub params: Vec<ir::BufferId>,
    /// Launch-time conditions on the dims, without repeats.
    pub requirements: Vec<Requirement>,
    /// The conditions of the specialized version (`specialize`), in order.
    pub specializations: Vec<Requirement>,
    /// The tensor maps of its `Move<tma>` copies, without repeats.
    pub tensor_maps: Vec<ir::TensorMap>,
}

/// An identifier's meaning in an integer expression.
#[derive(Clone, PartialEq, Debug)]
pub(crate) enum Ident {
    /// A loop variable.
    Loop(u32),
    /// A `let`: the expression it names (`None` if it failed to check).
    Let(Option<Expr>),
    /// A constant (`None` if its definition failed).
    Const(Option<i64>),
    /// A symbolic dimension.
    Dim(u32),
}

type Scope = BTreeMap<(Namespace, String), Entry>;

/// The checker's whole state for one kernel (or one REPL session).
#[derive(Clone, Debug)]
pub(crate) struct Checker {
    /// Constants visible to the kernel.
    pub consts: BTreeMap<String, ConstEntry>,
    /// Constants defined further down the file (for "used before").
    pub later_consts: BTreeMap<String, Span>,
    /// Innermost scope last; the first is kernel scope.
    scopes: Vec<Scope>,
    /// Symbolic dimension numbers by name.
    pub dim_ids: BTreeMap<String, u32>,
    /// The kernel being built.
    pub kernel: KernelState,
    /// The launch, once the outermost spec is known.
    pub launch: Option<Launch>,
    /// Every diagnostic so far.
    pub diags: Vec<Diagnostic>,
    /// Every definition in the kernel, for "used before its definition".
    defs: BTreeMap<(Namespace, String), Vec<Span>>,
    /// What the enclosing `if` conditions guarantee, innermost last.
    pub guards: Vec<Guard>,
    /// Whether the statements being checked are a contract's.
    pub in_contract: bool,
    /// The kernel's `contract` block, once seen.
    pub contract_span: Option<Span>,
    /// The kernel's checked contract, until the kernel is assembled.
    pub kernel_contract: Option<ir::Contract>,
}

/// `value ≤ at_most`, known inside the branch of an `if` whose condition
/// says so (`if (k + 2 < K/64)` guards `k + 2 ≤ K/64 - 1`).
#[derive(Clone, PartialEq, Debug)]
pub(crate) struct Guard {
    /// The guarded expression.
    pub value: Expr,
    /// Its largest value inside the branch.
    pub at_most: Expr,
}

impl Checker {
    /// A checker at kernel scope with the given constants.
    pub(crate) fn new(
        consts: BTreeMap<String, ConstEntry>,
        later_consts: BTreeMap<String, Span>,
    ) -> Checker {
        Checker {
            consts,
            later_consts,
            scopes: vec![Scope::new()],
            dim_ids: BTreeMap::new(),
            kernel: KernelState::default(),
            launch: None,
            diags: Vec::new(),
            defs: BTreeMap::new(),
            guards: Vec::new(),
            in_contract: false,
            contract_span: None,
            kernel_contract: None,
        }
    }

    /// Records every definition in `block` (recursively), so that a use
    /// above a definition can point at it.
    pub(crate) fn scan_definitions(&mut self, block: &Block) {
        for stmt in &block.stmts {
            match &stmt.kind {
                StmtKind::Tensor(def) => self.note_definition(Namespace::Tensor, &def.name),
                StmtKind::Group(def) => self.note_definition(Namespace::Group, &def.name),
                StmtKind::Indices(def) => {
                    for pattern in &def.patterns {
                        self.scan_pattern(pattern);
                    }
                }
                StmtKind::Spec(spec) => {
                    if let Some(body) = &spec.body {
                        self.scan_definitions(body);
                    }
                }
                StmtKind::For(for_loop) => {
                    self.note_definition(Namespace::Ident, &for_loop.var);
                    self.scan_definitions(&for_loop.body);
                }
                StmtKind::If(if_stmt) => {
                    for (_, block) in &if_stmt.branches {
                        self.scan_definitions(block);
                    }
                    if let Some(block) = &if_stmt.otherwise {
                        self.scan_definitions(block);
                    }
                }
                StmtKind::Contract(block) => self.scan_definitions(block),
                StmtKind::Let(def) => self.note_definition(Namespace::Ident, &def.name),
                StmtKind::Sync(_)
                | StmtKind::Commit(_)
                | StmtKind::Wait(..)
                | StmtKind::Arrive(_)
                | StmtKind::WaitPhase(..)
                | StmtKind::SetMaxRegisters(_)
                | StmtKind::Require(..) => {}
            }
        }
    }

    fn scan_pattern(&mut self, pattern: &IndexPattern) {
        match &pattern.kind {
            IndexPatternKind::Bind(name) => self.note_definition(Namespace::Index, name),
            IndexPatternKind::Ignore => {}
            IndexPatternKind::Tuple(parts) => parts.iter().for_each(|p| self.scan_pattern(p)),
        }
    }

    fn note_definition(&mut self, ns: Namespace, name: &Name) {
        self.defs
            .entry((ns, name.text.clone()))
            .or_default()
            .push(name.span);
    }

    /// Records `diagnostic` and returns the poison that stands for the
    /// failed value.
    pub(crate) fn fail(&mut self, diagnostic: Diagnostic) -> Poisoned {
        self.diags.push(diagnostic);
        Poisoned
    }

    /// Records `diagnostic` without failing anything.
    pub(crate) fn report(&mut self, diagnostic: Diagnostic) {
        self.diags.push(diagnostic);
    }

    /// Whether the checker is at kernel scope (outside every spec body).
    pub(crate) fn at_kernel_scope(&self) -> bool {
        self.scopes.len() == 1
    }

    /// Opens a block.
    pub(crate) fn push_scope(&mut self) {
        self.scopes.push(Scope::new());
    }

    /// Closes the innermost block; its names go out of scope.
    pub(crate) fn pop_scope(&mut self) {
        if self.scopes.len() > 1 {
            self.scopes.pop();
        }
    }

    /// The visible definition of `name`, innermost scope first.
    pub(crate) fn find(&self, ns: Namespace, name: &str) -> Option<&Entry> {
        let key = (ns, name.to_string());
        self.scopes.iter().rev().find_map(|scope| scope.get(&key))
    }

    /// An identifier's meaning: a visible loop variable, else a constant,
    /// else a known symbolic dimension.
    pub(crate) fn find_ident(&self, name: &str) -> Option<Ident> {
        match self.find(Namespace::Ident, name) {
            Some(Entry {
                binding: Binding::Loop(id),
                ..
            }) => return Some(Ident::Loop(*id)),
            Some(Entry {
                binding: Binding::Unrolled(value),
                ..
            }) => return Some(Ident::Const(Some(*value))),
            Some(Entry {
                binding: Binding::Let(value),
                ..
            }) => return Some(Ident::Let(value.clone())),
            Some(_) | None => {}
        }
        if let Some(entry) = self.consts.get(name) {
            return Some(Ident::Const(entry.value));
        }
        self.dim_ids.get(name).map(|&id| Ident::Dim(id))
    }

    /// Binds `name` in the innermost scope, unless it is already visible
    /// (then reports the duplicate and keeps the first definition).
    pub(crate) fn define(
        &mut self,
        ns: Namespace,
        name: &Name,
        binding: Binding,
        kernel_declaration: bool,
    ) {
        let shown = ns.show(&name.text);
        let previous = self
            .find(ns, &name.text)
            .map(|entry| entry.span)
            .or_else(|| {
                (ns == Namespace::Ident)
                    .then(|| self.ident_definition_span(&name.text))
                    .flatten()
            });
        if let Some(previous) = previous {
            let diagnostic = Diagnostic::error(
                codes::DUPLICATE,
                format!("`{shown}` is already defined"),
                name.span,
            )
            .with_label("defined again here")
            .with_secondary(previous, "first defined here")
            .with_note(
                "a name cannot be redefined or shadowed while its first definition is visible",
            )
            .with_help(format!("give this one a new name, e.g. `{shown}_2`"));
            self.report(diagnostic);
            return;
        }
        let entry = Entry {
            binding,
            span: name.span,
            kernel_declaration,
        };
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert((ns, name.text.clone()), entry);
        }
    }

    /// Where a constant or dim of this name was defined, if one exists.
    fn ident_definition_span(&self, name: &str) -> Option<Span> {
        if let Some(entry) = self.consts.get(name) {
            return Some(entry.span);
        }
        self.dim_ids
            .get(name)
            .and_then(|&id| self.kernel.dims.get(id as usize))
            .map(|dim| dim.span)
    }

    /// The binding of a visible name, or a diagnostic (undefined, used
    /// before its definition, out of scope). Poisoned bindings fail silently.
    pub(crate) fn lookup(&mut self, ns: Namespace, name: &Name) -> Checked<Binding> {
        match self.find(ns, &name.text) {
            Some(entry) => Ok(entry.binding.clone()),
            None => Err(self.undefined(ns, name)),
        }
    }

    /// The diagnostic for a name that has no visible definition.
    pub(crate) fn undefined(&mut self, ns: Namespace, name: &Name) -> Poisoned {
        let shown = ns.show(&name.text);
        let key = (ns, name.text.clone());
        let spans = self.defs.get(&key).cloned().unwrap_or_default();
        let later = spans
            .iter()
            .copied()
            .find(|span| span.start > name.span.start)
            .or_else(|| {
                (ns == Namespace::Ident)
                    .then(|| self.later_consts.get(&name.text).copied())
                    .flatten()
            });
        if let Some(later) = later {
            let diagnostic = Diagnostic::error(
                codes::USED_BEFORE_DEFINITION,
                format!("`{shown}` is used before its definition"),
                name.span,
            )
            .with_label("used here")
            .with_secondary(later, "defined here, further down")
            .with_help("move the definition above its first use");
            return self.fail(diagnostic);
        }
        if let Some(&earlier) = spans.iter().find(|span| span.start < name.span.start) {
            let diagnostic = Diagnostic::error(
                codes::UNDEFINED,
                format!("`{shown}` is not in scope here"),
                name.span,
            )
            .with_label("not visible here")
            .with_secondary(earlier, "defined here, in a block that has ended")
            .with_help("define it in a block that encloses this use");
            return self.fail(diagnostic);
        }
        let mut diagnostic = Diagnostic::error(
            codes::UNDEFINED,
            format!("undefined {} `{shown}`", ns.noun()),
            name.span,
        )
        .with_label("not defined");
        let other = [Namespace::Tensor, Namespace::Group, Namespace::Index]
            .into_iter()
            .filter(|&other| other != ns && ns != Namespace::Ident)
            .find(|&other| self.find(other, &name.text).is_some());
        diagnostic = match (other, self.suggestion(ns, &name.text)) {
            (Some(other), _) => diagnostic.with_help(format!(
                "`{shown}` is not defined, but the {} `{}` is: write that if it is meant",
                other.noun(),
                other.show(&name.text)
            )),
            (None, Some(similar)) => diagnostic.with_help(format!(
                "a {} with a similar name exists: `{}`",
                ns.noun(),
                ns.show(&similar)
            )),
            (None, None) => diagnostic.with_help(ns.example()),
        };
        self.fail(diagnostic)
    }

    /// The visible name of `ns` closest to `name` (edit distance at most a
    /// third of its length, at least 1), ties broken alphabetically.
    fn suggestion(&self, ns: Namespace, name: &str) -> Option<String> {
        let mut candidates: Vec<&str> = self
            .scopes
            .iter()
            .flat_map(|scope| scope.keys())
            .filter(|(key_ns, _)| *key_ns == ns)
            .map(|(_, text)| text.as_str())
            .collect();
        if ns == Namespace::Ident {
            candidates.extend(self.consts.keys().map(String::as_str));
            candidates.extend(self.dim_ids.keys().map(String::as_str));
        }
        // Sorted, so that of equally close names the first alphabetically wins.
        candidates.sort_unstable();
        let limit = (name.chars().count() / 3).max(1);
        suggest::closest(name, candidates, suggest::Case::Sensitive, |_| limit).map(str::to_string)
    }

    /// The number of symbolic dimension `name`, adding it if new.
    pub(crate) fn dim(&mut self, name: &Name) -> u32 {
        if let Some(&id) = self.dim_ids.get(&name.text) {
            return id;
        }
        let id = self.kernel.dims.len() as u32;
        self.kernel.dims.push(NamedSpan {
            name: name.text.clone(),
            span: name.span,
        });
        self.dim_ids.insert(name.text.clone(), id);
        id
    }

    /// Adds a launch-time requirement unless an equal one is recorded.
    pub(crate) fn require(&mut self, requirement: Requirement) {
        add_once(&mut self.kernel.requirements, requirement);
    }

    /// Adds a condition of the specialized version unless an equal one is
    /// recorded.
    pub(crate) fn specialize(&mut self, condition: Requirement) {
        add_once(&mut self.kernel.specializations, condition);
    }

    /// Every visible binding of `ns`, sorted by name (for the REPL).
    pub(crate) fn visible(&self, ns: Namespace) -> Vec<(String, Entry)> {
        let mut out: BTreeMap<String, Entry> = BTreeMap::new();
        for scope in &self.scopes {
            for ((key_ns, name), entry) in scope {
                if *key_ns == ns {
                    out.insert(name.clone(), entry.clone());
                }
            }
        }
        out.into_iter().collect()
    }
}

/// Pushes `requirement` onto `list` unless it states the same condition as
/// one there (where each was written aside).
fn add_once(list: &mut Vec<Requirement>, requirement: Requirement) {
    let same = |a: &Requirement, b: &Requirement| match (a, b) {
        (
            Requirement::Divisible {
                value: v1,
                divisor: d1,
                ..
            },
            Requirement::Divisible {
                value: v2,
                divisor: d2,
                ..
            },
        ) => v1 == v2 && d1 == d2,
        (Requirement::Positive { value: v1, .. }, Requirement::Positive { value: v2, .. }) => {
            v1 == v2
        }
        (Requirement::Divisible { .. }, Requirement::Positive { .. })
        | (Requirement::Positive { .. }, Requirement::Divisible { .. }) => false,
    };
    if !list.iter().any(|r| same(r, &requirement)) {
        list.push(requirement);
    }
}
