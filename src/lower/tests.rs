//! Stage 3, lowering: whole kernels built by hand, lowered, and checked for
//! the code they become (hoisting, CSE, unrolling, branches, addresses).

use super::testing::*;
use super::{Options, lower_program};
use crate::expr::Expr;
use crate::ir::{InitValue, Memory, Scalar, SpecKind};

fn ptx(kernel: crate::ir::Kernel, options: &Options) -> String {
    let module =
        lower_program(&program(kernel), options).unwrap_or_else(|errors| panic!("{errors:#?}"));
    module.to_ptx().unwrap()
}

fn mv() -> SpecKind {
    SpecKind::Move {
        asynchronous: false,
        masked: false,
        tma: false,
        add: false,
    }
}

/// 128 threads; each copies 8 halves through registers.
fn vector_copy() -> crate::ir::Kernel {
    let mut k = KernelBuilder::new("copy", 128, 4);
    let src = k.param(
        "src",
        ty(vec![col_major(&[8, 128, 4])], Scalar::Fp16, Memory::Global),
    );
    let dst = k.param(
        "dst",
        ty(vec![col_major(&[8, 128, 4])], Scalar::Fp16, Memory::Global),
    );
    let v = k.registers(
        "v",
        ty(vec![col_major(&[8])], Scalar::Fp16, Memory::Registers),
    );
    let base = Expr::add(
        Expr::mul(tid(), 8.into()),
        Expr::mul(Expr::var(crate::expr::Var::BlockId), 1024.into()),
    );
    let piece = ty(vec![col_major(&[8])], Scalar::Fp16, Memory::Global);
    let body = vec![
        atomic(
            mv(),
            vec![k.whole(v)],
            vec![k.view(src, base.clone(), piece.clone())],
            group(&[]),
        ),
        atomic(
            mv(),
            vec![k.view(dst, base, piece)],
            vec![k.whole(v)],
            group(&[]),
        ),
    ];
    k.finish(body)
}

#[test]
fn a_vector_copy_is_two_16_byte_accesses() {
    let text = ptx(vector_copy(), &Options::default());
    println!("{text}");
    assert!(text.contains("ld.global.v4.b32 {%r"), "{text}");
    assert!(text.contains("st.global.v4.b32 [%rd"), "{text}");
}

/// The integration tests' way of skipping visibly, included rather than
/// shipped in the library.
#[path = "../../tests/support/skip.rs"]
mod skip;

/// Assembles `text` with ptxas when it is available (required when
/// `GRAPHENE_REQUIRE_PTXAS=1`), failing on errors, warnings and spills;
/// ptxas's result, or `None` after the skip line.
fn assembles(text: &str, arch: crate::ptx::Arch) -> Option<crate::ptx::tools::Assembly> {
    match crate::ptx::tools::assemble(text, arch) {
        Ok(assembly) => {
            assert!(
                assembly.warnings.is_empty(),
                "{:?}\n{text}",
                assembly.warnings
            );
            for report in &assembly.entries {
                assert!(!report.uses_local_memory(), "{report:?}");
            }
            Some(assembly)
        }
        Err(error @ crate::ptx::tools::ToolError::NotFound { .. }) => {
            skip::skip_without_tools(&error.to_string());
            None
        }
        Err(error) => panic!("{error}\n{text}"),
    }
}

