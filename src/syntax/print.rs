//! Stage 1, syntax: the canonical text of an AST. Output is deterministic
//! and stable: four spaces per indentation level, one statement per line,
//! parentheses only where precedence needs them, comments not kept. Every
//! node type implements `Display`, so later stages can quote types and
//! expressions in their diagnostics.

use std::fmt::{self, Display, Formatter, Write as _};

use super::ast::{
    Block, Cond, CondKind, ConstDef, Coord, CoordKind, Expr, ExprKind, File, GroupType,
    IndexPattern, IndexPatternKind, InitValue, IntExpr, IntExprKind, Item, Kernel, Layout,
    ScalarChoice, SpecKind, SpecStmt, Stmt, StmtKind, TensorType, TileArg, TileDim,
};
use crate::layout::Tuple;

const INDENT: &str = "    ";

/// The canonical text of a file, ending with a newline.
pub fn print_file(file: &File) -> String {
    let mut out = String::new();
    let mut previous_was_kernel = false;
    for (index, item) in file.items.iter().enumerate() {
        match item {
            Item::Const(def) => {
                if previous_was_kernel {
                    out.push('\n');
                }
                let _ = writeln!(out, "{def}");
                previous_was_kernel = false;
            }
            Item::Kernel(kernel) => {
                if index > 0 {
                    out.push('\n');
                }
                write_kernel(&mut out, kernel);
                previous_was_kernel = true;
            }
            Item::Variant(variant) => {
                if index > 0 {
                    out.push('\n');
                }
                let overrides: Vec<String> = variant
                    .overrides
                    .iter()
                    .map(|def| format!("{} = {}", def.name.text, def.value))
                    .collect();
                let _ = writeln!(
                    out,
                    "kernel {} = {}({})",
                    variant.name.text,
                    variant.base.text,
                    overrides.join(", ")
                );
                previous_was_kernel = true;
            }
        }
    }
    out
}

/// The canonical text of a statement at indentation level 0, without a
/// final newline.
pub fn print_stmt(stmt: &Stmt) -> String {
    let mut out = String::new();
    write_stmt(&mut out, stmt, 0);
    out.pop();
    out
}

/// The canonical text of an expression.
pub fn print_expr(expr: &Expr) -> String {
    expr.to_string()
}

fn write_kernel(out: &mut String, kernel: &Kernel) {
    if kernel.implicit {
        for stmt in &kernel.body.stmts {
            write_stmt(out, stmt, 0);
        }
        return;
    }
    let _ = write!(out, "kernel {} ", kernel.name.text);
    if !kernel.attributes.is_empty() {
        let attributes: Vec<String> = kernel
            .attributes
            .iter()
            .map(|attribute| format!("{} = {}", attribute.kind.name(), attribute.value))
            .collect();
        let _ = write!(out, "({}) ", attributes.join(", "));
    }
    write_block(out, &kernel.body, 0);
    out.push('\n');
}

/// `{`, the statements one level deeper, `}` (or `{}` when empty); no
/// newline after the brace.
fn write_block(out: &mut String, block: &Block, level: usize) {
    if block.stmts.is_empty() {
        out.push_str("{}");
        return;
    }
    out.push_str("{\n");
    for stmt in &block.stmts {
        write_stmt(out, stmt, level + 1);
    }
    out.push_str(&INDENT.repeat(level));
    out.push('}');
}

