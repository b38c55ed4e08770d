//! The built-in template catalogue: every file parses, the instruction forms
//! the lowering relies on are there, and what they declare is consistent.

use graphene::ptx::catalogue::BUILTIN_FILES;
use graphene::ptx::target::min_ptx_for_target;
use graphene::ptx::template_file::parse_family;
use graphene::ptx::{Catalogue, PtxError, Requirement};

#[test]
fn every_builtin_template_file_parses() {
    for (file, text) in BUILTIN_FILES {
        let family = parse_family(file, text).unwrap_or_else(|error| panic!("{error}"));
        assert!(!family.templates.is_empty(), "{file} has no entries");
        assert!(!family.description.is_empty(), "{file} has no description");
    }
    let catalogue = Catalogue::builtin().unwrap_or_else(|error| panic!("{error}"));
    let families: Vec<&str> = catalogue
        .families()
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(
        families,
        [
            "int", "control", "sreg", "memory", "async", "ldmatrix", "mma", "wgmma", "float",
            "half", "warp", "grid", "tma"
        ]
    );
}

#[test]
fn every_template_file_in_the_folder_is_compiled_in() {
    let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/ptx-templates");
    let mut on_disk: Vec<String> = std::fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".ptxt"))
        .collect();
    on_disk.sort();
    let mut compiled: Vec<String> = BUILTIN_FILES
        .iter()
        .map(|(file, _)| file.to_string())
        .collect();
    compiled.sort();
    assert_eq!(on_disk, compiled);
}

/// The forms the task list of the back end names, by catalogue name.
const REQUIRED: &[&str] = &[
    "mov.u32",
    "mov.u64",
    "add.u32",
    "add.u64",
    "sub.s32",
    "mul.lo.u32",
    "mad.lo.u32",
    "mul.wide.u32",
    "shl.b32",
    "shr.u32",
    "and.b32",
    "or.b32",
    "xor.b32",
    "div.u32",
    "rem.u32",
    "min.s32",
    "setp.lt.u32",
    "setp.ge.s32",
    "selp.b32",
    "bra",
    "bra.uni",
    "ret",
    "cvt.u64.u32",
    "cvt.u32.u64",
    "mov.u32/tid.x",
    "mov.u32/ctaid.x",
    "mov.u32/laneid",
    "mov.u32/ssym",
    "cvta.to.shared.u64",
    "cvta.to.global.u64",
    "ld.param.u64",
    "ld.param.u32",
    "ld.global.b16",
    "ld.global.b32",
    "ld.global.f32",
    "ld.global.v2.b32",
    "ld.global.v4.b32",
    "ld.global.v4.f32",
    "ld.global.v4.u32",
    "st.global.v4.f32",
    "st.global.v2.b16",
    "ld.shared.b16",
    "ld.shared.v4.b32",
    "st.shared.v4.b32",
    "st.shared.f32",
    "cp.async.cg.shared.global/16",
    "cp.async.ca.shared.global/4",
    "cp.async.ca.shared.global/8",
    "cp.async.commit_group",
    "cp.async.wait_group",
    "ldmatrix.sync.aligned.m8n8.x1.shared.b16",
    "ldmatrix.sync.aligned.m8n8.x2.shared.b16",
    "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
    "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16",
    "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
    "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
    "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
    "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32",
    "add.f32",
    "mul.f32",
    "fma.rn.f32",
    "max.f32",
    "ex2.approx.f32",
    "rsqrt.approx.f32",
    "lg2.approx.f32",
    "rcp.approx.f32",
    "tanh.approx.f32",
    "sqrt.rn.f32",
    "rcp.rn.f32",
    "div.rn.f32",
    "setp.lt.f32",
    "selp.f32",
    "fma.rn.bf16x2",
    "add.f16x2",
    "mul.f16x2",
    "fma.rn.f16x2",
    "max.f16x2",
    "shfl.sync.bfly.b32",
    "bar.sync",
    "cvt.rn.f16x2.f32",
    "cvt.rn.bf16x2.f32",
    "cvt.f32.f16",
    "cvt.rn.f16.f32",
    "mov.b32/pack",
    "mov.b32/unpack",
];

