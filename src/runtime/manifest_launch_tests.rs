//! Runtime: the manifest launcher's checks, without a GPU — expressions,
//! dims by name, requirements, buffers and limits, malformed manifests.

use super::*;

/// What `ptxgen examples/vector_copy.gph --emit manifest` writes, with a
/// requirement and a second dim added to exercise the checks.
const MANIFEST: &str = r#"{
  "manifest": 1, "source": "copy.gph", "target": "sm_80",
  "kernels": [{
    "name": "copy", "dims": ["B", "S"],
    "params": [
      {"name": "%src", "type": "u64", "points_to": "fp16", "element_bytes": 2,
       "elements": "2048*(B - 1) + 2048", "align_bytes": 16, "role": "input"},
      {"name": "%dst", "type": "u64", "points_to": "fp16", "element_bytes": 2,
       "elements": "2048*B", "align_bytes": 16, "role": "output"},
      {"name": "B", "type": "u32", "dim": true, "min": 1, "max": 4294967295},
      {"name": "S", "type": "u32", "dim": true}
    ],
    "grid": ["B/S", "1", "1"], "block": ["256", "1", "1"],
    "dynamic_shared_bytes": 65536,
    "requirements": [
      {"kind": "divisible", "value": "B", "divisor": "S", "written_at": "copy.gph:3:12"},
      {"kind": "positive", "value": "S - 1", "written_at": "copy.gph:4:9"}
    ],
    "limits": {"grid": [2147483647, 65535, 65535], "block_threads": 1024,
               "default_dynamic_shared_bytes": 49152},
    "work": {"kind": "bytes", "value": "4096*B"},
    "min_blocks_per_sm": null, "max_registers": null
  }]
}"#;

fn kernel() -> ManifestKernel {
    Manifest::parse(MANIFEST)
        .expect("parses")
        .kernel("copy")
        .expect("has copy")
        .clone()
}

fn slice(address: u64, bytes: usize) -> DeviceSlice {
    DeviceSlice { address, bytes }
}

const BYTES: usize = 2048 * 8 * 2;

fn prepare(
    buffers: &[(&str, DeviceSlice)],
    dims: &[(&str, u64)],
) -> Result<ManifestLaunch, String> {
    kernel().prepare(buffers, dims).map_err(|e| e.to_string())
}

