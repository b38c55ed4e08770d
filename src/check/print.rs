//! Stage 2, check: the text of checked values in diagnostics and in the
//! REPL — index expressions with the user's names for dims and loop
//! variables (`M/128`, `bid_m*128`), levels in bracket form
//! (`[2,2 : 8,128]`), whole tensor and group types.

use crate::expr::{Expr, Var};
use crate::ir::{GroupType, Level, Memory, NamedSpan, Scalar, TensorType};
use crate::layout::{Swizzle, Tuple};

/// The names an expression's variables print as.
#[derive(Clone, Copy, Debug)]
pub struct Names<'a> {
    /// The kernel's symbolic dimensions (`Var::Dim(i)` prints `dims[i]`).
    pub dims: &'a [NamedSpan],
    /// The kernel's loop variables (`Var::Loop(i)` prints `loops[i]`).
    pub loops: &'a [NamedSpan],
}

impl Names<'_> {
    /// No names known: variables print as `d0`, `k1`.
    pub const NONE: Names<'static> = Names {
        dims: &[],
        loops: &[],
    };

    fn var(&self, var: Var) -> String {
        let named = |list: &[NamedSpan], i: u32| list.get(i as usize).map(|n| n.name.clone());
        match var {
            Var::ThreadId => "tid".to_string(),
            Var::BlockId => "bid".to_string(),
            Var::Dim(i) => named(self.dims, i).unwrap_or_else(|| var.to_string()),
            Var::Loop(i) => named(self.loops, i).unwrap_or_else(|| var.to_string()),
        }
    }
}

/// An expression in infix form with only the parentheses precedence needs,
/// e.g. `(tid/8)%2*128 + k`.
pub fn expr_text(expr: &Expr, names: &Names) -> String {
    let mut out = String::new();
    write_expr(&mut out, expr, names, 0);
    out
}

const MULTIPLICATIVE: u8 = 5;

/// Binding strength of an operator (higher binds tighter).
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

fn write_expr(out: &mut String, expr: &Expr, names: &Names, context: u8) {
    let (a, op, b) = match expr {
        Expr::Const(value) => {
            out.push_str(&value.to_string());
            return;
        }
        Expr::Var(var) => {
            out.push_str(&names.var(*var));
            return;
        }
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
        out.push('(');
    }
    // `*`, `/` and `%` mixed read badly without parentheses: `(tid/8) % 2`.
    let mixed = |child: &Expr| {
        precedence(child) == MULTIPLICATIVE
            && own == MULTIPLICATIVE
            && std::mem::discriminant(child) != std::mem::discriminant(expr)
    };
    write_expr(out, a, names, if mixed(a) { own + 1 } else { own });
    out.push_str(op);
    // Left-associative: the right operand needs parentheses at equal strength.
    write_expr(out, b, names, own + 1);
    if parenthesised {
        out.push(')');
    }
}

fn tuple_text(tuple: &Tuple<Expr>, names: &Names) -> String {
    match tuple {
        Tuple::Leaf(expr) => expr_text(expr, names),
        Tuple::Node(modes) => {
            let inner: Vec<String> = modes.iter().map(|m| tuple_text(m, names)).collect();
            format!("({})", inner.join(","))
        }
    }
}

/// The top-level modes of a level's shape or stride, comma-separated.
fn modes_text(tuple: &Tuple<Expr>, names: &Names) -> String {
    match tuple {
        Tuple::Node(modes) => {
            let inner: Vec<String> = modes.iter().map(|m| tuple_text(m, names)).collect();
            inner.join(",")
        }
        Tuple::Leaf(_) => tuple_text(tuple, names),
    }
}

/// A level in bracket form: `[2,2 : 8,128]`, or `[]`.
pub fn level_text(level: &Level, names: &Names) -> String {
    written_level_text(&level.shape, Some(&level.stride), names)
}

