//! Runtime stage (feature `cuda`): the CUDA driver entry points we call, and
//! the naming of the codes they return.
//!
//! The functions are declared here rather than taken from `cust::sys`
//! because the bindings type every result as a Rust enum generated from the
//! CUDA 11.4 header: a newer driver returns codes that enum lacks (e.g. 46,
//! `CUDA_ERROR_DEVICE_UNAVAILABLE`), and an out-of-range enum value is
//! undefined behaviour. Here every result is a plain `c_int`. The symbols are
//! the same ones cust links against (`-lcuda`), so the link stub of
//! `build/cuda-driver-symbols.txt` defines them all; `cuTensorMapEncodeTiled`,
//! newer than cust's bindings (CUDA 12.0), is listed there by hand.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::path::PathBuf;

pub use cust::sys::{
    CUcontext, CUdevice, CUdevice_attribute, CUdeviceptr, CUevent, CUfunction,
    CUfunction_attribute, CUjit_option, CUmodule, CUstream,
};

/// The driver's result code, kept as the raw integer (0 is success).
pub type CuResult = c_int;

/// `CUDA_SUCCESS`.
pub const CUDA_SUCCESS: CuResult = 0;
/// `CUDA_ERROR_NO_DEVICE`: the driver is present but sees no GPU.
pub const CUDA_ERROR_NO_DEVICE: CuResult = 100;
/// `CUDA_ERROR_NOT_FOUND`: e.g. no function of that name in the module.
pub const CUDA_ERROR_NOT_FOUND: CuResult = 500;
/// `CUDA_ERROR_STUB_LIBRARY`: the library answering is a stub, not the driver.
pub const CUDA_ERROR_STUB_LIBRARY: CuResult = 34;

/// `CUtensorMapDataType`, `CUtensorMapInterleave`, `CUtensorMapSwizzle`,
/// `CUtensorMapL2promotion` and `CUtensorMapFloatOOBfill`: C enums, passed
/// as 32-bit integers.
pub type TensorMapEnum = c_uint;

/// `CU_TENSOR_MAP_DATA_TYPE_UINT32`.
pub const TENSOR_MAP_DATA_TYPE_UINT32: TensorMapEnum = 2;
/// `CU_TENSOR_MAP_DATA_TYPE_INT32`.
pub const TENSOR_MAP_DATA_TYPE_INT32: TensorMapEnum = 3;
/// `CU_TENSOR_MAP_DATA_TYPE_FLOAT16`.
pub const TENSOR_MAP_DATA_TYPE_FLOAT16: TensorMapEnum = 6;
/// `CU_TENSOR_MAP_DATA_TYPE_FLOAT32` (not the `_FTZ` form: a copy keeps
/// subnormals).
pub const TENSOR_MAP_DATA_TYPE_FLOAT32: TensorMapEnum = 7;
/// `CU_TENSOR_MAP_DATA_TYPE_BFLOAT16`.
pub const TENSOR_MAP_DATA_TYPE_BFLOAT16: TensorMapEnum = 9;
/// `CU_TENSOR_MAP_INTERLEAVE_NONE`.
pub const TENSOR_MAP_INTERLEAVE_NONE: TensorMapEnum = 0;
/// `CU_TENSOR_MAP_SWIZZLE_NONE`; `_32B`, `_64B`, `_128B` follow as 1, 2, 3.
pub const TENSOR_MAP_SWIZZLE_NONE: TensorMapEnum = 0;
/// `CU_TENSOR_MAP_SWIZZLE_32B`.
pub const TENSOR_MAP_SWIZZLE_32B: TensorMapEnum = 1;
/// `CU_TENSOR_MAP_SWIZZLE_64B`.
pub const TENSOR_MAP_SWIZZLE_64B: TensorMapEnum = 2;
/// `CU_TENSOR_MAP_SWIZZLE_128B`.
pub const TENSOR_MAP_SWIZZLE_128B: TensorMapEnum = 3;
/// `CU_TENSOR_MAP_L2_PROMOTION_L2_128B` (`NONE`, `_64B`, `_128B`, `_256B`
/// are 0 to 3).
pub const TENSOR_MAP_L2_PROMOTION_L2_128B: TensorMapEnum = 2;
/// `CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE`: elements outside the tensor land as
/// zero (the other value, 1, fills a NaN that FMA reads as zero).
pub const TENSOR_MAP_FLOAT_OOB_FILL_NONE: TensorMapEnum = 0;

