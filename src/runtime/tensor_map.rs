//! Runtime stage (feature `cuda`): TMA tensor maps — the 128-byte descriptor
//! through which a `Move<tma>` kernel copies boxes of a global tensor into
//! shared memory, checked on the host against what `cuTensorMapEncodeTiled`
//! refuses, then encoded by the driver and passed by value at launch
//! ([`KernelArg::TensorMap`](super::KernelArg::TensorMap)).
//!
//! Every map this runtime makes is tiled, not interleaved, with element
//! strides of 1 (the box is dense), L2 promotion of 128 bytes, and no
//! out-of-bounds fill: elements of a box past the tensor's extents land in
//! shared memory as zero.
//!
//! L2 promotion is 128 bytes rather than 256: a box row is at most 128
//! bytes wherever the lowering swizzles (the widest span), so a 128-byte
//! promotion fetches whole rows and never pulls into L2 the half-line next
//! to a box that no box of this launch may read (CUTLASS's `make_tma_copy`
//! chooses the same). It is a hint to the memory system, not a meaning: a
//! measurement may change it here, in one constant.

use std::ffi::c_uint;

use super::driver::{self, TensorMap, TensorMapEnum};
use super::error::RuntimeError;
use super::gpu::Gpu;
use crate::data::ElementType;

/// Most dims of a tensor map.
pub const MAX_TENSOR_MAP_RANK: usize = 5;
/// Most elements of a box in one dim.
pub const MAX_BOX_ELEMENTS: u32 = 256;
/// Most elements of a tensor in one dim (2^32).
pub const MAX_TENSOR_MAP_EXTENT: u64 = 1 << 32;
/// Every stride, in bytes, is below this (2^40).
pub const TENSOR_MAP_STRIDE_LIMIT: u64 = 1 << 40;
/// The tensor's address, its strides and a box row are multiples of this
/// many bytes (the driver's rule without interleave).
pub const TENSOR_MAP_ALIGN_BYTES: u64 = 16;

/// See the module's documentation for why 128 bytes.
const L2_PROMOTION: TensorMapEnum = driver::TENSOR_MAP_L2_PROMOTION_L2_128B;

/// What one tensor map describes, its dims bound: a launch plan's
/// `launch::TensorMapPlan`, or a manifest's `tensor_maps` entry evaluated.
///
/// Rule (what [`TensorMapDescription::check`] asks before the driver is
/// called): 1 to 5 dims; `extents` and `boxes` one entry per dim,
/// innermost first, `strides_bytes` one per dim but the innermost; each
/// extent 1 to 2^32, each box entry 1 to 256; `boxes[0]` · element bytes a
/// multiple of 16 and, swizzled, at most `swizzle_bytes`; each stride a
/// multiple of 16 below 2^40; `swizzle_bytes` 0, 32, 64 or 128.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorMapDescription {
    /// `%name` of the tensor, for messages.
    pub tensor: String,
    /// Element type.
    pub element: ElementType,
    /// Elements per dim, innermost first.
    pub extents: Vec<u64>,
    /// Bytes between consecutive indices of dims 1, 2, ….
    pub strides_bytes: Vec<u64>,
    /// The box, elements per dim, innermost first.
    pub boxes: Vec<u32>,
    /// The shared-memory swizzle's span in bytes (0: none).
    pub swizzle_bytes: u32,
}

/// The driver's arguments of one checked map, in the arrays it reads
/// (`rank` entries of each are used).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Encoding {
    /// `CUtensorMapDataType`.
    pub data_type: TensorMapEnum,
    /// Dims.
    pub rank: c_uint,
    /// `globalDim`.
    pub extents: [u64; MAX_TENSOR_MAP_RANK],
    /// `globalStrides`: dims 1.. in bytes.
    pub strides_bytes: [u64; MAX_TENSOR_MAP_RANK - 1],
    /// `boxDim`.
    pub boxes: [c_uint; MAX_TENSOR_MAP_RANK],
    /// `elementStrides`: all 1, a dense box.
    pub element_strides: [c_uint; MAX_TENSOR_MAP_RANK],
    /// `CUtensorMapSwizzle`.
    pub swizzle: TensorMapEnum,
}

