//! Stage 1, syntax: span stripping. Two trees are equal modulo spans when
//! they are equal after every span is set to `Span::DUMMY`; this is how the
//! round-trip property `parse(print(t)) == t` is stated.

use super::ast::{
    Block, Cond, CondKind, ConstDef, Coord, CoordKind, Expr, ExprKind, File, GroupType,
    IndexPattern, IndexPatternKind, InitValue, IntExpr, IntExprKind, Item, Kernel, Layout, Name,
    ScalarChoice, SpecKind, Stmt, StmtKind, TensorType, TileArg, TileDim,
};
use crate::diag::Span;
use crate::layout::Tuple;

/// A tree whose spans can be cleared.
pub trait StripSpans {
    /// Sets every span in the tree to `Span::DUMMY`.
    fn clear_spans(&mut self);
}

/// `tree` with every span set to `Span::DUMMY`.
pub fn strip_spans<T: StripSpans>(mut tree: T) -> T {
    tree.clear_spans();
    tree
}

impl StripSpans for Span {
    fn clear_spans(&mut self) {
        *self = Span::DUMMY;
    }
}

impl<T: StripSpans> StripSpans for Vec<T> {
    fn clear_spans(&mut self) {
        self.iter_mut().for_each(StripSpans::clear_spans);
    }
}

impl<T: StripSpans> StripSpans for Option<T> {
    fn clear_spans(&mut self) {
        if let Some(inner) = self {
            inner.clear_spans();
        }
    }
}

impl<T: StripSpans> StripSpans for Box<T> {
    fn clear_spans(&mut self) {
        (**self).clear_spans();
    }
}

impl<T: StripSpans> StripSpans for Tuple<T> {
    fn clear_spans(&mut self) {
        match self {
            Tuple::Leaf(leaf) => leaf.clear_spans(),
            Tuple::Node(modes) => modes.clear_spans(),
        }
    }
}

impl StripSpans for File {
    fn clear_spans(&mut self) {
        self.items.clear_spans();
        self.span.clear_spans();
    }
}

impl StripSpans for Item {
    fn clear_spans(&mut self) {
        match self {
            Item::Const(def) => def.clear_spans(),
            Item::Kernel(kernel) => kernel.clear_spans(),
            Item::Variant(variant) => {
                variant.span.clear_spans();
                variant.name.clear_spans();
                variant.base.clear_spans();
                for def in &mut variant.overrides {
                    def.clear_spans();
                }
            }
        }
    }
}

impl StripSpans for ConstDef {
    fn clear_spans(&mut self) {
        self.name.clear_spans();
        self.value.clear_spans();
        if let Some(tune) = &mut self.tune {
            for (_, span) in &mut tune.values {
                span.clear_spans();
            }
            tune.span.clear_spans();
        }
        self.span.clear_spans();
    }
}

impl StripSpans for Kernel {
    fn clear_spans(&mut self) {
        self.name.clear_spans();
        for attribute in &mut self.attributes {
            attribute.name.clear_spans();
            attribute.value.clear_spans();
            attribute.span.clear_spans();
        }
        self.body.clear_spans();
        self.span.clear_spans();
    }
}

impl StripSpans for Name {
    fn clear_spans(&mut self) {
        self.span.clear_spans();
    }
}

impl StripSpans for Block {
    fn clear_spans(&mut self) {
        self.stmts.clear_spans();
        self.span.clear_spans();
    }
}

impl StripSpans for Stmt {
    fn clear_spans(&mut self) {
        self.span.clear_spans();
        match &mut self.kind {
            StmtKind::Tensor(def) => {
                def.name.clear_spans();
                def.ty.clear_spans();
                def.value.clear_spans();
            }
            StmtKind::Group(def) => {
                def.name.clear_spans();
                def.ty.clear_spans();
                def.value.clear_spans();
            }
            StmtKind::Indices(def) => {
                def.patterns.clear_spans();
                def.value.clear_spans();
            }
            StmtKind::Spec(spec) => {
                spec.outputs.clear_spans();
                spec.kind.clear_spans();
                spec.kind_span.clear_spans();
                if let Some(launch) = &mut spec.launch {
                    launch.blocks.clear_spans();
                    launch.threads.clear_spans();
                }
                spec.inputs.clear_spans();
                spec.body.clear_spans();
            }
            StmtKind::For(for_loop) => {
                for_loop.var.clear_spans();
                for_loop.init.clear_spans();
                for_loop.bound.clear_spans();
                for_loop.step.clear_spans();
                for_loop.body.clear_spans();
            }
            StmtKind::If(if_stmt) => {
                for (cond, block) in &mut if_stmt.branches {
                    cond.clear_spans();
                    block.clear_spans();
                }
                if_stmt.otherwise.clear_spans();
            }
            StmtKind::Wait(_, count) => count.clear_spans(),
            StmtKind::Arrive(barrier) => barrier.clear_spans(),
            StmtKind::WaitPhase(barrier, parity) => {
                barrier.clear_spans();
                parity.clear_spans();
            }
            StmtKind::SetMaxRegisters(count) => count.clear_spans(),
            StmtKind::Require(_, cond) => cond.clear_spans(),
            StmtKind::Let(def) => {
                def.name.clear_spans();
                def.value.clear_spans();
            }
            StmtKind::Contract(block) => block.clear_spans(),
            StmtKind::Sync(_) | StmtKind::Commit(_) => {}
        }
    }
}

