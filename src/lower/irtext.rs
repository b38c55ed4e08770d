//! Stage 3, lowering: the checked IR as text — for `--annotate` comments,
//! for the operand types in diagnostics, and for `ptxgen --emit ir`.
//!
//! Types are written in full (`[2,2 : 128,8].[8,8 : 16,1].fp16.SH`), index
//! expressions with the kernel's own names for dims and loop variables and
//! only the parentheses precedence needs.

use std::fmt::Write;

use crate::expr::{Expr, Var};
use crate::ir::{
    BufferKind, Cond, GroupType, Kernel, Level, Program, SpecKind, SpecStmt, Stmt, TensorType, View,
};
use crate::layout::Tuple;

/// The names a kernel gives its variables, for printing expressions.
#[derive(Clone, Debug, Default)]
pub struct Names {
    dims: Vec<String>,
    loops: Vec<String>,
}

impl Names {
    /// The names of `kernel`'s dims and loop variables.
    pub fn of(kernel: &Kernel) -> Names {
        Names {
            dims: kernel.dims.iter().map(|dim| dim.name.clone()).collect(),
            loops: kernel.loops.iter().map(|var| var.name.clone()).collect(),
        }
    }

    fn var(&self, var: Var) -> String {
        let named = match var {
            Var::ThreadId | Var::BlockId => None,
            Var::Dim(i) => self.dims.get(i as usize),
            Var::Loop(i) => self.loops.get(i as usize),
        };
        named.cloned().unwrap_or_else(|| var.to_string())
    }

    /// `expr` in infix with minimal parentheses: `(tid / 8) % 2 * 128 + k`.
    pub fn expr(&self, expr: &Expr) -> String {
        let mut out = String::new();
        self.write_expr(expr, 0, &mut out);
        out
    }

    fn write_expr(&self, expr: &Expr, outer: u8, out: &mut String) {
        let (a, op, b, precedence) = match expr {
            Expr::Const(value) => {
                let _ = write!(out, "{value}");
                return;
            }
            Expr::Var(var) => {
                out.push_str(&self.var(*var));
                return;
            }
            Expr::Xor(a, b) => (a, "^", b, 1),
            Expr::And(a, b) => (a, "&", b, 2),
            Expr::Shr(a, b) => (a, ">>", b, 3),
            Expr::Shl(a, b) => (a, "<<", b, 3),
            Expr::Add(a, b) => (a, "+", b, 4),
            Expr::Sub(a, b) => (a, "-", b, 4),
            Expr::Mul(a, b) => (a, "*", b, 5),
            Expr::Div(a, b) => (a, "/", b, 5),
            Expr::Rem(a, b) => (a, "%", b, 5),
        };
        let parenthesise = precedence < outer;
        if parenthesise {
            out.push('(');
        }
        self.write_expr(a, precedence, out);
        let _ = write!(out, " {op} ");
        // Left-associative: a right operand of equal precedence needs
        // parentheses (`a - (b - c)`).
        self.write_expr(b, precedence + 1, out);
        if parenthesise {
            out.push(')');
        }
    }

    /// A tuple of expressions, `(a,(b,c))`.
    fn tuple(&self, tuple: &Tuple<Expr>) -> String {
        match tuple {
            Tuple::Leaf(value) => self.expr(value),
            Tuple::Node(modes) => {
                let inner: Vec<String> = modes.iter().map(|mode| self.tuple(mode)).collect();
                format!("({})", inner.join(","))
            }
        }
    }

    /// One level in bracket form with its strides: `[8,8 : 16,1]`.
    pub fn level(&self, level: &Level) -> String {
        let modes = |tuple: &Tuple<Expr>| -> String {
            tuple
                .modes()
                .into_iter()
                .map(|mode| self.tuple(mode))
                .collect::<Vec<_>>()
                .join(",")
        };
        // A rank-0 level is `[]`; a leaf level is a single mode.
        match &level.shape {
            Tuple::Node(modes_list) if modes_list.is_empty() => "[]".to_string(),
            Tuple::Node(_) | Tuple::Leaf(_) => {
                format!("[{} : {}]", modes(&level.shape), modes(&level.stride))
            }
        }
    }

