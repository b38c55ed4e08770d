//! Stage 3, lowering (tests only): checked IR built by hand, so that the
//! lowering's unit tests do not depend on the checker. Everything here
//! follows the rules of `ir` the checker guarantees.

use crate::diag::Span;
use crate::expr::{Expr, Var};
use crate::ir::{
    Buffer, BufferId, BufferKind, ForStmt, GroupKind, GroupType, Kernel, Level, Memory, NamedSpan,
    Program, Scalar, SpecKind, SpecStmt, Stmt, TensorType, View,
};
use crate::layout::Tuple;

/// The thread id.
pub fn tid() -> Expr {
    Expr::var(Var::ThreadId)
}

/// Loop variable `i`.
pub fn loop_var(i: u32) -> Expr {
    Expr::var(Var::Loop(i))
}

/// A constant level `[extents : strides]`.
pub fn level(extents: &[i64], strides: &[i64]) -> Level {
    let tuple = |values: &[i64]| {
        Tuple::Node(
            values
                .iter()
                .map(|value| Tuple::Leaf(Expr::Const(*value)))
                .collect(),
        )
    };
    Level {
        shape: tuple(extents),
        stride: tuple(strides),
    }
}

/// A compact column-major level.
pub fn col_major(extents: &[i64]) -> Level {
    let mut strides = Vec::with_capacity(extents.len());
    let mut stride = 1;
    for extent in extents {
        strides.push(stride);
        stride *= extent;
    }
    level(extents, &strides)
}

/// A tensor type.
pub fn ty(levels: Vec<Level>, scalar: Scalar, memory: Memory) -> TensorType {
    TensorType {
        levels,
        scalar,
        memory,
        swizzle: None,
    }
}

fn cosize(ty: &TensorType) -> i64 {
    1 + ty
        .levels
        .iter()
        .flat_map(|level| level.shape.leaves().into_iter().zip(level.stride.leaves()))
        .map(|(extent, stride)| {
            (extent.as_const().expect("constant") - 1) * stride.as_const().expect("constant")
        })
        .sum::<i64>()
}

fn buffer(name: &str, kind: BufferKind, ty: TensorType) -> Buffer {
    Buffer {
        name: name.to_string(),
        span: Span::DUMMY,
        kind,
        elements: Expr::Const(cosize(&ty)),
        ty,
    }
}

/// A shared fp16 buffer of `elements` elements.
pub fn shared(name: &str, elements: i64) -> Buffer {
    buffer(
        name,
        BufferKind::Shared,
        ty(vec![col_major(&[elements])], Scalar::Fp16, Memory::Shared),
    )
}

/// A register buffer of `elements` elements.
pub fn registers(name: &str, scalar: Scalar, elements: i64) -> Buffer {
    buffer(
        name,
        BufferKind::Registers,
        ty(vec![col_major(&[elements])], scalar, Memory::Registers),
    )
}

/// A thread group with the given constant levels (none: `[]`).
pub fn group(levels: &[(&[i64], &[i64])]) -> GroupType {
    let levels = if levels.is_empty() {
        vec![level(&[], &[])]
    } else {
        levels
            .iter()
            .map(|(extents, strides)| level(extents, strides))
            .collect()
    };
    GroupType {
        levels,
        kind: GroupKind::Thread,
    }
}

/// A block group of `blocks` blocks.
pub fn blocks(count: i64) -> GroupType {
    GroupType {
        levels: vec![col_major(&[count])],
        kind: GroupKind::Block,
    }
}

/// An atomic spec statement.
pub fn atomic(kind: SpecKind, outputs: Vec<View>, inputs: Vec<View>, threads: GroupType) -> Stmt {
    Stmt::Spec(SpecStmt {
        kind,
        outputs,
        inputs,
        blocks: GroupType {
            levels: vec![level(&[], &[])],
            kind: GroupKind::Block,
        },
        threads,
        body: None,
        span: Span::new(1, 2),
    })
}