/// A level as written: with strides only if `stride` is given.
pub(crate) fn written_level_text(
    shape: &Tuple<Expr>,
    stride: Option<&Tuple<Expr>>,
    names: &Names,
) -> String {
    let dims = modes_text(shape, names);
    if dims.is_empty() {
        return "[]".to_string();
    }
    match stride {
        Some(stride) => format!("[{dims} : {}]", modes_text(stride, names)),
        None => format!("[{dims}]"),
    }
}

fn join_levels(levels: impl Iterator<Item = String>) -> String {
    levels.collect::<Vec<_>>().join(".")
}

/// The element part of a tensor type: `fp16.SH` or `fp16.SH.Swizzle<3,3,3>`.
pub(crate) fn element_text(scalar: Scalar, memory: Memory, swizzle: Option<Swizzle>) -> String {
    let mut text = format!("{}.{}", scalar.name(), memory.name());
    if let Some(s) = swizzle {
        text.push_str(&format!(
            ".Swizzle<{},{},{}>",
            s.bits(),
            s.base(),
            s.shift()
        ));
    }
    text
}

/// A tensor type in full: `[2,2 : 8,128].[8,8 : 1,16].fp16.SH`.
pub fn tensor_type_text(ty: &TensorType, names: &Names) -> String {
    format!(
        "{}.{}",
        join_levels(ty.levels.iter().map(|l| level_text(l, names))),
        element_text(ty.scalar, ty.memory, ty.swizzle)
    )
}

/// A group type in full: `[2,2 : 16,8].[8 : 1].thread`.
pub fn group_type_text(ty: &GroupType, names: &Names) -> String {
    format!(
        "{}.{}",
        join_levels(ty.levels.iter().map(|l| level_text(l, names))),
        ty.kind.name()
    )
}

/// Levels as written (strides where written), joined with `.`.
pub(crate) fn written_levels_text<'a>(
    levels: impl Iterator<Item = (&'a Tuple<Expr>, Option<&'a Tuple<Expr>>)>,
    names: &Names,
) -> String {
    join_levels(levels.map(|(shape, stride)| written_level_text(shape, stride, names)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_with_m() -> Vec<NamedSpan> {
        vec![NamedSpan {
            name: "M".to_string(),
            span: crate::diag::Span::DUMMY,
        }]
    }

    #[test]
    fn infix_with_needed_parentheses_only() {
        let tid = Expr::var(Var::ThreadId);
        let grp = Expr::rem(Expr::div(tid.clone(), 16.into()), 2.into());
        let e = Expr::add(Expr::mul(grp, 128.into()), Expr::var(Var::Loop(0)));
        assert_eq!(expr_text(&e, &Names::NONE), "((tid/16) % 2)*128 + k0");
        let sum_times = Expr::mul(Expr::add(tid.clone(), 1.into()), 2.into());
        assert_eq!(expr_text(&sum_times, &Names::NONE), "(tid + 1)*2");
        let nested_sub = Expr::sub(tid.clone(), Expr::sub(tid, 1.into()));
        assert_eq!(expr_text(&nested_sub, &Names::NONE), "tid - (tid - 1)");
    }

    #[test]
    fn dims_print_with_their_names() {
        let dims = names_with_m();
        let names = Names {
            dims: &dims,
            loops: &[],
        };
        let e = Expr::div(Expr::var(Var::Dim(0)), 128.into());
        assert_eq!(expr_text(&e, &names), "M/128");
        let level = Level {
            shape: Tuple::Node(vec![Tuple::Leaf(e), Tuple::Leaf(8.into())]),
            stride: Tuple::Node(vec![Tuple::Leaf(128.into()), Tuple::Leaf(1.into())]),
        };
        assert_eq!(level_text(&level, &names), "[M/128,8 : 128,1]");
    }

    #[test]
    fn scalar_levels_are_empty_brackets() {
        let level = Level {
            shape: Tuple::Node(vec![]),
            stride: Tuple::Node(vec![]),
        };
        let ty = TensorType {
            levels: vec![level],
            scalar: Scalar::Fp16,
            memory: Memory::Global,
            swizzle: None,
        };
        assert_eq!(tensor_type_text(&ty, &Names::NONE), "[].fp16.GL");
    }
}
