//! The writer's text, pinned by golden files in `tests/golden/ptx_writer/` (one
//! `.ptx` per module built below; `BLESS=1 cargo test --test ptx_writer`
//! rewrites them), plus its rules: determinism, register declarations from
//! use, target selection, and errors instead of bad text.

mod ptx_support;
mod support;

use graphene::ptx::{
    Arch, EntryBuilder, Guard, Module, Operand, ParamType, PtxError, RegClass, imm,
};
use pretty_assertions::assert_eq;
use ptx_support::{check_module, lowest_arch_for, tools_available};

fn golden(name: &str, module: &Module) {
    let text = module.to_ptx().unwrap_or_else(|error| panic!("{error}"));
    support::golden::check(
        &support::golden::dir("ptx_writer").join(format!("{name}.ptx")),
        &text,
    );
    // The pinned text must also be PTX that ptxas accepts, as is.
    if tools_available() {
        let target = module.target().unwrap();
        let arch = lowest_arch_for(target.sm).unwrap();
        check_module(module, arch, &[]);
    }
}

/// `c[i] = a[i] + b[i]` for `i < n`, one element per thread.
fn vector_add() -> Module {
    let mut b = EntryBuilder::new("vector_add").unwrap();
    b.max_threads(256).unwrap();
    let pointers = ["a", "b", "c"].map(|name| b.param(name, ParamType::U64).unwrap());
    let n = b.param("n", ParamType::U32).unwrap();
    let [tid, block, threads, index, count] = [(); 5].map(|_| b.reg(RegClass::B32));
    let out_of_range = b.reg(RegClass::Pred);
    b.comment("i = blockIdx.x * blockDim.x + threadIdx.x");
    b.emit("mov.u32/tid.x", vec![tid.into()]).unwrap();
    b.emit("mov.u32/ctaid.x", vec![block.into()]).unwrap();
    b.emit("mov.u32/ntid.x", vec![threads.into()]).unwrap();
    b.emit(
        "mad.lo.u32",
        vec![index.into(), block.into(), threads.into(), tid.into()],
    )
    .unwrap();
    b.emit("ld.param.u32", vec![count.into(), n.at(0).into()])
        .unwrap();
    b.emit(
        "setp.ge.u32",
        vec![out_of_range.into(), index.into(), count.into()],
    )
    .unwrap();
    let done = b.label("done");
    b.emit_guarded(Guard::when(out_of_range), "bra", vec![(&done).into()])
        .unwrap();
    let offset = b.reg(RegClass::B64);
    b.emit("mul.wide.u32", vec![offset.into(), index.into(), imm(4)])
        .unwrap();
    let mut addresses = Vec::new();
    for pointer in &pointers {
        let [raw, global, address] = [(); 3].map(|_| b.reg(RegClass::B64));
        b.emit("ld.param.u64", vec![raw.into(), pointer.at(0).into()])
            .unwrap();
        b.emit("cvta.to.global.u64", vec![global.into(), raw.into()])
            .unwrap();
        b.emit(
            "add.u64",
            vec![address.into(), global.into(), offset.into()],
        )
        .unwrap();
        addresses.push(address);
    }
    let [x, y, sum] = [(); 3].map(|_| b.reg(RegClass::F32));
    b.emit("ld.global.f32", vec![x.into(), addresses[0].at(0).into()])
        .unwrap();
    b.emit("ld.global.f32", vec![y.into(), addresses[1].at(0).into()])
        .unwrap();
    b.emit("add.f32", vec![sum.into(), x.into(), y.into()])
        .unwrap();
    b.emit("st.global.f32", vec![addresses[2].at(0).into(), sum.into()])
        .unwrap();
    b.place(&done).unwrap();
    b.emit("ret", Vec::new()).unwrap();
    let mut module = Module::new(None);
    module.add_entry(b.finish().unwrap()).unwrap();
    module
}

#[test]
fn vector_add_text_is_pinned() {
    golden("vector_add", &vector_add());
}