/// `C[tid] += A[tid + 128 k] * B[k]` for k in 0..64, a run-time loop.
fn dot_loop() -> crate::ir::Kernel {
    let mut k = KernelBuilder::new("dot", 128, 1);
    let f32_gl = |extents: &[i64]| ty(vec![col_major(extents)], Scalar::Fp32, Memory::Global);
    let a = k.param("A", f32_gl(&[128, 64]));
    let b = k.param("B", f32_gl(&[64]));
    let c = k.param("C", f32_gl(&[128]));
    let var = k.loop_named("k");
    let scalar = |memory| ty(vec![level(&[], &[])], Scalar::Fp32, memory);
    let a_elem = k.view(
        a,
        Expr::add(tid(), Expr::mul(loop_var(var), 128.into())),
        scalar(Memory::Global),
    );
    let b_elem = k.view(b, loop_var(var), scalar(Memory::Global));
    let c_elem = k.view(c, tid(), scalar(Memory::Global));
    let body = vec![for_loop(
        var,
        (0, 64, 1),
        false,
        vec![atomic(
            SpecKind::MatMul {
                accumulate: true,
                asynchronous: false,
            },
            vec![c_elem],
            vec![a_elem, b_elem],
            group(&[]),
        )],
    )];
    k.finish(body)
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("no `{needle}` in\n{text}"))
}

#[test]
fn loop_invariant_addresses_are_computed_before_the_loop() {
    let text = ptx(dot_loop(), &Options::default());
    let head = line_of(&text, "_loop:");
    // The thread's part of every address: before the loop, once.
    assert_eq!(text.matches("%tid.x").count(), 1, "{text}");
    assert!(line_of(&text, "%tid.x") < head, "{text}");
    let c_address = line_of(&text, "mad.wide.u32 %rd");
    assert!(c_address < head, "C's address is loop-invariant:\n{text}");
    // The loop's part: inside, one multiply-add onto the hoisted pointer.
    let body: Vec<&str> = text.lines().skip(head).collect();
    let loads = body.iter().filter(|l| l.contains("ld.global.f32")).count();
    assert_eq!(loads, 3, "{text}");
    assert!(body.iter().any(|l| l.contains("fma.rn.f32")), "{text}");
    assert!(
        body.iter()
            .any(|l| l.contains("@%p") && l.contains("bra.uni")),
        "{text}"
    );
    // The loop provably runs: no guard before it.
    assert!(!text.contains("loop_exit"), "{text}");
    assembles(&text, crate::ptx::Arch::Sm80);
}

#[test]
fn equal_subexpressions_are_computed_once() {
    let text = ptx(vector_copy(), &Options::default());
    // src and dst share the element offset tid*8 + bid*1024: computed once,
    // then scaled onto each base.
    assert_eq!(text.matches("%tid.x").count(), 1, "{text}");
    assert_eq!(text.matches("mad.lo.u32").count(), 1, "{text}");
    let offset = text
        .lines()
        .find(|line| line.contains("mad.lo.u32"))
        .and_then(|line| line.split_whitespace().nth(1))
        .map(|reg| reg.trim_end_matches(','))
        .unwrap();
    let scaled = text
        .lines()
        .filter(|line| line.contains("mad.wide.u32") && line.contains(&format!(" {offset},")))
        .count();
    assert_eq!(scaled, 2, "{text}");
    assembles(&text, crate::ptx::Arch::Sm80);
}

/// The SASS opcodes of `text` for `arch`, or `None` after the skip line
/// when ptxas or nvdisasm is missing (a failure when they are required).
/// Any other failure of either tool fails the test.
fn sass(text: &str, arch: crate::ptx::Arch) -> Option<Vec<String>> {
    let assembly = assembles(text, arch)?;
    let opcodes = match crate::ptx::tools::sass_opcodes(&assembly.cubin, arch) {
        Ok(opcodes) => opcodes,
        Err(error @ crate::ptx::tools::ToolError::NotFound { .. }) => {
            skip::skip_without_tools(&error.to_string());
            return None;
        }
        Err(error) => panic!("{error}\n{text}"),
    };
    Some(
        opcodes
            .iter()
            .map(|op| crate::ptx::tools::mnemonic(op).to_string())
            .collect(),
    )
}

