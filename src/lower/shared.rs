//! Stage 3, lowering: shared-memory allocation. Every `SH` buffer of a
//! kernel gets a slice aligned to 128 bytes, or to its swizzle's period
//! when that is longer (hardware that swizzles by address, `wgmma`'s
//! shared-memory descriptors, sees the same pattern as the layout); up to 48 KiB in all they are static
//! `.shared` arrays (one per buffer, named after it), above that one dynamic
//! `extern .shared` array holds every slice and a launcher must pass its size
//! ([`dynamic_shared_bytes`]). A kernel with block reductions gets one more
//! slice, the reductions' scratch (one 4-byte slot per warp of the block and
//! per reduced element), counted in the total and the limit like any other.

use std::collections::BTreeSet;

use super::error::LowerError;
use crate::check::{WARP_THREADS, is_block_reduction};
use crate::index::prove::group_size;
use crate::ir::{BufferId, BufferKind, Kernel, SpecStmt, Stmt};
use crate::layout::Swizzle;
use crate::ptx::Arch;
use crate::ptx::builder::MAX_STATIC_SHARED_BYTES;
use crate::ptx::identifier::{is_identifier, is_reserved};

/// Every slice starts at a multiple of this many bytes.
pub const SLICE_ALIGN: u32 = crate::ptx::target::SHARED_SLICE_BYTES;

/// Where one shared buffer lives.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SharedSlot {
    /// The buffer.
    pub buffer: BufferId,
    /// The PTX array holding it.
    pub array: String,
    /// Its first byte within the array.
    pub offset: u32,
    /// Its size in bytes (before rounding up to the slice alignment).
    pub bytes: u32,
    /// Its first byte's alignment: [`SLICE_ALIGN`], or the swizzle's period
    /// in bytes when larger.
    pub align: u32,
}

/// The slice where block reductions leave their warps' partials.
///
/// Rule: slot `k · warps + w` (4 bytes each) holds the partial of warp `w`
/// of the block for the reduction's `k`-th output element; `warps` is the
/// block's warps, and `bytes` covers the most output elements per thread of
/// any block reduction of the kernel. Every block reduction uses it whole,
/// between its barriers (docs/lowering.md, "Block reductions").
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ScratchSlot {
    /// The PTX array holding it.
    pub array: String,
    /// Its first byte within the array.
    pub offset: u32,
    /// Its size in bytes.
    pub bytes: u32,
    /// The warps of the block: the slots of one output element.
    pub warps: u32,
}

/// The shared memory of one kernel.
///
/// Rule: slices do not overlap and each starts at a multiple of
/// its `align` (a multiple of [`SLICE_ALIGN`]); `dynamic` is true exactly when `total` exceeds the
/// static limit, and then every slot (the scratch too) is in the one array `dynamic_array`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SharedPlan {
    /// One slot per shared buffer, in buffer order.
    pub slots: Vec<SharedSlot>,
    /// The block reductions' scratch, after the buffers' slices; `None`
    /// when the kernel has no block reduction.
    pub scratch: Option<ScratchSlot>,
    /// Bytes of all slices, each rounded up to the slice alignment.
    pub total: u32,
    /// Whether the slices live in the dynamic array.
    pub dynamic: bool,
    /// The dynamic array's name (meaningful when `dynamic`).
    pub dynamic_array: String,
}

/// The most shared memory one block may use on `arch` (opting in to the
/// large carve-out); without an architecture, the largest of the targets.
pub fn shared_limit(arch: Option<Arch>) -> u64 {
    let sm = arch.map_or(Arch::Sm90.sm(), Arch::sm);
    crate::ptx::target::shared_limit(sm)
}

