//! The typed IR as text — the one printer that checker diagnostics,
//! lowering diagnostics, `ptxgen --emit ir`, `--annotate` comments and the
//! REPL all use.
//!
//! Index expressions print in infix with the kernel's own names for dims
//! and loop variables and only the parentheses precedence needs
//! (`((tid/8) % 2)*128 + k`); levels in bracket form with their strides
//! (`[2,2 : 8,128]`); types in full (`[2,2 : 8,128].[8,8 : 1,16].fp16.SH`).
//! [`Names`] says how variables and buffers are called; [`Print::display`]
//! pairs a value with them as a `Display` adapter.

use std::fmt::{self, Write};

use super::expr::{Expr, Var};
use super::{
    Buffer, BufferKind, Cond, GroupType, InitValue, Kernel, Level, NamedSpan, Program, Requirement,
    SpecKind, SpecStmt, Stmt, TensorType, View,
};
use crate::layout::{Swizzle, Tuple};
use crate::vocab::{Memory, Scalar};

/// How a kernel's variables and buffers are called in text.
///
/// Rule: `Var::Dim(i)` prints `dims[i]`, `Var::Loop(i)` prints `loops[i]`,
/// a view of `BufferId(b)` prints `buffers[b]`'s name; what is missing
/// prints as `d0`, `k1` and `?`.
#[derive(Clone, Copy, Debug)]
pub struct Names<'a> {
    /// The kernel's symbolic dimensions.
    pub dims: &'a [NamedSpan],
    /// The kernel's loop variables.
    pub loops: &'a [NamedSpan],
    /// The kernel's buffers (only their names are read).
    pub buffers: &'a [Buffer],
}

impl<'a> Names<'a> {
    /// No names known: variables print as `d0`, `k1`.
    pub const NONE: Names<'static> = Names {
        dims: &[],
        loops: &[],
        buffers: &[],
    };

    /// The names `kernel` gives its dims, loop variables and buffers.
    pub fn of(kernel: &'a Kernel) -> Names<'a> {
        Names {
            dims: &kernel.dims,
            loops: &kernel.loops,
            buffers: &kernel.buffers,
        }
    }

    fn write_var(&self, f: &mut impl Write, var: Var) -> fmt::Result {
        let named = match var {
            Var::ThreadId | Var::BlockId => None,
            Var::Dim(i) => self.dims.get(i as usize),
            Var::Loop(i) => self.loops.get(i as usize),
        };
        match named {
            Some(named) => f.write_str(&named.name),
            None => write!(f, "{var}"),
        }
    }
}

/// A value of the IR together with the names to print it with.
#[derive(Clone, Copy, Debug)]
pub struct Printed<'a, T: ?Sized> {
    value: &'a T,
    names: Names<'a>,
}

/// IR values that print with a kernel's [`Names`].
pub trait Print {
    /// `self` as text with `names`: `expr.display(&names).to_string()`, or
    /// straight into a format string.
    fn display<'a>(&'a self, names: &Names<'a>) -> Printed<'a, Self> {
        Printed {
            value: self,
            names: *names,
        }
    }
}

impl Print for Expr {}
impl Print for Level {}
impl Print for TensorType {}
impl Print for GroupType {}
impl Print for View {}
impl Print for Cond {}
impl Print for SpecStmt {}

/// The binding strength of `*`, `/` and `%`.
const MULTIPLICATIVE: u8 = 5;

/// Binding strength of an expression's operator (higher binds tighter).
fn precedence(expr: &Expr) -> u8 {
    match expr {
        Expr::Const(_) | Expr::Var(_) => 9,
        Expr::Mul(..) | Expr::Div(..) | Expr::Rem(..) => MULTIPLICATIVE,
        Expr::Add(..) | Expr::Sub(..) => 4,
        Expr::Shl(..) | Expr::Shr(..) => 3,
        Expr::And(..) => 2,
        Expr::Xor(..) => 1,
    }
}

