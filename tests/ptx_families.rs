//! One small, realistic kernel per catalogue family, built through the model
//! and the catalogue (never hand-written text), assembled by ptxas for every
//! target its instructions claim. Each fails on a ptxas error, a spill or a
//! stack frame, and when the SASS lacks the opcode the family is for.

mod ptx_support;
mod support;

use graphene::ptx::tools;
use graphene::ptx::{
    Arch, Entry, EntryBuilder, Guard, Module, Operand, ParamType, Reg, RegClass, imm,
};
use ptx_support::{check_module, mnemonics, tools_available};

/// A builder with the usual prologue: parameters `input` and `output`
/// (global pointers), the thread index, and per-thread global addresses
/// `input + tid * stride` and `output + tid * stride`.
struct Kernel {
    b: EntryBuilder<'static>,
    tid: Reg,
    input: Reg,
    output: Reg,
}

fn kernel(name: &str, threads: u32, stride: i64) -> Kernel {
    let mut b = EntryBuilder::new(name).unwrap();
    b.max_threads(threads).unwrap();
    let params = [
        b.param("input", ParamType::U64).unwrap(),
        b.param("output", ParamType::U64).unwrap(),
    ];
    let tid = b.reg(RegClass::B32);
    b.emit("mov.u32/tid.x", vec![tid.into()]).unwrap();
    let offset = b.reg(RegClass::B64);
    b.emit("mul.wide.u32", vec![offset.into(), tid.into(), imm(stride)])
        .unwrap();
    let mut pointers = Vec::new();
    for param in &params {
        let raw = b.reg(RegClass::B64);
        let global = b.reg(RegClass::B64);
        let mine = b.reg(RegClass::B64);
        b.emit("ld.param.u64", vec![raw.into(), param.at(0).into()])
            .unwrap();
        b.emit("cvta.to.global.u64", vec![global.into(), raw.into()])
            .unwrap();
        b.emit("add.u64", vec![mine.into(), global.into(), offset.into()])
            .unwrap();
        pointers.push(mine);
    }
    Kernel {
        b,
        tid,
        input: pointers[0],
        output: pointers[1],
    }
}

impl Kernel {
    fn emit(&mut self, name: &str, operands: Vec<Operand>) {
        self.b
            .emit(name, operands)
            .unwrap_or_else(|error| panic!("{error}"));
    }

    fn load(&mut self, name: &str, class: RegClass, count: usize, offset: i64) -> Vec<Reg> {
        let regs = self.b.regs(class, count);
        let destination = if count == 1 {
            regs[0].into()
        } else {
            regs.clone().into()
        };
        self.emit(name, vec![destination, self.input.at(offset).into()]);
        regs
    }

    fn store(&mut self, name: &str, regs: &[Reg], offset: i64) {
        let source = if regs.len() == 1 {
            regs[0].into()
        } else {
            regs.to_vec().into()
        };
        self.emit(name, vec![self.output.at(offset).into(), source]);
    }

    fn finish(mut self) -> Entry {
        self.emit("ret", Vec::new());
        self.b.finish().unwrap()
    }
}

fn module_of(entries: Vec<Entry>) -> Module {
    let mut module = Module::new(None);
    for entry in entries {
        module.add_entry(entry).unwrap();
    }
    module
}

fn check_at(module: &Module, archs: &[Arch], expected: &[(&str, &[&str])]) {
    if !tools_available() {
        return;
    }
    let expected: Vec<(&str, Vec<String>)> = expected
        .iter()
        .map(|(entry, names)| (*entry, mnemonics(names)))
        .collect();
    for arch in archs {
        check_module(module, *arch, &expected);
    }
}

const ALL: &[Arch] = &[Arch::Sm70, Arch::Sm80, Arch::Sm86, Arch::Sm89, Arch::Sm90];
const AMPERE_UP: &[Arch] = &[Arch::Sm80, Arch::Sm90];