fn good() -> [(&'static str, DeviceSlice); 2] {
    [
        ("%src", slice(0x1000, BYTES)),
        ("dst", slice(0x2000, BYTES)),
    ]
}

fn value(text: &str) -> Result<i64, String> {
    let dims = |name: &str| match name {
        "M" => Some(4096),
        "N" => Some(2048),
        "K_1" => Some(7),
        _ => None,
    };
    evaluate(text, &dims)
}

#[test]
fn expressions_follow_the_precedence_the_printer_assumes() {
    assert_eq!(value("(M/128)*(N/256)"), Ok(32 * 8));
    assert_eq!(value("K_1 + K_1*(M - 1)"), Ok(7 * 4096));
    assert_eq!(value("2*M*N*K_1"), Ok(2 * 4096 * 2048 * 7));
    assert_eq!(value("1 + 2*3 << 1"), Ok(14));
    assert_eq!(value("K_1 ^ 3 & 1"), Ok(7 ^ (3 & 1)));
    assert_eq!(value("(M >> 4) % 10 - 2"), Ok(256 % 10 - 2));
    assert_eq!(value("M - N - 1"), Ok(2047));
    assert_eq!(value("K_1 / 2 * 2"), Ok(6));
    assert_eq!(value("-7/2"), Ok(-4), "floor division");
    assert_eq!(value("-7 % 2"), Ok(1));
    assert_eq!(value("  42 "), Ok(42));
}

#[test]
fn expression_errors_say_why() {
    let error = |text: &str| value(text).unwrap_err();
    assert_eq!(error("M/Q"), "`M/Q`: `Q` has no value");
    assert_eq!(
        error("M/(N - 2048)"),
        "`M/(N - 2048)`: division by zero in 4096 / 0"
    );
    assert!(error("M*M*M*M*M*M").contains("overflow"));
    assert!(error("1 << 64").contains("overflow"));
    assert_eq!(error("(M + 1"), "`(M + 1`: a `(` is not closed");
    assert_eq!(error("M N"), "`M N`: unexpected `N`");
    assert_eq!(error("M < 2"), "`M < 2`: `<` alone is not an operator");
    assert_eq!(error("M +"), "`M +`: the expression ends early");
    assert_eq!(error("M.x"), "`M.x`: unexpected `.`");
}

#[test]
fn a_good_launch_gets_its_configuration_and_arguments_in_abi_order() {
    let launch = prepare(&good(), &[("S", 2), ("B", 8)]).expect("valid");
    assert_eq!(launch.config.grid, [4, 1, 1]);
    assert_eq!(launch.config.block, [256, 1, 1]);
    assert_eq!(launch.config.dynamic_shared_bytes, 65536);
    assert_eq!(
        launch.args,
        [
            KernelArg::Pointer(0x1000),
            KernelArg::Pointer(0x2000),
            KernelArg::U32(8),
            KernelArg::U32(2)
        ]
    );
}

#[test]
fn dims_are_checked_by_name() {
    let error = |dims: &[(&str, u64)]| prepare(&good(), dims).unwrap_err();
    assert_eq!(
        error(&[("B", 8)]),
        "kernel `copy`: dim `S`: no value given (the kernel's dims: B, S)"
    );
    assert_eq!(
        error(&[("B", 8), ("S", 2), ("N", 1)]),
        "kernel `copy`: dim `N`: not a dim of the kernel (its dims: B, S)"
    );
    assert_eq!(
        error(&[("B", 8), ("B", 8)]),
        "kernel `copy`: dim `B`: given twice"
    );
    assert_eq!(
        error(&[("B", 0), ("S", 2)]),
        "kernel `copy`: dim `B`: B = 0 is outside 1..=4294967295"
    );
    assert_eq!(
        error(&[("B", 1 << 32), ("S", 2)]),
        "kernel `copy`: dim `B`: B = 4294967296 is outside 1..=4294967295"
    );
}

#[test]
fn requirements_are_checked_and_named() {
    assert_eq!(
        prepare(&good(), &[("B", 7), ("S", 2)]).unwrap_err(),
        "kernel `copy`: B = 7 is not a multiple of S = 2 (required at copy.gph:3:12)"
    );
    assert_eq!(
        prepare(&good(), &[("B", 8), ("S", 1)]).unwrap_err(),
        "kernel `copy`: S - 1 = 0 is not at least 1 (required at copy.gph:4:9)"
    );
}

#[test]
fn buffers_are_checked_for_presence_size_and_alignment() {
    let dims = [("B", 8), ("S", 2)];
    let error = |buffers: &[(&str, DeviceSlice)]| prepare(buffers, &dims).unwrap_err();
    assert_eq!(
        error(&good()[..1]),
        "kernel `copy`: parameter `%dst`: no device memory given"
    );
    assert_eq!(
        error(&[good()[0], good()[1], ("%tmp", slice(0, 0))]),
        "kernel `copy`: parameter `%tmp`: not a tensor parameter of the kernel"
    );
    assert_eq!(
        error(&[good()[0], ("%dst", slice(0x2000, BYTES - 2))]),
        "kernel `copy`: parameter `%dst`: needs 32768 B (32 KiB) (`2048*B` = 16384 \
         elements of 2 B); the memory given has 32766 B"
    );
    assert_eq!(
        error(&[("%src", slice(0x1008, BYTES)), good()[1]]),
        "kernel `copy`: parameter `%src`: address 0x1008 is not a multiple of 16 bytes"
    );
}

#[test]
fn launches_outside_the_limits_are_refused() {
    let mut kernel = kernel();
    kernel.block[1] = "B".into();
    let dims = [("B", 8), ("S", 2)];
    assert_eq!(
        kernel.prepare(&good(), &dims).unwrap_err().to_string(),
        "kernel `copy`: a block of 2048 threads; CUDA allows 1024"
    );
    kernel.block[1] = "1".into();
    kernel.grid[1] = "B*100000".into();
    assert_eq!(
        kernel.prepare(&good(), &dims).unwrap_err().to_string(),
        "kernel `copy`: grid extent y = `B*100000` = 800000; CUDA allows 1 to 65535"
    );
    kernel.grid[1] = "B - 8".into();
    assert!(
        kernel
            .prepare(&good(), &dims)
            .unwrap_err()
            .to_string()
            .contains("grid extent y = `B - 8` = 0")
    );
}

#[test]
fn malformed_manifests_name_the_field() {
    let error = |text: &str| Manifest::parse(text).unwrap_err().to_string();
    assert!(error("{").starts_with("launch manifest: not JSON"));
    assert_eq!(
        error(r#"{"manifest": 2}"#),
        "launch manifest: version 2; this reader knows version 1"
    );
    let broken = MANIFEST.replace(r#""divisor": "S", "#, "");
    assert_eq!(
        error(&broken),
        "launch manifest: `kernels[0].requirements[0].divisor` is missing"
    );
    let broken = MANIFEST.replace(r#""element_bytes": 2,"#, r#""element_bytes": "2","#);
    assert_eq!(
        error(&broken),
        "launch manifest: `kernels[0].params[0].element_bytes` is not a non-negative integer"
    );
    let broken = MANIFEST.replace(r#"["256", "1", "1"]"#, r#"["256", "1"]"#);
    assert_eq!(
        error(&broken),
        "launch manifest: `kernels[0].block` does not have 3 entries"
    );
    let manifest = Manifest::parse(MANIFEST).unwrap();
    assert_eq!(
        manifest.kernel("gemm").unwrap_err().to_string(),
        "the launch manifest has no kernel `gemm` (it has: copy)"
    );
}

#[test]
fn older_manifests_without_limits_or_bounds_get_cuda_s() {
    let kernel = kernel();
    assert_eq!(kernel.max_grid, [i32::MAX as u64, 65535, 65535]);
    let ManifestParam::Dim { min, max, .. } = &kernel.params[3] else {
        panic!("S is a dim");
    };
    assert_eq!((*min, *max), (1, u64::from(u32::MAX)));
    let bare = MANIFEST.replace(r#""limits""#, r#""ignored""#);
    let kernel = Manifest::parse(&bare).unwrap().kernels[0].clone();
    assert_eq!(kernel.max_block_threads, 1024);
}
