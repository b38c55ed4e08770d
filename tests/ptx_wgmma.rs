//! The `wgmma` family in a realistic kernel and the `sm_90a` target around
//! it: a warpgroup fills a shared tile, fences it into the async proxy, and
//! runs the whole protocol (fence, two mma_async on one accumulator,
//! commit, wait) — built through the model and the catalogue, written with
//! `.target sm_90a`, assembled by ptxas with `-arch=sm_90a` without spills,
//! warnings or serialised wgmma, its SASS holding each step. And the
//! refusals: any other target, and operands of the wrong shape.

mod ptx_support;
mod support;

use graphene::ptx::tools;
use graphene::ptx::{
    Arch, Catalogue, Entry, EntryBuilder, Module, Operand, ParamType, PtxError, Reg, RegClass,
    TargetName, imm,
};
use ptx_support::{check_module, mnemonics, tools_available};

/// The 128B-swizzle, K-major descriptor bits above the start address:
/// leading byte offset 1 (unused by swizzled K-major), stride byte offset
/// 1024 B (encoded 64), layout 1 (128B swizzle) in bits 62–63.
const DESCRIPTOR_CONSTANT: i64 = (1 << 16) | (64 << 32) | (1 << 62);

const MMA_N64_F16: &str = "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16";

fn emit(b: &mut EntryBuilder<'_>, name: &str, operands: Vec<Operand>) {
    b.emit(name, operands)
        .unwrap_or_else(|error| panic!("{name}: {error}"));
}

/// One warpgroup (128 threads): each thread copies 4 bytes of its input into
/// a 1024-aligned shared tile; the tile is fenced for the async proxy and
/// shared by a barrier; then two k-slices of a 64x64 product accumulate
/// into 32 fp32 registers per thread (the first overwriting, the second
/// accumulating under a predicate), and each thread stores its accumulators.
fn protocol_kernel() -> Entry {
    let mut b = EntryBuilder::new("wgmma_protocol").unwrap();
    b.max_threads(128).unwrap();
    let input = b.param("input", ParamType::U64).unwrap();
    let output = b.param("output", ParamType::U64).unwrap();
    let tile = b.shared_array("tile", 8192, Some(1024)).unwrap();
    let [raw_in, raw_out, global_in, global_out] = [0; 4].map(|_| b.reg(RegClass::B64));
    emit(
        &mut b,
        "ld.param.u64",
        vec![raw_in.into(), input.at(0).into()],
    );
    emit(
        &mut b,
        "ld.param.u64",
        vec![raw_out.into(), output.at(0).into()],
    );
    emit(
        &mut b,
        "cvta.to.global.u64",
        vec![global_in.into(), raw_in.into()],
    );
    emit(
        &mut b,
        "cvta.to.global.u64",
        vec![global_out.into(), raw_out.into()],
    );
    let tid = b.reg(RegClass::B32);
    emit(&mut b, "mov.u32/tid.x", vec![tid.into()]);
    let (mine_in, mine_out) = (b.reg(RegClass::B64), b.reg(RegClass::B64));
    let (in_offset, out_offset) = (b.reg(RegClass::B64), b.reg(RegClass::B64));
    emit(
        &mut b,
        "mul.wide.u32",
        vec![in_offset.into(), tid.into(), imm(4)],
    );
    emit(
        &mut b,
        "mul.wide.u32",
        vec![out_offset.into(), tid.into(), imm(128)],
    );
    emit(
        &mut b,
        "add.u64",
        vec![mine_in.into(), global_in.into(), in_offset.into()],
    );
    emit(
        &mut b,
        "add.u64",
        vec![mine_out.into(), global_out.into(), out_offset.into()],
    );

    // Fill the tile: thread t writes bytes 4t..4t+3.
    let (base, byte, slot, value) = (
        b.reg(RegClass::B32),
        b.reg(RegClass::B32),
        b.reg(RegClass::B32),
        b.reg(RegClass::B32),
    );
    emit(&mut b, "mov.u32/ssym", vec![base.into(), (&tile).into()]);
    emit(&mut b, "shl.b32", vec![byte.into(), tid.into(), imm(2)]);
    emit(
        &mut b,
        "add.u32",
        vec![slot.into(), base.into(), byte.into()],
    );
    emit(
        &mut b,
        "ld.global.b32",
        vec![value.into(), mine_in.at(0).into()],
    );
    emit(
        &mut b,
        "st.shared.b32",
        vec![slot.at(0).into(), value.into()],
    );
    emit(&mut b, "fence.proxy.async.shared::cta", Vec::new());
    emit(&mut b, "bar.sync", vec![imm(0)]);

    // The descriptor of the tile, and of its second k16 slice (+32 B).
    let [wide, units, start, first, second] = [0; 5].map(|_| b.reg(RegClass::B64));
    emit(&mut b, "cvt.u64.u32", vec![wide.into(), base.into()]);
    emit(&mut b, "shr.u64", vec![units.into(), wide.into(), imm(4)]);
    emit(
        &mut b,
        "and.b64",
        vec![start.into(), units.into(), imm(0x3FFF)],
    );
    emit(
        &mut b,
        "or.b64",
        vec![first.into(), start.into(), imm(DESCRIPTOR_CONSTANT)],
    );
    emit(&mut b, "add.u64", vec![second.into(), first.into(), imm(2)]);

    let accumulate = b.reg(RegClass::Pred);
    emit(
        &mut b,
        "setp.ne.u32",
        vec![accumulate.into(), tid.into(), imm(999)],
    );
    let d: Vec<Reg> = b.regs(RegClass::F32, 32);
    emit(&mut b, "wgmma.fence.sync.aligned", Vec::new());
    let mma = |scale_d: Operand, descriptor: Reg| -> Vec<Operand> {
        vec![
            d.clone().into(),
            descriptor.into(),
            descriptor.into(),
            scale_d,
            imm(1),
            imm(1),
            imm(0),
            imm(0),
        ]
    };
    emit(&mut b, MMA_N64_F16, mma(imm(0), first));
    emit(&mut b, MMA_N64_F16, mma(accumulate.into(), second));
    emit(&mut b, "wgmma.commit_group.sync.aligned", Vec::new());
    emit(&mut b, "wgmma.wait_group.sync.aligned", vec![imm(0)]);
    for (index, reg) in d.iter().enumerate() {
        let address = mine_out.at(4 * index as i64).into();
        emit(&mut b, "st.global.f32", vec![address, (*reg).into()]);
    }
    emit(&mut b, "ret", Vec::new());
    b.finish().unwrap()
}