/// Plans the shared buffers of `kernel`; `taken` holds the names already
/// used in the module's scope (arrays get fresh ones).
pub fn plan_shared(
    kernel: &Kernel,
    arch: Option<Arch>,
    taken: &mut BTreeSet<String>,
) -> Result<SharedPlan, LowerError> {
    let mut slots = Vec::new();
    let mut total: u64 = 0;
    for (index, buffer) in kernel.buffers.iter().enumerate() {
        match buffer.kind {
            BufferKind::Shared => {}
            BufferKind::Param(_) | BufferKind::Registers | BufferKind::Temporary => continue,
        }
        let elements = buffer
            .elements
            .as_const()
            .filter(|n| *n >= 1)
            .ok_or_else(|| {
                LowerError::unsupported(
                    buffer.span,
                    format!(
                        "shared tensor `%{}` has {} elements, not a positive constant",
                        buffer.name, buffer.elements
                    ),
                    "give shared tensors constant shapes",
                )
            })?;
        // In u128, so that the size reported is the true one however large
        // (a positive i64 times at most 8 bytes, plus the total so far).
        let bytes = elements.unsigned_abs() as u128 * u128::from(buffer.ty.scalar.bytes());
        let align = slice_align(buffer.ty.swizzle, buffer.ty.scalar.bytes());
        let offset = round_up(total, u64::from(align));
        let needed = u128::from(offset) + round_up_wide(bytes, u128::from(SLICE_ALIGN));
        if needed > u128::from(shared_limit(arch)) {
            return Err(too_much(kernel, needed, arch));
        }
        // Below the limit, so within u32.
        let bytes = bytes as u64;
        total = needed as u64;
        slots.push(SharedSlot {
            buffer: BufferId(index as u32),
            array: unique_name(&format!("smem_{}", buffer.name), taken),
            offset: offset as u32,
            bytes: bytes as u32,
            align,
        });
    }
    let mut scratch = None;
    if let Some((warps, bytes)) = reduction_scratch(kernel) {
        let offset = round_up(total, u64::from(SLICE_ALIGN));
        let needed = u128::from(offset) + round_up_wide(u128::from(bytes), u128::from(SLICE_ALIGN));
        if needed > u128::from(shared_limit(arch)) {
            return Err(too_much(kernel, needed, arch));
        }
        total = needed as u64;
        scratch = Some(ScratchSlot {
            array: unique_name(&format!("{}_reduction_scratch", kernel.name), taken),
            offset: offset as u32,
            bytes,
            warps,
        });
    }
    let dynamic = total > u64::from(MAX_STATIC_SHARED_BYTES);
    let dynamic_array = unique_name(&format!("{}_dynamic_smem", kernel.name), taken);
    if dynamic {
        for slot in &mut slots {
            slot.array = dynamic_array.clone();
        }
        if let Some(scratch) = &mut scratch {
            scratch.array = dynamic_array.clone();
        }
    } else {
        for slot in &mut slots {
            slot.offset = 0;
        }
        if let Some(scratch) = &mut scratch {
            scratch.offset = 0;
        }
    }
    Ok(SharedPlan {
        slots,
        scratch,
        total: total as u32,
        dynamic,
        dynamic_array,
    })
}

/// The block's warps and the bytes of the block reductions' scratch, when
/// the kernel has one: a 4-byte slot per warp of the block and per output
/// element of the reduction with the most (registers of 32 bits: fp32, i32,
/// u32).
fn reduction_scratch(kernel: &Kernel) -> Option<(u32, u32)> {
    let elements = most_block_reduction_elements(std::slice::from_ref(&kernel.root))?;
    let warps = (group_size(&kernel.block)? + WARP_THREADS - 1) / WARP_THREADS;
    let bytes = warps.checked_mul(elements)?.checked_mul(4)?;
    Some((u32::try_from(warps).ok()?, u32::try_from(bytes).ok()?))
}

/// The most output elements per thread of a block reduction among `specs`
/// and their bodies; `None` when there is none.
fn most_block_reduction_elements(specs: &[SpecStmt]) -> Option<i64> {
    specs
        .iter()
        .filter_map(|spec| match &spec.body {
            Some(body) => most_in_body(body),
            None if is_block_reduction(spec) => {
                let output = spec.outputs.first()?;
                output
                    .ty
                    .levels
                    .iter()
                    .flat_map(|level| level.shape.leaves())
                    .try_fold(1i64, |size, extent| size.checked_mul(extent.as_const()?))
            }
            None => None,
        })
        .max()
}

fn most_in_body(body: &[Stmt]) -> Option<i64> {
    body.iter()
        .filter_map(|stmt| match stmt {
            Stmt::Spec(spec) => most_block_reduction_elements(std::slice::from_ref(spec)),
            Stmt::For(each) => most_in_body(&each.body),
            Stmt::If(branch) => {
                most_in_body(&branch.then_body).max(most_in_body(&branch.else_body))
            }
            Stmt::Sync { .. }
            | Stmt::Commit { .. }
            | Stmt::Wait { .. }
            | Stmt::Arrive { .. }
            | Stmt::WaitPhase { .. }
            | Stmt::SetMaxRegisters { .. } => None,
        })
        .max()
}

/// The dynamic shared memory a launcher must pass for `kernel`: the total of
/// its shared slices when above 48 KiB, else 0 (docs/language.md §6).
pub fn dynamic_shared_bytes(kernel: &Kernel) -> Result<u32, LowerError> {
    let plan = plan_shared(kernel, None, &mut BTreeSet::new())?;
    Ok(if plan.dynamic { plan.total } else { 0 })
}

