//! Runtime stage (feature `cuda`): PTX modules and their kernels — JIT
//! loading with the compiler's logs captured, kernel lookup, attributes, and
//! launching with arguments checked against the `.entry` parameter list.

use std::cell::Cell;
use std::ffi::{CString, c_int, c_uint, c_void};

use super::driver::{self, CUfunction, CUfunction_attribute, CUjit_option, CUmodule};
use super::error::{Bytes, RuntimeError};
use super::gpu::Gpu;
use super::launch::{
    DEFAULT_SHARED_LIMIT_BYTES, EntrySignature, KernelArg, LaunchConfig, entry_signatures,
    parameter_pointers,
};

/// Size of each JIT log buffer; ptxas reports are far shorter.
const JIT_LOG_BYTES: usize = 64 * 1024;

/// A PTX module JIT-compiled for the GPU, unloaded on drop.
#[derive(Debug)]
pub struct Module<'g> {
    gpu: &'g Gpu,
    raw: CUmodule,
    entries: Vec<EntrySignature>,
    info_log: String,
}

impl Gpu {
    /// JIT-compiles `ptx` for this GPU. On failure the error carries the
    /// JIT's error and info logs; on success the info log (ptxas's register
    /// and spill report, verbose) stays available from `Module::info_log`.
    pub fn load_module(&self, ptx: &str) -> Result<Module<'_>, RuntimeError> {
        let source = CString::new(ptx).map_err(|e| {
            RuntimeError::Input(format!(
                "PTX text has a NUL byte at offset {}",
                e.nul_position()
            ))
        })?;
        let mut info_log = vec![0u8; JIT_LOG_BYTES];
        let mut error_log = vec![0u8; JIT_LOG_BYTES];
        let mut options = [
            CUjit_option::CU_JIT_INFO_LOG_BUFFER,
            CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            CUjit_option::CU_JIT_LOG_VERBOSE,
        ];
        // Sizes and flags travel by value in the pointer slots (the driver's
        // convention for this call); it writes back the bytes each log used.
        let mut values: [*mut c_void; 5] = [
            info_log.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(JIT_LOG_BYTES),
            error_log.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(JIT_LOG_BYTES),
            std::ptr::without_provenance_mut(1),
        ];
        let mut raw: CUmodule = std::ptr::null_mut();
        // SAFETY: `source` is NUL-terminated; the option and value arrays have
        // the same length; the log buffers outlive the call and are as large as
        // the sizes given.
        let code = unsafe {
            driver::cuModuleLoadDataEx(
                &mut raw,
                source.as_ptr().cast(),
                options.len() as c_uint,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        let info_log = log_text(&info_log, values[1].addr());
        let error_log = log_text(&error_log, values[3].addr());
        if let Err(error) = self.outcome("cuModuleLoadDataEx", code) {
            return Err(match error {
                RuntimeError::Driver { code, .. } => RuntimeError::Jit {
                    code,
                    error_log,
                    info_log,
                },
                other => other,
            });
        }
        Ok(Module {
            gpu: self,
            raw,
            entries: entry_signatures(ptx),
            info_log,
        })
    }
}

/// The log's text: at most `used` bytes (clamped to the buffer), up to the
/// first NUL, lossily decoded.
fn log_text(buffer: &[u8], used: usize) -> String {
    let bytes = &buffer[..used.min(buffer.len())];
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).trim_end().to_owned()
}

impl<'g> Module<'g> {
    /// The GPU the module was loaded on.
    pub(crate) fn gpu(&self) -> &'g Gpu {
        self.gpu
    }

    /// The JIT's info log of the successful compilation.
    pub fn info_log(&self) -> &str {
        &self.info_log
    }

    /// The `.entry` signatures read from the PTX text.
    pub fn entries(&self) -> &[EntrySignature] {
        &self.entries
    }

    /// Looks up the kernel `name` and launches it, waiting for it to finish
    /// (`Kernel::launch`); for repeated launches keep the `Kernel` instead.
    pub fn launch(
        &self,
        name: &str,
        config: &LaunchConfig,
        args: &[KernelArg],
    ) -> Result<(), RuntimeError> {
        self.kernel(name)?.launch(config, args)
    }

    /// The kernel named `name`.
    pub fn kernel(&self, name: &str) -> Result<Kernel<'_>, RuntimeError> {
        let not_found = || RuntimeError::KernelNotFound {
            kernel: name.to_owned(),
            available: self.entries.iter().map(|e| e.name.clone()).collect(),
        };
        let c_name = CString::new(name).map_err(|_| not_found())?;
        let mut raw: CUfunction = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer, `c_name` NUL-terminated, and
        // the module loaded.
        let code = unsafe { driver::cuModuleGetFunction(&mut raw, self.raw, c_name.as_ptr()) };
        if code == driver::CUDA_ERROR_NOT_FOUND {
            return Err(not_found());
        }
        self.gpu.outcome("cuModuleGetFunction", code)?;
        let mut kernel = Kernel {
            module: self,
            raw,
            name: name.to_owned(),
            signature: self.entries.iter().find(|e| e.name == name).cloned(),
            static_shared_bytes: 0,
            dynamic_shared_limit: Cell::new(None),
        };
        kernel.static_shared_bytes =
            kernel.attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?;
        Ok(kernel)
    }
}

