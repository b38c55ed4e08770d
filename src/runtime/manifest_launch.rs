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
//! reads it the same way).
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

use serde_json::Value;

use super::buffer::DeviceBuffer;
use super::driver::TensorMap;
use super::error::{Bytes, RuntimeError};
use super::gpu::Gpu;
use super::launch::{KernelArg, LaunchConfig};
use super::manifest_expr::evaluate;
use super::module::Module;
use super::tensor_map::TensorMapDescription;
use crate::data::ElementType;

/// The manifest version this reader understands.
pub const MANIFEST_FORMAT: u64 = 1;

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

/// A version-1 launch manifest, as far as a launch needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The `.gph` file the PTX was built from.
    pub source: String,
    /// The PTX target (`sm_80`, `sm_90a`).
    pub target: String,
    /// The kernels, in the module's order.
    pub kernels: Vec<ManifestKernel>,
}

/// One kernel of a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestKernel {
    /// The `.entry` name.
    pub name: String,
    /// The parameters in ABI order.
    pub params: Vec<ManifestParam>,
    /// Blocks (x, y, z), as expressions of the dims.
    pub grid: [String; 3],
    /// Threads per block (x, y, z), as expressions of the dims.
    pub block: [String; 3],
    /// Dynamic shared memory per block, in bytes.
    pub dynamic_shared_bytes: u32,
    /// Launched cooperatively (the kernel has a grid barrier); absent in
    /// older manifests, which had none.
    pub cooperative: bool,
    /// The TMA tensor maps, in the order of their parameters; empty in
    /// older manifests, which had none.
    pub tensor_maps: Vec<ManifestTensorMap>,
    /// Conditions on the dims.
    pub requirements: Vec<ManifestRequirement>,
    /// Most blocks in x, y and z.
    pub max_grid: [u64; 3],
    /// Most threads in one block.
    pub max_block_threads: u64,
}

/// One `.param` of a kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestParam {
    /// A global tensor: a `u64` device address.
    Tensor {
        /// `%name`.
        name: String,
        /// Bytes per element.
        element_bytes: u64,
        /// Elements the memory must hold, an expression of the dims.
        elements: String,
        /// The address must be a multiple of this.
        align_bytes: u64,
        /// `input`, `inout`, `output` or `unused`.
        role: String,
    },
    /// A symbolic dimension: a `u32` value.
    Dim {
        /// Its name.
        name: String,
        /// Smallest value.
        min: u64,
        /// Largest value.
        max: u64,
    },
    /// A TMA tensor map, 128 bytes by value (`tmap<i>_<tensor>`).
    TensorMap {
        /// Its name.
        name: String,
        /// Its index in [`ManifestKernel::tensor_maps`].
        index: usize,
    },
}

/// One TMA tensor map of a kernel, its numbers as expressions of the dims
/// (what [`TensorMapDescription`] holds once they are evaluated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestTensorMap {
    /// `%name` of the tensor parameter it describes.
    pub tensor: String,
    /// Element type.
    pub element: ElementType,
    /// Elements per dim, innermost first.
    pub extents: Vec<String>,
    /// Bytes between consecutive indices of dims 1, 2, ….
    pub strides_bytes: Vec<String>,
    /// The box, elements per dim, innermost first.
    pub boxes: Vec<u32>,
    /// The shared-memory swizzle's span in bytes (0: none).
    pub swizzle_bytes: u32,
}

/// A condition on the dims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestRequirement {
    /// `value % divisor == 0`.
    Divisible {
        /// An expression.
        value: String,
        /// An expression.
        divisor: String,
        /// Where the source makes it.
        written_at: String,
    },
    /// `value ≥ 1`.
    Positive {
        /// An expression.
        value: String,
        /// Where the source makes it.
        written_at: String,
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

// --- reading the JSON --------------------------------------------------------

fn format_error(at: &str, what: &str) -> ManifestError {
    ManifestError::Format(format!("`{at}` {what}"))
}

fn get<'v>(object: &'v Value, key: &str, at: &str) -> Result<&'v Value, ManifestError> {
    object
        .get(key)
        .ok_or_else(|| format_error(&format!("{at}.{key}"), "is missing"))
}

fn string(object: &Value, key: &str, at: &str) -> Result<String, ManifestError> {
    get(object, key, at)?
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format_error(&format!("{at}.{key}"), "is not a string"))
}

fn unsigned(object: &Value, key: &str, at: &str) -> Result<u64, ManifestError> {
    get(object, key, at)?
        .as_u64()
        .ok_or_else(|| format_error(&format!("{at}.{key}"), "is not a non-negative integer"))
}

