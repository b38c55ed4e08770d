//! Runtime stage (feature `cuda`): the GPU itself — driver initialisation,
//! the description of device 0, its primary context, synchronisation, and the
//! attribution of asynchronous faults to the launch that caused them.

use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_int};
use std::fmt;
use std::path::{Path, PathBuf};

use super::driver::{
    self, CUDA_ERROR_NO_DEVICE, CUDA_ERROR_STUB_LIBRARY, CUDA_SUCCESS, CUcontext, CUdevice,
    CUdevice_attribute, CuResult, DriverCode,
};
use super::error::{Bytes, RuntimeError};
use super::launch::LaunchConfig;

/// What a report needs to say about the GPU and the driver that ran a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device's ordinal (always 0 here).
    pub ordinal: i32,
    /// The marketing name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// (major, minor), e.g. (9, 0).
    pub compute_capability: (u32, u32),
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Global memory.
    pub total_memory_bytes: u64,
    /// Shared memory one block may use after opting in (dynamic + static).
    pub max_shared_per_block_optin: u32,
    /// Shared memory per SM.
    pub shared_per_sm: u32,
    /// 32-bit registers per SM.
    pub registers_per_sm: u32,
    /// The SM clock's peak (kHz).
    pub clock_khz: u32,
    /// The memory clock's peak (kHz).
    pub memory_clock_khz: u32,
    /// The memory bus's width in bits.
    pub memory_bus_bits: u32,
    /// The CUDA version the driver implements, (major, minor), e.g. (12, 4).
    pub driver_version: (u32, u32),
    /// The file the loader resolved `libcuda.so.1` to, when known.
    pub driver_library: Option<PathBuf>,
}

impl DeviceInfo {
    /// The `sm_XY` target of this device, as `.target` writes it.
    pub fn arch(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let gib = self.total_memory_bytes as f64 / f64::from(1u32 << 30);
        let (major, minor) = self.driver_version;
        write!(
            f,
            "{} ({}, {} SMs, {gib:.1} GiB, {} shared per block), CUDA driver {major}.{minor}",
            self.name,
            self.arch(),
            self.sm_count,
            Bytes(u64::from(self.max_shared_per_block_optin)),
        )?;
        if let Some(library) = &self.driver_library {
            write!(f, " ({})", library.display())?;
        }
        Ok(())
    }
}

/// Initialises the driver and describes device 0, without creating a
/// context: the cheap check `ptxgen` makes before promising to run anything.
/// `NoDriver` / `NoDevice` mean this machine cannot run kernels.
pub fn probe() -> Result<DeviceInfo, RuntimeError> {
    // SAFETY: cuInit has no pointer arguments; 0 is its only valid flag.
    let code = unsafe { driver::cuInit(0) };
    match code {
        CUDA_SUCCESS => {}
        CUDA_ERROR_STUB_LIBRARY => {
            return Err(RuntimeError::NoDriver {
                reason: stub_reason(),
            });
        }
        CUDA_ERROR_NO_DEVICE => {
            return Err(RuntimeError::NoDevice {
                reason: format!("cuInit: {}", DriverCode::new(code)),
            });
        }
        _ => return Err(RuntimeError::driver("cuInit", DriverCode::new(code))),
    }
    let mut count: c_int = 0;
    // SAFETY: `count` is a valid out-pointer.
    call("cuDeviceGetCount", unsafe {
        driver::cuDeviceGetCount(&mut count)
    })?;
    if count < 1 {
        return Err(RuntimeError::NoDevice {
            reason: "the driver reports 0 devices".to_owned(),
        });
    }
    device_info(0)
}

fn call(name: &'static str, code: CuResult) -> Result<(), RuntimeError> {
    driver::check(code).map_err(|code| RuntimeError::driver(name, code))
}

