//! Runtime stage (feature `cuda`): the one error type of the runtime.
//!
//! Every message is meant to be read by someone who was not there when it
//! happened (often on another machine): it names the call, the kernel and its
//! launch configuration, and the driver's code by name. All messages are one
//! line except `Jit`, which carries the JIT compiler's log.

use std::fmt;

use super::driver::DriverCode;
use super::launch::LaunchConfig;

/// What went wrong when talking to the GPU.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuntimeError {
    /// No usable CUDA driver: the library loaded as `libcuda.so.1` is a stub,
    /// or the driver failed to initialise for lack of its kernel module.
    #[error("no CUDA driver: {reason}")]
    NoDriver {
        /// Which library answered and what to do about it.
        reason: String,
    },
    /// The driver works but there is no GPU it can use.
    #[error("no CUDA device: {reason}")]
    NoDevice {
        /// The driver's words, or "the driver reports 0 devices".
        reason: String,
    },
    /// A driver call failed outside any kernel launch.
    #[error("{call} failed: {code}")]
    Driver {
        /// The driver entry point, e.g. `cuMemAlloc_v2`.
        call: &'static str,
        /// What it returned.
        code: DriverCode,
    },
    /// The driver's JIT rejected the PTX; the logs say where and why.
    #[error("PTX JIT compilation failed: {code}{}", jit_logs(error_log, info_log))]
    Jit {
        /// What `cuModuleLoadDataEx` returned.
        code: DriverCode,
        /// The JIT's error log (`ptxas` messages with PTX line numbers).
        error_log: String,
        /// The JIT's info log (register and spill reports, warnings).
        info_log: String,
    },
    /// The PTX holds no `.entry` of that name.
    #[error(
        "kernel `{kernel}` is not in the module (its entries: {})",
        list_or_none(available)
    )]
    KernelNotFound {
        /// The name asked for.
        kernel: String,
        /// The `.entry` names the PTX text declares.
        available: Vec<String>,
    },
    /// The arguments do not match the kernel's `.param` list.
    #[error("kernel `{kernel}`: {detail}")]
    Arguments {
        /// The kernel launched.
        kernel: String,
        /// Which argument is wrong and how.
        detail: String,
    },
    /// The launch configuration is impossible before the driver is asked.
    #[error("kernel `{kernel}` {config}: {detail}")]
    Config {
        /// The kernel launched.
        kernel: String,
        /// The configuration asked for.
        config: LaunchConfig,
        /// What is wrong with it.
        detail: String,
    },
    /// The driver refused the launch, or the kernel faulted (reported by the
    /// synchronisation that followed it: illegal address, trap, timeout…).
    #[error("kernel `{kernel}` {config}: {call} failed: {code}")]
    Launch {
        /// The kernel launched (for a fault: the last kernel launched before
        /// the synchronisation that reported it).
        kernel: String,
        /// Its launch configuration.
        config: LaunchConfig,
        /// `cuLaunchKernel`, or the synchronising call that saw the fault.
        call: &'static str,
        /// What it returned.
        code: DriverCode,
    },
    /// A tensor map the driver would refuse (said in words before it is
    /// asked), or did refuse (its code named).
    #[error("tensor map of `{tensor}`: {detail}")]
    TensorMap {
        /// `%name` of the tensor it describes.
        tensor: String,
        /// What is wrong.
        detail: String,
    },
    /// Input the runtime cannot use: host and device sizes that disagree in
    /// a copy, bytes that are not a whole number of elements, PTX text with a
    /// NUL byte.
    #[error("{0}")]
    Input(String),
    /// A launch manifest that cannot be read, or a launch that breaks what
    /// it states (a dim, a requirement, a buffer, a limit).
    #[error(transparent)]
    Manifest(#[from] super::manifest_launch::ManifestError),
}

impl From<crate::data::DataError> for RuntimeError {
    fn from(error: crate::data::DataError) -> Self {
        RuntimeError::Input(error.0)
    }
}

impl RuntimeError {
    /// Whether the error means "this machine cannot run kernels" (no driver or
    /// no device) rather than a fault of ours: GPU tests skip on these.
    pub fn is_unavailable(&self) -> bool {
        match self {
            RuntimeError::NoDriver { .. } | RuntimeError::NoDevice { .. } => true,
            RuntimeError::Driver { .. }
            | RuntimeError::Jit { .. }
            | RuntimeError::KernelNotFound { .. }
            | RuntimeError::Arguments { .. }
            | RuntimeError::Config { .. }
            | RuntimeError::Launch { .. }
            | RuntimeError::TensorMap { .. }
            | RuntimeError::Input(_)
            | RuntimeError::Manifest(_) => false,
        }
    }

