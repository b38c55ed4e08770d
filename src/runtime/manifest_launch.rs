//! Runtime stage (feature `cuda`): PTX launched as its launch manifest
//! (`ptxgen --emit manifest`, docs/running.md §7) says — on the caller's own
//! device memory, with dims given by name.
//!
//! Before the driver is asked, every condition the manifest states is
//! checked on the host: each dim given once and within its range, every
//! requirement (`divisible`, `positive`), the grid and block within CUDA's
//! limits, each tensor's memory large enough for its element count and
//! aligned as the lowering assumes, and each TMA tensor map as the driver
//! would take it. Errors name the kernel and the dim, parameter,
//! requirement or tensor map at fault. The maps are encoded by the driver
//! at launch and passed after the dims. The grid, block and dynamic shared
//! memory come from the manifest's expressions, evaluated here by
//! [`evaluate`] (the syntax `launch::manifest` writes; `benches/harness.py`
//! reads it the same way); the JSON is read into [`Manifest`] beside it
//! (`manifest_read.rs`).
//!
//! ```no_run
//! use graphene::runtime::{Gpu, ManifestModule};
//!
//! # fn main() -> Result<(), graphene::runtime::RuntimeError> {
//! # let (ptx, json) = ("", "");
//! let gpu = Gpu::new()?;
//! let module: ManifestModule = gpu.load_with_manifest(ptx, json)?;
//! let bytes = 8 * 256 * 4096 * 2;
//! let (src, dst) = (gpu.alloc(bytes)?, gpu.alloc(bytes)?);
//! module.launch(
//!     "vector_copy",
//!     &[("%src", (&src).into()), ("%dst", (&dst).into())],
//!     &[("B", 4096)],
//! )?;
//! # Ok(())
//! # }
//! ```

use super::buffer::DeviceBuffer;
use super::driver::TensorMap;
use super::error::{Bytes, RuntimeError};
use super::gpu::Gpu;
use super::launch::{KernelArg, LaunchConfig};
use super::manifest_expr::evaluate;
use super::manifest_read::{
    Manifest, ManifestKernel, ManifestParam, ManifestRequirement, ManifestTensorMap,
};
use super::module::Module;
use super::tensor_map::TensorMapDescription;

/// Why a manifest cannot be read, or a launch it describes cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// The text is not a version-1 manifest (the field at fault, and why).
    #[error("launch manifest: {0}")]
    Format(String),
    /// The manifest has no kernel of that name.
    #[error("the launch manifest has no kernel `{kernel}` (it has: {})", available.join(", "))]
    UnknownKernel {
        /// The name asked for.
        kernel: String,
        /// The kernels it has.
        available: Vec<String>,
    },
    /// A dim is missing, unknown, given twice or out of its range.
    #[error("kernel `{kernel}`: dim `{dim}`: {detail}")]
    Dim {
        /// The kernel.
        kernel: String,
        /// The dim's name.
        dim: String,
        /// What is wrong.
        detail: String,
    },
    /// A requirement of the manifest does not hold for the dims given.
    #[error("kernel `{kernel}`: {detail} (required at {written_at})")]
    Requirement {
        /// The kernel.
        kernel: String,
        /// The condition with its values: `B = 3 is not a multiple of 2`.
        detail: String,
        /// `file:line:col` of the source that makes the requirement.
        written_at: String,
    },
    /// A tensor parameter's memory is missing, unknown, too small or
    /// misaligned.
    #[error("kernel `{kernel}`: parameter `{param}`: {detail}")]
    Buffer {
        /// The kernel.
        kernel: String,
        /// `%name` of the parameter.
        param: String,
        /// What is wrong.
        detail: String,
    },
    /// A tensor map the driver would refuse with the dims and memory given,
    /// or did refuse.
    #[error("kernel `{kernel}`: tensor map of `{tensor}`: {detail}")]
    TensorMap {
        /// The kernel.
        kernel: String,
        /// `%name` of the tensor it describes.
        tensor: String,
        /// What is wrong.
        detail: String,
    },
    /// The grid or block evaluates outside CUDA's limits, or an expression
    /// cannot be evaluated.
    #[error("kernel `{kernel}`: {detail}")]
    Launch {
        /// The kernel.
        kernel: String,
        /// What is wrong.
        detail: String,
    },
}

/// Device memory handed to a kernel: an address and the bytes behind it.
/// Any allocation will do (this runtime's [`DeviceBuffer`], or memory
/// another library allocated in the same context).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceSlice {
    /// The device address of element 0.
    pub address: u64,
    /// Bytes usable from `address` on.
    pub bytes: usize,
}

