//! Stage 3, lowering (instruction selection): each pattern's accept and
//! reject reasons, on requests built by hand.

use super::*;
use crate::expr::Expr;
use crate::index::prove::Prover;
use crate::ir::{InitValue, Scalar, View};
use crate::lower::group::{GroupInfo, Unit};
use crate::lower::testing::{col_major, level, tid, ty};

fn operand(view: &View, role: &str) -> OperandInfo {
    let names = crate::ir::print::Names::NONE;
    OperandInfo::analyse(
        view,
        role.into(),
        "t".into(),
        &Prover::with_threads(128),
        &names,
    )
}

fn view(levels: Vec<crate::ir::Level>, scalar: Scalar, memory: Memory, base: Expr) -> View {
    View {
        buffer: crate::ir::BufferId(0),
        base,
        ty: ty(levels, scalar, memory),
        bounds: Vec::new(),
        span: Span::DUMMY,
    }
}

fn request(kind: SpecKind, unit: Unit, outputs: Vec<View>, inputs: Vec<View>) -> Request {
    Request {
        kind,
        span: Span::DUMMY,
        group: GroupInfo {
            text: "g".into(),
            unit,
        },
        outputs: outputs.iter().map(|v| operand(v, "output")).collect(),
        inputs: inputs.iter().map(|v| operand(v, "input")).collect(),
        arch: None,
        lane_dependent_loops: Default::default(),
    }
}

fn names_of(request: &Request) -> Result<String, Box<NoMatch>> {
    select(request).map(|(pattern, _)| pattern.name())
}

fn mv() -> SpecKind {
    SpecKind::Move {
        asynchronous: false,
        masked: false,
        tma: false,
        add: false,
    }
}

#[test]
fn eight_aligned_halves_load_as_one_16_byte_vector() {
    let src = view(
        vec![col_major(&[8])],
        Scalar::Fp16,
        Memory::Global,
        Expr::mul(tid(), 8.into()),
    );
    let regs = view(
        vec![col_major(&[8])],
        Scalar::Fp16,
        Memory::Registers,
        Expr::Const(0),
    );
    let r = request(mv(), Unit::Thread, vec![regs], vec![src]);
    assert_eq!(names_of(&r).unwrap(), "ld.global.v4.b32");
}

#[test]
fn misaligned_vectors_name_the_alignment_first() {
    let src = view(
        vec![col_major(&[8])],
        Scalar::Fp16,
        Memory::Global,
        Expr::mul(tid(), 2.into()),
    );
    let regs = view(
        vec![col_major(&[8])],
        Scalar::Fp16,
        Memory::Registers,
        Expr::Const(0),
    );
    let no = select(&request(mv(), Unit::Thread, vec![regs], vec![src])).unwrap_err();
    assert_eq!(no.candidates[0].name, "ld.global.v4.b32");
    assert_eq!(
        no.candidates[0].reason,
        "needs 16-byte alignment; the input's offset is proven only a multiple of 2 elements \
         (4 bytes)"
    );
    assert_eq!(no.candidates.len(), CANDIDATES_SHOWN);
}

#[test]
fn too_long_contiguous_moves_suggest_a_tile() {
    let src = view(
        vec![col_major(&[16])],
        Scalar::Fp16,
        Memory::Global,
        Expr::mul(tid(), 16.into()),
    );
    let regs = view(
        vec![col_major(&[16])],
        Scalar::Fp16,
        Memory::Registers,
        Expr::Const(0),
    );
    let no = select(&request(mv(), Unit::Thread, vec![regs], vec![src])).unwrap_err();
    let help = no.help.unwrap();
    assert!(help.contains("`.tile([8])`"), "{help}");
}