fn round_up_wide(value: u128, align: u128) -> u128 {
    value.div_ceil(align) * align
}

fn too_much(kernel: &Kernel, bytes: u128, arch: Option<Arch>) -> LowerError {
    LowerError::SharedMemory {
        span: kernel.span,
        bytes,
        limit: shared_limit(arch),
        target: arch.map_or_else(|| "any target".to_string(), |arch| arch.to_string()),
    }
}

/// The alignment of a buffer's slice: [`SLICE_ALIGN`], raised to the
/// period of its swizzle — `Swizzle<B,M,S>` reads offset bits up to
/// `M + B + max(S, 0)`, so it repeats every `2^(M+B+max(S,0))` elements —
/// so that the pattern of offsets from the slice is the pattern of
/// addresses too; at most 1024 bytes, the longest period a hardware
/// swizzle has (`wgmma`'s 128-byte mode) and the most PTX aligns.
pub fn slice_align(swizzle: Option<Swizzle>, element_bytes: u32) -> u32 {
    let period = swizzle
        .filter(|swizzle| !swizzle.is_identity())
        .map_or(1u64, |swizzle| {
            let bits = swizzle.base() + swizzle.bits() + swizzle.shift().max(0);
            (1u64 << bits.clamp(0, 20)) * u64::from(element_bytes)
        });
    period.clamp(u64::from(SLICE_ALIGN), 1024) as u32
}

fn round_up(value: u64, to: u64) -> u64 {
    value.div_ceil(to) * to
}