    /// A tensor type in full: `[2,2 : 4,2].[1,2 : 4,1].fp16.RF`.
    pub fn tensor_type(&self, ty: &TensorType) -> String {
        let mut out: Vec<String> = ty.levels.iter().map(|level| self.level(level)).collect();
        out.push(ty.scalar.name().to_string());
        out.push(ty.memory.name().to_string());
        if let Some(swizzle) = ty.swizzle {
            out.push(format!(
                "Swizzle<{},{},{}>",
                swizzle.bits(),
                swizzle.base(),
                swizzle.shift()
            ));
        }
        out.join(".")
    }

    /// A group type: `[4 : 32].[32 : 1].thread`.
    pub fn group_type(&self, group: &GroupType) -> String {
        let mut out: Vec<String> = group.levels.iter().map(|level| self.level(level)).collect();
        out.push(group.kind.name().to_string());
        out.join(".")
    }

    /// A view: `%a[base]:type`, the buffer named as in the source.
    pub fn view(&self, kernel: &Kernel, view: &View) -> String {
        let name = kernel
            .buffers
            .get(view.buffer.0 as usize)
            .map_or("?", |buffer| buffer.name.as_str());
        format!(
            "%{name}[{}]:{}",
            self.expr(&view.base),
            self.tensor_type(&view.ty)
        )
    }

    /// A condition: `tid / 32 == 0 && k < 4`.
    pub fn cond(&self, cond: &Cond) -> String {
        match cond {
            Cond::Compare(op, a, b) => {
                format!("{} {} {}", self.expr(a), op.symbol(), self.expr(b))
            }
            Cond::And(a, b) => format!("({}) && ({})", self.cond(a), self.cond(b)),
            Cond::Or(a, b) => format!("({}) || ({})", self.cond(a), self.cond(b)),
        }
    }

    /// A spec's head: `outs <- Kind<<<blocks, threads>>>(ins)`.
    pub fn spec_head(&self, kernel: &Kernel, spec: &SpecStmt) -> String {
        let views = |views: &[View]| -> String {
            views
                .iter()
                .map(|view| self.view(kernel, view))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "{} <- {}<<<{}, {}>>>({})",
            views(&spec.outputs),
            spec_kind(&spec.kind),
            self.group_type(&spec.blocks),
            self.group_type(&spec.threads),
            views(&spec.inputs)
        )
    }
}

/// A spec kind as written: `Move<async>`, `Reduction<add, [0]>`.
pub fn spec_kind(kind: &SpecKind) -> String {
    match kind {
        SpecKind::Move { asynchronous } => {
            if *asynchronous {
                "Move<async>".into()
            } else {
                "Move".into()
            }
        }
        SpecKind::MatMul {
            accumulate,
            asynchronous,
        } => match (accumulate, asynchronous) {
            (false, _) => "MatMul<overwrite>".into(),
            (true, true) => "MatMul<async>".into(),
            (true, false) => "MatMul".into(),
        },
        SpecKind::Unary(op) => format!("UnaryPointwise<{}>", op.name()),
        SpecKind::Binary(op) => format!("BinaryPointwise<{}>", op.name()),
        SpecKind::Reduction { op, axes } => {
            let axes: Vec<String> = axes.iter().map(u32::to_string).collect();
            format!("Reduction<{}, [{}]>", op.name(), axes.join(", "))
        }
        SpecKind::Shfl { mask } => format!("Shfl<bfly, {mask}>"),
        SpecKind::Init { value } => format!("Init<{value:?}>"),
        SpecKind::Generic => "Spec".into(),
    }
}

/// The whole program as text: per kernel its ABI, storage and statements.
pub fn program_text(program: &Program) -> String {
    let mut out = String::new();
    for (position, kernel) in program.kernels.iter().enumerate() {
        if position > 0 {
            out.push('\n');
        }
        kernel_text(kernel, &mut out);
    }
    out
}

fn kernel_text(kernel: &Kernel, out: &mut String) {
    let names = Names::of(kernel);
    let _ = writeln!(out, "kernel {} {{", kernel.name);
    let _ = writeln!(out, "    // grid  {}", names.group_type(&kernel.grid));
    let _ = writeln!(out, "    // block {}", names.group_type(&kernel.block));
    if let Some(blocks) = kernel.occupancy.min_blocks_per_sm {
        let _ = writeln!(out, "    // min_blocks_per_sm {blocks}");
    }
    if let Some(registers) = kernel.occupancy.max_registers {
        let _ = writeln!(out, "    // max_registers {registers}");
    }
    for buffer in &kernel.buffers {
        let storage = match buffer.kind {
            BufferKind::Param(i) => format!("parameter {i}"),
            BufferKind::Shared => "shared".into(),
            BufferKind::Registers => "registers".into(),
        };
        let _ = writeln!(
            out,
            "    %{}:{}  // {storage}, {} elements",
            buffer.name,
            names.tensor_type(&buffer.ty),
            names.expr(&buffer.elements)
        );
    }
    for dim in &kernel.dims {
        let _ = writeln!(out, "    // dim {} (.u32 parameter)", dim.name);
    }
    spec_text(kernel, &names, &kernel.root, 1, out);
    out.push_str("}\n");
}