#[test]
fn ldmatrix_needs_a_warp_and_chooses_trans_from_directions() {
    let row = |levels| {
        view(
            levels,
            Scalar::Fp16,
            Memory::Shared,
            Expr::mul(tid(), 8.into()),
        )
    };
    let regs = |levels| view(levels, Scalar::Fp16, Memory::Registers, Expr::Const(0));
    let a_frag = vec![level(&[2, 2], &[4, 2]), level(&[1, 2], &[4, 1])];
    let r = request(
        mv(),
        Unit::Warp,
        vec![regs(a_frag.clone())],
        vec![row(vec![level(&[1, 8], &[16, 1])])],
    );
    let (pattern, plan) = select(&r).unwrap();
    assert_eq!(
        pattern,
        Pattern::Matrix(matrix::MatrixPattern::Ldmatrix {
            count: crate::atoms::LdmatrixCount::X4,
        })
    );
    assert!(format!("{plan:?}").contains("transpose: false"));
    // B fragment [2,1].[2,1] from rows [1,8]: pairs run down the rows.
    let b_frag = vec![level(&[2, 1], &[2, 2]), level(&[2, 1], &[1, 2])];
    let r = request(
        mv(),
        Unit::Warp,
        vec![regs(b_frag)],
        vec![row(vec![level(&[1, 8], &[16, 1])])],
    );
    let (_, plan) = select(&r).unwrap();
    assert!(format!("{plan:?}").contains("transpose: true"));
    // Executed by one thread: not ldmatrix (and no per-thread load of 8
    // shared halves into four registers accepts the paired registers
    // either way, since the group is the warp).
    let r = request(
        mv(),
        Unit::Thread,
        vec![regs(a_frag)],
        vec![row(vec![level(&[1, 8], &[16, 1])])],
    );
    assert_eq!(names_of(&r).unwrap(), "ld.shared.v4.b32");
}

#[test]
fn ldmatrix_rejects_strided_rows() {
    let column = view(
        vec![level(&[8, 1], &[16, 1])],
        Scalar::Fp16,
        Memory::Shared,
        Expr::Const(0),
    );
    let regs = view(
        vec![level(&[2, 2], &[4, 2]), level(&[1, 2], &[4, 1])],
        Scalar::Fp16,
        Memory::Registers,
        Expr::Const(0),
    );
    let no = select(&request(mv(), Unit::Warp, vec![regs], vec![column])).unwrap_err();
    assert!(
        no.candidates[0].name.starts_with("ldmatrix"),
        "{:?}",
        no.candidates
    );
    assert!(
        no.candidates[0]
            .reason
            .contains("element 1 is at offset +16"),
        "{:?}",
        no.candidates[0]
    );
}

#[test]
fn mma_checks_fragment_shapes_and_types() {
    let rf = |levels, scalar| view(levels, scalar, Memory::Registers, Expr::Const(0));
    let a = rf(
        vec![level(&[2, 2], &[4, 2]), level(&[1, 2], &[4, 1])],
        Scalar::Fp16,
    );
    let b = rf(
        vec![level(&[2, 1], &[2, 2]), level(&[2, 1], &[1, 2])],
        Scalar::Fp16,
    );
    let c = rf(
        vec![level(&[2, 1], &[2, 2]), level(&[1, 2], &[2, 1])],
        Scalar::Fp32,
    );
    let matmul = SpecKind::MatMul {
        accumulate: true,
        asynchronous: false,
    };
    let r = request(
        matmul.clone(),
        Unit::Warp,
        vec![c.clone()],
        vec![a.clone(), b.clone()],
    );
    assert_eq!(
        names_of(&r).unwrap(),
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    );
    let mut sm70 = r.clone();
    sm70.arch = Some(Arch::Sm70);
    let no = select(&sm70).unwrap_err();
    assert_eq!(no.candidates[0].reason, "needs sm_80; the target is sm_70");
    // A flat [8] A operand: right count, wrong shape.
    let flat = rf(vec![col_major(&[8])], Scalar::Fp16);
    let no = select(&request(matmul, Unit::Warp, vec![c], vec![flat, b])).unwrap_err();
    assert!(
        no.candidates[0]
            .reason
            .contains("wants A per thread as [2,2].[1,2]"),
        "{:?}",
        no.candidates
    );
}