/// `CUtensorMap`: the driver's opaque 128-byte tensor map. The driver writes
/// it only at a 64-byte aligned address, and a kernel takes it as a
/// `.param .align 64 .b8 [128]`, so the type carries that alignment.
#[repr(C, align(64))]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TensorMap {
    /// The encoded descriptor, as the driver wrote it.
    pub opaque: [u64; 16],
}

impl TensorMap {
    /// A map of zeros: what the driver writes into, never a valid map.
    pub const fn zeroed() -> TensorMap {
        TensorMap { opaque: [0; 16] }
    }
}

/// File name of the link stub that `build.rs` generates; the loaded library is
/// recognised as ours by it (see `loaded_driver_library`).
pub const STUB_FILE_NAME: &str = "libcuda-graphene-stub.so";

#[link(name = "cuda")]
unsafe extern "C" {
    pub fn cuInit(flags: c_uint) -> CuResult;
    pub fn cuDriverGetVersion(version: *mut c_int) -> CuResult;
    pub fn cuGetErrorName(code: CuResult, name: *mut *const c_char) -> CuResult;
    pub fn cuGetErrorString(code: CuResult, description: *mut *const c_char) -> CuResult;

    pub fn cuDeviceGetCount(count: *mut c_int) -> CuResult;
    pub fn cuDeviceGet(device: *mut CUdevice, ordinal: c_int) -> CuResult;
    pub fn cuDeviceGetName(name: *mut c_char, length: c_int, device: CUdevice) -> CuResult;
    pub fn cuDeviceGetAttribute(
        value: *mut c_int,
        attribute: CUdevice_attribute,
        device: CUdevice,
    ) -> CuResult;
    pub fn cuDeviceTotalMem_v2(bytes: *mut usize, device: CUdevice) -> CuResult;

    pub fn cuDevicePrimaryCtxRetain(context: *mut CUcontext, device: CUdevice) -> CuResult;
    pub fn cuDevicePrimaryCtxRelease_v2(device: CUdevice) -> CuResult;
    pub fn cuCtxSetCurrent(context: CUcontext) -> CuResult;
    pub fn cuCtxSynchronize() -> CuResult;

    pub fn cuModuleLoadDataEx(
        module: *mut CUmodule,
        image: *const c_void,
        option_count: c_uint,
        options: *mut CUjit_option,
        option_values: *mut *mut c_void,
    ) -> CuResult;
    pub fn cuModuleUnload(module: CUmodule) -> CuResult;
    pub fn cuModuleGetFunction(
        function: *mut CUfunction,
        module: CUmodule,
        name: *const c_char,
    ) -> CuResult;
    pub fn cuFuncGetAttribute(
        value: *mut c_int,
        attribute: CUfunction_attribute,
        function: CUfunction,
    ) -> CuResult;
    pub fn cuFuncSetAttribute(
        function: CUfunction,
        attribute: CUfunction_attribute,
        value: c_int,
    ) -> CuResult;
    #[allow(clippy::too_many_arguments)]
    pub fn cuLaunchKernel(
        function: CUfunction,
        grid_x: c_uint,
        grid_y: c_uint,
        grid_z: c_uint,
        block_x: c_uint,
        block_y: c_uint,
        block_z: c_uint,
        dynamic_shared_bytes: c_uint,
        stream: CUstream,
        parameters: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> CuResult;

    #[allow(clippy::too_many_arguments)]
    pub fn cuLaunchCooperativeKernel(
        function: CUfunction,
        grid_x: c_uint,
        grid_y: c_uint,
        grid_z: c_uint,
        block_x: c_uint,
        block_y: c_uint,
        block_z: c_uint,
        dynamic_shared_bytes: c_uint,
        stream: CUstream,
        parameters: *mut *mut c_void,
    ) -> CuResult;
    pub fn cuOccupancyMaxActiveBlocksPerMultiprocessor(
        blocks: *mut c_int,
        function: CUfunction,
        block_size: c_int,
        dynamic_shared_bytes: usize,
    ) -> CuResult;

    /// CUDA 12.0. Every array is read, never kept: the map holds copies.
    #[allow(clippy::too_many_arguments)]
    pub fn cuTensorMapEncodeTiled(
        tensor_map: *mut TensorMap,
        data_type: TensorMapEnum,
        rank: c_uint,
        global_address: *mut c_void,
        global_dims: *const u64,
        global_strides: *const u64,
        box_dims: *const c_uint,
        element_strides: *const c_uint,
        interleave: TensorMapEnum,
        swizzle: TensorMapEnum,
        l2_promotion: TensorMapEnum,
        oob_fill: TensorMapEnum,
    ) -> CuResult;

    pub fn cuMemAlloc_v2(pointer: *mut CUdeviceptr, bytes: usize) -> CuResult;
    pub fn cuMemFree_v2(pointer: CUdeviceptr) -> CuResult;
    pub fn cuMemcpyHtoD_v2(
        destination: CUdeviceptr,
        source: *const c_void,
        bytes: usize,
    ) -> CuResult;
    pub fn cuMemcpyDtoH_v2(destination: *mut c_void, source: CUdeviceptr, bytes: usize)
    -> CuResult;
    pub fn cuMemsetD8_v2(destination: CUdeviceptr, value: u8, count: usize) -> CuResult;
    pub fn cuMemsetD16_v2(destination: CUdeviceptr, value: u16, count: usize) -> CuResult;
    pub fn cuMemsetD32_v2(destination: CUdeviceptr, value: u32, count: usize) -> CuResult;

    pub fn cuEventCreate(event: *mut CUevent, flags: c_uint) -> CuResult;
    pub fn cuEventRecord(event: CUevent, stream: CUstream) -> CuResult;
    pub fn cuEventSynchronize(event: CUevent) -> CuResult;
    pub fn cuEventElapsedTime(milliseconds: *mut f32, start: CUevent, end: CUevent) -> CuResult;
    pub fn cuEventDestroy_v2(event: CUevent) -> CuResult;
}

/// A failed driver call's code with its name and the driver's description,
/// resolved when the error is made so that printing it never calls the driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverCode {
    /// The raw `CUresult`, never 0.
    pub code: CuResult,
    /// `CUDA_ERROR_…`, from the driver when it knows the code, else from our
    /// table of the codes in CUDA 12's `cuda.h`, else `CUDA_ERROR_<code>`.
    pub name: String,
    /// The driver's one-line description; empty when the driver gave none.
    /// (Boxed to keep `RuntimeError` small enough to return by value.)
    pub description: Box<str>,
}