fn device_info(ordinal: i32) -> Result<DeviceInfo, RuntimeError> {
    let mut device: CUdevice = 0;
    // SAFETY: `device` is a valid out-pointer.
    call("cuDeviceGet", unsafe {
        driver::cuDeviceGet(&mut device, ordinal)
    })?;
    let mut name: [c_char; 256] = [0; 256];
    // SAFETY: the driver writes at most `len` bytes, NUL-terminated.
    call("cuDeviceGetName", unsafe {
        driver::cuDeviceGetName(name.as_mut_ptr(), 256, device)
    })?;
    // SAFETY: NUL-terminated within the buffer (the driver truncates).
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let attribute = |attribute: CUdevice_attribute| -> Result<u32, RuntimeError> {
        let mut value: c_int = 0;
        // SAFETY: `value` is a valid out-pointer; `device` came from cuDeviceGet.
        call("cuDeviceGetAttribute", unsafe {
            driver::cuDeviceGetAttribute(&mut value, attribute, device)
        })?;
        Ok(u32::try_from(value).unwrap_or(0))
    };
    use CUdevice_attribute as A;
    let major = attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    let sm_count = attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    let max_shared_per_block_optin =
        attribute(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
    let shared_per_sm = attribute(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?;
    let registers_per_sm = attribute(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?;
    let clock_khz = attribute(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?;
    let memory_clock_khz = attribute(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?;
    let memory_bus_bits = attribute(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?;
    let mut total: usize = 0;
    // SAFETY: `total` is a valid out-pointer.
    call("cuDeviceTotalMem_v2", unsafe {
        driver::cuDeviceTotalMem_v2(&mut total, device)
    })?;
    let mut version: c_int = 0;
    // SAFETY: `version` is a valid out-pointer.
    call("cuDriverGetVersion", unsafe {
        driver::cuDriverGetVersion(&mut version)
    })?;
    let version = u32::try_from(version).unwrap_or(0);
    Ok(DeviceInfo {
        ordinal,
        name,
        compute_capability: (major, minor),
        sm_count,
        total_memory_bytes: total as u64,
        max_shared_per_block_optin,
        shared_per_sm,
        registers_per_sm,
        clock_khz,
        memory_clock_khz,
        memory_bus_bits,
        driver_version: (version / 1000, version % 1000 / 10),
        driver_library: driver::loaded_driver_library(),
    })
}

/// The one line that says which stub answered and what to do about it.
fn stub_reason() -> String {
    let Some(library) = driver::loaded_driver_library() else {
        return "libcuda.so.1 is a stub library (CUDA_ERROR_STUB_LIBRARY)".to_owned();
    };
    if !driver::is_project_stub(&library) {
        return format!(
            "{} is a stub library, not the NVIDIA driver",
            library.display()
        );
    }
    let advice = match installed_driver() {
        Some(driver) => format!(
            "but this machine has one ({}): rebuild here, or put its folder first in LD_LIBRARY_PATH",
            driver.display()
        ),
        None => "install the NVIDIA driver or run on a GPU machine".to_owned(),
    };
    format!(
        "libcuda.so.1 resolved to this project's link stub {} (no driver was found when it was \
         built); {advice}",
        library.display()
    )
}

/// A driver library in the usual system folders, to tell "this machine has no
/// driver" from "the stub hid the driver" (a binary built elsewhere).
fn installed_driver() -> Option<PathBuf> {
    [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/lib/wsl/lib",
        "/usr/local/nvidia/lib64",
    ]
    .iter()
    .map(|dir| Path::new(dir).join("libcuda.so.1"))
    .find(|path| {
        path.exists() && !driver::is_project_stub(&path.canonicalize().unwrap_or_default())
    })
}

/// The launch whose faults a later synchronising call would report.
#[derive(Clone, Debug)]
pub(crate) struct PendingLaunch {
    pub kernel: String,
    pub config: LaunchConfig,
}

/// Device 0 with its primary context current on this thread. Buffers,
/// modules and kernels borrow it, so it outlives them all. Not `Send`: the
/// context is current only on the thread that made the `Gpu`.
#[derive(Debug)]
pub struct Gpu {
    device: CUdevice,
    context: CUcontext,
    info: DeviceInfo,
    /// The last launch not yet followed by a successful synchronisation.
    pending: RefCell<Option<PendingLaunch>>,
}

impl Gpu {
    /// Initialises the driver and makes device 0's primary context current.
    /// Errors say "no CUDA driver", "no CUDA device" or name the driver's code.
    pub fn new() -> Result<Gpu, RuntimeError> {
        let info = probe()?;
        let mut device: CUdevice = 0;
        // SAFETY: `device` is a valid out-pointer; the driver is initialised.
        call("cuDeviceGet", unsafe {
            driver::cuDeviceGet(&mut device, info.ordinal)
        })?;
        let mut context: CUcontext = std::ptr::null_mut();
        // SAFETY: `context` is a valid out-pointer.
        call("cuDevicePrimaryCtxRetain", unsafe {
            driver::cuDevicePrimaryCtxRetain(&mut context, device)
        })?;
        let gpu = Gpu {
            device,
            context,
            info,
            pending: RefCell::new(None),
        };
        // SAFETY: `context` was just retained; `gpu` releases it on drop.
        call("cuCtxSetCurrent", unsafe {
            driver::cuCtxSetCurrent(gpu.context)
        })?;
        Ok(gpu)
    }

    /// The device's description.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Waits for all work; a fault is reported against the last launch.
    pub fn synchronize(&self) -> Result<(), RuntimeError> {
        // SAFETY: no arguments; our context is current.
        let code = unsafe { driver::cuCtxSynchronize() };
        self.outcome("cuCtxSynchronize", code)?;
        self.pending.replace(None);
        Ok(())
    }

    /// The launch a fault reported now would belong to, if any.
    pub(crate) fn pending_launch(&self) -> Option<PendingLaunch> {
        self.pending.borrow().clone()
    }

    /// Remembers a launch so that a later fault can name it.
    pub(crate) fn launched(&self, kernel: &str, config: LaunchConfig) {
        self.pending.replace(Some(PendingLaunch {
            kernel: kernel.to_owned(),
            config,
        }));
    }

    /// `Ok` for success; otherwise the error, attributed to the pending
    /// launch when the code is one a kernel fault produces.
    pub(crate) fn outcome(&self, call: &'static str, code: CuResult) -> Result<(), RuntimeError> {
        let Err(code) = driver::check(code) else {
            return Ok(());
        };
        let pending = self.pending.borrow().clone();
        match pending {
            Some(PendingLaunch { kernel, config }) if is_kernel_fault(code.code) => {
                Err(RuntimeError::Launch {
                    kernel,
                    config,
                    call,
                    code,
                })
            }
            _ => Err(RuntimeError::driver(call, code)),
        }
    }
}

/// Codes a running kernel causes and a later call reports: illegal address,
/// timeout, device-side assert, the sticky hardware exceptions, launch
/// failure. (Refusals at launch time, like out of resources, are not here:
/// `cuLaunchKernel` reports those for the kernel being launched.)
fn is_kernel_fault(code: CuResult) -> bool {
    matches!(code, 700 | 702 | 710 | 714..=719)
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: balances the retain in `new`. An error here (say, after a
        // sticky fault) leaves nothing to clean up that exit would not.
        let _ = unsafe { driver::cuDevicePrimaryCtxRelease_v2(self.device) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> DeviceInfo {
        DeviceInfo {
            ordinal: 0,
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: (9, 0),
            sm_count: 132,
            total_memory_bytes: 85_045_870_592,
            max_shared_per_block_optin: 232_448,
            shared_per_sm: 233_472,
            registers_per_sm: 65_536,
            clock_khz: 1_980_000,
            memory_clock_khz: 2_619_000,
            memory_bus_bits: 5120,
            driver_version: (12, 4),
            driver_library: Some(PathBuf::from("/usr/lib/x86_64-linux-gnu/libcuda.so.1")),
        }
    }

    #[test]
    fn device_info_reads_as_one_report_line() {
        assert_eq!(
            h100().to_string(),
            "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.2 GiB, 232448 B (227 KiB) shared per \
             block), CUDA driver 12.4 (/usr/lib/x86_64-linux-gnu/libcuda.so.1)"
        );
        assert_eq!(h100().arch(), "sm_90");
    }

    #[test]
    fn kernel_faults_are_told_from_api_misuse() {
        assert!(is_kernel_fault(700) && is_kernel_fault(719) && is_kernel_fault(702));
        assert!(!is_kernel_fault(1) && !is_kernel_fault(218) && !is_kernel_fault(34));
        assert!(
            !is_kernel_fault(701),
            "out of resources is the launching kernel's"
        );
    }
}