#[test]
fn scalar_fma_loads_and_stores_memory_operands() {
    let gl = |base| view(vec![level(&[], &[])], Scalar::Fp16, Memory::Global, base);
    let r = request(
        SpecKind::MatMul {
            accumulate: true,
            asynchronous: false,
        },
        Unit::Thread,
        vec![gl(tid())],
        vec![gl(Expr::Const(0)), gl(Expr::Const(1))],
    );
    assert_eq!(names_of(&r).unwrap(), "fma.rn.f16");
    let r = request(
        SpecKind::MatMul {
            accumulate: true,
            asynchronous: false,
        },
        Unit::Warp,
        vec![gl(tid())],
        vec![gl(Expr::Const(0)), gl(Expr::Const(1))],
    );
    let no = select(&r).unwrap_err();
    assert!(
        no.candidates
            .iter()
            .any(|c| c.name == "fma.rn.f16" && c.reason.contains("each thread alone")),
        "{:?}",
        no.candidates
    );
}

#[test]
fn generic_atomic_specs_have_no_candidates() {
    let r = request(SpecKind::Generic, Unit::Thread, vec![], vec![]);
    let no = select(&r).unwrap_err();
    assert!(no.candidates.is_empty());
    assert!(no.help.unwrap().contains("give it a body"));
}

#[test]
fn mma_fragments_compare_up_to_unit_extents() {
    let rf = |levels, scalar| view(levels, scalar, Memory::Registers, Expr::Const(0));
    let a = rf(
        vec![level(&[2, 2], &[4, 2]), level(&[1, 2], &[4, 1])],
        Scalar::Fp16,
    );
    let c = rf(
        vec![level(&[2, 1], &[2, 2]), level(&[1, 2], &[2, 1])],
        Scalar::Fp32,
    );
    let matmul = SpecKind::MatMul {
        accumulate: true,
        asynchronous: false,
    };
    // B indexed out of a [4,2] register tensor: [2].[2,1], slots 4..7.
    let b_second = view(
        vec![level(&[2], &[2]), level(&[2, 1], &[1, 8])],
        Scalar::Fp16,
        Memory::Registers,
        Expr::Const(4),
    );
    let r = request(
        matmul.clone(),
        Unit::Warp,
        vec![c.clone()],
        vec![a.clone(), b_second],
    );
    assert_eq!(
        names_of(&r).unwrap(),
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    );
    // Pairs along the other mode are another fragment.
    let b_across = rf(
        vec![level(&[2, 1], &[2, 2]), level(&[1, 2], &[1, 1])],
        Scalar::Fp16,
    );
    let no = select(&request(matmul, Unit::Warp, vec![c], vec![a, b_across])).unwrap_err();
    assert!(
        no.candidates[0]
            .reason
            .contains("wants B per thread as [2,1].[2,1]"),
        "{:?}",
        no.candidates
    );
}

fn rf(extents: &[i64], scalar: Scalar) -> View {
    view(
        vec![col_major(extents)],
        scalar,
        Memory::Registers,
        Expr::Const(0),
    )
}

fn with_arch(mut request: Request, arch: Arch) -> Request {
    request.arch = Some(arch);
    request
}

#[test]
fn cp_async_needs_ampere_and_aligned_shared_chunks() {
    let chunk = |memory, base| view(vec![col_major(&[8])], Scalar::Fp16, memory, base);
    let aligned = Expr::mul(tid(), 8.into());
    let r = request(
        SpecKind::Move {
            asynchronous: true,
            masked: false,
            tma: false,
            add: false,
        },
        Unit::Thread,
        vec![chunk(Memory::Shared, aligned.clone())],
        vec![chunk(Memory::Global, aligned.clone())],
    );
    assert_eq!(names_of(&r).unwrap(), "cp.async.cg.shared.global/16");
    let no = select(&with_arch(r, Arch::Sm70)).unwrap_err();
    assert_eq!(no.candidates[0].reason, "needs sm_80; the target is sm_70");
    let shifted = Expr::add(aligned.clone(), 4.into());
    let r = request(
        SpecKind::Move {
            asynchronous: true,
            masked: false,
            tma: false,
            add: false,
        },
        Unit::Thread,
        vec![chunk(Memory::Shared, shifted)],
        vec![chunk(Memory::Global, aligned)],
    );
    let no = select(&r).unwrap_err();
    assert!(
        no.candidates[0]
            .reason
            .contains("needs 16-byte alignment; the output's"),
        "{:?}",
        no.candidates
    );
}