fn write_expr(f: &mut impl Write, expr: &Expr, names: &Names, context: u8) -> fmt::Result {
    let (a, op, b) = match expr {
        Expr::Const(value) => return write!(f, "{value}"),
        Expr::Var(var) => return names.write_var(f, *var),
        Expr::Add(a, b) => (a, " + ", b),
        Expr::Sub(a, b) => (a, " - ", b),
        Expr::Mul(a, b) => (a, "*", b),
        Expr::Div(a, b) => (a, "/", b),
        Expr::Rem(a, b) => (a, " % ", b),
        Expr::And(a, b) => (a, " & ", b),
        Expr::Xor(a, b) => (a, " ^ ", b),
        Expr::Shr(a, b) => (a, " >> ", b),
        Expr::Shl(a, b) => (a, " << ", b),
    };
    let own = precedence(expr);
    let parenthesised = own < context;
    if parenthesised {
        f.write_char('(')?;
    }
    // `*`, `/` and `%` mixed read badly without parentheses: `(tid/8) % 2`.
    let mixed = |child: &Expr| {
        precedence(child) == MULTIPLICATIVE
            && own == MULTIPLICATIVE
            && std::mem::discriminant(child) != std::mem::discriminant(expr)
    };
    write_expr(f, a, names, if mixed(a) { own + 1 } else { own })?;
    f.write_str(op)?;
    // Left-associative: the right operand needs parentheses at equal strength.
    write_expr(f, b, names, own + 1)?;
    if parenthesised {
        f.write_char(')')?;
    }
    Ok(())
}

fn write_tuple(f: &mut impl Write, tuple: &Tuple<Expr>, names: &Names) -> fmt::Result {
    match tuple {
        Tuple::Leaf(expr) => write_expr(f, expr, names, 0),
        Tuple::Node(modes) => {
            f.write_char('(')?;
            write_modes(f, modes, names)?;
            f.write_char(')')
        }
    }
}

fn write_modes(f: &mut impl Write, modes: &[Tuple<Expr>], names: &Names) -> fmt::Result {
    for (position, mode) in modes.iter().enumerate() {
        if position > 0 {
            f.write_char(',')?;
        }
        write_tuple(f, mode, names)?;
    }
    Ok(())
}

/// The top-level modes of a level's shape or stride, comma-separated.
fn write_top_modes(f: &mut impl Write, tuple: &Tuple<Expr>, names: &Names) -> fmt::Result {
    match tuple {
        Tuple::Node(modes) => write_modes(f, modes, names),
        Tuple::Leaf(_) => write_tuple(f, tuple, names),
    }
}

/// A level as written: `[2,2 : 8,128]` with strides if `stride` is given,
/// `[2,2]` without, `[]` for no modes.
pub fn written_level_text(
    shape: &Tuple<Expr>,
    stride: Option<&Tuple<Expr>>,
    names: &Names,
) -> String {
    let mut dims = String::new();
    // Writing into a String cannot fail.
    let _ = write_top_modes(&mut dims, shape, names);
    if dims.is_empty() {
        return "[]".to_string();
    }
    let mut out = format!("[{dims}");
    if let Some(stride) = stride {
        out.push_str(" : ");
        let _ = write_top_modes(&mut out, stride, names);
    }
    out.push(']');
    out
}

/// Levels as written (strides where written), joined with `.`.
pub fn written_levels_text<'a>(
    levels: impl Iterator<Item = (&'a Tuple<Expr>, Option<&'a Tuple<Expr>>)>,
    names: &Names,
) -> String {
    levels
        .map(|(shape, stride)| written_level_text(shape, stride, names))
        .collect::<Vec<_>>()
        .join(".")
}

