//! Stage 3, lowering: where index arithmetic is placed. A value is computed
//! in the preheader of the outermost loop it is invariant in, else where it
//! is first needed — never before a sibling statement or loop that does not
//! need it — and reused only where its definition dominates the use.

use super::testing::*;
use super::{Options, lower_program};
use crate::diag::Span;
use crate::expr::Expr;
use crate::ir::{CompareOp, Cond, IfStmt, Memory, Scalar, SpecKind, Stmt, View};

fn ptx(kernel: crate::ir::Kernel) -> String {
    let module = lower_program(&program(kernel), &Options::default())
        .unwrap_or_else(|errors| panic!("{errors:#?}"));
    module.to_ptx().unwrap()
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("no `{needle}` in\n{text}"))
}

fn lines_with(text: &str, needle: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| line.contains(needle))
        .map(|(i, _)| i)
        .collect()
}

/// `if (tid < 64) { then } else { otherwise }`.
fn if_thread_below_64(then_body: Vec<Stmt>, else_body: Vec<Stmt>) -> Stmt {
    Stmt::If(IfStmt {
        cond: Cond::Compare(CompareOp::Lt, tid(), Expr::Const(64)),
        then_body,
        else_body,
        span: Span::new(5, 6),
    })
}

/// A 128-thread kernel over fp32 tensors `A` (4096 elements), `B` (4096)
/// and `C` (128): `copy(dst, src)` moves one element.
struct Fixture {
    k: KernelBuilder,
    a: crate::ir::BufferId,
    b: crate::ir::BufferId,
    c: crate::ir::BufferId,
}

impl Fixture {
    fn new() -> Fixture {
        let mut k = KernelBuilder::new("placed", 128, 1);
        let f32_gl = |n: i64| ty(vec![col_major(&[n])], Scalar::Fp32, Memory::Global);
        let a = k.param("A", f32_gl(4096));
        let b = k.param("B", f32_gl(4096));
        let c = k.param("C", f32_gl(128));
        Fixture { k, a, b, c }
    }

    fn element(&self, id: crate::ir::BufferId, offset: Expr) -> View {
        self.k.view(
            id,
            offset,
            ty(vec![level(&[], &[])], Scalar::Fp32, Memory::Global),
        )
    }

    fn copy(&self, dst: (crate::ir::BufferId, Expr), src: (crate::ir::BufferId, Expr)) -> Stmt {
        atomic(
            SpecKind::Move {
                asynchronous: false,
                masked: false,
                tma: false,
                add: false,
            },
            vec![self.element(dst.0, dst.1)],
            vec![self.element(src.0, src.1)],
            group(&[]),
        )
    }
}

#[test]
fn code_after_a_loop_computes_its_addresses_after_the_loop() {
    let mut f = Fixture::new();
    let k = f.k.loop_named("k");
    // The loop reads B[tid + 128 k]; the epilogue writes C[tid] from A[tid].
    let main = for_loop(
        k,
        (0, 32, 1),
        false,
        vec![f.copy(
            (f.b, Expr::add(tid(), Expr::mul(loop_var(k), 128.into()))),
            (f.b, Expr::add(tid(), Expr::mul(loop_var(k), 128.into()))),
        )],
    );
    let epilogue = f.copy((f.c, tid()), (f.a, tid()));
    let text = ptx(f.k.finish(vec![main, epilogue]));
    let latch = line_of(&text, "bra.uni");
    // The thread id is computed once, before the loop that needs it.
    assert_eq!(text.matches("%tid.x").count(), 1, "{text}");
    assert!(
        line_of(&text, "%tid.x") < line_of(&text, "_loop:"),
        "{text}"
    );
    // A's and C's bases and addresses: only after the loop's latch.
    for needle in ["[A]", "[C]"] {
        assert!(line_of(&text, needle) > latch, "{needle}:\n{text}");
    }
    // B's thread part is hoisted, its loop part added inside.
    assert!(line_of(&text, "[B]") < line_of(&text, "_loop:"), "{text}");
}