#[test]
fn fp32_to_fp16_packs_pairs_on_ampere_and_converts_singly_on_volta() {
    let r = request(
        mv(),
        Unit::Thread,
        vec![rf(&[2], Scalar::Fp16)],
        vec![rf(&[2], Scalar::Fp32)],
    );
    assert_eq!(names_of(&r).unwrap(), "cvt.rn.f16x2.f32");
    assert_eq!(
        names_of(&with_arch(r, Arch::Sm70)).unwrap(),
        "cvt.rn.f16.f32"
    );
    let back = request(
        mv(),
        Unit::Thread,
        vec![rf(&[2], Scalar::Fp32)],
        vec![rf(&[2], Scalar::Fp16)],
    );
    assert_eq!(names_of(&back).unwrap(), "cvt.f32.f16");
    let bf16 = request(
        mv(),
        Unit::Thread,
        vec![rf(&[1], Scalar::Fp32)],
        vec![rf(&[1], Scalar::Bf16)],
    );
    assert_eq!(
        names_of(&bf16).unwrap(),
        "shl.b32 + mov.b32 (bf16 → fp32 by bits)"
    );
    let ints = request(
        mv(),
        Unit::Thread,
        vec![rf(&[1], Scalar::Fp32)],
        vec![rf(&[1], Scalar::I32)],
    );
    assert_eq!(names_of(&ints).unwrap(), "cvt.rn.f32.s32");
}

#[test]
fn pointwise_chooses_packed_pairs_where_the_isa_has_them() {
    let add = SpecKind::Binary(crate::ir::BinaryOp::Add);
    let r = request(
        add.clone(),
        Unit::Thread,
        vec![rf(&[4], Scalar::Fp32)],
        vec![rf(&[4], Scalar::Fp32), rf(&[4], Scalar::Fp32)],
    );
    assert_eq!(names_of(&r).unwrap(), "add.f32");
    let h = || rf(&[2], Scalar::Fp16);
    let r = request(add, Unit::Thread, vec![h()], vec![h(), h()]);
    assert_eq!(names_of(&r).unwrap(), "add on fp16/bf16 pairs");
    let relu = SpecKind::Unary(crate::ir::UnaryOp::Relu);
    let r = request(relu, Unit::Thread, vec![h()], vec![h()]);
    assert_eq!(names_of(&r).unwrap(), "relu on fp16/bf16 pairs");
    assert_eq!(
        names_of(&with_arch(r, Arch::Sm70)).unwrap(),
        "relu on fp16/bf16 through fp32"
    );
    let exp = SpecKind::Unary(crate::ir::UnaryOp::Exp);
    let r = request(exp.clone(), Unit::Thread, vec![h()], vec![h()]);
    assert_eq!(names_of(&r).unwrap(), "exp on fp16/bf16 through fp32");
    // Mixed types: nothing, and only exp entries are listed.
    let r = request(exp, Unit::Thread, vec![rf(&[2], Scalar::Fp32)], vec![h()]);
    let no = select(&r).unwrap_err();
    assert!(
        no.candidates.iter().all(|c| c.name.contains("exp")),
        "{:?}",
        no.candidates
    );
}