impl Drop for Module<'_> {
    fn drop(&mut self) {
        // SAFETY: loaded in `load_module`, unloaded once; kernels borrow the
        // module, so none outlives it.
        let _ = unsafe { driver::cuModuleUnload(self.raw) };
    }
}

/// What the JIT made of a kernel (for reports: spills show as local bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelAttributes {
    /// Registers per thread.
    pub registers: u32,
    /// Local memory per thread: stack and register spills.
    pub local_bytes: u32,
    /// Statically declared shared memory per block.
    pub static_shared_bytes: u32,
    /// Most threads per block this kernel can be launched with.
    pub max_threads_per_block: u32,
    /// PTX ISA version of the source, e.g. 80 for 8.0.
    pub ptx_version: u32,
    /// Architecture of the compiled binary, e.g. 90 for sm_90.
    pub binary_version: u32,
}

/// A kernel of a loaded module. Launching never blocks unless asked to.
#[derive(Debug)]
pub struct Kernel<'m> {
    module: &'m Module<'m>,
    raw: CUfunction,
    name: String,
    signature: Option<EntrySignature>,
    /// Statically declared shared memory, read once: every launch checks it.
    static_shared_bytes: u32,
    /// The dynamic shared-memory limit last set on the function, if raised.
    dynamic_shared_limit: Cell<Option<u32>>,
}