/// Index arithmetic of a swizzled, row-major tile: the int and sreg families.
fn index_math() -> Entry {
    let mut k = kernel("index_math", 256, 4);
    let b = &mut k.b;
    let [
        block,
        threads,
        global_id,
        row,
        col,
        low_row,
        swizzled,
        shifted,
        offset,
        clamped,
    ] = [(); 10].map(|_| b.reg(RegClass::B32));
    let columns = b.param("columns", ParamType::U32).unwrap();
    let n = b.reg(RegClass::B32);
    let [wide, base, address] = [(); 3].map(|_| b.reg(RegClass::B64));
    b.emit("ld.param.u32", vec![n.into(), columns.at(0).into()])
        .unwrap();
    b.emit("mov.u32/ctaid.x", vec![block.into()]).unwrap();
    b.emit("mov.u32/ntid.x", vec![threads.into()]).unwrap();
    b.emit(
        "mad.lo.u32",
        vec![global_id.into(), block.into(), threads.into(), k.tid.into()],
    )
    .unwrap();
    b.emit("div.u32", vec![row.into(), global_id.into(), n.into()])
        .unwrap();
    b.emit("rem.u32", vec![col.into(), global_id.into(), n.into()])
        .unwrap();
    b.emit("and.b32", vec![low_row.into(), row.into(), imm(7)])
        .unwrap();
    b.emit("xor.b32", vec![swizzled.into(), col.into(), low_row.into()])
        .unwrap();
    b.emit("shl.b32", vec![shifted.into(), row.into(), imm(6)])
        .unwrap();
    b.emit(
        "or.b32",
        vec![offset.into(), shifted.into(), swizzled.into()],
    )
    .unwrap();
    b.emit("min.u32", vec![clamped.into(), offset.into(), n.into()])
        .unwrap();
    b.emit("cvt.u64.u32", vec![wide.into(), clamped.into()])
        .unwrap();
    b.emit("shl.b64", vec![base.into(), wide.into(), imm(2)])
        .unwrap();
    b.emit(
        "add.u64",
        vec![address.into(), k.output.into(), base.into()],
    )
    .unwrap();
    let back = b.reg(RegClass::B32);
    b.emit("cvt.u32.u64", vec![back.into(), wide.into()])
        .unwrap();
    let result = b.reg(RegClass::B32);
    b.emit("sub.u32", vec![result.into(), back.into(), row.into()])
        .unwrap();
    b.emit("st.global.u32", vec![address.at(0).into(), result.into()])
        .unwrap();
    k.finish()
}

#[test]
fn int_and_sreg_families_assemble_everywhere() {
    let module = module_of(vec![index_math()]);
    check_at(&module, ALL, &[("index_math", &["S2R", "LOP3", "STG"])]);
}

/// A strided loop with a run-time trip count: setp, a guarded bra, selp.
fn strided_sum() -> Entry {
    let mut k = kernel("strided_sum", 128, 4);
    let count = k.b.param("count", ParamType::U32).unwrap();
    let b = &mut k.b;
    let [n, i, step, total] = [(); 4].map(|_| b.reg(RegClass::B32));
    let [done, odd] = [(); 2].map(|_| b.reg(RegClass::Pred));
    b.emit("ld.param.u32", vec![n.into(), count.at(0).into()])
        .unwrap();
    b.emit("mov.u32/ntid.x", vec![step.into()]).unwrap();
    b.emit("mov.u32", vec![i.into(), k.tid.into()]).unwrap();
    b.emit("mov.u32", vec![total.into(), imm(0)]).unwrap();
    let head = b.label("loop");
    let exit = b.label("done");
    b.place(&head).unwrap();
    b.emit("setp.ge.u32", vec![done.into(), i.into(), n.into()])
        .unwrap();
    b.emit_guarded(Guard::when(done), "bra", vec![(&exit).into()])
        .unwrap();
    b.emit("add.u32", vec![total.into(), total.into(), i.into()])
        .unwrap();
    b.emit("add.u32", vec![i.into(), i.into(), step.into()])
        .unwrap();
    b.emit("bra.uni", vec![(&head).into()]).unwrap();
    b.place(&exit).unwrap();
    let low = b.reg(RegClass::B32);
    b.emit("and.b32", vec![low.into(), total.into(), imm(1)])
        .unwrap();
    b.emit("setp.eq.u32", vec![odd.into(), low.into(), imm(1)])
        .unwrap();
    let chosen = b.reg(RegClass::B32);
    b.emit(
        "selp.b32",
        vec![chosen.into(), total.into(), imm(0), odd.into()],
    )
    .unwrap();
    k.store("st.global.u32", &[chosen], 0);
    k.finish()
}