#[test]
fn init_writes_registers_of_any_type_and_memory_in_one_store() {
    let init = SpecKind::Init {
        value: InitValue::Number(1.5),
    };
    for scalar in [Scalar::Fp32, Scalar::Fp16, Scalar::Bf16] {
        let r = request(init.clone(), Unit::Thread, vec![rf(&[3], scalar)], vec![]);
        assert_eq!(names_of(&r).unwrap(), "mov (Init)");
    }
    // A coordinate (`Init<index(i)>`, a contract's positions) has no instruction.
    let index = SpecKind::Init {
        value: InitValue::Index(0),
    };
    let r = request(index, Unit::Thread, vec![rf(&[2], Scalar::Fp32)], vec![]);
    let no = select(&r).unwrap_err();
    assert!(
        no.candidates.iter().any(|c| c
            .reason
            .contains("`Init<index(0)>` (each element's coordinate) is for contracts")),
        "{:?}",
        no.candidates
    );
    let r = request(
        init.clone(),
        Unit::Thread,
        vec![rf(&[1], Scalar::I32)],
        vec![],
    );
    let no = select(&r).unwrap_err();
    assert!(
        no.candidates[0].reason.contains("not a i32 value"),
        "{:?}",
        no.candidates
    );
    let long = view(
        vec![col_major(&[16])],
        Scalar::Fp32,
        Memory::Shared,
        Expr::Const(0),
    );
    let no = select(&request(init, Unit::Thread, vec![long], vec![])).unwrap_err();
    assert!(
        no.candidates[0].reason.contains("one access"),
        "{:?}",
        no.candidates
    );
}

#[test]
fn shuffles_and_reductions_need_their_lanes() {
    let shfl = SpecKind::Shfl { mask: 16 };
    let r = request(
        shfl.clone(),
        Unit::Warp,
        vec![rf(&[2], Scalar::Fp32)],
        vec![rf(&[2], Scalar::Fp32)],
    );
    assert_eq!(names_of(&r).unwrap(), "shfl.sync.bfly.b32");
    let no = select(&request(
        shfl,
        Unit::Thread,
        vec![rf(&[2], Scalar::Fp32)],
        vec![rf(&[2], Scalar::Fp32)],
    ))
    .unwrap_err();
    assert!(
        no.candidates[0].reason.contains("whole warp"),
        "{:?}",
        no.candidates
    );
    let sum = SpecKind::Reduction {
        op: crate::ir::ReduceOp::Add,
        axes: vec![0],
    };
    let scalar_out = view(
        vec![level(&[], &[])],
        Scalar::Fp32,
        Memory::Registers,
        Expr::Const(0),
    );
    for unit in [Unit::Thread, Unit::Warp, Unit::Lanes { masks: vec![1, 2] }] {
        let r = request(
            sum.clone(),
            unit,
            vec![scalar_out.clone()],
            vec![rf(&[4], Scalar::Fp32)],
        );
        assert_eq!(
            names_of(&r).unwrap(),
            "add.f32 + shfl.sync.bfly.b32 butterfly"
        );
    }
    let no = select(&request(
        sum.clone(),
        Unit::QuadPair,
        vec![scalar_out.clone()],
        vec![rf(&[4], Scalar::Fp32)],
    ))
    .unwrap_err();
    assert!(
        no.candidates[0].reason.contains("quad pair"),
        "{:?}",
        no.candidates
    );
    // Keeping mode 1 of [2,3] gives 3 results, not 1.
    let no = select(&request(
        sum,
        Unit::Warp,
        vec![scalar_out],
        vec![rf(&[2, 3], Scalar::Fp32)],
    ))
    .unwrap_err();
    assert!(
        no.candidates[0].reason.contains("kept modes (3)"),
        "{:?}",
        no.candidates
    );
}

#[test]
fn reductions_over_several_warps_continue_across_the_warps() {
    let max = SpecKind::Reduction {
        op: crate::ir::ReduceOp::Max,
        axes: vec![0, 1],
    };
    let scalar_out = |scalar| view(vec![level(&[], &[])], scalar, Memory::Registers, 0.into());
    let cases = [
        (Unit::Warp, 1),
        (Unit::Warpgroup, 4),
        (Unit::Warps { count: 3 }, 3),
        (Unit::Warps { count: 32 }, 32),
    ];
    for (unit, warps) in cases {
        for scalar in [Scalar::Fp32, Scalar::I32, Scalar::U32] {
            let r = request(
                max.clone(),
                unit.clone(),
                vec![scalar_out(scalar)],
                vec![rf(&[4, 4], scalar)],
            );
            match select(&r) {
                Ok((_, Plan::Warp(plan))) => assert_eq!(plan.warps(), warps, "{unit:?}"),
                other => panic!("{unit:?} {scalar:?}: {other:?}"),
            }
        }
    }
    // 16-bit values are moved into fp32 first, as for a warp.
    let no = select(&request(
        max,
        Unit::Warps { count: 8 },
        vec![scalar_out(Scalar::Fp16)],
        vec![rf(&[4, 4], Scalar::Fp16)],
    ))
    .unwrap_err();
    assert!(
        no.candidates[0].reason.contains("fp32, i32 or u32"),
        "{:?}",
        no.candidates
    );
}