/// The statement at `level`, ending with a newline.
fn write_stmt(out: &mut String, stmt: &Stmt, level: usize) {
    out.push_str(&INDENT.repeat(level));
    match &stmt.kind {
        StmtKind::Tensor(def) => {
            let _ = write!(out, "%{}", def.name.text);
            if let Some(ty) = &def.ty {
                let _ = write!(out, ":{ty}");
            }
            if let Some(value) = &def.value {
                let _ = write!(out, " = {value}");
            }
        }
        StmtKind::Group(def) => {
            let _ = write!(out, "#{}", def.name.text);
            if let Some(ty) = &def.ty {
                let _ = write!(out, ":{ty}");
            }
            if let Some(value) = &def.value {
                let _ = write!(out, " = {value}");
            }
        }
        StmtKind::Indices(def) => {
            let _ = write!(out, "{} = {}", list(&def.patterns, ", "), def.value);
        }
        StmtKind::Spec(spec) => write_spec(out, spec, level),
        StmtKind::For(for_loop) => {
            let var = &for_loop.var.text;
            let _ = write!(
                out,
                "for ({var} = {}; {var} < {}; {var} += {}) ",
                for_loop.init, for_loop.bound, for_loop.step
            );
            write_block(out, &for_loop.body, level);
        }
        StmtKind::If(if_stmt) => {
            for (index, (cond, block)) in if_stmt.branches.iter().enumerate() {
                if index > 0 {
                    out.push_str(" else ");
                }
                let _ = write!(out, "if ({cond}) ");
                write_block(out, block, level);
            }
            if let Some(otherwise) = &if_stmt.otherwise {
                out.push_str(" else ");
                write_block(out, otherwise, level);
            }
        }
        StmtKind::Sync(scope) => out.push_str(scope.keyword()),
        StmtKind::Commit(queue) => out.push_str(queue.commit_keyword()),
        StmtKind::Wait(queue, count) => {
            let _ = write!(out, "{}({count})", queue.wait_keyword());
        }
        StmtKind::Arrive(barrier) => {
            let _ = write!(out, "mbarrier_arrive({barrier})");
        }
        StmtKind::WaitPhase(barrier, parity) => {
            let _ = write!(out, "mbarrier_wait({barrier}, {parity})");
        }
        StmtKind::SetMaxRegisters(count) => {
            let _ = write!(out, "setmaxnreg({count})");
        }
        StmtKind::Contract(block) => {
            out.push_str("contract ");
            write_block(out, block, level);
        }
        StmtKind::Require(kind, cond) => {
            let _ = write!(out, "{} {cond}", kind.keyword());
        }
        StmtKind::Let(def) => {
            let _ = write!(out, "let {} = {}", def.name.text, def.value);
        }
    }
    out.push('\n');
}

fn write_spec(out: &mut String, spec: &SpecStmt, level: usize) {
    let _ = write!(out, "{} <- {}", list(&spec.outputs, ", "), spec.kind);
    if let Some(launch) = &spec.launch {
        let _ = write!(out, "<<<{}, {}>>>", launch.blocks, launch.threads);
    }
    let _ = write!(out, "({})", list(&spec.inputs, ", "));
    if let Some(body) = &spec.body {
        out.push(' ');
        write_block(out, body, level);
    }
}

/// The items' texts joined by `separator`.
fn list<T: Display>(items: &[T], separator: &str) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(separator)
}

/// `const NAME = value`, then `tune [v, …]` for a tunable constant.
impl Display for ConstDef {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "const {} = {}", self.name.text, self.value)?;
        if let Some(tune) = &self.tune {
            let values: Vec<String> = tune.values.iter().map(|(v, _)| v.to_string()).collect();
            write!(f, " tune [{}]", values.join(", "))?;
        }
        Ok(())
    }
}

/// Minimal parentheses: a child is parenthesised when it binds looser than
/// its parent, or equally on the right (all operators are left-associative).
impl Display for IntExpr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_int(f, self, 0, false)
    }
}

const NEG_PRECEDENCE: u8 = 3;