fn protocol_module(requested: Option<Arch>) -> Module {
    let mut module = Module::new(requested);
    module.add_entry(protocol_kernel()).unwrap();
    module
}

#[test]
fn the_protocol_is_written_for_sm_90a_with_ptx_8_0() {
    let module = protocol_module(None);
    let target = module.target().unwrap();
    assert_eq!(target.name().to_string(), "sm_90a");
    assert!(target.arch_specific);
    let text = module.to_ptx().unwrap();
    assert!(text.contains("\n.version 8.0\n.target sm_90a\n"), "{text}");
    assert!(
        text.contains("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%f1, %f2, "),
        "{text}"
    );
    assert!(text.contains("%f32}, %rd"), "{text}");
    // The same module asked for sm_90a is unchanged.
    assert_eq!(protocol_module(Some(Arch::Sm90a)).to_ptx().unwrap(), text);
}

#[test]
fn the_protocol_assembles_at_sm_90a_with_every_step_in_its_sass() {
    if !tools_available() {
        return;
    }
    let module = protocol_module(None);
    let expected = [(
        "wgmma_protocol",
        mnemonics(&[
            "FENCE.VIEW.ASYNC",
            "BAR",
            "WARPGROUP.ARRIVE",
            "HGMMA.64x64x16.F32",
            "WARPGROUP.DEPBAR",
        ]),
    )];
    let checked = check_module(&module, Arch::Sm90a, &expected);
    assert_eq!(checked.assembly.arch.to_string(), "sm_90a");
    // The two mma_async stay two, and ptxas found the pipeline well formed:
    // no note that it serialised them or had to insert its own fences.
    let sass = checked.sass.expect("nvdisasm reads sm_90a cubins");
    let opcodes = &sass[0].1;
    let products = opcodes
        .iter()
        .filter(|opcode| tools::opcode_matches(opcode, "HGMMA"))
        .count();
    assert_eq!(products, 2, "{opcodes:?}");
    let log = &checked.assembly.log;
    assert!(!log.contains("serialized"), "{log}");
    assert!(!log.contains("injected"), "{log}");
}