impl StripSpans for IndexPattern {
    fn clear_spans(&mut self) {
        self.span.clear_spans();
        match &mut self.kind {
            IndexPatternKind::Bind(name) => name.clear_spans(),
            IndexPatternKind::Tuple(items) => items.clear_spans(),
            IndexPatternKind::Ignore => {}
        }
    }
}

impl StripSpans for ScalarChoice {
    fn clear_spans(&mut self) {
        match self {
            ScalarChoice::Named(_) => {}
            ScalarChoice::Select(cond, yes, no) => {
                cond.clear_spans();
                yes.clear_spans();
                no.clear_spans();
            }
        }
    }
}

impl StripSpans for TensorType {
    fn clear_spans(&mut self) {
        self.levels.clear_spans();
        self.scalar.clear_spans();
        if let Some(swizzle) = &mut self.swizzle {
            swizzle.bits.clear_spans();
            swizzle.base.clear_spans();
            swizzle.shift.clear_spans();
            swizzle.span.clear_spans();
        }
        self.span.clear_spans();
    }
}

impl StripSpans for GroupType {
    fn clear_spans(&mut self) {
        self.levels.clear_spans();
        self.span.clear_spans();
    }
}

impl<L: StripSpans> StripSpans for Layout<L> {
    fn clear_spans(&mut self) {
        self.dims.clear_spans();
        self.strides.clear_spans();
        self.span.clear_spans();
    }
}

impl StripSpans for TileDim {
    fn clear_spans(&mut self) {
        match self {
            TileDim::Size(size) => size.clear_spans(),
            TileDim::Whole(span) => span.clear_spans(),
        }
    }
}

impl StripSpans for IntExpr {
    fn clear_spans(&mut self) {
        self.span.clear_spans();
        match &mut self.kind {
            IntExprKind::Literal(_) => {}
            IntExprKind::Var(name) | IntExprKind::Index(name) => name.clear_spans(),
            IntExprKind::Neg(inner) => inner.clear_spans(),
            IntExprKind::Binary(_, lhs, rhs) => {
                lhs.clear_spans();
                rhs.clear_spans();
            }
            IntExprKind::Select(cond, lhs, rhs) => {
                cond.clear_spans();
                lhs.clear_spans();
                rhs.clear_spans();
            }
        }
    }
}

impl StripSpans for Cond {
    fn clear_spans(&mut self) {
        self.span.clear_spans();
        match &mut self.kind {
            CondKind::Compare(_, lhs, rhs) => {
                lhs.clear_spans();
                rhs.clear_spans();
            }
            CondKind::And(lhs, rhs) | CondKind::Or(lhs, rhs) => {
                lhs.clear_spans();
                rhs.clear_spans();
            }
        }
    }
}

impl StripSpans for Expr {
    fn clear_spans(&mut self) {
        self.span.clear_spans();
        match &mut self.kind {
            ExprKind::Tensor(name) | ExprKind::Group(name) => name.clear_spans(),
            ExprKind::Allocate => {}
            ExprKind::Tile(base, args, _) => {
                base.clear_spans();
                args.clear_spans();
            }
            ExprKind::Reshape(base, depth, shape) => {
                base.clear_spans();
                depth.clear_spans();
                shape.clear_spans();
            }
            ExprKind::Broadcast(base, position, extent) => {
                base.clear_spans();
                position.clear_spans();
                extent.clear_spans();
            }
            ExprKind::Indices(base) | ExprKind::Scalar(base) => base.clear_spans(),
            ExprKind::Index(base, coords) => {
                base.clear_spans();
                coords.clear_spans();
            }
        }
    }
}

impl StripSpans for TileArg {
    fn clear_spans(&mut self) {
        match self {
            TileArg::Layout(shape) => shape.clear_spans(),
            TileArg::Size(size) => size.clear_spans(),
            TileArg::Whole(span) => span.clear_spans(),
        }
    }
}

impl StripSpans for Coord {
    fn clear_spans(&mut self) {
        self.span.clear_spans();
        match &mut self.kind {
            CoordKind::Int(value) => value.clear_spans(),
            CoordKind::Tuple(items) => items.clear_spans(),
            CoordKind::Keep => {}
        }
    }
}

impl StripSpans for SpecKind {
    fn clear_spans(&mut self) {
        match self {
            SpecKind::Reduction(_, axes) => axes.clear_spans(),
            SpecKind::Shfl(_, mask) => mask.clear_spans(),
            SpecKind::Init(InitValue::Constant(value)) => value.clear_spans(),
            SpecKind::Move { .. }
            | SpecKind::MatMul { .. }
            | SpecKind::UnaryPointwise(_)
            | SpecKind::BinaryPointwise(_)
            | SpecKind::TernaryPointwise(_)
            | SpecKind::Select(_)
            | SpecKind::Init(InitValue::Number(_) | InitValue::Index(_))
            | SpecKind::Generic => {}
        }
    }
}
