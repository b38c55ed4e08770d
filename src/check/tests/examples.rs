//! The two examples of seed 000 check clean, and their views address what
//! the paper's CUDA addresses: the ldmatrix rows of §2 and the simple
//! GEMM's `A[bid_m*128 + tid_m*8 + m + k*1024]` of §5.4.

use pretty_assertions::assert_eq;

use super::{check, eval_loops, eval_with};
use crate::check::{Names, constant_layout, has_checkable_contract, tensor_type_text};
use crate::expr::Expr;
use crate::ir::{BufferKind, Kernel, SpecKind, SpecStmt, Stmt};

fn example(name: &str) -> String {
    let path = format!("{}/examples/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).expect("example")
}

fn kernel(name: &str, src: &str) -> Kernel {
    let mut program = check(name, src).unwrap_or_else(|d| panic!("{d:#?}"));
    assert_eq!(program.kernels.len(), 1);
    program.kernels.remove(0)
}

/// The atomic specs of a body, in order, looking into loops.
fn atomic_specs(stmts: &[Stmt]) -> Vec<&SpecStmt> {
    let mut out = Vec::new();
    for stmt in stmts {
        match stmt {
            Stmt::Spec(spec) => match &spec.body {
                Some(body) => out.extend(atomic_specs(body)),
                None => out.push(spec),
            },
            Stmt::For(for_stmt) => out.extend(atomic_specs(&for_stmt.body)),
            Stmt::If(if_stmt) => {
                out.extend(atomic_specs(&if_stmt.then_body));
                out.extend(atomic_specs(&if_stmt.else_body));
            }
            Stmt::Sync { .. }
            | Stmt::Commit { .. }
            | Stmt::Wait { .. }
            | Stmt::Arrive { .. }
            | Stmt::WaitPhase { .. }
            | Stmt::SetMaxRegisters { .. } => {}
        }
    }
    out
}

/// The paper's atomic move of the ldmatrix example: shared rows into
/// registers (the example wraps it between a copy in and a copy out).
fn paper_move(stmts: &[Stmt]) -> &SpecStmt {
    let moves: Vec<&SpecStmt> = atomic_specs(stmts)
        .into_iter()
        .filter(|spec| {
            !spec.inputs.is_empty()
                && spec.inputs[0].ty.memory == crate::ir::Memory::Shared
                && spec.outputs[0].ty.memory == crate::ir::Memory::Registers
        })
        .collect();
    let [movement] = moves[..] else {
        panic!("one shared → register move expected")
    };
    movement
}

#[test]
fn ldmatrix_move_checks_and_launches_one_warp() {
    let k = kernel("ldmatrix_move.gph", &example("ldmatrix_move.gph"));
    assert_eq!(k.name, "ldmatrix_move");
    assert_eq!(
        k.root.kind,
        SpecKind::Move {
            asynchronous: false,
            masked: false,
            tma: false,
            add: false
        }
    );
    let kinds: Vec<BufferKind> = k.buffers.iter().map(|b| b.kind).collect();
    assert_eq!(
        kinds,
        [
            BufferKind::Param(0),
            BufferKind::Param(1),
            BufferKind::Shared,
            BufferKind::Registers
        ]
    );
    assert_eq!(k.params.len(), 2);
    assert!(k.dims.is_empty() && k.requirements.is_empty());
    let size = |g: &crate::ir::GroupType| constant_layout(&g.levels[0]).map(|l| l.size());
    assert_eq!((size(&k.grid), size(&k.block)), (Some(1), Some(32)));
    assert_eq!(k.buffers[2].elements, Expr::Const(256));
}

#[test]
fn each_lane_reads_one_contiguous_row_of_its_matrix() {
    let k = kernel("ldmatrix_move.gph", &example("ldmatrix_move.gph"));
    let body = k.root.body.as_ref().expect("decomposed");
    let movement = paper_move(body);
    let names = Names::of(&k);
    let (dst, src) = (&movement.outputs[0], &movement.inputs[0]);
    assert_eq!(
        tensor_type_text(&dst.ty, &names),
        "[2,2 : 4,2].[1,2 : 4,1].fp16.RF"
    );
    assert_eq!(dst.base, Expr::Const(0));
    assert_eq!(tensor_type_text(&src.ty, &names), "[1,8 : 16,1].fp16.SH");
    let row = constant_layout(&src.ty.levels[0]).unwrap();
    assert_eq!(
        row.offsets().collect::<Vec<_>>(),
        (0..8).collect::<Vec<_>>()
    );
    for t in 0..32 {
        // The bound indices: #6 is the 2x2 of 8-thread groups, column-major.
        let (m, n, g) = ((t / 8) % 2, (t / 16) % 2, t % 8);
        assert_eq!(
            eval_with(&src.base, t, 0, &[]),
            m * 128 + n * 8 + g * 16,
            "thread {t}"
        );
    }
    // Packed register pairs, in element order: (0,1), (4,5), (2,3), (6,7).
    let mut registers = Vec::new();
    for outer in constant_layout(&dst.ty.levels[0]).unwrap().offsets() {
        for inner in constant_layout(&dst.ty.levels[1]).unwrap().offsets() {
            registers.push(outer + inner);
        }
    }
    assert_eq!(registers, [0, 1, 4, 5, 2, 3, 6, 7]);
}

#[test]
fn the_papers_row_major_grouping_gives_its_cuda_addresses() {
    // With §4's `reshape(0, [2,2 : 2,1])` the groups are numbered as in the
    // paper's CUDA: thr_grp_m = (tid/16) % 2, thr_grp_n = (tid/8) % 2.
    let src =
        example("ldmatrix_move.gph").replace("#5.reshape(0, [2,2])", "#5.reshape(0, [2,2 : 2,1])");
    let k = kernel("ldmatrix_move.gph", &src);
    let movement = paper_move(k.root.body.as_ref().unwrap());
    for t in 0..32 {
        let (thr_grp_m, thr_grp_n, grp_local_idx) = ((t / 16) % 2, (t / 8) % 2, t % 8);
        assert_eq!(
            eval_with(&movement.inputs[0].base, t, 0, &[]),
            thr_grp_m * 128 + thr_grp_n * 8 + grp_local_idx * 16,
            "thread {t}"
        );
    }
}

#[test]
fn simple_gemm_checks_with_its_abi() {
    let k = kernel("simple_gemm.gph", &example("simple_gemm.gph"));
    assert_eq!(
        k.root.kind,
        SpecKind::MatMul {
            accumulate: true,
            asynchronous: false,
        }
    );
    assert!(has_checkable_contract(&k.root.kind));
    let params: Vec<&str> = k
        .params
        .iter()
        .map(|id| k.buffers[id.0 as usize].name.as_str())
        .collect();
    assert_eq!(params, ["1", "2", "3"]);
    let loops: Vec<&str> = k.loops.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(loops, ["k", "m", "n"]);
    let size = |g: &crate::ir::GroupType| constant_layout(&g.levels[0]).map(|l| l.size());
    assert_eq!((size(&k.grid), size(&k.block)), (Some(64), Some(256)));
    // No register tensor is indexed, so no loop needs unrolling.
    let Some(Stmt::For(outer)) = k.root.body.as_ref().and_then(|b| b.first()) else {
        panic!("the k loop first")
    };
    assert!(!outer.unroll);
}

#[test]
fn simple_gemm_addresses_match_the_generated_cuda() {
    let k = kernel("simple_gemm.gph", &example("simple_gemm.gph"));
    let [hfma] = atomic_specs(k.root.body.as_ref().unwrap())[..] else {
        panic!("one atomic spec expected")
    };
    let (c, a, b) = (
        &hfma.outputs[0].base,
        &hfma.inputs[0].base,
        &hfma.inputs[1].base,
    );
    for (bid, tid, kk, m, n) in [
        (0, 0, 0, 0, 0),
        (9, 17, 3, 5, 7),
        (63, 255, 1023, 7, 7),
        (26, 100, 512, 2, 6),
    ] {
        let (bid_m, bid_n) = (bid % 8, (bid / 8) % 8);
        let (tid_m, tid_n) = (tid % 16, (tid / 16) % 16);
        let at = |e: &Expr| eval_loops(e, tid, bid, &[], &[kk, m, n]);
        assert_eq!(at(a), bid_m * 128 + (tid_m * 8 + (m + kk * 1024)));
        assert_eq!(at(b), bid_n * 131072 + (tid_n * 8192 + (kk + n * 1024)));
        assert_eq!(
            at(c),
            (bid_m * 128 + bid_n * 131072) + ((tid_m * 8 + tid_n * 8192) + (m + n * 1024))
        );
    }
}

#[test]
fn the_generic_spec_of_the_listing_still_checks_without_a_contract() {
    let src =
        example("simple_gemm.gph").replace("%3 <- MatMul<<<#4, #5>>>", "%3 <- Spec<<<#4, #5>>>");
    let k = kernel("simple_gemm.gph", &src);
    assert_eq!(k.root.kind, SpecKind::Generic);
    assert!(!has_checkable_contract(&k.root.kind));
}