#[test]
fn sm_90a_ptx_needs_sm_90a_from_ptxas() {
    if !tools_available() {
        return;
    }
    let text = protocol_module(None).to_ptx().unwrap();
    let refused = tools::assemble(&text, Arch::Sm90).unwrap_err().to_string();
    assert!(refused.contains("-arch=sm_90 "), "{refused}");
    let name: TargetName = "sm_90a".parse().unwrap();
    assert!(tools::assemble(&text, name).is_ok());
}

#[test]
fn every_other_target_is_refused_naming_the_first_instruction_it_lacks() {
    // sm_90 has the async-proxy fence but not wgmma: the arch-specific error.
    let error = protocol_module(Some(Arch::Sm90)).to_ptx().unwrap_err();
    assert!(
        matches!(&error, PtxError::ArchSpecific { instruction, requested: Arch::Sm90, .. }
            if instruction == "wgmma.fence.sync.aligned"),
        "{error}"
    );
    // Below Hopper the fence, which comes first, is already missing.
    for arch in [Arch::Sm70, Arch::Sm80, Arch::Sm86, Arch::Sm89] {
        let error = protocol_module(Some(arch)).to_ptx().unwrap_err();
        assert!(
            matches!(&error, PtxError::ArchTooLow { instruction, requested, .. }
                if instruction == "fence.proxy.async.shared::cta" && *requested == arch),
            "{arch}: {error}"
        );
    }
    let mut fence_only = EntryBuilder::new("fence_only").unwrap();
    emit(&mut fence_only, "fence.proxy.async.shared::cta", Vec::new());
    emit(&mut fence_only, "ret", Vec::new());
    let mut module = Module::new(Some(Arch::Sm89));
    module.add_entry(fence_only.finish().unwrap()).unwrap();
    assert_eq!(
        module.to_ptx().unwrap_err().to_string(),
        "instruction `fence.proxy.async.shared::cta` needs sm_90 and PTX ISA 8.0, but the \
         requested target is sm_89"
    );
    // At sm_90 the fence is an ordinary instruction, and PTX 8.0 is written.
    module.requested = Some(Arch::Sm90);
    let text = module.to_ptx().unwrap();
    assert!(text.contains("\n.version 8.0\n.target sm_90\n"), "{text}");
}

#[test]
fn accumulators_must_have_n_over_2_registers() {
    let catalogue = Catalogue::builtin().unwrap();
    let mut b = EntryBuilder::new("wrong").unwrap();
    let descriptor = b.reg(RegClass::B64);
    let wrong_count = b.regs(RegClass::F32, 31);
    let operands = |d: Vec<Reg>| -> Vec<Operand> {
        let mut operands = vec![d.into(), descriptor.into(), descriptor.into()];
        operands.extend([imm(1), imm(1), imm(1), imm(0), imm(0)]);
        operands
    };
    let message = catalogue
        .instantiate(MMA_N64_F16, operands(wrong_count))
        .unwrap_err()
        .to_string();
    assert_eq!(
        message,
        format!(
            "operand `d` of `{MMA_N64_F16}` must be f*32, but vector {{%f1, %f2, …, %f31}} \
             (31 registers of class f) was given"
        )
    );
    let widest = "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16";
    let all = b.regs(RegClass::F32, 128);
    let instruction = catalogue.instantiate(widest, operands(all)).unwrap();
    assert_eq!(instruction.defs().len(), 128);
    assert_eq!(
        catalogue.get(widest).unwrap().signature(),
        "d:f*128 a:rd b:rd scale_d:p|imm scale_a:imm scale_b:imm trans_a:imm trans_b:imm"
    );
}