#[test]
fn memory_to_memory_and_register_moves() {
    let chunk = |memory| {
        view(
            vec![col_major(&[4])],
            Scalar::Fp32,
            memory,
            Expr::mul(tid(), 4.into()),
        )
    };
    let r = request(
        mv(),
        Unit::Thread,
        vec![chunk(Memory::Shared)],
        vec![chunk(Memory::Global)],
    );
    assert_eq!(names_of(&r).unwrap(), "ld.global.v4.b32 + st.shared.v4.b32");
    let r = request(
        mv(),
        Unit::Thread,
        vec![rf(&[3], Scalar::Fp16)],
        vec![rf(&[3], Scalar::Fp16)],
    );
    assert_eq!(names_of(&r).unwrap(), "mov.b32 (register to register)");
}

#[test]
fn a_broadcast_input_is_loaded_as_its_distinct_elements() {
    // A per-thread [2,2 : 0,1] of fp16: its distinct pair is one 4-byte load.
    let bias = view(
        vec![level(&[2, 2], &[0, 1])],
        Scalar::Fp16,
        Memory::Global,
        Expr::mul(tid(), 2.into()),
    );
    let regs = view(
        vec![col_major(&[2, 2])],
        Scalar::Fp16,
        Memory::Registers,
        Expr::Const(0),
    );
    let r = request(mv(), Unit::Thread, vec![regs.clone()], vec![bias.clone()]);
    assert_eq!(names_of(&r).unwrap(), "ld.global.b32");
    // Into shared memory no single access repeats elements.
    let shared = view(
        vec![col_major(&[2, 2])],
        Scalar::Fp16,
        Memory::Shared,
        Expr::mul(tid(), 4.into()),
    );
    let no = select(&request(
        mv(),
        Unit::Thread,
        vec![shared],
        vec![bias.clone()],
    ))
    .unwrap_err();
    let staged = no
        .candidates
        .iter()
        .find(|c| c.name.contains(" + st.shared"))
        .unwrap_or_else(|| panic!("{:?}", no.candidates));
    assert!(staged.reason.contains("is a broadcast view"), "{staged:?}");
    // A pointwise spec reads it the same way: one access of the distinct
    // elements, whose alignment is what counts.
    let add = SpecKind::Binary(crate::ir::BinaryOp::Add);
    let r = request(
        add.clone(),
        Unit::Thread,
        vec![regs.clone()],
        vec![regs.clone(), bias],
    );
    assert!(select(&r).is_ok(), "{:?}", select(&r).err());
    let misaligned = view(
        vec![level(&[2, 2], &[0, 1])],
        Scalar::Fp16,
        Memory::Global,
        Expr::add(Expr::mul(tid(), 2.into()), 1.into()),
    );
    let no = select(&request(
        add,
        Unit::Thread,
        vec![regs.clone()],
        vec![regs, misaligned],
    ))
    .unwrap_err();
    let reasons: Vec<&str> = no.candidates.iter().map(|c| c.reason.as_str()).collect();
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("stride-0 modes cut to one element") && r.contains("alignment")),
        "{reasons:?}"
    );
}