#[test]
fn the_forms_the_lowering_needs_are_present() {
    let catalogue = Catalogue::builtin().unwrap();
    let missing: Vec<&&str> = REQUIRED
        .iter()
        .filter(|name| catalogue.get(name).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "missing from the catalogue: {missing:?}"
    );
}

#[test]
fn requirements_are_at_least_the_floor_and_name_a_version_that_knows_the_target() {
    for template in Catalogue::builtin().unwrap().templates() {
        let needs = template.requirement;
        assert!(
            needs.sm >= Requirement::FLOOR.sm && needs.ptx >= Requirement::FLOOR.ptx,
            "{} needs {needs}, below the floor",
            template.name
        );
        assert!(
            needs.ptx >= min_ptx_for_target(needs.target_name()),
            "{} needs {needs}, but that PTX version cannot name {}",
            template.name,
            needs.target_name()
        );
    }
}

#[test]
fn tensor_core_and_async_forms_declare_their_generation() {
    let catalogue = Catalogue::builtin().unwrap();
    let needs = |name: &str| catalogue.get(name).unwrap().requirement.to_string();
    assert_eq!(
        needs("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"),
        "sm_75 and PTX ISA 6.5"
    );
    assert_eq!(
        needs("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
        "sm_80 and PTX ISA 7.0"
    );
    assert_eq!(
        needs("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32"),
        "sm_70 and PTX ISA 6.4"
    );
    assert_eq!(
        needs("cp.async.cg.shared.global/16"),
        "sm_80 and PTX ISA 7.0"
    );
    assert_eq!(needs("max.f16x2"), "sm_80 and PTX ISA 7.0");
    assert_eq!(
        needs("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"),
        "sm_90a and PTX ISA 8.0"
    );
    assert_eq!(
        needs("wgmma.wait_group.sync.aligned"),
        "sm_90a and PTX ISA 8.0"
    );
    assert_eq!(
        needs("fence.proxy.async.shared::cta"),
        "sm_90 and PTX ISA 8.0"
    );
    assert_eq!(needs("add.u32"), "sm_70 and PTX ISA 6.0");
}

#[test]
fn written_slots_are_registers_and_stores_write_nothing() {
    let catalogue = Catalogue::builtin().unwrap();
    let store = catalogue.get("st.global.v4.f32").unwrap();
    assert!(store.slots.iter().all(|slot| !slot.written));
    let mma = catalogue
        .get("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
        .unwrap();
    let written: Vec<&str> = mma
        .slots
        .iter()
        .filter(|slot| slot.written)
        .map(|slot| slot.name.as_str())
        .collect();
    assert_eq!(written, ["d"]);
    assert_eq!(mma.signature(), "d:f*4 a:r*4 b:r*2 c:f*4");
    let unpack = catalogue.get("mov.b32/unpack").unwrap();
    assert_eq!(unpack.signature(), "lo:h|rs hi:h|rs s:r");
    assert!(unpack.slots[0].written && unpack.slots[1].written && !unpack.slots[2].written);
}

#[test]
fn an_unknown_name_suggests_near_ones() {
    let error = Catalogue::builtin()
        .unwrap()
        .instantiate("add.u31", Vec::new())
        .unwrap_err();
    match &error {
        PtxError::UnknownTemplate { name, nearest } => {
            assert_eq!(name, "add.u31");
            assert_eq!(nearest.first().map(String::as_str), Some("add.u32"));
        }
        other => panic!("unexpected error {other}"),
    }
    assert!(
        error
            .to_string()
            .starts_with("no PTX template named `add.u31`; similar: add.u32")
    );
}