/// 128 threads copy a 64x64 fp16 tile into a `Swizzle<3,3,3>` shared tile
/// with `cp.async` (four 16-byte chunks each, a run-time loop), then back
/// out to global memory.
fn swizzled_copy() -> crate::ir::Kernel {
    let mut k = KernelBuilder::new("swizzled", 128, 1);
    let tile = |memory| ty(vec![level(&[64, 64], &[64, 1])], Scalar::Fp16, memory);
    let input = k.param("input", tile(Memory::Global));
    let output = k.param("output", tile(Memory::Global));
    let mut shared_ty = tile(Memory::Shared);
    shared_ty.swizzle = Some(crate::layout::Swizzle::new(3, 3, 3).unwrap());
    let smem = k.shared("tile", shared_ty.clone());
    let pass = k.loop_named("p");
    // chunk c = tid % 8, row r = tid / 8 + 16 p: offset r * 64 + c * 8.
    let offset = Expr::add(
        Expr::add(
            Expr::mul(Expr::rem(tid(), 8.into()), 8.into()),
            Expr::mul(Expr::div(tid(), 8.into()), 64.into()),
        ),
        Expr::mul(loop_var(pass), 1024.into()),
    );
    let chunk = |memory, swizzled: bool| {
        let mut t = ty(vec![level(&[1, 8], &[64, 1])], Scalar::Fp16, memory);
        if swizzled {
            t.swizzle = shared_ty.swizzle;
        }
        t
    };
    let to_shared = atomic(
        SpecKind::Move {
            asynchronous: true,
            masked: false,
            tma: false,
            add: false,
        },
        vec![k.view(smem, offset.clone(), chunk(Memory::Shared, true))],
        vec![k.view(input, offset.clone(), chunk(Memory::Global, false))],
        group(&[]),
    );
    let to_global = atomic(
        mv(),
        vec![k.view(output, offset.clone(), chunk(Memory::Global, false))],
        vec![k.view(smem, offset, chunk(Memory::Shared, true))],
        group(&[]),
    );
    let span = crate::diag::Span::DUMMY;
    k.finish(vec![
        for_loop(pass, (0, 4, 1), false, vec![to_shared]),
        crate::ir::Stmt::Commit {
            queue: crate::ir::AsyncQueue::Copies,
            span,
        },
        crate::ir::Stmt::Wait {
            queue: crate::ir::AsyncQueue::Copies,
            pending: 0,
            span,
        },
        crate::ir::Stmt::Sync {
            scope: crate::ir::BarrierScope::Block,
            span,
        },
        for_loop(pass, (0, 4, 1), false, vec![to_global]),
    ])
}

#[test]
fn swizzled_addresses_are_swizzled_once_per_thread() {
    let text = ptx(swizzled_copy(), &Options::default());
    // sw(x) = x ^ ((x >> 3) & 56) on the thread's part, in the preheader.
    assert_eq!(text.matches("xor.b32").count(), 1, "{text}");
    let head = line_of(&text, "_loop:");
    assert!(line_of(&text, "xor.b32") < head, "{text}");
    assert!(text.contains("cp.async.cg.shared.global [%r"), "{text}");
    assert!(text.contains("ld.shared.v4.b32"), "{text}");
    if let Some(opcodes) = sass(&text, crate::ptx::Arch::Sm80) {
        assert!(opcodes.iter().any(|op| op == "LDGSTS"), "{opcodes:?}");
    }
}