#[test]
fn control_family_keeps_a_real_loop() {
    let module = module_of(vec![strided_sum()]);
    check_at(&module, ALL, &[("strided_sum", &["ISETP", "BRA", "SEL"])]);
}

/// Global → shared → neighbour's slot → global, vectorised: memory family.
fn stage_through_shared() -> Entry {
    let mut k = kernel("stage_through_shared", 128, 16);
    let tile = k.b.shared_array("tile", 128 * 16, None).unwrap();
    let values = k.load("ld.global.v4.f32", RegClass::F32, 4, 0);
    let half = k.load("ld.global.b16", RegClass::F16, 1, 16)[0];
    let b = &mut k.b;
    let [base, mine, next_tid, neighbour] = [(); 4].map(|_| b.reg(RegClass::B32));
    b.emit("mov.u32/ssym", vec![base.into(), (&tile).into()])
        .unwrap();
    b.emit(
        "mad.lo.u32",
        vec![mine.into(), k.tid.into(), imm(16), base.into()],
    )
    .unwrap();
    b.emit(
        "st.shared.v4.f32",
        vec![mine.at(0).into(), values.clone().into()],
    )
    .unwrap();
    b.emit("st.shared.b16", vec![tile.at(0).into(), half.into()])
        .unwrap();
    b.emit("bar.sync", vec![imm(0)]).unwrap();
    b.emit("xor.b32", vec![next_tid.into(), k.tid.into(), imm(1)])
        .unwrap();
    b.emit(
        "mad.lo.u32",
        vec![neighbour.into(), next_tid.into(), imm(16), base.into()],
    )
    .unwrap();
    let pair = b.regs(RegClass::F32, 2);
    b.emit(
        "ld.shared.v2.f32",
        vec![pair.clone().into(), neighbour.at(8).into()],
    )
    .unwrap();
    let first = b.reg(RegClass::F16);
    b.emit("ld.shared.b16", vec![first.into(), tile.at(0).into()])
        .unwrap();
    k.store("st.global.v2.f32", &pair, 0);
    k.store("st.global.b16", &[first], 8);
    k.finish()
}

#[test]
fn memory_family_uses_vector_global_and_shared_accesses() {
    let module = module_of(vec![stage_through_shared()]);
    check_at(
        &module,
        ALL,
        &[("stage_through_shared", &["LDG", "STS", "BAR", "LDS", "STG"])],
    );
}

/// 16-byte asynchronous copies into shared memory, committed and waited for.
fn async_copy() -> Entry {
    let mut k = kernel("async_copy", 128, 16);
    // 16 bytes per thread, then 8 more per thread 2 KiB further on.
    let tile = k.b.shared_array("tile", 4096, None).unwrap();
    let b = &mut k.b;
    let [base, mine] = [(); 2].map(|_| b.reg(RegClass::B32));
    b.emit("mov.u32/ssym", vec![base.into(), (&tile).into()])
        .unwrap();
    b.emit(
        "mad.lo.u32",
        vec![mine.into(), k.tid.into(), imm(16), base.into()],
    )
    .unwrap();
    b.emit(
        "cp.async.cg.shared.global/16",
        vec![mine.at(0).into(), k.input.at(0).into()],
    )
    .unwrap();
    b.emit("cp.async.commit_group", Vec::new()).unwrap();
    b.emit(
        "cp.async.ca.shared.global/8",
        vec![mine.at(2048).into(), k.input.at(2048).into()],
    )
    .unwrap();
    b.emit("cp.async.commit_group", Vec::new()).unwrap();
    b.emit("cp.async.wait_group", vec![imm(1)]).unwrap();
    b.emit("cp.async.wait_all", Vec::new()).unwrap();
    b.emit("bar.sync", vec![imm(0)]).unwrap();
    let words = b.regs(RegClass::B32, 4);
    b.emit(
        "ld.shared.v4.b32",
        vec![words.clone().into(), mine.at(0).into()],
    )
    .unwrap();
    k.store("st.global.v4.b32", &words, 0);
    k.finish()
}