/// `name` made into a PTX identifier not in `taken` (and added to it):
/// other characters become `_`, and a name PTX reserves (`WARP_SZ`) or one
/// taken gets a numeric suffix — these are internal names, so a
/// deterministic rename is invisible to the kernel's users.
pub fn unique_name(name: &str, taken: &mut BTreeSet<String>) -> String {
    let mut base: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if !base.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        base.insert(0, '_');
    }
    let mut candidate = base.clone();
    let mut n = 1;
    while taken.contains(&candidate) || !is_identifier(&candidate) || is_reserved(&candidate) {
        n += 1;
        candidate = format!("{base}_{n}");
    }
    taken.insert(candidate.clone());
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Memory, ReduceOp, Scalar, SpecKind};
    use crate::lower::testing::{
        KernelBuilder, atomic, col_major, for_loop, group, kernel_with_buffers, shared, ty,
    };

    /// A kernel of `threads` threads with one shared buffer of `shared_halves`
    /// fp16 elements and, inside a loop, a block reduction of `kept` results
    /// per thread over rows of `row` threads.
    fn reducing(threads: i64, row: i64, kept: i64, shared_halves: i64) -> Kernel {
        let mut k = KernelBuilder::new("k", threads, 1);
        k.shared(
            "tile",
            ty(
                vec![col_major(&[shared_halves])],
                Scalar::Fp16,
                Memory::Shared,
            ),
        );
        let rf = |extents: &[i64]| ty(vec![col_major(extents)], Scalar::Fp32, Memory::Registers);
        let input = k.registers("v", rf(&[4, kept]));
        let output = k.registers("s", rf(&[kept]));
        let reduce = atomic(
            SpecKind::Reduction {
                op: ReduceOp::Add,
                axes: vec![0],
            },
            vec![k.whole(output)],
            vec![k.whole(input)],
            group(&[(&[threads / row], &[row]), (&[row], &[1])]),
        );
        let var = k.loop_named("i");
        k.finish(vec![for_loop(var, (0, 2, 1), false, vec![reduce])])
    }
    #[test]
    fn small_kernels_get_one_static_array_per_buffer() {
        let kernel = kernel_with_buffers(vec![shared("a", 256), shared("b", 100)]);
        let plan = plan_shared(&kernel, None, &mut BTreeSet::new()).unwrap();
        assert!(!plan.dynamic);
        assert_eq!(plan.total, 512 + 256);
        let names: Vec<&str> = plan.slots.iter().map(|s| s.array.as_str()).collect();
        assert_eq!(names, ["smem_a", "smem_b"]);
        assert_eq!(plan.slots[1].bytes, 200);
        assert_eq!(dynamic_shared_bytes(&kernel), Ok(0));
    }

    #[test]
    fn large_kernels_share_one_dynamic_array_in_aligned_slices() {
        // 3 stages of 128x32 fp16 for A and B: 6 x 8 KiB + a 100-byte flag.
        let mut buffers: Vec<_> = (0..6).map(|i| shared(&format!("s{i}"), 4096)).collect();
        buffers.push(shared("flag", 50));
        let kernel = kernel_with_buffers(buffers);
        let plan = plan_shared(&kernel, Some(Arch::Sm80), &mut BTreeSet::new()).unwrap();
        assert!(plan.dynamic);
        let offsets: Vec<u32> = plan.slots.iter().map(|s| s.offset).collect();
        assert_eq!(offsets, [0, 8192, 16384, 24576, 32768, 40960, 49152]);
        assert!(plan.slots.iter().all(|s| s.array == plan.dynamic_array));
        assert_eq!(plan.total, 49152 + 128);
        assert_eq!(dynamic_shared_bytes(&kernel), Ok(49280));
    }

    #[test]
    fn more_than_the_target_allows_is_an_error() {
        let kernel = kernel_with_buffers(vec![shared("big", 60 * 1024)]);
        // 120 KiB: fine on sm_80 and sm_90, too much on sm_86.
        assert!(plan_shared(&kernel, Some(Arch::Sm80), &mut BTreeSet::new()).is_ok());
        let error = plan_shared(&kernel, Some(Arch::Sm86), &mut BTreeSet::new()).unwrap_err();
        let diagnostic = error.to_diagnostic();
        assert_eq!(diagnostic.code, "E0302");
        assert!(
            diagnostic.message.contains("122880 bytes"),
            "{}",
            diagnostic.message
        );
        assert!(
            diagnostic.message.contains("sm_86"),
            "{}",
            diagnostic.message
        );
    }

    #[test]
    fn a_size_past_32_bits_is_reported_as_it_is() {
        // 2^31 fp16 values: 4 GiB, which once wrapped to u64::MAX.
        let kernel = kernel_with_buffers(vec![shared("huge", 1 << 31)]);
        let error = plan_shared(&kernel, None, &mut BTreeSet::new()).unwrap_err();
        let message = error.to_diagnostic().message;
        assert!(message.contains("4294967296 bytes"), "{message}");
    }

    #[test]
    fn block_reductions_reserve_a_slot_per_warp_and_result_after_the_buffers() {
        // 512 threads: 16 warps, 2 results each, 128 bytes.
        let plan = plan_shared(&reducing(512, 256, 2, 100), None, &mut BTreeSet::new()).unwrap();
        let scratch = plan.scratch.expect("a scratch slice");
        assert_eq!((scratch.warps, scratch.bytes), (16, 128));
        assert_eq!(scratch.array, "k_reduction_scratch");
        assert_eq!(plan.total, 256 + 128);
        // A warp's reduction needs none.
        let plan = plan_shared(&reducing(256, 32, 1, 100), None, &mut BTreeSet::new()).unwrap();
        assert_eq!(plan.scratch, None);
        assert_eq!(plan.total, 256);
    }

    #[test]
    fn the_scratch_counts_toward_the_dynamic_array_and_the_limit() {
        // 60 KiB of buffers: dynamic, the scratch in the same array after them.
        let kernel = reducing(256, 128, 1, 30 * 1024);
        let plan = plan_shared(&kernel, None, &mut BTreeSet::new()).unwrap();
        let scratch = plan.scratch.clone().expect("a scratch slice");
        assert!(plan.dynamic);
        assert_eq!(
            (scratch.array.as_str(), scratch.offset),
            ("k_dynamic_smem", 61440)
        );
        assert_eq!(dynamic_shared_bytes(&kernel), Ok(61440 + 128));
        // Buffers filling sm_86's 99 KiB exactly: the scratch is one slice too many.
        let full = reducing(256, 128, 1, 99 * 512);
        assert!(plan_shared(&full, Some(Arch::Sm80), &mut BTreeSet::new()).is_ok());
        let error = plan_shared(&full, Some(Arch::Sm86), &mut BTreeSet::new()).unwrap_err();
        assert_eq!(error.to_diagnostic().code, "E0302");
    }

    #[test]
    fn names_are_identifiers_and_unique() {
        let mut taken = BTreeSet::new();
        assert_eq!(unique_name("smem_1", &mut taken), "smem_1");
        assert_eq!(unique_name("smem_1", &mut taken), "smem_1_2");
        assert_eq!(unique_name("1x", &mut taken), "_1x");
        assert_eq!(unique_name("a-b", &mut taken), "a_b");
    }

    #[test]
    fn names_ptxas_refuses_are_renamed() {
        let mut taken = BTreeSet::new();
        assert_eq!(unique_name("WARP_SZ", &mut taken), "WARP_SZ_2");
        assert_eq!(unique_name("WARP_SZ", &mut taken), "WARP_SZ_3");
        assert_eq!(unique_name("", &mut taken), "__2");
    }
}