fn write_int(f: &mut Formatter<'_>, expr: &IntExpr, context: u8, right: bool) -> fmt::Result {
    match &expr.kind {
        IntExprKind::Literal(value) => write!(f, "{value}"),
        IntExprKind::Var(name) => f.write_str(&name.text),
        IntExprKind::Index(name) => write!(f, "@{}", name.text),
        IntExprKind::Neg(inner) => {
            f.write_str("-")?;
            write_int(f, inner, NEG_PRECEDENCE, false)
        }
        IntExprKind::Binary(super::ast::IntOp::CeilDiv, lhs, rhs) => {
            f.write_str("ceil_div(")?;
            write_int(f, lhs, 0, false)?;
            f.write_str(", ")?;
            write_int(f, rhs, 0, false)?;
            f.write_str(")")
        }
        IntExprKind::Select(cond, lhs, rhs) => {
            write!(f, "select({cond}, ")?;
            write_int(f, lhs, 0, false)?;
            f.write_str(", ")?;
            write_int(f, rhs, 0, false)?;
            f.write_str(")")
        }
        IntExprKind::Binary(op, lhs, rhs) => {
            let precedence = op.precedence();
            let parens = precedence < context || (precedence == context && right);
            if parens {
                f.write_str("(")?;
            }
            write_int(f, lhs, precedence, false)?;
            // `%x` would read as a tensor name: the remainder is spaced.
            match op {
                super::ast::IntOp::Rem => f.write_str(" % ")?,
                super::ast::IntOp::Add
                | super::ast::IntOp::Sub
                | super::ast::IntOp::Mul
                | super::ast::IntOp::Div
                | super::ast::IntOp::CeilDiv => f.write_str(op.symbol())?,
            }
            write_int(f, rhs, precedence, true)?;
            if parens {
                f.write_str(")")?;
            }
            Ok(())
        }
    }
}

/// `a < b`, with `&&` binding tighter than `||`.
impl Display for Cond {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_cond(f, self, 0, false)
    }
}

fn write_cond(f: &mut Formatter<'_>, cond: &Cond, context: u8, right: bool) -> fmt::Result {
    let (precedence, symbol, lhs, rhs) = match &cond.kind {
        CondKind::Compare(op, lhs, rhs) => return write!(f, "{lhs} {} {rhs}", op.symbol()),
        CondKind::Or(lhs, rhs) => (1, "||", lhs, rhs),
        CondKind::And(lhs, rhs) => (2, "&&", lhs, rhs),
    };
    let parens = precedence < context || (precedence == context && right);
    if parens {
        f.write_str("(")?;
    }
    write_cond(f, lhs, precedence, false)?;
    write!(f, " {symbol} ")?;
    write_cond(f, rhs, precedence, true)?;
    if parens {
        f.write_str(")")?;
    }
    Ok(())
}

/// `[dims]` or `[dims : strides]`, modes separated by `,` without spaces.
impl<L: Display> Display for Layout<L> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        write_modes(f, &self.dims)?;
        if let Some(strides) = &self.strides {
            f.write_str(" : ")?;
            write_modes(f, strides)?;
        }
        f.write_str("]")
    }
}

fn write_modes<L: Display>(f: &mut Formatter<'_>, modes: &[Tuple<L>]) -> fmt::Result {
    for (index, mode) in modes.iter().enumerate() {
        if index > 0 {
            f.write_str(",")?;
        }
        write!(f, "{mode}")?;
    }
    Ok(())
}

/// A size, or `_`.
impl Display for TileDim {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            TileDim::Size(size) => write!(f, "{size}"),
            TileDim::Whole(_) => f.write_str("_"),
        }
    }
}

/// `fp16`, or `select(BF16 == 1, bf16, fp16)`.
impl Display for ScalarChoice {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            ScalarChoice::Named(scalar) => f.write_str(scalar.name()),
            ScalarChoice::Select(cond, yes, no) => {
                write!(f, "select({cond}, {yes}, {no})")
            }
        }
    }
}

/// `[2,2].[8,8].fp16.SH` (and `.Swizzle<B,M,S>`).
impl Display for TensorType {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{}.{}",
            list(&self.levels, "."),
            self.scalar,
            self.memory.name()
        )?;
        if let Some(swizzle) = &self.swizzle {
            write!(
                f,
                ".Swizzle<{},{},{}>",
                swizzle.bits, swizzle.base, swizzle.shift
            )?;
        }
        Ok(())
    }
}

/// `[2,2].[8].thread`.
impl Display for GroupType {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", list(&self.levels, "."), self.kind.name())
    }
}