#[test]
fn sibling_loops_do_not_hoist_into_each_other() {
    let mut f = Fixture::new();
    let first = f.k.loop_named("i");
    let second = f.k.loop_named("j");
    let stride = |var| Expr::add(tid(), Expr::mul(loop_var(var), 128.into()));
    let body = vec![
        for_loop(
            first,
            (0, 8, 1),
            false,
            vec![f.copy((f.b, stride(first)), (f.b, stride(first)))],
        ),
        for_loop(
            second,
            (0, 8, 1),
            false,
            vec![f.copy((f.b, stride(second)), (f.a, stride(second)))],
        ),
    ];
    let text = ptx(f.k.finish(body));
    let heads = lines_with(&text, "_loop:");
    assert_eq!(heads.len(), 2, "{text}");
    // A is needed only in the second loop: its base is loaded in that
    // loop's preheader, after the first loop, before the second.
    let a = line_of(&text, "[A]");
    assert!(heads[0] < a && a < heads[1], "{text}");
    // B's part of the thread (`tid * 4 + B`) is shared by both loops: the
    // first loop's preheader dominates the second loop.
    assert_eq!(text.matches("[B]").count(), 1, "{text}");
    assert_eq!(text.matches("%tid.x").count(), 1, "{text}");
}

#[test]
fn values_of_a_branch_do_not_outlive_it() {
    let f = Fixture::new();
    let body = vec![
        if_thread_below_64(
            vec![f.copy((f.c, tid()), (f.a, Expr::add(tid(), 64.into())))],
            vec![f.copy((f.c, tid()), (f.b, tid()))],
        ),
        // After the `if`, neither branch's values may be reused.
        f.copy((f.c, tid()), (f.a, tid())),
    ];
    let text = ptx(f.k.finish(body));
    // The condition's thread id is computed before the branch and reused by
    // both branches and the code after them.
    assert_eq!(text.matches("%tid.x").count(), 1, "{text}");
    // C's base and address are computed in each branch and once more after.
    assert_eq!(text.matches("[C]").count(), 3, "{text}");
    assert_eq!(text.matches("[A]").count(), 2, "{text}");
    let else_label = line_of(&text, "_if_else:");
    let end = line_of(&text, "_if_end:");
    let b = line_of(&text, "[B]");
    assert!(
        else_label < b && b < end,
        "B only in the else branch:\n{text}"
    );
    assert_eq!(text.matches("st.global.f32").count(), 3, "{text}");
}

#[test]
fn a_loop_inside_a_branch_has_its_preheader_inside_the_branch() {
    let mut f = Fixture::new();
    let outer = f.k.loop_named("k");
    let inner = f.k.loop_named("i");
    // Inside `for k { if (tid < 64) { for i { B[tid + 128 k + 1024 i] } } }`.
    let offset = Expr::add(
        Expr::add(tid(), Expr::mul(loop_var(outer), 128.into())),
        Expr::mul(loop_var(inner), 1024.into()),
    );
    let nest = for_loop(
        outer,
        (0, 4, 1),
        false,
        vec![if_thread_below_64(
            vec![for_loop(
                inner,
                (0, 4, 1),
                false,
                vec![f.copy((f.b, offset.clone()), (f.b, offset))],
            )],
            Vec::new(),
        )],
    );
    let text = ptx(f.k.finish(vec![nest]));
    let heads = lines_with(&text, "_loop:");
    assert_eq!(heads.len(), 2, "{text}");
    let branch = line_of(&text, "bra $");
    let wides = lines_with(&text, "mad.wide.u32");
    assert_eq!(wides.len(), 3, "one partial address per level:\n{text}");
    // tid's part before the outer loop; k's part inside the branch, before
    // the inner loop (its preheader); i's part inside the inner loop.
    assert!(wides[0] < heads[0], "{text}");
    assert!(branch < wides[1] && wides[1] < heads[1], "{text}");
    assert!(wides[2] > heads[1], "{text}");
}