impl DriverCode {
    /// Names `code`, asking the driver first (it knows codes newer than us).
    pub fn new(code: CuResult) -> DriverCode {
        let name = driver_string(code, cuGetErrorName)
            .or_else(|| known_error_name(code).map(str::to_owned))
            .unwrap_or_else(|| format!("CUDA_ERROR_{code}"));
        let description = driver_string(code, cuGetErrorString)
            .unwrap_or_default()
            .into();
        DriverCode {
            code,
            name,
            description,
        }
    }

    /// Whether the error poisons the context: after it, every call fails until
    /// the process exits (the driver's "sticky" errors).
    pub fn is_sticky(&self) -> bool {
        matches!(self.code, 700 | 714..=719)
    }
}

impl std::fmt::Display for DriverCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.code)?;
        if !self.description.is_empty() {
            write!(f, ": {}", self.description.trim())?;
        }
        if self.is_sticky() {
            write!(f, " [sticky: the context is unusable from here on]")?;
        }
        Ok(())
    }
}

/// Turns a driver result into `Ok` or the named code.
pub fn check(code: CuResult) -> Result<(), DriverCode> {
    if code == CUDA_SUCCESS {
        Ok(())
    } else {
        Err(DriverCode::new(code))
    }
}

type ErrorTextFn = unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult;