#[test]
fn async_family_emits_ldgsts_with_its_barriers() {
    let module = module_of(vec![async_copy()]);
    check_at(
        &module,
        AMPERE_UP,
        &[("async_copy", &["LDGSTS", "LDGDEPBAR", "DEPBAR", "LDS"])],
    );
}

/// Fill a 512-byte tile (four 8x8 b16 matrices), then ldmatrix from it; the
/// shared address goes generic → shared through cvta, as nvcc's does.
fn ldmatrix_kernel(count: usize, trans: bool) -> Entry {
    let suffix = if trans { ".trans" } else { "" };
    let name = format!("ldmatrix_x{count}{}", if trans { "_trans" } else { "" });
    let mut k = kernel(&name, 32, 16);
    let tile = k.b.shared_array("tile", 512, None).unwrap();
    let row = k.load("ld.global.v4.b32", RegClass::B32, 4, 0);
    let b = &mut k.b;
    let [window, generic, shared] = [(); 3].map(|_| b.reg(RegClass::B64));
    b.emit("mov.u64/ssym", vec![window.into(), (&tile).into()])
        .unwrap();
    b.emit("cvta.shared.u64", vec![generic.into(), window.into()])
        .unwrap();
    b.emit("cvta.to.shared.u64", vec![shared.into(), generic.into()])
        .unwrap();
    let [base, mine] = [(); 2].map(|_| b.reg(RegClass::B32));
    b.emit("cvt.u32.u64", vec![base.into(), shared.into()])
        .unwrap();
    // Lane l gives row l % 8 of matrix l / 8: byte offset l * 16.
    b.emit(
        "mad.lo.u32",
        vec![mine.into(), k.tid.into(), imm(16), base.into()],
    )
    .unwrap();
    b.emit("st.shared.v4.b32", vec![mine.at(0).into(), row.into()])
        .unwrap();
    b.emit("bar.sync", vec![imm(0)]).unwrap();
    let fragments = b.regs(RegClass::B32, count);
    let instruction = format!("ldmatrix.sync.aligned.m8n8.x{count}{suffix}.shared.b16");
    b.emit(
        &instruction,
        vec![fragments.clone().into(), mine.at(0).into()],
    )
    .unwrap();
    for (index, fragment) in fragments.iter().enumerate() {
        k.store("st.global.b32", &[*fragment], 4 * index as i64);
    }
    k.finish()
}

#[test]
fn ldmatrix_family_emits_ldsm_for_every_form() {
    let mut entries = Vec::new();
    for count in [1, 2, 4] {
        for trans in [false, true] {
            entries.push(ldmatrix_kernel(count, trans));
        }
    }
    let names: Vec<String> = entries.iter().map(|entry| entry.name.clone()).collect();
    let expected: Vec<(&str, &[&str])> = names
        .iter()
        .map(|name| (name.as_str(), &["LDSM", "S2R"][..]))
        .collect();
    check_at(&module_of(entries), AMPERE_UP, &expected);
}

/// One mma: fragments loaded per lane from global memory, result stored.
fn mma_kernel(name: &str, instruction: &str, shape: [(RegClass, usize); 4]) -> Entry {
    let mut k = kernel(name, 32, 128);
    let [
        (d_class, d_len),
        (a_class, a_len),
        (b_class, b_len),
        (c_class, c_len),
    ] = shape;
    let a: Vec<Reg> = (0..a_len)
        .map(|i| k.load("ld.global.b32", a_class, 1, 4 * i as i64)[0])
        .collect();
    let b_regs: Vec<Reg> = (0..b_len)
        .map(|i| k.load("ld.global.b32", b_class, 1, 32 + 4 * i as i64)[0])
        .collect();
    let c_load = if c_class == RegClass::F32 {
        "ld.global.f32"
    } else {
        "ld.global.b32"
    };
    let c_regs: Vec<Reg> = (0..c_len)
        .map(|i| k.load(c_load, c_class, 1, 64 + 4 * i as i64)[0])
        .collect();
    let d = k.b.regs(d_class, d_len);
    k.emit(
        instruction,
        vec![d.clone().into(), a.into(), b_regs.into(), c_regs.into()],
    );
    let store = if d_class == RegClass::F32 {
        "st.global.f32"
    } else {
        "st.global.b32"
    };
    for (index, reg) in d.iter().enumerate() {
        k.store(store, &[*reg], 4 * index as i64);
    }
    k.finish()
}