impl From<&DeviceBuffer<'_>> for DeviceSlice {
    fn from(buffer: &DeviceBuffer<'_>) -> DeviceSlice {
        DeviceSlice {
            address: buffer.address(),
            bytes: buffer.len_bytes(),
        }
    }
}

/// A launch checked against the manifest: configuration and arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestLaunch {
    /// Grid, block and dynamic shared memory.
    pub config: LaunchConfig,
    /// Every argument but the tensor maps, in ABI order (all of them for a
    /// kernel without maps): a launch needs [`ManifestLaunch::arguments`].
    pub args: Vec<KernelArg>,
    /// The tensor maps, checked, for the driver to encode at launch.
    pub tensor_maps: Vec<PreparedTensorMap>,
}

/// A tensor map of a launch, checked as the driver would check it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedTensorMap {
    /// Its place in the whole argument list.
    pub position: usize,
    /// The device address of its tensor.
    pub address: u64,
    /// What it describes, the dims bound.
    pub description: TensorMapDescription,
}

impl ManifestLaunch {
    /// The whole argument list, in ABI order: `args` with each tensor map
    /// encoded by the driver and put in its place.
    pub fn arguments(&self, gpu: &Gpu) -> Result<Vec<KernelArg>, RuntimeError> {
        let encoded = self
            .tensor_maps
            .iter()
            .map(|map| gpu.encode_tensor_map(map.address, &map.description))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self.with_tensor_maps(&encoded))
    }

    /// `args` with `encoded[i]`, the map of `tensor_maps[i]`, at its place.
    fn with_tensor_maps(&self, encoded: &[TensorMap]) -> Vec<KernelArg> {
        let mut args = self.args.clone();
        // Positions ascend, so each insertion lands where the manifest says.
        for (map, &value) in self.tensor_maps.iter().zip(encoded) {
            args.insert(map.position.min(args.len()), KernelArg::TensorMap(value));
        }
        args
    }
}

// --- checking a launch -------------------------------------------------------

/// `%name` and `name` both name the parameter `%name`.
fn same_param(given: &str, param: &str) -> bool {
    given == param || param.strip_prefix('%') == Some(given)
}

impl ManifestKernel {
    /// The dims' names, in ABI order.
    pub fn dims(&self) -> Vec<&str> {
        self.params
            .iter()
            .filter_map(|param| match param {
                ManifestParam::Dim { name, .. } => Some(name.as_str()),
                ManifestParam::Tensor { .. } | ManifestParam::TensorMap { .. } => None,
            })
            .collect()
    }

    fn dim_error(&self, dim: &str, detail: String) -> ManifestError {
        ManifestError::Dim {
            kernel: self.name.clone(),
            dim: dim.to_owned(),
            detail,
        }
    }

    fn buffer_error(&self, param: &str, detail: String) -> ManifestError {
        ManifestError::Buffer {
            kernel: self.name.clone(),
            param: param.to_owned(),
            detail,
        }
    }

    fn launch_error(&self, detail: String) -> ManifestError {
        ManifestError::Launch {
            kernel: self.name.clone(),
            detail,
        }
    }

