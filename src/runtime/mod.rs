//! Runtime stage (feature `cuda`): runs PTX text on a GPU through the CUDA
//! driver — context, module loading with JIT logs, device buffers, launches,
//! event timing — and prepares host data (element types, seeded random
//! inputs, poison).
//!
//! The driver is reached through the symbols `cust` links (`-lcuda`). On a
//! machine without CUDA the build links a generated stub instead, and a binary
//! run where no driver exists gets `RuntimeError::NoDriver` with a one-line
//! reason from `probe` or `Gpu::new` (README, "Running kernels").
//!
//! A PTX file with the launch manifest `ptxgen --emit manifest` wrote for
//! it loads with [`Gpu::load_with_manifest`], and launches on the caller's
//! device memory with dims given by name, checked first
//! ([`ManifestModule::launch`]; `examples/host/main.rs`).
//!
//! A run, end to end:
//!
//! ```no_run
//! use graphene::runtime::{self, ElementType, Gpu, KernelArg, LaunchConfig};
//!
//! # fn main() -> Result<(), runtime::RuntimeError> {
//! # let ptx = "";
//! let gpu = Gpu::new()?; // or runtime::probe()? first, to report the device
//! let module = gpu.load_module(ptx)?;
//! let kernel = module.kernel("vadd")?;
//! let n = 1 << 20;
//! let a = gpu.upload(&ElementType::F32.random_bytes(n, 1))?;
//! let b = gpu.upload(&ElementType::F32.random_bytes(n, 2))?;
//! let mut c = gpu.alloc(n * 4)?;
//! c.fill_poison(ElementType::F32)?;
//! let args = [a.arg(), b.arg(), c.arg(), KernelArg::U32(n as u32)];
//! kernel.launch(&LaunchConfig::linear((n as u32).div_ceil(256), 256), &args)?;
//! let sum: Vec<f32> = c.read()?;
//! # Ok(())
//! # }
//! ```

mod buffer;
mod driver;
mod error;
mod gpu;
mod launch;
mod manifest_expr;
mod manifest_launch;
mod manifest_read;
mod module;
mod tensor_map;
mod timing;

pub use crate::data::{Element, ElementType, Pcg32, from_bytes, random_vec, to_bytes};
pub use buffer::DeviceBuffer;
pub use driver::{DriverCode, TensorMap};
pub use error::RuntimeError;
pub use gpu::{DeviceInfo, Gpu, probe};
pub use launch::{
    DEFAULT_SHARED_LIMIT_BYTES, EntryParam, EntrySignature, KernelArg, LaunchConfig,
    entry_signatures,
};
pub use manifest_expr::evaluate;
pub use manifest_launch::{
    DeviceSlice, ManifestError, ManifestLaunch, ManifestModule, PreparedTensorMap,
};
pub use manifest_read::{
    MANIFEST_FORMAT, Manifest, ManifestKernel, ManifestParam, ManifestRequirement,
    ManifestTensorMap,
};
pub use module::{Kernel, KernelAttributes, Module};
pub use tensor_map::{
    MAX_BOX_ELEMENTS, MAX_TENSOR_MAP_EXTENT, MAX_TENSOR_MAP_RANK, TENSOR_MAP_ALIGN_BYTES,
    TENSOR_MAP_STRIDE_LIMIT, TensorMapDescription,
};

/// The file this process loaded as `libcuda.so.1` (the driver, or the
/// project's stub), read from `/proc/self/maps`; `None` when not mapped.
pub fn driver_library() -> Option<std::path::PathBuf> {
    driver::loaded_driver_library()
}

/// Whether `path` is the link stub this project generates, not a driver.
pub fn is_project_stub(path: &std::path::Path) -> bool {
    driver::is_project_stub(path)
}