fn array<'v>(object: &'v Value, key: &str, at: &str) -> Result<&'v Vec<Value>, ManifestError> {
    get(object, key, at)?
        .as_array()
        .ok_or_else(|| format_error(&format!("{at}.{key}"), "is not an array"))
}

fn triple(object: &Value, key: &str, at: &str) -> Result<[String; 3], ManifestError> {
    let values = array(object, key, at)?;
    let texts: Vec<String> = values
        .iter()
        .map(|value| value.as_str().map(str::to_owned))
        .collect::<Option<_>>()
        .ok_or_else(|| format_error(&format!("{at}.{key}"), "holds a non-string"))?;
    texts
        .try_into()
        .map_err(|_| format_error(&format!("{at}.{key}"), "does not have 3 entries"))
}

fn param(value: &Value, at: &str) -> Result<ManifestParam, ManifestError> {
    let name = string(value, "name", at)?;
    if value.get("type").and_then(Value::as_str) == Some("tensor_map") {
        let index = unsigned(value, "tensor_map", at)?;
        return Ok(ManifestParam::TensorMap {
            name,
            index: usize::try_from(index).unwrap_or(usize::MAX),
        });
    }
    if value.get("dim").and_then(Value::as_bool) == Some(true) {
        // `min` and `max` came with the limits; older manifests imply them.
        let bound = |key: &str, default: u64| match value.get(key) {
            Some(_) => unsigned(value, key, at),
            None => Ok(default),
        };
        return Ok(ManifestParam::Dim {
            name,
            min: bound("min", 1)?,
            max: bound("max", u64::from(u32::MAX))?,
        });
    }
    Ok(ManifestParam::Tensor {
        name,
        element_bytes: unsigned(value, "element_bytes", at)?,
        elements: string(value, "elements", at)?,
        align_bytes: match value.get("align_bytes") {
            Some(_) => unsigned(value, "align_bytes", at)?,
            None => 16,
        },
        role: string(value, "role", at)?,
    })
}

fn strings(object: &Value, key: &str, at: &str) -> Result<Vec<String>, ManifestError> {
    array(object, key, at)?
        .iter()
        .map(|value| value.as_str().map(str::to_owned))
        .collect::<Option<_>>()
        .ok_or_else(|| format_error(&format!("{at}.{key}"), "holds a non-string"))
}

fn u32_of(value: u64, at: &str) -> Result<u32, ManifestError> {
    u32::try_from(value).map_err(|_| format_error(at, "is above 2^32 - 1"))
}

fn tensor_map(value: &Value, at: &str) -> Result<ManifestTensorMap, ManifestError> {
    let scalar = string(value, "scalar", at)?;
    let element = ElementType::from_name(&scalar).ok_or_else(|| {
        format_error(
            &format!("{at}.scalar"),
            &format!("is `{scalar}`, not fp16, bf16, fp32, i32 or u32"),
        )
    })?;
    let element_bytes = unsigned(value, "element_bytes", at)?;
    if element_bytes != element.bytes() as u64 {
        return Err(format_error(
            &format!("{at}.element_bytes"),
            &format!(
                "is {element_bytes}, but {scalar} has {} bytes",
                element.bytes()
            ),
        ));
    }
    let boxes = array(value, "box", at)?
        .iter()
        .map(|entry| {
            let entry = entry
                .as_u64()
                .ok_or_else(|| format_error(&format!("{at}.box"), "holds a non-integer"))?;
            u32_of(entry, &format!("{at}.box"))
        })
        .collect::<Result<_, _>>()?;
    Ok(ManifestTensorMap {
        tensor: string(value, "tensor", at)?,
        element,
        extents: strings(value, "extents", at)?,
        strides_bytes: strings(value, "strides_bytes", at)?,
        boxes,
        swizzle_bytes: u32_of(
            unsigned(value, "swizzle_bytes", at)?,
            &format!("{at}.swizzle_bytes"),
        )?,
    })
}

/// Every tensor-map parameter names a map, and every map a tensor parameter.
fn check_tensor_maps(
    params: &[ManifestParam],
    maps: &[ManifestTensorMap],
    at: &str,
) -> Result<(), ManifestError> {
    for (i, param) in params.iter().enumerate() {
        let index = match param {
            ManifestParam::TensorMap { index, .. } => *index,
            ManifestParam::Tensor { .. } | ManifestParam::Dim { .. } => continue,
        };
        if index >= maps.len() {
            return Err(format_error(
                &format!("{at}.params[{i}].tensor_map"),
                &format!("is {index}; the kernel has {} tensor maps", maps.len()),
            ));
        }
    }
    for (i, map) in maps.iter().enumerate() {
        let tensor = params.iter().any(|param| match param {
            ManifestParam::Tensor { name, .. } => *name == map.tensor,
            ManifestParam::Dim { .. } | ManifestParam::TensorMap { .. } => false,
        });
        if !tensor {
            return Err(format_error(
                &format!("{at}.tensor_maps[{i}].tensor"),
                &format!("is `{}`, which is no tensor parameter", map.tensor),
            ));
        }
    }
    Ok(())
}