    /// Checks a launch on `buffers` (each tensor parameter's name, with or
    /// without its `%`, and its memory) with `dims` (each dim's name and
    /// value) against everything the manifest states, and computes its
    /// configuration and arguments. No driver is involved.
    pub fn prepare(
        &self,
        buffers: &[(&str, DeviceSlice)],
        dims: &[(&str, u64)],
    ) -> Result<ManifestLaunch, ManifestError> {
        let names = self.dims();
        let list = if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        };
        for (i, (dim, _)) in dims.iter().enumerate() {
            if !names.contains(dim) {
                return Err(
                    self.dim_error(dim, format!("not a dim of the kernel (its dims: {list})"))
                );
            }
            if dims[..i].iter().any(|(earlier, _)| earlier == dim) {
                return Err(self.dim_error(dim, "given twice".into()));
            }
        }
        for (name, _) in buffers {
            let known = self.params.iter().any(|param| match param {
                ManifestParam::Tensor { name: param, .. } => same_param(name, param),
                ManifestParam::Dim { .. } | ManifestParam::TensorMap { .. } => false,
            });
            if !known {
                return Err(self.buffer_error(name, "not a tensor parameter of the kernel".into()));
            }
        }
        let mut values: Vec<(&str, i64)> = Vec::new();
        for param in &self.params {
            let ManifestParam::Dim { name, min, max } = param else {
                continue;
            };
            let Some(&(_, value)) = dims.iter().find(|(dim, _)| dim == name) else {
                return Err(
                    self.dim_error(name, format!("no value given (the kernel's dims: {list})"))
                );
            };
            if value < *min || value > *max {
                return Err(
                    self.dim_error(name, format!("{name} = {value} is outside {min}..={max}"))
                );
            }
            let value = i64::try_from(value)
                .map_err(|_| self.dim_error(name, format!("{value} is too large")))?;
            values.push((name, value));
        }
        let value_of = |name: &str| {
            values
                .iter()
                .find(|(dim, _)| *dim == name)
                .map(|&(_, value)| value)
        };
        let eval = |text: &str, what: &str| {
            evaluate(text, &value_of).map_err(|why| self.launch_error(format!("{what} {why}")))
        };
        for requirement in &self.requirements {
            let (detail, written_at) = match requirement {
                ManifestRequirement::Divisible {
                    value,
                    divisor,
                    written_at,
                } => {
                    let v = eval(value, "requirement")?;
                    let d = eval(divisor, "requirement")?;
                    if d != 0 && v % d == 0 {
                        continue;
                    }
                    (
                        format!("{value} = {v} is not a multiple of {divisor} = {d}"),
                        written_at,
                    )
                }
                ManifestRequirement::Positive { value, written_at } => {
                    let v = eval(value, "requirement")?;
                    if v >= 1 {
                        continue;
                    }
                    (format!("{value} = {v} is not at least 1"), written_at)
                }
            };
            return Err(ManifestError::Requirement {
                kernel: self.name.clone(),
                detail,
                written_at: written_at.clone(),
            });
        }
        let mut grid = [1u32; 3];
        let mut block = [1u32; 3];
        for axis in 0..3 {
            let blocks = eval(&self.grid[axis], "grid")?;
            let limit = self.max_grid[axis];
            grid[axis] = u32::try_from(blocks)
                .ok()
                .filter(|&b| b >= 1 && u64::from(b) <= limit)
                .ok_or_else(|| {
                    self.launch_error(format!(
                        "grid extent {} = `{}` = {blocks}; CUDA allows 1 to {limit}",
                        AXES[axis], self.grid[axis]
                    ))
                })?;
            let threads = eval(&self.block[axis], "block")?;
            block[axis] = u32::try_from(threads)
                .ok()
                .filter(|&t| t >= 1)
                .ok_or_else(|| {
                    self.launch_error(format!(
                        "block extent {} = `{}` = {threads}; it must be at least 1",
                        AXES[axis], self.block[axis]
                    ))
                })?;
        }
        let threads: u64 = block.iter().map(|&t| u64::from(t)).product();
        if threads > self.max_block_threads {
            return Err(self.launch_error(format!(
                "a block of {threads} threads; CUDA allows {}",
                self.max_block_threads
            )));
        }
        let mut args = Vec::with_capacity(self.params.len());
        let mut tensor_maps = Vec::with_capacity(self.tensor_maps.len());
        for (position, param) in self.params.iter().enumerate() {
            match param {
                ManifestParam::TensorMap { index, .. } => {
                    let Some(map) = self.tensor_maps.get(*index) else {
                        // `Manifest::parse` checked every index.
                        return Err(self.launch_error(format!("no tensor map {index}")));
                    };
                    let Some(&(_, slice)) = buffers
                        .iter()
                        .find(|(given, _)| same_param(given, &map.tensor))
                    else {
                        return Err(self.buffer_error(&map.tensor, "no device memory given".into()));
                    };
                    let description = self.describe(map, *index, &eval)?;
                    description.check(slice.address).map_err(|detail| {
                        ManifestError::TensorMap {
                            kernel: self.name.clone(),
                            tensor: map.tensor.clone(),
                            detail,
                        }
                    })?;
                    tensor_maps.push(PreparedTensorMap {
                        position,
                        address: slice.address,
                        description,
                    });
                }
                ManifestParam::Dim { name, .. } => {
                    let value = value_of(name).unwrap_or(0);
                    args.push(KernelArg::U32(u32::try_from(value).unwrap_or(u32::MAX)));
                }
                ManifestParam::Tensor {
                    name,
                    element_bytes,
                    elements,
                    align_bytes,
                    ..
                } => {
                    let Some(&(_, slice)) =
                        buffers.iter().find(|(given, _)| same_param(given, name))
                    else {
                        return Err(self.buffer_error(name, "no device memory given".into()));
                    };
                    let count = eval(elements, &format!("the elements of `{name}`:"))?;
                    let needed = u64::try_from(count)
                        .ok()
                        .and_then(|count| count.checked_mul(*element_bytes))
                        .ok_or_else(|| {
                            self.buffer_error(name, format!("`{elements}` = {count} elements"))
                        })?;
                    if (slice.bytes as u64) < needed {
                        return Err(self.buffer_error(
                            name,
                            format!(
                                "needs {} (`{elements}` = {count} elements of {element_bytes} B); \
                                 the memory given has {}",
                                Bytes(needed),
                                Bytes(slice.bytes as u64)
                            ),
                        ));
                    }
                    if *align_bytes > 1 && slice.address % align_bytes != 0 {
                        return Err(self.buffer_error(
                            name,
                            format!(
                                "address 0x{:x} is not a multiple of {align_bytes} bytes",
                                slice.address
                            ),
                        ));
                    }
                    args.push(KernelArg::Pointer(slice.address));
                }
            }
        }
        Ok(ManifestLaunch {
            config: LaunchConfig::new(grid, block)
                .with_dynamic_shared(self.dynamic_shared_bytes)
                .with_cooperative(self.cooperative),
            args,
            tensor_maps,
        })
    }

    /// Tensor map `index` with its expressions evaluated by `eval`.
    fn describe(
        &self,
        map: &ManifestTensorMap,
        index: usize,
        eval: &dyn Fn(&str, &str) -> Result<i64, ManifestError>,
    ) -> Result<TensorMapDescription, ManifestError> {
        let what = format!("tensor map {index} of `{}`:", map.tensor);
        let values = |texts: &[String]| {
            texts
                .iter()
                .map(|text| {
                    let value = eval(text, &what)?;
                    u64::try_from(value).map_err(|_| {
                        self.launch_error(format!("{what} `{text}` = {value} is negative"))
                    })
                })
                .collect::<Result<Vec<u64>, _>>()
        };
        Ok(TensorMapDescription {
            tensor: map.tensor.clone(),
            element: map.element,
            extents: values(&map.extents)?,
            strides_bytes: values(&map.strides_bytes)?,
            boxes: map.boxes.clone(),
            swizzle_bytes: map.swizzle_bytes,
        })
    }
}

