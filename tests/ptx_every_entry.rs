//! Every catalogue entry, instantiated in a kernel of its own, assembles with
//! ptxas at every project architecture that has it (sm_70, sm_80, sm_90;
//! the arch-specific `wgmma` entries at sm_90a alone, which also takes every
//! sm_90 entry) — without spills — and its SASS holds the opcodes the entry
//! declares. The kernels are synthesised from the slot kinds: read operands
//! are loaded from global memory and written ones stored back, so ptxas
//! cannot drop the instruction.

mod ptx_support;
mod support;

use std::sync::Arc;

use graphene::ptx::{
    Arch, Catalogue, Entry, EntryBuilder, Module, Operand, ParamType, Reg, RegClass, SlotKind,
    Symbol, Template, imm,
};
use ptx_support::{check_module, tools_available};

/// Loads and stores of one kernel, with the addresses they use.
struct Kernel<'c> {
    builder: EntryBuilder<'c>,
    input: Reg,
    output: Reg,
    shared: Symbol,
    shared_base: Reg,
    counter: Symbol,
    param: Symbol,
    map: Symbol,
    next_load: i64,
    next_store: i64,
}

impl<'c> Kernel<'c> {
    fn new(name: &str, catalogue: &'c Catalogue) -> Kernel<'c> {
        let mut builder = EntryBuilder::with_catalogue(name, catalogue).unwrap();
        let param_in = builder.param("input", ParamType::U64).unwrap();
        let param_out = builder.param("output", ParamType::U64).unwrap();
        let map = builder.param("map", ParamType::TensorMap).unwrap();
        let shared = builder.shared_array("tile", 2048, None).unwrap();
        let counter = builder
            .global_variable(&format!("{name}_counter"), 4, 4)
            .unwrap();
        let raw_in = builder.reg(RegClass::B64);
        let raw_out = builder.reg(RegClass::B64);
        let input = builder.reg(RegClass::B64);
        let output = builder.reg(RegClass::B64);
        let shared_base = builder.reg(RegClass::B32);
        builder
            .emit("ld.param.u64", vec![raw_in.into(), param_in.at(0).into()])
            .unwrap();
        builder
            .emit("ld.param.u64", vec![raw_out.into(), param_out.at(0).into()])
            .unwrap();
        let global_in = builder.reg(RegClass::B64);
        let global_out = builder.reg(RegClass::B64);
        builder
            .emit("cvta.to.global.u64", vec![global_in.into(), raw_in.into()])
            .unwrap();
        builder
            .emit(
                "cvta.to.global.u64",
                vec![global_out.into(), raw_out.into()],
            )
            .unwrap();
        // Each thread reads and writes its own 1 KiB, so values differ per
        // lane: ptxas folds warp operations on uniform values (a shuffle of
        // a value every lane holds is that value).
        let tid = builder.reg(RegClass::B32);
        let stride = builder.reg(RegClass::B64);
        builder.emit("mov.u32/tid.x", vec![tid.into()]).unwrap();
        builder
            .emit("mul.wide.u32", vec![stride.into(), tid.into(), imm(1024)])
            .unwrap();
        builder
            .emit(
                "add.u64",
                vec![input.into(), global_in.into(), stride.into()],
            )
            .unwrap();
        builder
            .emit(
                "add.u64",
                vec![output.into(), global_out.into(), stride.into()],
            )
            .unwrap();
        builder
            .emit("mov.u32/ssym", vec![shared_base.into(), (&shared).into()])
            .unwrap();
        Kernel {
            builder,
            input,
            output,
            shared,
            shared_base,
            counter,
            param: param_in,
            map,
            next_load: 0,
            next_store: 0,
        }
    }

    /// A register of `class` holding a value loaded from global memory.
    fn loaded(&mut self, class: RegClass) -> Reg {
        let offset = self.next_load;
        self.next_load += 8;
        let address = self.input.at(offset).into();
        let b = &mut self.builder;
        let reg = b.reg(class);
        match class {
            RegClass::B16 | RegClass::F16 => b.emit("ld.global.b16", vec![reg.into(), address]),
            RegClass::B32 => b.emit("ld.global.b32", vec![reg.into(), address]),
            RegClass::F32 => b.emit("ld.global.f32", vec![reg.into(), address]),
            RegClass::B64 => b.emit("ld.global.b64", vec![reg.into(), address]),
            RegClass::Pred => {
                let word = b.reg(RegClass::B32);
                b.emit("ld.global.b32", vec![word.into(), address]).unwrap();
                b.emit("setp.ne.u32", vec![reg.into(), word.into(), imm(0)])
            }
        }
        .unwrap();
        reg
    }

    /// Stores `reg` to global memory.
    fn store(&mut self, reg: Reg) {
        let offset = self.next_store;
        self.next_store += 8;
        let address = self.output.at(offset).into();
        let b = &mut self.builder;
        match reg.class {
            RegClass::B16 | RegClass::F16 => b.emit("st.global.b16", vec![address, reg.into()]),
            RegClass::B32 => b.emit("st.global.b32", vec![address, reg.into()]),
            RegClass::F32 => b.emit("st.global.f32", vec![address, reg.into()]),
            RegClass::B64 => b.emit("st.global.b64", vec![address, reg.into()]),
            RegClass::Pred => {
                let word = b.reg(RegClass::B32);
                b.emit("selp.b32", vec![word.into(), imm(1), imm(0), reg.into()])
                    .unwrap();
                b.emit("st.global.b32", vec![address, word.into()])
            }
        }
        .unwrap();
    }

    /// An operand for a slot of `kind`; registers it writes are fresh.
    fn operand(&mut self, kind: SlotKind, written: bool) -> Operand {
        match kind {
            SlotKind::Reg(class) if written => self.builder.reg(class).into(),
            SlotKind::Reg(class) => self.loaded(class).into(),
            SlotKind::Vector(class, count) if written => self.builder.regs(class, count).into(),
            SlotKind::Vector(class, count) => {
                let regs: Vec<Reg> = (0..count).map(|_| self.loaded(class)).collect();
                regs.into()
            }
            SlotKind::Imm => imm(0),
            SlotKind::F32Imm => Operand::f32(1.0),
            SlotKind::Label => self.builder.label("next").into(),
            SlotKind::GlobalAddress => self.output.at(512).into(),
            SlotKind::SharedAddress => self.shared_base.at(256).into(),
            SlotKind::ParamAddress => self.param.at(0).into(),
            SlotKind::SharedSymbol => (&self.shared).into(),
            SlotKind::GlobalSymbol => (&self.counter).into(),
            SlotKind::ParamSymbol => (&self.map).into(),
        }
    }

    fn finish(mut self, template: &Arc<Template>) -> Entry {
        let mut operands = Vec::new();
        for slot in &template.slots {
            // wgmma's input scales are 1 or -1 (-1 negates); 0 is refused.
            let operand = match slot.kinds[0] {
                SlotKind::Imm if slot.name.starts_with("scale_") => imm(1),
                // `setmaxnreg` takes 24 to 256 registers, a multiple of 8.
                SlotKind::Imm if slot.name == "regs" => imm(40),
                kind => self.operand(kind, slot.written),
            };
            operands.push(operand);
        }
        let instruction = template.instantiate(operands.clone()).unwrap();
        self.builder.push(instruction).unwrap();
        for operand in &operands {
            if let Operand::Label(label) = operand {
                self.builder.place(label).unwrap();
            }
        }
        for (slot, operand) in template.slots.iter().zip(&operands) {
            if slot.written {
                for reg in operand.registers() {
                    self.store(reg);
                }
            }
        }
        self.builder.emit("ret", Vec::new()).unwrap();
        self.builder.finish().unwrap()
    }
}

fn entry_name(index: usize, template: &Template) -> String {
    let cleaned: String = template
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("t{index:03}_{cleaned}")
}

fn check_all_at(arch: Arch) {
    if !tools_available() {
        return;
    }
    let catalogue = Catalogue::builtin().unwrap();
    let mut module = Module::new(Some(arch));
    let mut expected = Vec::new();
    for (index, template) in catalogue.templates().enumerate() {
        if !arch.meets(template.requirement) {
            continue;
        }
        let name = entry_name(index, template);
        module
            .add_entry(Kernel::new(&name, catalogue).finish(template))
            .unwrap();
        let sass = template.expected_sass(arch.sm());
        if !sass.is_empty() {
            expected.push((name, sass.to_vec()));
        }
    }
    let expected: Vec<(&str, Vec<String>)> = expected
        .iter()
        .map(|(name, sass)| (name.as_str(), sass.clone()))
        .collect();
    let checked = check_module(&module, arch, &expected);
    assert_eq!(checked.assembly.entries.len(), module.entries.len());
    println!(
        "{arch}: {} entries assembled, {} SASS expectations checked",
        module.entries.len(),
        if checked.sass.is_some() {
            expected.len()
        } else {
            0
        }
    );
}

#[test]
fn every_entry_assembles_at_sm_70() {
    check_all_at(Arch::Sm70);
}

#[test]
fn every_entry_assembles_at_sm_80() {
    check_all_at(Arch::Sm80);
}

#[test]
fn every_entry_assembles_at_sm_90() {
    check_all_at(Arch::Sm90);
}

#[test]
fn every_entry_assembles_at_sm_90a() {
    check_all_at(Arch::Sm90a);
}

#[test]
fn arch_specific_entries_are_exactly_the_wgmma_family_and_setmaxnreg_and_sm_90_refuses_them() {
    let catalogue = Catalogue::builtin().unwrap();
    let specific: Vec<&Arc<Template>> = catalogue
        .templates()
        .filter(|template| template.requirement.arch_specific)
        .collect();
    // 32 widths × 2 input types × A from shared memory or from registers
    // (`/regA`), the fence, the wait and the commit; `setmaxnreg.inc` and
    // `.dec`.
    assert_eq!(specific.len(), 133);
    let register_a = specific
        .iter()
        .filter(|t| t.name.ends_with("/regA"))
        .count();
    assert_eq!(register_a, 64);
    assert!(
        specific
            .iter()
            .all(|template| template.family == "wgmma" || template.name.starts_with("setmaxnreg."))
    );
    for template in specific {
        let mut module = Module::new(Some(Arch::Sm90));
        module
            .add_entry(Kernel::new("k", catalogue).finish(template))
            .unwrap();
        let message = module.to_ptx().unwrap_err().to_string();
        let expected = format!(
            "instruction `{}` exists only on sm_90a (PTX ISA 8.0), but the requested target is \
             sm_90; request sm_90a instead (its code runs only on compute capability 9.0)",
            template.name
        );
        assert_eq!(message, expected);
        module.requested = None;
        let text = module.to_ptx().unwrap();
        assert!(text.contains(".version 8.0\n.target sm_90a\n"), "{text}");
    }
}

#[test]
fn the_sass_check_catches_a_missing_opcode() {
    // Guards the harness itself: an expectation that cannot hold must fail.
    if !tools_available() {
        return;
    }
    let catalogue = Catalogue::builtin().unwrap();
    let template = catalogue.get("add.f32").unwrap();
    let mut module = Module::new(None);
    module
        .add_entry(Kernel::new("adds", catalogue).finish(template))
        .unwrap();
    let outcome = std::panic::catch_unwind(|| {
        check_module(&module, Arch::Sm80, &[("adds", vec!["HMMA".to_string()])]);
    });
    assert!(
        outcome.is_err(),
        "an add.f32 kernel must not pass as containing HMMA"
    );
}