#[test]
fn mma_m16n8k16_family_emits_hmma_on_ampere_and_hopper() {
    use RegClass::{B32, F32};
    let module = module_of(vec![
        mma_kernel(
            "mma_f16_f32",
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
            [(F32, 4), (B32, 4), (B32, 2), (F32, 4)],
        ),
        mma_kernel(
            "mma_bf16_f32",
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
            [(F32, 4), (B32, 4), (B32, 2), (F32, 4)],
        ),
        mma_kernel(
            "mma_f16_f16",
            "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
            [(B32, 2), (B32, 4), (B32, 2), (B32, 2)],
        ),
    ]);
    check_at(
        &module,
        AMPERE_UP,
        &[
            ("mma_f16_f32", &["HMMA"]),
            ("mma_bf16_f32", &["HMMA"]),
            ("mma_f16_f16", &["HMMA"]),
        ],
    );
}

fn m8n8k4() -> Module {
    use RegClass::{B32, F32};
    module_of(vec![mma_kernel(
        "mma_m8n8k4",
        "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32",
        [(F32, 8), (B32, 2), (B32, 2), (F32, 8)],
    )])
}

#[test]
fn mma_m8n8k4_is_native_on_volta_only() {
    if !tools_available() {
        return;
    }
    // On sm_70 the instruction must be native. nvdisasm 13 cannot read sm_70
    // cubins, so check_module then requires that ptxas called no emulation
    // routine; with an older nvdisasm it checks HMMA directly.
    let module = m8n8k4();
    check_module(&module, Arch::Sm70, &[("mma_m8n8k4", mnemonics(&["HMMA"]))]);
    // Later targets emulate it: the check above would have caught that.
    let text = {
        let mut at_80 = module.clone();
        at_80.requested = Some(Arch::Sm80);
        at_80.to_ptx().unwrap()
    };
    let assembly = tools::assemble(&text, Arch::Sm80).unwrap();
    assert!(
        !assembly.emulation_routines().is_empty(),
        "expected ptxas to emulate m8n8k4 on sm_80"
    );
}

#[test]
fn asking_for_sm_70_with_an_ampere_instruction_names_it() {
    let mut module = module_of(vec![async_copy()]);
    module.requested = Some(Arch::Sm70);
    let message = module.to_ptx().unwrap_err().to_string();
    assert_eq!(
        message,
        "instruction `cp.async.cg.shared.global/16` needs sm_80 and PTX ISA 7.0, \
         but the requested target is sm_70"
    );
}

/// An epilogue in fp32: fma, ReLU, exp2, rsqrt, add, mul.
fn float_epilogue() -> Entry {
    let mut k = kernel("float_epilogue", 128, 4);
    let x = k.load("ld.global.f32", RegClass::F32, 1, 0)[0];
    let b = &mut k.b;
    let [scaled, relu, exp, inv, sum, square] = [(); 6].map(|_| b.reg(RegClass::F32));
    b.emit(
        "fma.rn.f32",
        vec![
            scaled.into(),
            x.into(),
            Operand::f32(2.0),
            Operand::f32(1.0),
        ],
    )
    .unwrap();
    b.emit(
        "max.f32",
        vec![relu.into(), scaled.into(), Operand::f32(0.0)],
    )
    .unwrap();
    b.emit("ex2.approx.f32", vec![exp.into(), relu.into()])
        .unwrap();
    b.emit("rsqrt.approx.f32", vec![inv.into(), exp.into()])
        .unwrap();
    b.emit("add.f32", vec![sum.into(), inv.into(), x.into()])
        .unwrap();
    b.emit("mul.f32", vec![square.into(), sum.into(), sum.into()])
        .unwrap();
    k.store("st.global.f32", &[square], 0);
    k.finish()
}