/// Every per-thread arithmetic and conversion form in one kernel, so that
/// ptxas sees each emission once.
fn arithmetic_forms() -> crate::ir::Kernel {
    use crate::ir::{BinaryOp, ReduceOp, UnaryOp};
    let mut k = KernelBuilder::new("forms", 32, 1);
    let out = k.param(
        "out",
        ty(vec![col_major(&[4, 32])], Scalar::Fp32, Memory::Global),
    );
    let regs = |k: &mut KernelBuilder, name: &str, n: i64, scalar| {
        k.registers(name, ty(vec![col_major(&[n])], scalar, Memory::Registers))
    };
    let f = regs(&mut k, "f", 4, Scalar::Fp32);
    let g = regs(&mut k, "g", 4, Scalar::Fp32);
    let h = regs(&mut k, "h", 4, Scalar::Fp16);
    let odd = regs(&mut k, "odd", 3, Scalar::Fp16);
    let b = regs(&mut k, "b", 2, Scalar::Bf16);
    let i = regs(&mut k, "i", 1, Scalar::I32);
    let s = k.registers(
        "s",
        ty(vec![level(&[], &[])], Scalar::Fp32, Memory::Registers),
    );
    let whole = |k: &KernelBuilder, id| k.whole(id);
    let me = || group(&[]);
    let warp = || group(&[(&[32], &[1])]);
    let body = vec![
        atomic(
            SpecKind::Init {
                value: InitValue::Number(1.5),
            },
            vec![whole(&k, f)],
            vec![],
            me(),
        ),
        atomic(
            SpecKind::Init {
                value: InitValue::Number(-2.0),
            },
            vec![whole(&k, odd)],
            vec![],
            me(),
        ),
        atomic(
            SpecKind::Init {
                value: InitValue::Number(0.25),
            },
            vec![whole(&k, b)],
            vec![],
            me(),
        ),
        atomic(
            SpecKind::Init {
                value: InitValue::Number(7.0),
            },
            vec![whole(&k, i)],
            vec![],
            me(),
        ),
        atomic(mv(), vec![whole(&k, h)], vec![whole(&k, f)], me()),
        atomic(
            SpecKind::Binary(BinaryOp::Add),
            vec![whole(&k, h)],
            vec![whole(&k, h), whole(&k, h)],
            me(),
        ),
        atomic(
            SpecKind::Unary(UnaryOp::Exp),
            vec![whole(&k, h)],
            vec![whole(&k, h)],
            me(),
        ),
        atomic(
            SpecKind::Unary(UnaryOp::Relu),
            vec![whole(&k, b)],
            vec![whole(&k, b)],
            me(),
        ),
        atomic(
            SpecKind::Unary(UnaryOp::Neg),
            vec![whole(&k, odd)],
            vec![whole(&k, odd)],
            me(),
        ),
        atomic(mv(), vec![whole(&k, g)], vec![whole(&k, h)], me()),
        atomic(
            SpecKind::Unary(UnaryOp::Rsqrt),
            vec![whole(&k, g)],
            vec![whole(&k, g)],
            me(),
        ),
        atomic(
            SpecKind::Binary(BinaryOp::Max),
            vec![whole(&k, g)],
            vec![whole(&k, g), whole(&k, f)],
            me(),
        ),
        atomic(
            SpecKind::Shfl { mask: 1 },
            vec![whole(&k, f)],
            vec![whole(&k, g)],
            warp(),
        ),
        atomic(
            SpecKind::Reduction {
                op: ReduceOp::Max,
                axes: vec![0],
            },
            vec![whole(&k, s)],
            vec![whole(&k, f)],
            warp(),
        ),
        atomic(
            mv(),
            vec![k.view(
                out,
                Expr::mul(tid(), 4.into()),
                ty(vec![col_major(&[4])], Scalar::Fp32, Memory::Global),
            )],
            vec![whole(&k, g)],
            me(),
        ),
        atomic(
            mv(),
            vec![k.view(
                out,
                tid(),
                ty(vec![level(&[], &[])], Scalar::Fp32, Memory::Global),
            )],
            vec![whole(&k, s)],
            me(),
        ),
    ];
    k.finish(body)
}

#[test]
fn every_arithmetic_form_assembles() {
    let text = ptx(arithmetic_forms(), &Options::default());
    for needle in [
        "cvt.rn.f16x2.f32",
        "add.f16x2",
        "ex2.approx.f32",
        "max.bf16x2",
        "neg.f32",
        "cvt.f32.f16",
        "rsqrt.approx.f32",
        "shfl.sync.bfly.b32",
        "max.f32",
        "mov.b32 {%h",
    ] {
        assert!(text.contains(needle), "no {needle}:\n{text}");
    }
    assembles(&text, crate::ptx::Arch::Sm80);
    assembles(&text, crate::ptx::Arch::Sm90);
}