/// `for (var = lo; var < hi; var += step) { body }`.
pub fn for_loop(var: u32, range: (i64, i64, i64), unroll: bool, body: Vec<Stmt>) -> Stmt {
    Stmt::For(ForStmt {
        var,
        lo: Expr::Const(range.0),
        hi: Expr::Const(range.1),
        step: Expr::Const(range.2),
        unroll,
        body,
        span: Span::new(3, 4),
    })
}

/// A kernel with only `buffers` and an empty body (allocation tests).
pub fn kernel_with_buffers(buffers: Vec<Buffer>) -> Kernel {
    let mut builder = KernelBuilder::new("k", 32, 1);
    builder.kernel.buffers = buffers;
    builder.finish(Vec::new())
}

/// Builds a checked kernel by hand.
pub struct KernelBuilder {
    /// The kernel so far (its root is set by `finish`).
    pub kernel: Kernel,
}

impl KernelBuilder {
    /// A kernel of `threads` threads per block and `blocks` blocks.
    pub fn new(name: &str, threads: i64, blocks_count: i64) -> KernelBuilder {
        let block = group(&[(&[threads], &[1])]);
        let grid = blocks(blocks_count);
        KernelBuilder {
            kernel: Kernel {
                name: name.to_string(),
                span: Span::new(0, 1),
                dims: Vec::new(),
                loops: Vec::new(),
                buffers: Vec::new(),
                params: Vec::new(),
                requirements: Vec::new(),
                specializations: Vec::new(),
                grid: grid.clone(),
                block: block.clone(),
                occupancy: crate::ir::Occupancy::default(),
                root: SpecStmt {
                    kind: SpecKind::Generic,
                    outputs: Vec::new(),
                    inputs: Vec::new(),
                    blocks: grid,
                    threads: block,
                    body: None,
                    span: Span::new(0, 1),
                },
                contract: None,
                tensor_maps: Vec::new(),
            },
        }
    }

    fn add(&mut self, name: &str, kind: BufferKind, ty: TensorType) -> BufferId {
        self.kernel.buffers.push(buffer(name, kind, ty));
        BufferId(self.kernel.buffers.len() as u32 - 1)
    }

    /// A global tensor parameter.
    pub fn param(&mut self, name: &str, ty: TensorType) -> BufferId {
        let index = self.kernel.params.len() as u32;
        let id = self.add(name, BufferKind::Param(index), ty);
        self.kernel.params.push(id);
        id
    }

    /// A shared tensor.
    pub fn shared(&mut self, name: &str, ty: TensorType) -> BufferId {
        self.add(name, BufferKind::Shared, ty)
    }

    /// A register tensor.
    pub fn registers(&mut self, name: &str, ty: TensorType) -> BufferId {
        self.add(name, BufferKind::Registers, ty)
    }

    /// A loop variable; returns its number.
    pub fn loop_named(&mut self, name: &str) -> u32 {
        self.kernel.loops.push(NamedSpan {
            name: name.to_string(),
            span: Span::DUMMY,
        });
        self.kernel.loops.len() as u32 - 1
    }

    /// A view of buffer `id` at `base` with type `ty`.
    pub fn view(&self, id: BufferId, base: Expr, ty: TensorType) -> View {
        View {
            buffer: id,
            base,
            ty,
            bounds: Vec::new(),
            span: Span::new(5, 6),
        }
    }

    /// The whole buffer `id`.
    pub fn whole(&self, id: BufferId) -> View {
        self.view(
            id,
            Expr::Const(0),
            self.kernel.buffers[id.0 as usize].ty.clone(),
        )
    }

    /// The kernel with `body` as its outermost spec's decomposition.
    pub fn finish(mut self, body: Vec<Stmt>) -> Kernel {
        self.kernel.root.body = Some(body);
        self.kernel
    }
}

/// A program of one kernel.
pub fn program(kernel: Kernel) -> Program {
    Program {
        kernels: vec![kernel],
    }
}