    /// A `Driver` error for `call` returning `code`.
    pub(crate) fn driver(call: &'static str, code: DriverCode) -> RuntimeError {
        RuntimeError::Driver { call, code }
    }
}

/// The logs, each under a heading and indented, or nothing when both are empty.
fn jit_logs(error_log: &str, info_log: &str) -> String {
    let mut text = String::new();
    for (heading, log) in [("error log", error_log), ("info log", info_log)] {
        let log = log.trim_end();
        if log.is_empty() {
            continue;
        }
        text.push_str(&format!("\n  {heading}:"));
        for line in log.lines() {
            text.push_str(&format!("\n    {line}"));
        }
    }
    if text.is_empty() {
        text.push_str(" (the JIT left both logs empty)");
    }
    text
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// Formats a byte count the way reports print it: exact bytes, with KiB when
/// the count is a whole number of them.
pub(crate) struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 >= 1024 && self.0 % 1024 == 0 {
            write!(f, "{} B ({} KiB)", self.0, self.0 / 1024)
        } else {
            write!(f, "{} B", self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(code: i32, name: &str) -> DriverCode {
        DriverCode {
            code,
            name: name.to_owned(),
            description: "".into(),
        }
    }

    #[test]
    fn jit_error_shows_both_logs_indented() {
        let error = RuntimeError::Jit {
            code: code(218, "CUDA_ERROR_INVALID_PTX"),
            error_log: "ptxas application ptx input, line 7; error   : Unknown symbol 'x'\n".into(),
            info_log: "ptxas info    : 0 bytes gmem".into(),
        };
        assert_eq!(
            error.to_string(),
            "PTX JIT compilation failed: CUDA_ERROR_INVALID_PTX (218)\n  error log:\n    \
             ptxas application ptx input, line 7; error   : Unknown symbol 'x'\n  info log:\n    \
             ptxas info    : 0 bytes gmem"
        );
    }

    #[test]
    fn jit_error_says_when_the_logs_are_empty() {
        let error = RuntimeError::Jit {
            code: code(218, "CUDA_ERROR_INVALID_PTX"),
            error_log: String::new(),
            info_log: "\n".into(),
        };
        assert!(
            error
                .to_string()
                .ends_with("(218) (the JIT left both logs empty)"),
            "{error}"
        );
    }

    #[test]
    fn launch_errors_name_kernel_config_and_call_on_one_line() {
        let error = RuntimeError::Launch {
            kernel: "vadd".into(),
            config: LaunchConfig::linear(4, 256),
            call: "cuCtxSynchronize",
            code: code(700, "CUDA_ERROR_ILLEGAL_ADDRESS"),
        };
        let text = error.to_string();
        assert_eq!(
            text,
            "kernel `vadd` <<<grid (4,1,1), block (256,1,1), dynamic shared 0 B>>>: \
             cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (700) \
             [sticky: the context is unusable from here on]"
        );
        assert!(!text.contains('\n'));
        assert!(!error.is_unavailable());
    }

    #[test]
    fn unavailability_is_only_no_driver_or_no_device() {
        assert!(RuntimeError::NoDriver { reason: "x".into() }.is_unavailable());
        assert!(RuntimeError::NoDevice { reason: "x".into() }.is_unavailable());
        assert!(!RuntimeError::driver("cuInit", code(999, "CUDA_ERROR_UNKNOWN")).is_unavailable());
    }

    #[test]
    fn kernel_not_found_lists_the_entries() {
        let error = RuntimeError::KernelNotFound {
            kernel: "gemm".into(),
            available: vec![],
        };
        assert_eq!(
            error.to_string(),
            "kernel `gemm` is not in the module (its entries: none)"
        );
    }

    #[test]
    fn bytes_show_kib_only_when_exact() {
        assert_eq!(Bytes(49152).to_string(), "49152 B (48 KiB)");
        assert_eq!(Bytes(1000).to_string(), "1000 B");
        assert_eq!(Bytes(0).to_string(), "0 B");
    }
}