fn driver_string(code: CuResult, lookup: ErrorTextFn) -> Option<String> {
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: the driver writes a pointer to a static NUL-terminated string,
    // or fails and leaves `text` null (the stub always fails).
    let result = unsafe { lookup(code, &mut text) };
    if result != CUDA_SUCCESS || text.is_null() {
        return None;
    }
    // SAFETY: checked non-null above; the string is static in the driver.
    Some(
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// Names of the driver API's error codes (CUDA 12.x `cuda.h`), used when the
/// loaded library cannot name a code itself, as the stub cannot.
pub fn known_error_name(code: CuResult) -> Option<&'static str> {
    let name = match code {
        0 => "CUDA_SUCCESS",
        1 => "CUDA_ERROR_INVALID_VALUE",
        2 => "CUDA_ERROR_OUT_OF_MEMORY",
        3 => "CUDA_ERROR_NOT_INITIALIZED",
        4 => "CUDA_ERROR_DEINITIALIZED",
        5 => "CUDA_ERROR_PROFILER_DISABLED",
        6 => "CUDA_ERROR_PROFILER_NOT_INITIALIZED",
        7 => "CUDA_ERROR_PROFILER_ALREADY_STARTED",
        8 => "CUDA_ERROR_PROFILER_ALREADY_STOPPED",
        34 => "CUDA_ERROR_STUB_LIBRARY",
        46 => "CUDA_ERROR_DEVICE_UNAVAILABLE",
        100 => "CUDA_ERROR_NO_DEVICE",
        101 => "CUDA_ERROR_INVALID_DEVICE",
        102 => "CUDA_ERROR_DEVICE_NOT_LICENSED",
        200 => "CUDA_ERROR_INVALID_IMAGE",
        201 => "CUDA_ERROR_INVALID_CONTEXT",
        202 => "CUDA_ERROR_CONTEXT_ALREADY_CURRENT",
        205 => "CUDA_ERROR_MAP_FAILED",
        206 => "CUDA_ERROR_UNMAP_FAILED",
        207 => "CUDA_ERROR_ARRAY_IS_MAPPED",
        208 => "CUDA_ERROR_ALREADY_MAPPED",
        209 => "CUDA_ERROR_NO_BINARY_FOR_GPU",
        210 => "CUDA_ERROR_ALREADY_ACQUIRED",
        211 => "CUDA_ERROR_NOT_MAPPED",
        212 => "CUDA_ERROR_NOT_MAPPED_AS_ARRAY",
        213 => "CUDA_ERROR_NOT_MAPPED_AS_POINTER",
        214 => "CUDA_ERROR_ECC_UNCORRECTABLE",
        215 => "CUDA_ERROR_UNSUPPORTED_LIMIT",
        216 => "CUDA_ERROR_CONTEXT_ALREADY_IN_USE",
        217 => "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
        218 => "CUDA_ERROR_INVALID_PTX",
        219 => "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT",
        220 => "CUDA_ERROR_NVLINK_UNCORRECTABLE",
        221 => "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
        222 => "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
        223 => "CUDA_ERROR_JIT_COMPILATION_DISABLED",
        224 => "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY",
        225 => "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC",
        226 => "CUDA_ERROR_CONTAINED",
        300 => "CUDA_ERROR_INVALID_SOURCE",
        301 => "CUDA_ERROR_FILE_NOT_FOUND",
        302 => "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND",
        303 => "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
        304 => "CUDA_ERROR_OPERATING_SYSTEM",
        400 => "CUDA_ERROR_INVALID_HANDLE",
        401 => "CUDA_ERROR_ILLEGAL_STATE",
        402 => "CUDA_ERROR_LOSSY_QUERY",
        500 => "CUDA_ERROR_NOT_FOUND",
        600 => "CUDA_ERROR_NOT_READY",
        700 => "CUDA_ERROR_ILLEGAL_ADDRESS",
        701 => "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
        702 => "CUDA_ERROR_LAUNCH_TIMEOUT",
        703 => "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING",
        704 => "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
        705 => "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
        708 => "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE",
        709 => "CUDA_ERROR_CONTEXT_IS_DESTROYED",
        710 => "CUDA_ERROR_ASSERT",
        711 => "CUDA_ERROR_TOO_MANY_PEERS",
        712 => "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
        713 => "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
        714 => "CUDA_ERROR_HARDWARE_STACK_ERROR",
        715 => "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        716 => "CUDA_ERROR_MISALIGNED_ADDRESS",
        717 => "CUDA_ERROR_INVALID_ADDRESS_SPACE",
        718 => "CUDA_ERROR_INVALID_PC",
        719 => "CUDA_ERROR_LAUNCH_FAILED",
        720 => "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
        800 => "CUDA_ERROR_NOT_PERMITTED",
        801 => "CUDA_ERROR_NOT_SUPPORTED",
        802 => "CUDA_ERROR_SYSTEM_NOT_READY",
        803 => "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
        804 => "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
        805 => "CUDA_ERROR_MPS_CONNECTION_FAILED",
        806 => "CUDA_ERROR_MPS_RPC_FAILURE",
        807 => "CUDA_ERROR_MPS_SERVER_NOT_READY",
        808 => "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED",
        809 => "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED",
        810 => "CUDA_ERROR_MPS_CLIENT_TERMINATED",
        811 => "CUDA_ERROR_CDP_NOT_SUPPORTED",
        812 => "CUDA_ERROR_CDP_VERSION_MISMATCH",
        900 => "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
        901 => "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
        902 => "CUDA_ERROR_STREAM_CAPTURE_MERGE",
        903 => "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
        904 => "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
        905 => "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
        906 => "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
        907 => "CUDA_ERROR_CAPTURED_EVENT",
        908 => "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
        909 => "CUDA_ERROR_TIMEOUT",
        910 => "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
        911 => "CUDA_ERROR_EXTERNAL_DEVICE",
        912 => "CUDA_ERROR_INVALID_CLUSTER_SIZE",
        913 => "CUDA_ERROR_FUNCTION_NOT_LOADED",
        914 => "CUDA_ERROR_INVALID_RESOURCE_TYPE",
        915 => "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION",
        999 => "CUDA_ERROR_UNKNOWN",
        _ => return None,
    };
    Some(name)
}

/// The file this process mapped for the CUDA driver library, read from
/// `/proc/self/maps`: what the dynamic loader resolved `libcuda.so.1` to.
/// `None` off Linux or when no such library is mapped.
pub fn loaded_driver_library() -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    driver_library_in_maps(&maps)
}