/// The element part of a tensor type: `fp16.SH` or `fp16.SH.Swizzle<3,3,3>`.
pub fn element_text(scalar: Scalar, memory: Memory, swizzle: Option<Swizzle>) -> String {
    let mut text = format!("{scalar}.{memory}");
    if let Some(s) = swizzle {
        let _ = write!(text, ".Swizzle<{},{},{}>", s.bits(), s.base(), s.shift());
    }
    text
}

fn write_levels(f: &mut fmt::Formatter<'_>, levels: &[Level], names: &Names) -> fmt::Result {
    f.write_str(&written_levels_text(
        levels
            .iter()
            .map(|level| (&level.shape, Some(&level.stride))),
        names,
    ))
}

impl fmt::Display for Printed<'_, Expr> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_expr(f, self.value, &self.names, 0)
    }
}

impl fmt::Display for Printed<'_, Level> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_levels(f, std::slice::from_ref(self.value), &self.names)
    }
}

impl fmt::Display for Printed<'_, TensorType> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ty = self.value;
        write_levels(f, &ty.levels, &self.names)?;
        write!(f, ".{}", element_text(ty.scalar, ty.memory, ty.swizzle))
    }
}

impl fmt::Display for Printed<'_, GroupType> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_levels(f, &self.value.levels, &self.names)?;
        write!(f, ".{}", self.value.kind)
    }
}

/// A view: `%a[base]:type`, the buffer named as in the source.
impl fmt::Display for Printed<'_, View> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let view = self.value;
        let name = self
            .names
            .buffers
            .get(view.buffer.0 as usize)
            .map_or("?", |buffer| buffer.name.as_str());
        write!(
            f,
            "%{name}[{}]:{}",
            view.base.display(&self.names),
            view.ty.display(&self.names)
        )
    }
}

/// A condition: `tid/32 == 0 && k < 4`, each side of `&&` and `||` in
/// parentheses.
impl fmt::Display for Printed<'_, Cond> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = &self.names;
        match self.value {
            Cond::Compare(op, a, b) => write!(f, "{} {op} {}", a.display(names), b.display(names)),
            Cond::And(a, b) => write!(f, "({}) && ({})", a.display(names), b.display(names)),
            Cond::Or(a, b) => write!(f, "({}) || ({})", a.display(names), b.display(names)),
        }
    }
}

/// A spec's head: `outs <- Kind<<<blocks, threads>>>(ins)`.
impl fmt::Display for Printed<'_, SpecStmt> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (spec, names) = (self.value, &self.names);
        write!(
            f,
            "{} <- {}<<<{}, {}>>>({})",
            views_text(&spec.outputs, names),
            spec.kind,
            spec.blocks.display(names),
            spec.threads.display(names),
            views_text(&spec.inputs, names)
        )
    }
}

fn views_text(views: &[View], names: &Names) -> String {
    views
        .iter()
        .map(|view| view.display(names).to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A spec kind as written: `Move<async>`, `Reduction<add, [0]>`.
impl fmt::Display for SpecKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecKind::Move {
                asynchronous,
                masked,
                tma,
                add,
            } => f.write_str(match (asynchronous, masked, tma, add) {
                (_, _, true, _) => "Move<tma>",
                (false, false, false, false) => "Move",
                (true, false, false, false) => "Move<async>",
                (false, true, false, false) => "Move<masked>",
                (true, true, false, false) => "Move<async, masked>",
                // The parser refuses `add` with `async`.
                (_, false, false, true) => "Move<add>",
                (_, true, false, true) => "Move<masked, add>",
            }),
            SpecKind::MatMul {
                accumulate,
                asynchronous,
            } => f.write_str(match (accumulate, asynchronous) {
                (false, _) => "MatMul<overwrite>",
                (true, true) => "MatMul<async>",
                (true, false) => "MatMul",
            }),
            SpecKind::Unary(op) => write!(f, "UnaryPointwise<{op}>"),
            SpecKind::Binary(op) => write!(f, "BinaryPointwise<{op}>"),
            SpecKind::Ternary(op) => write!(f, "TernaryPointwise<{op}>"),
            SpecKind::Select(op) => write!(f, "Select<{}>", op.name()),
            SpecKind::Reduction { op, axes } => {
                let axes: Vec<String> = axes.iter().map(u32::to_string).collect();
                write!(f, "Reduction<{op}, [{}]>", axes.join(", "))
            }
            SpecKind::Shfl { mask } => write!(f, "Shfl<bfly, {mask}>"),
            SpecKind::Init {
                value: InitValue::Number(value),
            } => write!(f, "Init<{value:?}>"),
            SpecKind::Init {
                value: InitValue::Index(axis),
            } => write!(f, "Init<index({axis})>"),
            SpecKind::Generic => f.write_str("Spec"),
        }
    }
}