/// Two entries: a warp's ldmatrix + mma on a static tile, and a copy through
/// the dynamic shared array with a negated guard.
fn tile_kernels() -> Module {
    let mut mma = EntryBuilder::new("tile_mma").unwrap();
    mma.max_threads(32).unwrap();
    let out = mma.param("out", ParamType::U64).unwrap();
    let tile = mma.shared_array("tile_a", 512, None).unwrap();
    let scratch = mma.shared_array("scratch", 64, Some(16)).unwrap();
    let [lane, base, row] = [(); 3].map(|_| mma.reg(RegClass::B32));
    mma.emit("mov.u32/laneid", vec![lane.into()]).unwrap();
    mma.emit("mov.u32/ssym", vec![base.into(), (&tile).into()])
        .unwrap();
    mma.comment("lane l addresses row l % 8 of matrix l / 8\n(16 bytes per row)");
    mma.emit(
        "mad.lo.u32",
        vec![row.into(), lane.into(), imm(16), base.into()],
    )
    .unwrap();
    let a = mma.regs(RegClass::B32, 4);
    mma.emit(
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
        vec![a.clone().into(), row.at(0).into()],
    )
    .unwrap();
    let b = mma.regs(RegClass::B32, 2);
    mma.emit(
        "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
        vec![b.clone().into(), row.at(256).into()],
    )
    .unwrap();
    let zero = mma.reg(RegClass::F32);
    mma.emit("mov.f32", vec![zero.into(), Operand::f32(0.0)])
        .unwrap();
    let d = mma.regs(RegClass::F32, 4);
    mma.emit(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        vec![d.clone().into(), a.into(), b.into(), vec![zero; 4].into()],
    )
    .unwrap();
    let [raw, global, mine] = [(); 3].map(|_| mma.reg(RegClass::B64));
    mma.emit("ld.param.u64", vec![raw.into(), out.at(0).into()])
        .unwrap();
    mma.emit("cvta.to.global.u64", vec![global.into(), raw.into()])
        .unwrap();
    mma.emit(
        "mad.wide.u32",
        vec![mine.into(), lane.into(), imm(16), global.into()],
    )
    .unwrap();
    mma.emit("st.global.v4.f32", vec![mine.at(0).into(), d.into()])
        .unwrap();
    mma.emit("st.shared.f32", vec![scratch.at(0).into(), zero.into()])
        .unwrap();
    mma.emit("ret", Vec::new()).unwrap();

    let mut copy = EntryBuilder::new("dynamic_copy").unwrap();
    let src = copy.param("src", ParamType::U64).unwrap();
    let dynamic = copy.dynamic_shared("dynamic_smem", None, 4096).unwrap();
    let [tid, base, slot, value] = [(); 4].map(|_| copy.reg(RegClass::B32));
    let first = copy.reg(RegClass::Pred);
    let [raw, global] = [(); 2].map(|_| copy.reg(RegClass::B64));
    copy.emit("mov.u32/tid.x", vec![tid.into()]).unwrap();
    copy.emit("ld.param.u64", vec![raw.into(), src.at(0).into()])
        .unwrap();
    copy.emit("cvta.to.global.u64", vec![global.into(), raw.into()])
        .unwrap();
    copy.emit("ld.global.b32", vec![value.into(), global.at(-4).into()])
        .unwrap();
    copy.emit("mov.u32/ssym", vec![base.into(), (&dynamic).into()])
        .unwrap();
    copy.emit(
        "mad.lo.u32",
        vec![slot.into(), tid.into(), imm(4), base.into()],
    )
    .unwrap();
    copy.emit("setp.eq.u32", vec![first.into(), tid.into(), imm(0)])
        .unwrap();
    copy.emit_guarded(
        Guard::unless(first),
        "st.shared.b32",
        vec![slot.at(0).into(), value.into()],
    )
    .unwrap();
    copy.emit("bar.sync", vec![imm(0)]).unwrap();
    copy.emit("ret", Vec::new()).unwrap();

    let mut module = Module::new(Some(Arch::Sm80));
    module.add_entry(mma.finish().unwrap()).unwrap();
    module.add_entry(copy.finish().unwrap()).unwrap();
    module
}

#[test]
fn tile_kernels_text_is_pinned() {
    golden("tile_kernels", &tile_kernels());
}