/// The first mapped path whose file name is a libcuda (the driver's or ours).
pub fn driver_library_in_maps(maps: &str) -> Option<PathBuf> {
    maps.lines()
        // Fields: address, permissions, offset, device, inode, path.
        .filter_map(|line| line.split_whitespace().nth(5))
        .map(PathBuf::from)
        .find(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("libcuda.so") || name == STUB_FILE_NAME)
        })
}

/// Whether `path` names this project's link stub rather than a driver.
pub fn is_project_stub(path: &std::path::Path) -> bool {
    path.file_name().is_some_and(|name| name == STUB_FILE_NAME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_yield_the_driver_path_and_skip_lookalikes() {
        let maps = "\
7f00-7f10 r-xp 00000000 08:01 42 /usr/lib/x86_64-linux-gnu/libcudart.so.12
7f10-7f20 r-xp 00000000 08:01 43 /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15
7f20-7f30 rw-p 00000000 00:00 0
";
        assert_eq!(
            driver_library_in_maps(maps),
            Some(PathBuf::from(
                "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"
            ))
        );
    }

    #[test]
    fn maps_lines_recognise_the_project_stub() {
        let maps = "7f00-7f10 r-xp 00000000 08:01 42 /t/out/cuda-stub/libcuda-graphene-stub.so\n";
        let path = driver_library_in_maps(maps).expect("stub is a driver library");
        assert!(is_project_stub(&path));
        assert!(!is_project_stub(std::path::Path::new(
            "/usr/lib64/libcuda.so.1"
        )));
        assert_eq!(
            driver_library_in_maps("7f00-7f10 r-xp 0 0 0 [vdso]\n"),
            None
        );
    }

    #[test]
    fn codes_are_named_even_without_a_driver() {
        // Under the stub the driver cannot name codes; the table must.
        assert_eq!(DriverCode::new(700).name, "CUDA_ERROR_ILLEGAL_ADDRESS");
        assert_eq!(
            DriverCode::new(CUDA_ERROR_STUB_LIBRARY).name,
            "CUDA_ERROR_STUB_LIBRARY"
        );
        assert!(DriverCode::new(700).is_sticky());
        assert!(!DriverCode::new(CUDA_ERROR_NO_DEVICE).is_sticky());
        assert_eq!(known_error_name(12345), None);
    }

    #[test]
    fn a_tensor_map_is_128_bytes_at_a_64_byte_boundary() {
        // What `cuTensorMapEncodeTiled` writes and the `.param` holds.
        assert_eq!(std::mem::size_of::<TensorMap>(), 128);
        assert_eq!(std::mem::align_of::<TensorMap>(), 64);
    }

    #[test]
    fn check_passes_success_and_names_failures() {
        assert_eq!(check(CUDA_SUCCESS), Ok(()));
        let error = check(218).unwrap_err();
        assert_eq!(error.code, 218);
        assert!(
            error
                .to_string()
                .starts_with("CUDA_ERROR_INVALID_PTX (218)"),
            "{error}"
        );
    }
}