fn spec_text(kernel: &Kernel, names: &Names, spec: &SpecStmt, depth: usize, out: &mut String) {
    let indent = "    ".repeat(depth);
    let head = names.spec_head(kernel, spec);
    match &spec.body {
        None => {
            let _ = writeln!(out, "{indent}{head}");
        }
        Some(body) => {
            let _ = writeln!(out, "{indent}{head} {{");
            body_text(kernel, names, body, depth + 1, out);
            let _ = writeln!(out, "{indent}}}");
        }
    }
}

fn body_text(kernel: &Kernel, names: &Names, body: &[Stmt], depth: usize, out: &mut String) {
    let indent = "    ".repeat(depth);
    for stmt in body {
        match stmt {
            Stmt::Spec(spec) => spec_text(kernel, names, spec, depth, out),
            Stmt::For(each) => {
                let var = names.var(Var::Loop(each.var));
                let unroll = if each.unroll { " // unrolled" } else { "" };
                let _ = writeln!(
                    out,
                    "{indent}for ({var} = {}; {var} < {}; {var} += {}) {{{unroll}",
                    names.expr(&each.lo),
                    names.expr(&each.hi),
                    names.expr(&each.step)
                );
                body_text(kernel, names, &each.body, depth + 1, out);
                let _ = writeln!(out, "{indent}}}");
            }
            Stmt::If(branch) => {
                let _ = writeln!(out, "{indent}if ({}) {{", names.cond(&branch.cond));
                body_text(kernel, names, &branch.then_body, depth + 1, out);
                if !branch.else_body.is_empty() {
                    let _ = writeln!(out, "{indent}}} else {{");
                    body_text(kernel, names, &branch.else_body, depth + 1, out);
                }
                let _ = writeln!(out, "{indent}}}");
            }
            Stmt::Sync(_) => {
                let _ = writeln!(out, "{indent}sync");
            }
            Stmt::Commit { queue, .. } => {
                let _ = writeln!(out, "{indent}{}", queue.commit_keyword());
            }
            Stmt::Wait { queue, pending, .. } => {
                let _ = writeln!(out, "{indent}{}({pending})", queue.wait_keyword());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tid() -> Expr {
        Expr::var(Var::ThreadId)
    }

    #[test]
    fn expressions_print_with_minimal_parentheses() {
        let names = Names::default();
        let grp = Expr::rem(Expr::div(tid(), 16.into()), 2.into());
        let e = Expr::add(Expr::mul(grp, 128.into()), Expr::var(Var::Loop(0)));
        assert_eq!(names.expr(&e), "tid / 16 % 2 * 128 + k0");
        let nested = Expr::sub(tid(), Expr::sub(8.into(), Expr::var(Var::Dim(0))));
        assert_eq!(names.expr(&nested), "tid - (8 - d0)");
        let swizzle = Expr::xor(tid(), Expr::and(Expr::shr(tid(), 3.into()), 56.into()));
        assert_eq!(names.expr(&swizzle), "tid ^ tid >> 3 & 56");
        let mul_of_sum = Expr::mul(Expr::add(tid(), 1.into()), 4.into());
        assert_eq!(names.expr(&mul_of_sum), "(tid + 1) * 4");
    }

    #[test]
    fn levels_print_in_bracket_form() {
        let names = Names::default();
        let leaf = |v: i64| Tuple::Leaf(Expr::Const(v));
        let level = Level {
            shape: Tuple::Node(vec![leaf(4), Tuple::Node(vec![leaf(2), leaf(4)])]),
            stride: Tuple::Node(vec![leaf(2), Tuple::Node(vec![leaf(1), leaf(8)])]),
        };
        assert_eq!(names.level(&level), "[4,(2,4) : 2,(1,8)]");
        let scalar = Level {
            shape: Tuple::Node(vec![]),
            stride: Tuple::Node(vec![]),
        };
        assert_eq!(names.level(&scalar), "[]");
    }
}
