//! Runtime: the manifest launcher's checks, without a GPU — dims by name,
//! requirements, buffers, tensor maps and limits, malformed manifests.

use super::*;
use crate::runtime::{ElementType, TensorMap, TensorMapDescription};

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
    assert!(launch.tensor_maps.is_empty());
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

/// A copy through a TMA tensor map of `%A` (`[M, K]`, K innermost), as
/// `launch::manifest` writes one.
const TMA_MANIFEST: &str = r#"{
  "manifest": 1, "source": "tma.gph", "target": "sm_90a",
  "kernels": [{
    "name": "tma_copy", "dims": ["M", "K"],
    "params": [
      {"name": "%A", "type": "u64", "points_to": "fp16", "element_bytes": 2,
       "elements": "K*M", "align_bytes": 16, "role": "input"},
      {"name": "%B", "type": "u64", "points_to": "fp16", "element_bytes": 2,
       "elements": "K*M", "align_bytes": 16, "role": "output"},
      {"name": "M", "type": "u32", "dim": true, "min": 1, "max": 4294967295},
      {"name": "K", "type": "u32", "dim": true, "min": 1, "max": 4294967295},
      {"name": "tmap0_A", "type": "tensor_map", "tensor_map": 0}
    ],
    "grid": ["M/128", "1", "1"], "block": ["128", "1", "1"],
    "dynamic_shared_bytes": 16384, "cooperative": false,
    "tensor_maps": [
      {"tensor": "%A", "scalar": "fp16", "element_bytes": 2, "extents": ["K", "M"],
       "strides_bytes": ["K*2"], "box": [64, 128], "swizzle_bytes": 128}
    ],
    "requirements": [],
    "work": {"kind": "bytes", "value": "4*K*M"},
    "min_blocks_per_sm": null, "max_registers": null
  }]
}"#;

fn tma_kernel(text: &str) -> Result<ManifestKernel, String> {
    let manifest = Manifest::parse(text).map_err(|e| e.to_string())?;
    Ok(manifest.kernels[0].clone())
}

fn tma_buffers(bytes: usize) -> [(&'static str, DeviceSlice); 2] {
    [("A", slice(0x10000, bytes)), ("B", slice(0x20000, bytes))]
}

#[test]
fn a_tensor_map_is_read_and_prepared_after_the_dims() {
    let kernel = tma_kernel(TMA_MANIFEST).expect("parses");
    assert_eq!(
        kernel.params[4],
        ManifestParam::TensorMap {
            name: "tmap0_A".into(),
            index: 0
        }
    );
    assert_eq!(kernel.dims(), ["M", "K"]);
    let launch = kernel
        .prepare(&tma_buffers(256 * 64 * 2), &[("M", 256), ("K", 64)])
        .expect("valid");
    assert_eq!(
        launch.args,
        [
            KernelArg::Pointer(0x10000),
            KernelArg::Pointer(0x20000),
            KernelArg::U32(256),
            KernelArg::U32(64)
        ]
    );
    assert_eq!(
        launch.tensor_maps,
        [PreparedTensorMap {
            position: 4,
            address: 0x10000,
            description: TensorMapDescription {
                tensor: "%A".into(),
                element: ElementType::F16,
                extents: vec![64, 256],
                strides_bytes: vec![128],
                boxes: vec![64, 128],
                swizzle_bytes: 128,
            },
        }]
    );
}

#[test]
fn encoded_maps_take_their_places_in_the_argument_list() {
    let mut map = TensorMap::zeroed();
    map.opaque[0] = 42;
    let description = TensorMapDescription {
        tensor: "%A".into(),
        element: ElementType::F32,
        extents: vec![4],
        strides_bytes: vec![],
        boxes: vec![4],
        swizzle_bytes: 0,
    };
    let prepared = |position| PreparedTensorMap {
        position,
        address: 0,
        description: description.clone(),
    };
    let launch = ManifestLaunch {
        config: LaunchConfig::linear(1, 32),
        args: vec![KernelArg::Pointer(1), KernelArg::U32(2)],
        tensor_maps: vec![prepared(1), prepared(3)],
    };
    assert_eq!(
        launch.with_tensor_maps(&[map, TensorMap::zeroed()]),
        [
            KernelArg::Pointer(1),
            KernelArg::TensorMap(map),
            KernelArg::U32(2),
            KernelArg::TensorMap(TensorMap::zeroed())
        ]
    );
}

#[test]
fn a_tensor_map_the_driver_would_refuse_is_refused_first() {
    let kernel = tma_kernel(TMA_MANIFEST).expect("parses");
    // K = 100: rows of 200 bytes, which no map may stride by.
    let error = kernel
        .prepare(&tma_buffers(256 * 100 * 2), &[("M", 256), ("K", 100)])
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "kernel `tma_copy`: tensor map of `%A`: the stride of dim 1 is 200 B, not a multiple \
         of 16 B"
    );
    let wide = TMA_MANIFEST.replace("[64, 128]", "[128, 128]");
    let error = tma_kernel(&wide)
        .unwrap()
        .prepare(&tma_buffers(256 * 64 * 2), &[("M", 256), ("K", 64)])
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "kernel `tma_copy`: tensor map of `%A`: box[0] is 128 fp16 elements = 256 B, wider \
         than the 128 B swizzle span"
    );
    let negative = TMA_MANIFEST.replace(r#"["K", "M"]"#, r#"["K - 100", "M"]"#);
    let error = tma_kernel(&negative)
        .unwrap()
        .prepare(&tma_buffers(256 * 64 * 2), &[("M", 256), ("K", 64)])
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "kernel `tma_copy`: tensor map 0 of `%A`: `K - 100` = -36 is negative"
    );
    let error = kernel
        .prepare(&[("B", slice(0x20000, 1 << 20))], &[("M", 256), ("K", 64)])
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "kernel `tma_copy`: parameter `%A`: no device memory given"
    );
}

#[test]
fn malformed_tensor_maps_name_the_field() {
    let error = |text: &str| tma_kernel(text).unwrap_err();
    assert_eq!(
        error(&TMA_MANIFEST.replace(r#""tensor_map": 0}"#, r#""tensor_map": 1}"#)),
        "launch manifest: `kernels[0].params[4].tensor_map` is 1; the kernel has 1 tensor maps"
    );
    assert_eq!(
        error(&TMA_MANIFEST.replace(r#"{"tensor": "%A""#, r#"{"tensor": "%Q""#)),
        "launch manifest: `kernels[0].tensor_maps[0].tensor` is `%Q`, which is no tensor \
         parameter"
    );
    assert_eq!(
        error(&TMA_MANIFEST.replace(r#""scalar": "fp16""#, r#""scalar": "fp8""#)),
        "launch manifest: `kernels[0].tensor_maps[0].scalar` is `fp8`, not fp16, bf16, fp32, \
         i32 or u32"
    );
    assert_eq!(
        error(&TMA_MANIFEST.replace(
            r#""scalar": "fp16", "element_bytes": 2"#,
            r#""scalar": "fp16", "element_bytes": 4"#
        )),
        "launch manifest: `kernels[0].tensor_maps[0].element_bytes` is 4, but fp16 has 2 bytes"
    );
    assert_eq!(
        error(&TMA_MANIFEST.replace(r#""strides_bytes": ["K*2"]"#, r#""strides_bytes": [32]"#)),
        "launch manifest: `kernels[0].tensor_maps[0].strides_bytes` holds a non-string"
    );
    // Manifests older than tensor maps have none.
    assert!(kernel().tensor_maps.is_empty());
}