/// `expr` as text: [`Print::display`] collected into a `String`.
pub fn expr_text(expr: &Expr, names: &Names) -> String {
    expr.display(names).to_string()
}

/// A level in bracket form: `[2,2 : 8,128]`, or `[]`.
pub fn level_text(level: &Level, names: &Names) -> String {
    level.display(names).to_string()
}

/// A tensor type in full: `[2,2 : 8,128].[8,8 : 1,16].fp16.SH`.
pub fn tensor_type_text(ty: &TensorType, names: &Names) -> String {
    ty.display(names).to_string()
}

/// A group type in full: `[2,2 : 16,8].[8 : 1].thread`.
pub fn group_type_text(ty: &GroupType, names: &Names) -> String {
    ty.display(names).to_string()
}

/// The whole program as text (`ptxgen --emit ir`): per kernel its ABI,
/// storage and statements.
pub fn program_text(program: &Program) -> String {
    let mut out = String::new();
    for (position, kernel) in program.kernels.iter().enumerate() {
        if position > 0 {
            out.push('\n');
        }
        // Writing into a String cannot fail.
        let _ = write_kernel(&mut out, kernel);
    }
    out
}

fn write_kernel(out: &mut String, kernel: &Kernel) -> fmt::Result {
    let names = Names::of(kernel);
    writeln!(out, "kernel {} {{", kernel.name)?;
    writeln!(out, "    // grid  {}", kernel.grid.display(&names))?;
    writeln!(out, "    // block {}", kernel.block.display(&names))?;
    if let Some(blocks) = kernel.occupancy.min_blocks_per_sm {
        writeln!(out, "    // min_blocks_per_sm {blocks}")?;
    }
    if let Some(registers) = kernel.occupancy.max_registers {
        writeln!(out, "    // max_registers {registers}")?;
    }
    for buffer in &kernel.buffers {
        let storage = match buffer.kind {
            BufferKind::Param(i) => format!("parameter {i}"),
            BufferKind::Shared => "shared".into(),
            BufferKind::Registers => "registers".into(),
            BufferKind::Temporary => "contract temporary".into(),
        };
        writeln!(
            out,
            "    %{}:{}  // {storage}, {} elements",
            buffer.name,
            buffer.ty.display(&names),
            buffer.elements.display(&names)
        )?;
    }
    for dim in &kernel.dims {
        writeln!(out, "    // dim {} (.u32 parameter)", dim.name)?;
    }
    for specialization in &kernel.specializations {
        match specialization {
            Requirement::Divisible { value, divisor, .. } => writeln!(
                out,
                "    specialize {} % {} == 0",
                value.display(&names),
                divisor.display(&names)
            )?,
            Requirement::Positive { value, .. } => {
                writeln!(out, "    specialize {} >= 1", value.display(&names))?
            }
        }
    }
    if let Some(contract) = &kernel.contract {
        out.push_str("    contract {\n");
        // A step runs on no threads: its head has no launch groups.
        for step in &contract.steps {
            writeln!(
                out,
                "        {} <- {}({})",
                views_text(&step.outputs, &names),
                step.kind,
                views_text(&step.inputs, &names)
            )?;
        }
        out.push_str("    }\n");
    }
    write_spec(out, &names, &kernel.root, 1)?;
    out.push_str("}\n");
    Ok(())
}