#[test]
fn float_family_uses_ffma_fmnmx_and_mufu() {
    let module = module_of(vec![float_epilogue()]);
    check_at(
        &module,
        ALL,
        &[("float_epilogue", &["FFMA", "FMNMX", "MUFU", "FMUL"])],
    );
}

/// fp16x2 fma + ReLU, unpack to fp32 and repack as f16x2 and bf16x2.
fn half_epilogue() -> Entry {
    let mut k = kernel("half_epilogue", 128, 16);
    let inputs = k.load("ld.global.v4.b32", RegClass::B32, 4, 0);
    let b = &mut k.b;
    let [zero, fused, relu, sum, product] = [(); 5].map(|_| b.reg(RegClass::B32));
    b.emit("mov.b32", vec![zero.into(), imm(0)]).unwrap();
    b.emit(
        "fma.rn.f16x2",
        vec![
            fused.into(),
            inputs[0].into(),
            inputs[1].into(),
            inputs[2].into(),
        ],
    )
    .unwrap();
    b.emit("max.f16x2", vec![relu.into(), fused.into(), zero.into()])
        .unwrap();
    b.emit("add.f16x2", vec![sum.into(), relu.into(), inputs[3].into()])
        .unwrap();
    b.emit(
        "mul.f16x2",
        vec![product.into(), sum.into(), inputs[0].into()],
    )
    .unwrap();
    let [low, high] = [(); 2].map(|_| b.reg(RegClass::F16));
    b.emit(
        "mov.b32/unpack",
        vec![low.into(), high.into(), product.into()],
    )
    .unwrap();
    let [low32, high32] = [(); 2].map(|_| b.reg(RegClass::F32));
    b.emit("cvt.f32.f16", vec![low32.into(), low.into()])
        .unwrap();
    b.emit("cvt.f32.f16", vec![high32.into(), high.into()])
        .unwrap();
    let [as_f16x2, as_bf16x2, repacked] = [(); 3].map(|_| b.reg(RegClass::B32));
    b.emit(
        "cvt.rn.f16x2.f32",
        vec![as_f16x2.into(), high32.into(), low32.into()],
    )
    .unwrap();
    b.emit(
        "cvt.rn.bf16x2.f32",
        vec![as_bf16x2.into(), high32.into(), low32.into()],
    )
    .unwrap();
    let rounded = b.reg(RegClass::F16);
    b.emit("cvt.rn.f16.f32", vec![rounded.into(), low32.into()])
        .unwrap();
    b.emit(
        "mov.b32/pack",
        vec![repacked.into(), rounded.into(), high.into()],
    )
    .unwrap();
    k.store(
        "st.global.v4.b32",
        &[as_f16x2, as_bf16x2, repacked, relu],
        0,
    );
    k.finish()
}

#[test]
fn half_family_uses_hfma2_hmnmx2_and_f2fp() {
    let module = module_of(vec![half_epilogue()]);
    check_at(
        &module,
        AMPERE_UP,
        &[("half_epilogue", &["HFMA2", "HMNMX2", "F2FP"])],
    );
}

/// A butterfly warp sum of fp32 values, then a block barrier.
fn warp_sum() -> Entry {
    let mut k = kernel("warp_sum", 64, 4);
    let mut value = k.load("ld.global.f32", RegClass::F32, 1, 0)[0];
    for lane_mask in [16, 8, 4, 2, 1] {
        let b = &mut k.b;
        let [partner, sum] = [(); 2].map(|_| b.reg(RegClass::F32));
        b.emit(
            "shfl.sync.bfly.b32",
            vec![
                partner.into(),
                value.into(),
                imm(lane_mask),
                imm(31),
                imm(-1),
            ],
        )
        .unwrap();
        b.emit("add.f32", vec![sum.into(), value.into(), partner.into()])
            .unwrap();
        value = sum;
    }
    k.emit("bar.sync", vec![imm(0)]);
    k.store("st.global.f32", &[value], 0);
    k.finish()
}

#[test]
fn warp_family_emits_shfl_and_bar() {
    let module = module_of(vec![warp_sum()]);
    check_at(&module, ALL, &[("warp_sum", &["SHFL", "BAR", "FADD"])]);
}