#[test]
fn accumulating_stores_take_the_widest_red_the_target_has() {
    let add = SpecKind::Move {
        asynchronous: false,
        masked: false,
        tma: false,
        add: true,
    };
    let pair = |scalar, memory, base| view(vec![col_major(&[2])], scalar, memory, base);
    let out = pair(Scalar::Fp32, Memory::Global, Expr::mul(tid(), 2.into()));
    let regs = pair(Scalar::Fp32, Memory::Registers, Expr::Const(0));
    let mut r = request(
        add.clone(),
        Unit::Thread,
        vec![out.clone()],
        vec![regs.clone()],
    );
    assert_eq!(names_of(&r).unwrap(), "red.global.add.v2.f32");
    r.arch = Some(crate::ptx::Arch::Sm80);
    assert_eq!(names_of(&r).unwrap(), "red.global.add.f32 (each element)");
    // Plain stores are not candidates, nor is an fp16 sum.
    let half = pair(Scalar::Fp16, Memory::Global, Expr::mul(tid(), 2.into()));
    let halves = pair(Scalar::Fp16, Memory::Registers, Expr::Const(0));
    let no = select(&request(add, Unit::Thread, vec![half], vec![halves])).unwrap_err();
    assert!(
        no.candidates
            .iter()
            .all(|c| c.name.starts_with("red.global.add") && c.reason.contains("fp32")),
        "{:#?}",
        no.candidates
    );
}

#[test]
fn a_warp_stores_a_row_realigned_when_every_lane_names_it() {
    let row =
        |memory: Memory, base: Expr| view(vec![col_major(&[128])], Scalar::Fp16, memory, base);
    // Row w of a matrix with a run-time row stride, per warp: the same in
    // the 32 lanes of each warp.
    let per_warp = Expr::mul(
        Expr::div(tid(), 32.into()),
        Expr::var(crate::expr::Var::Dim(0)),
    );
    let shared = Expr::mul(Expr::div(tid(), 32.into()), 136.into());
    let store = |unit: Unit, out: Expr, input: Expr| {
        request(
            mv(),
            unit,
            vec![row(Memory::Global, out)],
            vec![row(Memory::Shared, input)],
        )
    };
    assert_eq!(
        names_of(&store(Unit::Warp, per_warp.clone(), shared.clone())).unwrap(),
        row_store_name()
    );
    // A thread alone is not a warp's row store.
    let alone = names_of(&store(Unit::Thread, per_warp.clone(), shared.clone())).unwrap_err();
    assert!(
        alone.candidates.iter().all(|c| c.name != row_store_name()),
        "{alone:?}"
    );
    // A row that moves with the lane is refused, with the reason.
    let per_lane = Expr::mul(tid(), Expr::var(crate::expr::Var::Dim(0)));
    let refused = names_of(&store(Unit::Warp, per_lane, shared.clone())).unwrap_err();
    let reason = &refused.candidates[0].reason;
    assert!(reason.contains("not the same in every lane"), "{reason}");
    // So is a row indexed by the variable of a loop that starts at the
    // lane; the same variable of a loop that is the same in every lane is
    // one row per warp.
    let by_loop = Expr::add(
        per_warp.clone(),
        Expr::mul(
            Expr::var(crate::expr::Var::Loop(0)),
            Expr::var(crate::expr::Var::Dim(0)),
        ),
    );
    let mut lane_loop = store(Unit::Warp, by_loop.clone(), shared.clone());
    lane_loop.lane_dependent_loops.insert(0);
    let refused = names_of(&lane_loop).unwrap_err();
    let reason = &refused.candidates[0].reason;
    assert!(reason.contains("not the same in every lane"), "{reason}");
    assert_eq!(
        names_of(&store(Unit::Warp, by_loop, shared.clone())).unwrap(),
        row_store_name()
    );
    // A shared row that does not start on a 16-byte boundary is refused.
    let odd = Expr::add(shared, 4.into());
    let refused = names_of(&store(Unit::Warp, per_warp, odd)).unwrap_err();
    assert!(
        refused.candidates[0].reason.contains("16-byte chunks"),
        "{refused:?}"
    );
}

fn row_store_name() -> String {
    Pattern::Row(row::RowPattern).name()
}
