//! Tests of the libcuda link stub that build.rs generates (feature `cuda`,
//! Linux): its soname, the entry points it defines, where it was installed,
//! and that a process which loaded it fails every call cleanly. These run on
//! any machine; the last one only asserts where the stub is what got loaded.
#![cfg(all(feature = "cuda", target_os = "linux"))]

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use graphene::runtime::{self, RuntimeError};

const STUB_DIR: &str = env!("GRAPHENE_CUDA_STUB_DIR");
const STUB_FILE: &str = "libcuda-graphene-stub.so";

fn stub_dir() -> PathBuf {
    PathBuf::from(STUB_DIR)
}

fn listed_symbols() -> BTreeSet<String> {
    let list = Path::new(env!("CARGO_MANIFEST_DIR")).join("build/cuda-driver-symbols.txt");
    std::fs::read_to_string(list)
        .expect("symbol list is readable")
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// The dynamic symbol table of a little-endian ELF64 shared object: the
/// soname and the names of the defined global functions.
struct DynamicSymbols {
    soname: Option<String>,
    functions: BTreeSet<String>,
}

fn read_dynamic_symbols(path: &Path) -> DynamicSymbols {
    let elf = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    assert_eq!((elf[4], elf[5]), (2, 1), "expected ELF64 little-endian");
    let u16_at = |at: usize| u16::from_le_bytes(elf[at..at + 2].try_into().unwrap()) as usize;
    let u32_at = |at: usize| u32::from_le_bytes(elf[at..at + 4].try_into().unwrap()) as usize;
    let u64_at = |at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().unwrap()) as usize;
    let c_string = |at: usize| {
        let end = elf[at..].iter().position(|&b| b == 0).unwrap();
        String::from_utf8_lossy(&elf[at..at + end]).into_owned()
    };
    // Section header: type at +4, link at +40, offset at +24, size at +32.
    let (table, entry, count) = (u64_at(0x28), u16_at(0x3A), u16_at(0x3C));
    let section = |index: usize| table + index * entry;
    let (mut soname, mut functions) = (None, BTreeSet::new());
    for index in 0..count {
        let header = section(index);
        let strings = u64_at(section(u32_at(header + 40)) + 24);
        let (offset, size) = (u64_at(header + 24), u64_at(header + 32));
        match u32_at(header + 4) {
            // SHT_DYNSYM: 24-byte entries; name +0, info +4, section index +6.
            11 => {
                for symbol in (offset..offset + size).step_by(24) {
                    let (info, defined) = (elf[symbol + 4], u16_at(symbol + 6) != 0);
                    let (binding, kind) = (info >> 4, info & 0xF);
                    if defined && binding == 1 && kind == 2 {
                        functions.insert(c_string(strings + u32_at(symbol)));
                    }
                }
            }
            // SHT_DYNAMIC: 16-byte entries; DT_SONAME is tag 14.
            6 => {
                for tag in (offset..offset + size).step_by(16) {
                    if u64_at(tag) == 14 {
                        soname = Some(c_string(strings + u64_at(tag + 8)));
                    }
                }
            }
            _ => {}
        }
    }
    DynamicSymbols { soname, functions }
}

#[test]
fn stub_carries_the_driver_soname_and_defines_every_listed_entry_point() {
    let symbols = read_dynamic_symbols(&stub_dir().join(STUB_FILE));
    assert_eq!(symbols.soname.as_deref(), Some("libcuda.so.1"));
    let listed = listed_symbols();
    assert!(
        listed.len() > 300,
        "the list covers cust_raw's bindings: {}",
        listed.len()
    );
    let missing: Vec<&String> = listed.difference(&symbols.functions).collect();
    assert!(missing.is_empty(), "not defined by the stub: {missing:?}");
    let extra: Vec<&String> = symbols.functions.difference(&listed).collect();
    assert!(extra.is_empty(), "defined but not listed: {extra:?}");
}

#[test]
fn run_time_fallback_is_installed_exactly_when_no_driver_was_found() {
    let link_name =
        std::fs::read_link(stub_dir().join("libcuda.so")).expect("libcuda.so is a link");
    assert_eq!(link_name, Path::new(STUB_FILE));
    let fallback = stub_dir().join("libcuda.so.1");
    let build_driver = env!("GRAPHENE_CUDA_BUILD_DRIVER");
    match env!("GRAPHENE_CUDA_STUB_FALLBACK") {
        "1" => {
            assert_eq!(std::fs::read_link(&fallback).unwrap(), Path::new(STUB_FILE));
            assert!(
                build_driver.is_empty(),
                "fallback despite a driver at {build_driver}"
            );
        }
        "0" => assert!(
            !fallback.exists(),
            "a fallback would hide the driver at {build_driver}"
        ),
        other => panic!("unexpected GRAPHENE_CUDA_STUB_FALLBACK={other}"),
    }
}

#[test]
fn a_process_that_loaded_the_stub_fails_every_call_cleanly() {
    let Some(library) = runtime::driver_library() else {
        panic!("the test binary links libcuda.so.1, so it must be mapped");
    };
    if !runtime::is_project_stub(&library) {
        // A real driver was loaded: there is no stub here to test.
        let detail = format!("libcuda.so.1 is {}", library.display());
        support::skip::skip("driver is not the project's stub", &detail);
        return;
    }
    // Our runtime: one-line "no CUDA driver" from both entry points.
    for error in [
        runtime::probe().unwrap_err(),
        runtime::Gpu::new().unwrap_err(),
    ] {
        assert!(matches!(error, RuntimeError::NoDriver { .. }), "{error}");
        assert!(!error.to_string().contains('\n'), "{error}");
        assert!(
            error.to_string().contains(&library.display().to_string()),
            "{error}"
        );
    }
    // cust's own wrappers reach the same entry points and get errors, not crashes.
    assert!(cust::init(cust::CudaFlags::empty()).is_err());
    assert!(cust::device::Device::num_devices().is_err());
    assert!(cust::device::Device::get_device(0).is_err());
}