fn requirement(value: &Value, at: &str) -> Result<ManifestRequirement, ManifestError> {
    let written_at = string(value, "written_at", at)?;
    let expression = string(value, "value", at)?;
    match string(value, "kind", at)?.as_str() {
        "divisible" => Ok(ManifestRequirement::Divisible {
            value: expression,
            divisor: string(value, "divisor", at)?,
            written_at,
        }),
        "positive" => Ok(ManifestRequirement::Positive {
            value: expression,
            written_at,
        }),
        other => Err(format_error(
            &format!("{at}.kind"),
            &format!("is `{other}`, not `divisible` or `positive`"),
        )),
    }
}

fn kernel(value: &Value, at: &str) -> Result<ManifestKernel, ManifestError> {
    let params: Vec<ManifestParam> = array(value, "params", at)?
        .iter()
        .enumerate()
        .map(|(i, p)| param(p, &format!("{at}.params[{i}]")))
        .collect::<Result<_, _>>()?;
    let requirements = array(value, "requirements", at)?
        .iter()
        .enumerate()
        .map(|(i, r)| requirement(r, &format!("{at}.requirements[{i}]")))
        .collect::<Result<_, _>>()?;
    // Absent in manifests older than tensor maps: they had none.
    let tensor_maps: Vec<ManifestTensorMap> = match value.get("tensor_maps") {
        Some(_) => array(value, "tensor_maps", at)?
            .iter()
            .enumerate()
            .map(|(i, m)| tensor_map(m, &format!("{at}.tensor_maps[{i}]")))
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    check_tensor_maps(&params, &tensor_maps, at)?;
    let shared = unsigned(value, "dynamic_shared_bytes", at)?;
    let dynamic_shared_bytes = u32::try_from(shared)
        .map_err(|_| format_error(&format!("{at}.dynamic_shared_bytes"), "is above 2^32 - 1"))?;
    // CUDA's limits, when an older manifest leaves them out.
    let (mut max_grid, mut max_block_threads) = ([i32::MAX as u64, 65535, 65535], 1024);
    if let Some(limits) = value.get("limits") {
        let at = format!("{at}.limits");
        let grid = array(limits, "grid", &at)?;
        for (limit, entry) in max_grid.iter_mut().zip(grid) {
            *limit = entry
                .as_u64()
                .ok_or_else(|| format_error(&format!("{at}.grid"), "holds a non-integer"))?;
        }
        max_block_threads = unsigned(limits, "block_threads", &at)?;
    }
    Ok(ManifestKernel {
        name: string(value, "name", at)?,
        params,
        grid: triple(value, "grid", at)?,
        block: triple(value, "block", at)?,
        dynamic_shared_bytes,
        cooperative: value
            .get("cooperative")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        tensor_maps,
        requirements,
        max_grid,
        max_block_threads,
    })
}

impl Manifest {
    /// Reads the JSON text of a version-1 manifest; an error names the field
    /// that is missing or malformed. Fields it does not use are ignored.
    pub fn parse(text: &str) -> Result<Manifest, ManifestError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|error| ManifestError::Format(format!("not JSON: {error}")))?;
        let version = get(&value, "manifest", "manifest")?;
        if version.as_u64() != Some(MANIFEST_FORMAT) {
            return Err(ManifestError::Format(format!(
                "version {version}; this reader knows version {MANIFEST_FORMAT}"
            )));
        }
        let kernels = array(&value, "kernels", "manifest")?
            .iter()
            .enumerate()
            .map(|(i, k)| kernel(k, &format!("kernels[{i}]")))
            .collect::<Result<_, _>>()?;
        Ok(Manifest {
            source: string(&value, "source", "manifest")?,
            target: string(&value, "target", "manifest")?,
            kernels,
        })
    }

    /// The kernel named `name`.
    pub fn kernel(&self, name: &str) -> Result<&ManifestKernel, ManifestError> {
        self.kernels
            .iter()
            .find(|kernel| kernel.name == name)
            .ok_or_else(|| ManifestError::UnknownKernel {
                kernel: name.to_owned(),
                available: self.kernels.iter().map(|k| k.name.clone()).collect(),
            })
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