/// The driver's name for an element type.
fn data_type(element: ElementType) -> TensorMapEnum {
    match element {
        ElementType::F16 => driver::TENSOR_MAP_DATA_TYPE_FLOAT16,
        ElementType::BF16 => driver::TENSOR_MAP_DATA_TYPE_BFLOAT16,
        ElementType::F32 => driver::TENSOR_MAP_DATA_TYPE_FLOAT32,
        ElementType::I32 => driver::TENSOR_MAP_DATA_TYPE_INT32,
        ElementType::U32 => driver::TENSOR_MAP_DATA_TYPE_UINT32,
    }
}

/// The driver's name for a swizzle span, if it has one.
fn swizzle(span_bytes: u32) -> Option<TensorMapEnum> {
    match span_bytes {
        0 => Some(driver::TENSOR_MAP_SWIZZLE_NONE),
        32 => Some(driver::TENSOR_MAP_SWIZZLE_32B),
        64 => Some(driver::TENSOR_MAP_SWIZZLE_64B),
        128 => Some(driver::TENSOR_MAP_SWIZZLE_128B),
        _ => None,
    }
}

impl TensorMapDescription {
    /// Why the driver would refuse to encode this map of the tensor at
    /// `address`, in words; `Ok` when it would not. No driver is involved.
    pub fn check(&self, address: u64) -> Result<(), String> {
        self.encoding(address).map(|_| ())
    }

    /// The driver's arguments, after every check of [`check`](Self::check).
    pub(crate) fn encoding(&self, address: u64) -> Result<Encoding, String> {
        let rank = self.extents.len();
        if !(1..=MAX_TENSOR_MAP_RANK).contains(&rank) {
            return Err(format!(
                "a tensor map has 1 to {MAX_TENSOR_MAP_RANK} dims; this one has {rank}"
            ));
        }
        if self.boxes.len() != rank || self.strides_bytes.len() + 1 != rank {
            return Err(format!(
                "{rank} extents, {} box entries and {} strides; a map has one box entry per dim \
                 and one stride per dim but the innermost",
                self.boxes.len(),
                self.strides_bytes.len()
            ));
        }
        let swizzle = swizzle(self.swizzle_bytes).ok_or_else(|| {
            format!(
                "a swizzle span of {} B; the driver knows none (0), 32, 64 and 128 B",
                self.swizzle_bytes
            )
        })?;
        let mut encoding = Encoding {
            data_type: data_type(self.element),
            rank: rank as c_uint,
            extents: [0; MAX_TENSOR_MAP_RANK],
            strides_bytes: [0; MAX_TENSOR_MAP_RANK - 1],
            boxes: [0; MAX_TENSOR_MAP_RANK],
            element_strides: [1; MAX_TENSOR_MAP_RANK],
            swizzle,
        };
        for (dim, (&extent, &elements)) in self.extents.iter().zip(&self.boxes).enumerate() {
            if !(1..=MAX_TENSOR_MAP_EXTENT).contains(&extent) {
                return Err(format!(
                    "dim {dim} has {extent} elements; the driver allows 1 to 2^32"
                ));
            }
            if !(1..=MAX_BOX_ELEMENTS).contains(&elements) {
                return Err(format!(
                    "box[{dim}] is {elements} elements; the driver allows 1 to {MAX_BOX_ELEMENTS}"
                ));
            }
            encoding.extents[dim] = extent;
            encoding.boxes[dim] = elements;
        }
        // Without interleave the box's innermost row is moved in 16-byte
        // chunks, and a swizzle permutes chunks within one span.
        let element_bytes = self.element.bytes() as u64;
        let row_bytes = u64::from(self.boxes[0]) * element_bytes;
        let row = || {
            format!(
                "box[0] is {} {} elements = {row_bytes} B",
                self.boxes[0],
                self.element.name()
            )
        };
        if row_bytes % TENSOR_MAP_ALIGN_BYTES != 0 {
            return Err(format!(
                "{}, not a multiple of {TENSOR_MAP_ALIGN_BYTES} B",
                row()
            ));
        }
        if self.swizzle_bytes != 0 && row_bytes > u64::from(self.swizzle_bytes) {
            return Err(format!(
                "{}, wider than the {} B swizzle span",
                row(),
                self.swizzle_bytes
            ));
        }
        for (i, &stride) in self.strides_bytes.iter().enumerate() {
            let dim = i + 1;
            if stride % TENSOR_MAP_ALIGN_BYTES != 0 {
                return Err(format!(
                    "the stride of dim {dim} is {stride} B, not a multiple of \
                     {TENSOR_MAP_ALIGN_BYTES} B"
                ));
            }
            if stride >= TENSOR_MAP_STRIDE_LIMIT {
                return Err(format!(
                    "the stride of dim {dim} is {stride} B; the driver allows less than 2^40 B"
                ));
            }
            encoding.strides_bytes[i] = stride;
        }
        if address % TENSOR_MAP_ALIGN_BYTES != 0 {
            return Err(format!(
                "the tensor's address 0x{address:x} is not a multiple of \
                 {TENSOR_MAP_ALIGN_BYTES} bytes"
            ));
        }
        Ok(encoding)
    }