fn write_spec(out: &mut String, names: &Names, spec: &SpecStmt, depth: usize) -> fmt::Result {
    let indent = "    ".repeat(depth);
    match &spec.body {
        None => writeln!(out, "{indent}{}", spec.display(names)),
        Some(body) => {
            writeln!(out, "{indent}{} {{", spec.display(names))?;
            write_body(out, names, body, depth + 1)?;
            writeln!(out, "{indent}}}")
        }
    }
}

fn write_body(out: &mut String, names: &Names, body: &[Stmt], depth: usize) -> fmt::Result {
    let indent = "    ".repeat(depth);
    for stmt in body {
        match stmt {
            Stmt::Spec(spec) => write_spec(out, names, spec, depth)?,
            Stmt::For(each) => {
                let var = Expr::var(Var::Loop(each.var));
                let var = var.display(names);
                let unroll = if each.unroll { " // unrolled" } else { "" };
                writeln!(
                    out,
                    "{indent}for ({var} = {}; {var} < {}; {var} += {}) {{{unroll}",
                    each.lo.display(names),
                    each.hi.display(names),
                    each.step.display(names)
                )?;
                write_body(out, names, &each.body, depth + 1)?;
                writeln!(out, "{indent}}}")?;
            }
            Stmt::If(branch) => {
                writeln!(out, "{indent}if ({}) {{", branch.cond.display(names))?;
                write_body(out, names, &branch.then_body, depth + 1)?;
                if !branch.else_body.is_empty() {
                    writeln!(out, "{indent}}} else {{")?;
                    write_body(out, names, &branch.else_body, depth + 1)?;
                }
                writeln!(out, "{indent}}}")?;
            }
            Stmt::Sync { scope, .. } => writeln!(out, "{indent}{}", scope.keyword())?,
            Stmt::Commit { queue, .. } => writeln!(out, "{indent}{}", queue.commit_keyword())?,
            Stmt::Wait { queue, pending, .. } => {
                writeln!(out, "{indent}{}({pending})", queue.wait_keyword())?;
            }
            Stmt::Arrive { barrier, .. } => {
                writeln!(out, "{indent}mbarrier_arrive({})", barrier.display(names))?;
            }
            Stmt::WaitPhase {
                barrier, parity, ..
            } => writeln!(
                out,
                "{indent}mbarrier_wait({}, {})",
                barrier.display(names),
                parity.display(names)
            )?,
            Stmt::SetMaxRegisters { count, .. } => writeln!(out, "{indent}setmaxnreg({count})")?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Span;
    use crate::ir::{BufferId, CompareOp};

    fn tid() -> Expr {
        Expr::var(Var::ThreadId)
    }

    fn named(name: &str) -> NamedSpan {
        NamedSpan {
            name: name.to_string(),
            span: Span::DUMMY,
        }
    }

    fn leaves(values: &[i64]) -> Tuple<Expr> {
        Tuple::Node(
            values
                .iter()
                .map(|v| Tuple::Leaf(Expr::Const(*v)))
                .collect(),
        )
    }

    #[test]
    fn infix_with_needed_parentheses_only() {
        let grp = Expr::rem(Expr::div(tid(), 16.into()), 2.into());
        let e = Expr::add(Expr::mul(grp, 128.into()), Expr::var(Var::Loop(0)));
        assert_eq!(expr_text(&e, &Names::NONE), "((tid/16) % 2)*128 + k0");
        let sum_times = Expr::mul(Expr::add(tid(), 1.into()), 2.into());
        assert_eq!(expr_text(&sum_times, &Names::NONE), "(tid + 1)*2");
        let nested_sub = Expr::sub(tid(), Expr::sub(8.into(), Expr::var(Var::Dim(0))));
        assert_eq!(expr_text(&nested_sub, &Names::NONE), "tid - (8 - d0)");
        let swizzle = Expr::xor(tid(), Expr::and(Expr::shr(tid(), 3.into()), 56.into()));
        assert_eq!(
            swizzle.display(&Names::NONE).to_string(),
            "tid ^ tid >> 3 & 56"
        );
    }

    #[test]
    fn dims_and_loops_print_with_their_names() {
        let (dims, loops) = ([named("M")], [named("k")]);
        let names = Names {
            dims: &dims,
            loops: &loops,
            buffers: &[],
        };
        let e = Expr::div(Expr::var(Var::Dim(0)), 128.into());
        assert_eq!(expr_text(&e, &names), "M/128");
        let level = Level {
            shape: Tuple::Node(vec![Tuple::Leaf(e), Tuple::Leaf(8.into())]),
            stride: leaves(&[128, 1]),
        };
        assert_eq!(level_text(&level, &names), "[M/128,8 : 128,1]");
        let cond = Cond::And(
            Box::new(Cond::Compare(
                CompareOp::Lt,
                Expr::var(Var::Loop(0)),
                4.into(),
            )),
            Box::new(Cond::Compare(CompareOp::Eq, tid(), 0.into())),
        );
        assert_eq!(cond.display(&names).to_string(), "(k < 4) && (tid == 0)");
    }

    #[test]
    fn levels_print_in_bracket_form_and_scalars_as_empty_brackets() {
        let leaf = |v: i64| Tuple::Leaf(Expr::Const(v));
        let level = Level {
            shape: Tuple::Node(vec![leaf(4), Tuple::Node(vec![leaf(2), leaf(4)])]),
            stride: Tuple::Node(vec![leaf(2), Tuple::Node(vec![leaf(1), leaf(8)])]),
        };
        assert_eq!(level_text(&level, &Names::NONE), "[4,(2,4) : 2,(1,8)]");
        let ty = TensorType {
            levels: vec![Level {
                shape: Tuple::Node(vec![]),
                stride: Tuple::Node(vec![]),
            }],
            scalar: Scalar::Fp16,
            memory: Memory::Global,
            swizzle: None,
        };
        assert_eq!(tensor_type_text(&ty, &Names::NONE), "[].fp16.GL");
    }

    #[test]
    fn views_name_their_buffer_and_spec_kinds_print_as_written() {
        let ty = TensorType {
            levels: vec![Level {
                shape: leaves(&[8]),
                stride: leaves(&[1]),
            }],
            scalar: Scalar::Fp32,
            memory: Memory::Shared,
            swizzle: Swizzle::new(3, 3, 3).ok(),
        };
        let buffers = [Buffer {
            name: "a".to_string(),
            span: Span::DUMMY,
            kind: BufferKind::Shared,
            ty: ty.clone(),
            elements: 8.into(),
        }];
        let names = Names {
            buffers: &buffers,
            ..Names::NONE
        };
        let view = |buffer| View {
            buffer: BufferId(buffer),
            base: Expr::mul(tid(), 8.into()),
            ty: ty.clone(),
            bounds: Vec::new(),
            span: Span::DUMMY,
        };
        assert_eq!(
            view(0).display(&names).to_string(),
            "%a[tid*8]:[8 : 1].fp32.SH.Swizzle<3,3,3>"
        );
        assert!(view(1).display(&names).to_string().starts_with("%?[tid*8]"));
        let reduction = SpecKind::Reduction {
            op: crate::vocab::ReduceOp::Max,
            axes: vec![0, 1],
        };
        assert_eq!(reduction.to_string(), "Reduction<max, [0, 1]>");
        let overwrite = SpecKind::MatMul {
            accumulate: false,
            asynchronous: true,
        };
        assert_eq!(overwrite.to_string(), "MatMul<overwrite>");
    }
}