impl Kernel<'_> {
    /// The kernel's `.entry` name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn attribute(&self, attribute: CUfunction_attribute) -> Result<u32, RuntimeError> {
        let mut value: c_int = 0;
        // SAFETY: `value` is a valid out-pointer; `raw` belongs to a live module.
        let code = unsafe { driver::cuFuncGetAttribute(&mut value, attribute, self.raw) };
        self.module.gpu.outcome("cuFuncGetAttribute", code)?;
        Ok(u32::try_from(value).unwrap_or(0))
    }

    /// Registers, spills, static shared memory and limits of the compiled kernel.
    pub fn attributes(&self) -> Result<KernelAttributes, RuntimeError> {
        use CUfunction_attribute as A;
        Ok(KernelAttributes {
            registers: self.attribute(A::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            local_bytes: self.attribute(A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            static_shared_bytes: self.attribute(A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            max_threads_per_block: self.attribute(A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            ptx_version: self.attribute(A::CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
            binary_version: self.attribute(A::CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
        })
    }

    fn config_error(&self, config: &LaunchConfig, detail: String) -> RuntimeError {
        RuntimeError::Config {
            kernel: self.name.clone(),
            config: *config,
            detail,
        }
    }

    /// Launches and waits: any fault of this launch is reported here, naming
    /// the kernel and its configuration.
    pub fn launch(&self, config: &LaunchConfig, args: &[KernelArg]) -> Result<(), RuntimeError> {
        self.launch_async(config, args)?;
        self.module.gpu.synchronize()
    }

    /// Enqueues a launch on the default stream without waiting. Faults
    /// surface at the next synchronising call, which names this kernel.
    pub fn launch_async(
        &self,
        config: &LaunchConfig,
        args: &[KernelArg],
    ) -> Result<(), RuntimeError> {
        config
            .validate()
            .map_err(|detail| self.config_error(config, detail))?;
        if let Some(signature) = &self.signature {
            signature
                .check_arguments(args)
                .map_err(|detail| RuntimeError::Arguments {
                    kernel: self.name.clone(),
                    detail,
                })?;
        }
        self.allow_dynamic_shared(config)?;

        // The driver reads each argument's `bytes()` through its pointer,
        // straight from `args` (a tensor map's copy there is 64-byte aligned).
        let mut pointers = parameter_pointers(args);
        if config.cooperative {
            self.check_co_resident(config)?;
        }
        let [gx, gy, gz] = config.grid;
        let [bx, by, bz] = config.block;
        let shared = config.dynamic_shared_bytes;
        let stream = std::ptr::null_mut();
        // SAFETY: `pointers` holds one valid pointer per parameter, into
        // `args`, which outlives the call (count and sizes checked against the
        // PTX when it could be read); the driver copies the values before
        // returning and writes through none; stream 0 is the default stream.
        let (call, code) = unsafe {
            if config.cooperative {
                let code = driver::cuLaunchCooperativeKernel(
                    self.raw,
                    gx,
                    gy,
                    gz,
                    bx,
                    by,
                    bz,
                    shared,
                    stream,
                    pointers.as_mut_ptr(),
                );
                ("cuLaunchCooperativeKernel", code)
            } else {
                let code = driver::cuLaunchKernel(
                    self.raw,
                    gx,
                    gy,
                    gz,
                    bx,
                    by,
                    bz,
                    shared,
                    stream,
                    pointers.as_mut_ptr(),
                    std::ptr::null_mut(),
                );
                ("cuLaunchKernel", code)
            }
        };
        let gpu = self.module.gpu;
        if let Err(code) = driver::check(code) {
            // A sticky code here is an earlier kernel's fault surfacing; any
            // other refusal (resources, configuration) is this launch's.
            let earlier = if code.is_sticky() {
                gpu.pending_launch()
            } else {
                None
            };
            let (kernel, config) = match earlier {
                Some(launch) => (launch.kernel, launch.config),
                None => (self.name.clone(), *config),
            };
            return Err(RuntimeError::Launch {
                kernel,
                config,
                call,
                code,
            });
        }
        gpu.launched(&self.name, *config);
        Ok(())
    }

    /// Refuses a cooperative launch whose blocks cannot all be resident at
    /// once (a grid barrier would wait forever), saying how many fit.
    fn check_co_resident(&self, config: &LaunchConfig) -> Result<(), RuntimeError> {
        let threads = c_int::try_from(config.threads_per_block()).unwrap_or(c_int::MAX);
        let mut per_sm: c_int = 0;
        // SAFETY: `per_sm` is a valid out-pointer; `raw` belongs to a live
        // module.
        let code = unsafe {
            driver::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut per_sm,
                self.raw,
                threads,
                config.dynamic_shared_bytes as usize,
            )
        };
        self.module
            .gpu
            .outcome("cuOccupancyMaxActiveBlocksPerMultiprocessor", code)?;
        let info = self.module.gpu.info();
        let resident = u64::from(per_sm.max(0) as u32) * u64::from(info.sm_count);
        if config.blocks() > resident {
            return Err(self.config_error(
                config,
                format!(
                    "its grid barrier needs all {} blocks resident at once, but {} holds at \
                     most {resident} of them ({per_sm} per SM × {} SMs, with this kernel's \
                     block size, registers and shared memory)",
                    config.blocks(),
                    info.name,
                    info.sm_count
                ),
            ));
        }
        Ok(())
    }

    /// Raises the kernel's dynamic shared-memory limit when the launch needs
    /// more than the 48 KiB every kernel gets, after checking the device
    /// allows static + dynamic shared memory that large.
    fn allow_dynamic_shared(&self, config: &LaunchConfig) -> Result<(), RuntimeError> {
        let dynamic = config.dynamic_shared_bytes;
        let static_bytes = self.static_shared_bytes;
        let total = u64::from(dynamic) + u64::from(static_bytes);
        if total <= u64::from(DEFAULT_SHARED_LIMIT_BYTES)
            || self
                .dynamic_shared_limit
                .get()
                .is_some_and(|limit| limit >= dynamic)
        {
            return Ok(());
        }
        let device_limit = self.module.gpu.info().max_shared_per_block_optin;
        if total > u64::from(device_limit) {
            return Err(self.config_error(
                config,
                format!(
                    "needs {} of shared memory per block ({} dynamic + {} static); {} allows {}",
                    Bytes(total),
                    Bytes(u64::from(dynamic)),
                    Bytes(u64::from(static_bytes)),
                    self.module.gpu.info().name,
                    Bytes(u64::from(device_limit))
                ),
            ));
        }
        let value = c_int::try_from(dynamic).unwrap_or(c_int::MAX);
        // SAFETY: `raw` belongs to a live module; the value is within the
        // device's opt-in limit (checked above).
        let code = unsafe {
            driver::cuFuncSetAttribute(
                self.raw,
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                value,
            )
        };
        self.module.gpu.outcome("cuFuncSetAttribute", code)?;
        self.dynamic_shared_limit.set(Some(dynamic));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_stop_at_the_used_length_or_the_first_nul() {
        let mut buffer = b"line one\nline two\n\0garbage".to_vec();
        assert_eq!(log_text(&buffer, buffer.len()), "line one\nline two");
        assert_eq!(log_text(&buffer, 4), "line");
        buffer.truncate(3);
        assert_eq!(log_text(&buffer, 1 << 20), "lin");
        assert_eq!(log_text(&[0; 8], 8), "");
    }
}