    /// One line of what the map describes, for a refusal by the driver.
    fn summary(&self, address: u64) -> String {
        format!(
            "{} at 0x{address:x}, extents {:?}, strides {:?} B, box {:?}, swizzle {} B",
            self.element.name(),
            self.extents,
            self.strides_bytes,
            self.boxes,
            self.swizzle_bytes
        )
    }
}

impl Gpu {
    /// The tensor map of `description` over the tensor at device `address`,
    /// encoded by the driver after [`TensorMapDescription::check`]. Either
    /// refusal — ours in words, the driver's by its code — is a
    /// [`RuntimeError::TensorMap`] naming the tensor.
    pub fn encode_tensor_map(
        &self,
        address: u64,
        description: &TensorMapDescription,
    ) -> Result<TensorMap, RuntimeError> {
        let refused = |detail: String| RuntimeError::TensorMap {
            tensor: description.tensor.clone(),
            detail,
        };
        let encoding = description.encoding(address).map_err(refused)?;
        let mut map = TensorMap::zeroed();
        // SAFETY: `map` is 128 bytes at a 64-byte boundary (its type says
        // so); every array holds at least `rank` entries and outlives the
        // call; the driver reads the tensor's address, never dereferences it
        // on the host; this thread's context is current (`Gpu`).
        let code = unsafe {
            driver::cuTensorMapEncodeTiled(
                &mut map,
                encoding.data_type,
                encoding.rank,
                std::ptr::without_provenance_mut(address as usize),
                encoding.extents.as_ptr(),
                encoding.strides_bytes.as_ptr(),
                encoding.boxes.as_ptr(),
                encoding.element_strides.as_ptr(),
                driver::TENSOR_MAP_INTERLEAVE_NONE,
                encoding.swizzle,
                L2_PROMOTION,
                driver::TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        driver::check(code).map_err(|code| {
            refused(format!(
                "cuTensorMapEncodeTiled failed: {code} ({})",
                description.summary(address)
            ))
        })?;
        Ok(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A's tile of a K-major GEMM: K fp16 elements innermost, M rows,
    /// 64 × 128 boxes under the 128-byte swizzle.
    fn a_tiles() -> TensorMapDescription {
        TensorMapDescription {
            tensor: "%A".into(),
            element: ElementType::F16,
            extents: vec![4096, 2048],
            strides_bytes: vec![4096 * 2],
            boxes: vec![64, 128],
            swizzle_bytes: 128,
        }
    }

    fn refusal(change: impl FnOnce(&mut TensorMapDescription), address: u64) -> String {
        let mut description = a_tiles();
        change(&mut description);
        description.check(address).unwrap_err()
    }

    #[test]
    fn a_good_map_becomes_the_drivers_arrays() {
        let encoding = a_tiles().encoding(0x7f00_0000_0000).expect("valid");
        assert_eq!(encoding.data_type, 6, "CU_TENSOR_MAP_DATA_TYPE_FLOAT16");
        assert_eq!(encoding.rank, 2);
        assert_eq!(encoding.extents, [4096, 2048, 0, 0, 0]);
        assert_eq!(encoding.strides_bytes, [8192, 0, 0, 0]);
        assert_eq!(encoding.boxes, [64, 128, 0, 0, 0]);
        assert_eq!(encoding.element_strides, [1; 5]);
        assert_eq!(encoding.swizzle, 3, "CU_TENSOR_MAP_SWIZZLE_128B");
        let types: Vec<TensorMapEnum> = ElementType::ALL.into_iter().map(data_type).collect();
        assert_eq!(types, [6, 9, 7, 3, 2]);
        assert_eq!(
            [0, 32, 64, 128, 16].map(swizzle),
            [Some(0), Some(1), Some(2), Some(3), None]
        );
    }

    #[test]
    fn a_rank_1_map_has_no_stride_and_5_dims_are_the_most() {
        let line = TensorMapDescription {
            tensor: "%x".into(),
            element: ElementType::F32,
            extents: vec![1 << 32],
            strides_bytes: vec![],
            boxes: vec![256],
            swizzle_bytes: 0,
        };
        assert_eq!(line.check(0), Ok(()));
        let mut wide = line.clone();
        wide.extents = vec![4; 6];
        wide.boxes = vec![4; 6];
        wide.strides_bytes = vec![16; 5];
        assert_eq!(
            wide.check(0).unwrap_err(),
            "a tensor map has 1 to 5 dims; this one has 6"
        );
        wide.extents.clear();
        assert_eq!(
            wide.check(0).unwrap_err(),
            "a tensor map has 1 to 5 dims; this one has 0"
        );
    }

    #[test]
    fn what_the_driver_would_refuse_is_said_in_words() {
        let at = 0x1000;
        assert_eq!(
            refusal(|d| d.boxes.push(1), at),
            "2 extents, 3 box entries and 1 strides; a map has one box entry per dim and one \
             stride per dim but the innermost"
        );
        assert_eq!(
            refusal(|d| d.swizzle_bytes = 48, at),
            "a swizzle span of 48 B; the driver knows none (0), 32, 64 and 128 B"
        );
        assert_eq!(
            refusal(|d| d.extents[1] = 0, at),
            "dim 1 has 0 elements; the driver allows 1 to 2^32"
        );
        assert_eq!(
            refusal(|d| d.extents[0] = (1 << 32) + 1, at),
            "dim 0 has 4294967297 elements; the driver allows 1 to 2^32"
        );
        assert_eq!(
            refusal(|d| d.boxes[1] = 257, at),
            "box[1] is 257 elements; the driver allows 1 to 256"
        );
        assert_eq!(
            refusal(|d| d.boxes[1] = 0, at),
            "box[1] is 0 elements; the driver allows 1 to 256"
        );
        assert_eq!(
            refusal(|d| d.boxes[0] = 12, at),
            "box[0] is 12 fp16 elements = 24 B, not a multiple of 16 B"
        );
        assert_eq!(
            refusal(|d| d.boxes[0] = 128, at),
            "box[0] is 128 fp16 elements = 256 B, wider than the 128 B swizzle span"
        );
        assert_eq!(
            refusal(|d| d.swizzle_bytes = 64, at),
            "box[0] is 64 fp16 elements = 128 B, wider than the 64 B swizzle span"
        );
        assert_eq!(
            refusal(|d| d.strides_bytes[0] = 4095 * 2, at),
            "the stride of dim 1 is 8190 B, not a multiple of 16 B"
        );
        assert_eq!(
            refusal(|d| d.strides_bytes[0] = 1 << 40, at),
            "the stride of dim 1 is 1099511627776 B; the driver allows less than 2^40 B"
        );
        assert_eq!(
            refusal(|_| {}, 0x1008),
            "the tensor's address 0x1008 is not a multiple of 16 bytes"
        );
    }

    #[test]
    fn an_unswizzled_box_row_may_be_any_multiple_of_16_bytes() {
        let mut description = a_tiles();
        description.swizzle_bytes = 0;
        description.boxes[0] = 256;
        assert_eq!(description.check(0x100), Ok(()));
        description.element = ElementType::F32;
        description.boxes[0] = 4;
        assert_eq!(description.check(0x100), Ok(()));
    }

    #[test]
    fn refusals_name_the_tensor() {
        let error = RuntimeError::TensorMap {
            tensor: "%A".into(),
            detail: refusal(|d| d.boxes[0] = 12, 0),
        };
        assert_eq!(
            error.to_string(),
            "tensor map of `%A`: box[0] is 12 fp16 elements = 24 B, not a multiple of 16 B"
        );
        assert!(!error.is_unavailable());
    }
}