/// `%1.tile([8,8])[@m, 0]`.
impl Display for Expr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ExprKind::Tensor(name) => write!(f, "%{}", name.text),
            ExprKind::Group(name) => write!(f, "#{}", name.text),
            ExprKind::Allocate => f.write_str("Allocate()"),
            ExprKind::Tile(base, args, tiling) => {
                write!(f, "{base}.{}({})", tiling.method(), list(args, ", "))
            }
            ExprKind::Reshape(base, Some(depth), shape) => {
                write!(f, "{base}.reshape({depth}, {shape})")
            }
            ExprKind::Reshape(base, None, shape) => write!(f, "{base}.reshape({shape})"),
            ExprKind::Broadcast(base, position, extent) => {
                write!(f, "{base}.broadcast({position}, {extent})")
            }
            ExprKind::Indices(base) => write!(f, "{base}.indices()"),
            ExprKind::Scalar(base) => write!(f, "{base}.scalar()"),
            ExprKind::Index(base, coords) => write!(f, "{base}[{}]", list(coords, ", ")),
        }
    }
}

/// A layout, a size, or `_`.
impl Display for TileArg {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            TileArg::Layout(shape) => write!(f, "{shape}"),
            TileArg::Size(size) => write!(f, "{size}"),
            TileArg::Whole(_) => f.write_str("_"),
        }
    }
}

/// `k+1`, `_`, `(a, b)`.
impl Display for Coord {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.kind {
            CoordKind::Int(value) => write!(f, "{value}"),
            CoordKind::Keep => f.write_str("_"),
            CoordKind::Tuple(items) => write!(f, "({})", list(items, ", ")),
        }
    }
}

/// `@i`, `_`, `(p, q)`.
impl Display for IndexPattern {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.kind {
            IndexPatternKind::Bind(name) => write!(f, "@{}", name.text),
            IndexPatternKind::Ignore => f.write_str("_"),
            IndexPatternKind::Tuple(items) => write!(f, "({})", list(items, ", ")),
        }
    }
}

/// The kind with its parameters, e.g. `Reduction<add, [1]>`.
impl Display for SpecKind {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())?;
        match self {
            SpecKind::Move {
                asynchronous,
                masked,
                tma,
                add,
            } if *asynchronous || *masked || *tma || *add => {
                let flags: Vec<&str> = [
                    (*asynchronous, "async"),
                    (*masked, "masked"),
                    (*tma, "tma"),
                    (*add, "add"),
                ]
                .into_iter()
                .filter_map(|(on, flag)| on.then_some(flag))
                .collect();
                write!(f, "<{}>", flags.join(", "))
            }
            SpecKind::MatMul {
                overwrite: true,
                asynchronous: _,
            } => f.write_str("<overwrite>"),
            SpecKind::MatMul {
                overwrite: false,
                asynchronous: true,
            } => f.write_str("<async>"),
            SpecKind::Move { .. }
            | SpecKind::MatMul {
                overwrite: false,
                asynchronous: false,
            }
            | SpecKind::Generic => Ok(()),
            SpecKind::UnaryPointwise(op) => write!(f, "<{}>", op.name()),
            SpecKind::BinaryPointwise(op) => write!(f, "<{}>", op.name()),
            SpecKind::TernaryPointwise(op) => write!(f, "<{}>", op.name()),
            SpecKind::Select(op) => write!(f, "<{}>", op.name()),
            SpecKind::Reduction(op, axes) => write!(f, "<{}, [{}]>", op.name(), list(axes, ", ")),
            SpecKind::Shfl(_, mask) => write!(f, "<bfly, {mask}>"),
            // `{:?}` writes the shortest text that reads back as the same
            // value, always with a `.` or an exponent (`0.0`, `1e-7`, `inf`).
            SpecKind::Init(InitValue::Number(value)) => write!(f, "<{value:?}>"),
            SpecKind::Init(InitValue::Index(axis)) => write!(f, "<index({axis})>"),
            // A constant that begins like a number is parenthesised, so
            // that it reads back as an expression.
            SpecKind::Init(InitValue::Constant(value)) => {
                let text = value.to_string();
                if text.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '(') {
                    write!(f, "<{text}>")
                } else {
                    write!(f, "<({text})>")
                }
            }
        }
    }
}

/// The statement at indentation level 0.
impl Display for Stmt {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(&print_stmt(self))
    }
}

/// The canonical text of the file.
impl Display for File {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(&print_file(self))
    }
}