const AXES: [&str; 3] = ["x", "y", "z"];

// --- on the device -----------------------------------------------------------

/// A PTX module loaded together with its launch manifest.
#[derive(Debug)]
pub struct ManifestModule<'g> {
    module: Module<'g>,
    manifest: Manifest,
}

impl Gpu {
    /// JIT-compiles `ptx` and reads `manifest_json`, the manifest `ptxgen
    /// --emit manifest` wrote for it (same `--arch` and `--define`s). The
    /// manifest is read first: a malformed one fails before the JIT runs.
    pub fn load_with_manifest(
        &self,
        ptx: &str,
        manifest_json: &str,
    ) -> Result<ManifestModule<'_>, RuntimeError> {
        let manifest = Manifest::parse(manifest_json)?;
        let module = self.load_module(ptx)?;
        Ok(ManifestModule { module, manifest })
    }
}

impl ManifestModule<'_> {
    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The loaded module, for launches of one's own.
    pub fn module(&self) -> &Module<'_> {
        &self.module
    }

    /// Launches `kernel` on `buffers` with `dims` (see
    /// [`ManifestKernel::prepare`] for what is checked first) and waits for
    /// it; its tensor maps are encoded over the buffers given and dynamic
    /// shared memory above 48 KiB is allowed first. Returns the
    /// configuration it launched with.
    pub fn launch(
        &self,
        kernel: &str,
        buffers: &[(&str, DeviceSlice)],
        dims: &[(&str, u64)],
    ) -> Result<LaunchConfig, RuntimeError> {
        let launch = self.manifest.kernel(kernel)?.prepare(buffers, dims)?;
        // A refusal of the driver's names the tensor; the kernel is added.
        let args = launch
            .arguments(self.module.gpu())
            .map_err(|error| match error {
                RuntimeError::TensorMap { tensor, detail } => {
                    RuntimeError::Manifest(ManifestError::TensorMap {
                        kernel: kernel.to_owned(),
                        tensor,
                        detail,
                    })
                }
                other => other,
            })?;
        self.module.kernel(kernel)?.launch(&launch.config, &args)?;
        Ok(launch.config)
    }
}

#[cfg(test)]
#[path = "manifest_launch_tests.rs"]
mod tests;