#[test]
fn the_same_module_always_writes_the_same_bytes() {
    let first = tile_kernels().to_ptx().unwrap();
    for _ in 0..3 {
        assert_eq!(first, tile_kernels().to_ptx().unwrap());
    }
}

#[test]
fn registers_are_declared_per_class_from_the_highest_number_used() {
    let text = vector_add().to_ptx().unwrap();
    let declarations: Vec<&str> = text
        .lines()
        .filter(|line| line.trim_start().starts_with(".reg"))
        .map(str::trim)
        .collect();
    assert_eq!(
        declarations,
        [
            ".reg .pred %p<2>;",
            ".reg .b32 %r<6>;",
            ".reg .b64 %rd<11>;",
            ".reg .f32 %f<4>;"
        ]
    );
}

#[test]
fn the_target_follows_the_instructions_unless_an_arch_is_requested() {
    let mut module = vector_add();
    let header = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|line| line.starts_with(".version") || line.starts_with(".target"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        header(&module.to_ptx().unwrap()),
        [".version 6.0", ".target sm_70"]
    );
    module.requested = Some(Arch::Sm86);
    assert_eq!(
        header(&module.to_ptx().unwrap()),
        [".version 7.1", ".target sm_86"]
    );
    let mut tiles = tile_kernels();
    tiles.requested = None;
    assert_eq!(
        header(&tiles.to_ptx().unwrap()),
        [".version 7.0", ".target sm_80"]
    );
}

#[test]
fn builder_rejects_what_would_write_bad_ptx() {
    let mut b = EntryBuilder::new("k").unwrap();
    assert!(matches!(
        b.param("2bad", ParamType::U32),
        Err(PtxError::BadName { .. })
    ));
    b.param("x", ParamType::U32).unwrap();
    assert!(matches!(
        b.shared_array("x", 16, None),
        Err(PtxError::DuplicateName { .. })
    ));
    assert!(matches!(
        b.shared_array("big", 48 * 1024 + 1, None),
        Err(PtxError::BadValue { .. })
    ));
    assert!(matches!(
        b.shared_array("odd", 16, Some(24)),
        Err(PtxError::BadValue { .. })
    ));
    assert!(b.max_threads(0).is_err() && b.max_threads(2048).is_err());
    let not_a_predicate = b.reg(RegClass::B32);
    let error = b
        .emit_guarded(Guard::when(not_a_predicate), "ret", Vec::new())
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "a guard must be a predicate register (%p), not %r1"
    );
    let nowhere = b.label("nowhere");
    b.emit("bra", vec![(&nowhere).into()]).unwrap();
    let error = b.finish().unwrap_err();
    assert_eq!(
        error.to_string(),
        "label $L1_nowhere in entry `k` is never placed"
    );
}

#[test]
fn entries_and_dynamic_arrays_share_the_module_namespace() {
    let mut module = Module::new(None);
    let mut first = EntryBuilder::new("k").unwrap();
    first.dynamic_shared("smem", None, 1024).unwrap();
    module.add_entry(first.finish().unwrap()).unwrap();
    let second = EntryBuilder::new("k").unwrap().finish().unwrap();
    assert!(matches!(
        module.add_entry(second),
        Err(PtxError::DuplicateName { what: "entry", .. })
    ));
    let mut third = EntryBuilder::new("k2").unwrap();
    third.dynamic_shared("smem", None, 1024).unwrap();
    assert!(matches!(
        module.add_entry(third.finish().unwrap()),
        Err(PtxError::DuplicateName { .. })
    ));
}

#[test]
fn operands_of_the_wrong_class_are_rejected_with_the_slot_named() {
    let mut b = EntryBuilder::new("k").unwrap();
    let f = b.reg(RegClass::F32);
    let r = b.reg(RegClass::B32);
    let error = b
        .emit(
            "ld.global.v4.f32",
            vec![vec![f, f, f].into(), r.at(0).into()],
        )
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "operand `d` of `ld.global.v4.f32` must be f*4, but vector {%f1, %f1, %f1} \
         (3 registers of class f) was given"
    );
    let error = b
        .emit("ld.global.f32", vec![f.into(), r.at(0).into()])
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "operand `a` of `ld.global.f32` must be gaddr, but address [%r1] (base class r) was given"
    );
}
