//! Runtime stage (feature `cuda`): the launch manifest's JSON
//! (`ptxgen --emit manifest`, docs/running.md §7) read into the types a
//! launch needs — kernels, parameters (tensors, dims, tensor maps),
//! requirements and limits — with every field checked as it is read: an
//! error names the field at fault. Fields it does not use are ignored.

use serde_json::Value;

use super::manifest_launch::ManifestError;
use crate::data::ElementType;

/// The manifest version this reader understands.
pub const MANIFEST_FORMAT: u64 = 1;

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
/// (what [`TensorMapDescription`](super::TensorMapDescription) holds once
/// they are evaluated).
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
