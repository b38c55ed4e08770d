//! Stage 3, lowering (instruction selection): Hopper's warpgroup matrix
//! multiply, `wgmma.mma_async.sync.aligned.m64nNk16` (sm_90a). A warpgroup
//! (four warps, 128 threads) multiplies a 64×16 tile of A by a 16×N tile of
//! B, both read straight from shared memory through 64-bit matrix
//! descriptors, into fp32 accumulators spread over its threads as the
//! `mma.m16n8` C fragment is over a warp: warp `w` holds rows `16w..16w+15`,
//! each thread `N/2` values, `[1, N/8].[2, 1].[1, 2]` (the atom of `crate::atoms`).
//!
//! The descriptors describe the two shared layouts of the hardware's
//! 128-byte swizzle (`Swizzle<3,3,3>` on 16-bit elements) this pattern
//! accepts, per operand:
//!
//! - **K-major**: rows of 64 elements along K (128 bytes), 8-row groups 1024
//!   bytes apart: element (row, k) at `row * 64 + k`.
//! - **MN-major** (the instruction's transpose bit): rows of 64 elements
//!   along M (A) or N (B), 8 of them for 8 consecutive k in one 1024-byte
//!   atom; atoms along K `SBO` and along M or N `LBO` bytes apart: element
//!   (mn, k) at `mn % 64 + 64 * (k % 8) + SBO/2 * (k / 8) + LBO/2 * (mn / 64)`.
//!
//! The hardware swizzles absolute addresses, and a swizzled buffer's slice
//! is aligned to its period (1024 bytes, `shared.rs`), so the descriptor's
//! start address is the unswizzled address of element (0, 0), which must
//! begin an 8-row group (K-major: offsets from there to the row's
//! 16-element k-slices go into the start address) or an atom (MN-major);
//! the hardware's swizzle then agrees with the layout's.
//!
//! Ordering (docs/lowering.md, "Warpgroup MatMul"): `wgmma.fence` opens
//! each run of consecutive warpgroup MatMuls; a plain `MatMul` is followed
//! by `wgmma.commit_group` and `wgmma.wait_group 0`, a `MatMul<async>` is
//! left in flight for `mma_commit` / `mma_wait(N)`.

use super::super::error::LowerError;
use super::super::group::Unit;
use super::super::kernel::KernelLowering;
use super::super::views::OperandInfo;
use super::matrix::{essential, is_c_pair, shape_text, type_name};
use super::{Family, Matched, Plan, Progress, Reject, Request, expect_operands, expect_packed};
use crate::atoms::{self, ELEMENT_BYTES, Major, MatrixDescriptor, SharedSwizzle};
use crate::expr::Expr;
use crate::index::chain::split_sum;
use crate::index::prove::constant_factor;
use crate::ir::{Memory, Scalar};
use crate::ptx::{Arch, Operand, Reg, RegClass, Sm, imm};

/// Elements in one K-major row of the 128-byte swizzle: 128 bytes of a
/// 16-bit type.
const ROW: i64 = 64;
/// Elements in one 8-row group, the swizzle's period (1024 bytes).
const GROUP: i64 = 8 * ROW;
/// The widths of B (N) the instruction has: multiples of 8 up to 256.
const WIDTH_STEP: i64 = 8;
/// The widest B.
const MAX_WIDTH: i64 = 256;
/// The descriptor of a K-major 128-byte-swizzled operand at offset 0
/// (`atoms::MatrixDescriptor`, the one encoding of descriptors and their
/// layouts): rows of 64 elements, 8-row groups 1024 bytes apart (SBO), the
/// leading byte offset unused by this mode.
fn k_major() -> MatrixDescriptor {
    MatrixDescriptor::compact(Major::K, SharedSwizzle::Bytes128, ROW)
}

/// The descriptor of an MN-major 128-byte-swizzled operand whose atoms are
/// `stride_k` elements apart along K and `stride_mn` along M or N.
fn mn_major_descriptor(stride_k: i64, stride_mn: i64) -> MatrixDescriptor {
    MatrixDescriptor {
        start_address: 0,
        leading_byte_offset: stride_mn * ELEMENT_BYTES,
        stride_byte_offset: stride_k * ELEMENT_BYTES,
        swizzle: SharedSwizzle::Bytes128,
    }
}

/// The fields of a descriptor but its start address, as the `or.b64`
/// immediate (the same 64 bits).
fn immediate_fields(descriptor: &MatrixDescriptor) -> i64 {
    descriptor.fields() as i64
}

/// The element offset of `(mn, k)` in `descriptor`'s layout, unswizzled.
fn element_offset(descriptor: &MatrixDescriptor, major: Major, mn: i64, k: i64) -> i64 {
    descriptor.unswizzled_offset(major, mn, k) / ELEMENT_BYTES
}
/// The widest byte offset a descriptor field holds: 14 bits of 16 bytes.
const MAX_OFFSET_BYTES: i64 = ((1 << 14) - 1) << 4;

/// The warpgroup multiply of one input type, synchronous or not.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct WgmmaPattern {
    /// fp16 or bf16.
    pub inputs: Scalar,
    /// `MatMul<async>`.
    pub asynchronous: bool,
}

/// What an accepted warpgroup multiply emits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct WgmmaPlan {
    pattern: WgmmaPattern,
    /// B's columns.
    n: i64,
    /// Where A comes from and how it is laid out.
    a: ASource,
    /// How B is laid out.
    b: OperandForm,
}

/// Where a multiply's A comes from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ASource {
    /// Shared memory, through a descriptor.
    Shared(OperandForm),
    /// Registers: each warp's 16 rows as the `mma.m16n8k16` A fragment.
    Registers,
}

/// How one shared operand is laid out, as the instruction is told.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct OperandForm {
    /// MN-major: the instruction's transpose bit for this operand.
    transposed: bool,
    /// The descriptor's fields but the start address: byte offsets and
    /// swizzle mode.
    fields: i64,
}

/// Every warpgroup pattern.
pub fn patterns() -> Vec<WgmmaPattern> {
    let mut all = Vec::new();
    for asynchronous in [false, true] {
        for inputs in [Scalar::Fp16, Scalar::Bf16] {
            all.push(WgmmaPattern {
                inputs,
                asynchronous,
            });
        }
    }
    all
}

impl WgmmaPattern {
    /// The entry's name, N left open.
    pub fn name(&self) -> String {
        let ab = type_name(self.inputs);
        format!("wgmma.mma_async.sync.aligned.m64nNk16.f32.{ab}.{ab}")
    }

    /// Its spec family.
    pub fn family(&self) -> Family {
        if self.asynchronous {
            Family::AsyncMatMul
        } else {
            Family::MatMul
        }
    }

    /// The lowest target with the instruction (with the arch-specific
    /// features: `sm_90a`).
    pub fn needs(&self) -> Sm {
        Sm(90)
    }

    /// Matches a request.
    pub fn check(&self, request: &Request) -> Matched {
        let rf: &[Memory] = &[Memory::Registers];
        let sh: &[Memory] = &[Memory::Shared];
        let a_in_registers = request
            .inputs
            .first()
            .is_some_and(|a| a.memory == Memory::Registers);
        expect_operands(
            request,
            &[rf],
            &[if a_in_registers { rf } else { sh }, sh],
            "multiplies a shared B by a shared A (or A from registers) into register accumulators",
        )?;
        let (c, a, b) = (&request.outputs[0], &request.inputs[0], &request.inputs[1]);
        if c.scalar != Scalar::Fp32 || a.scalar != self.inputs || b.scalar != self.inputs {
            let wanted = self.inputs.name();
            return Err(Reject::new(
                Progress::Types,
                format!(
                    "computes fp32 += {wanted} · {wanted}; this spec has {} += {} · {}",
                    c.scalar.name(),
                    a.scalar.name(),
                    b.scalar.name()
                ),
            ));
        }
        if request.group.unit != Unit::Warpgroup {
            return Err(Reject::new(
                Progress::Group,
                format!(
                    "is executed by a warpgroup, 128 consecutive threads from a multiple of 128; \
                     `{}` is {}",
                    request.group.text,
                    request.group.describe()
                ),
            )
            .with_help("execute it with a group of 128 threads, e.g. `#block.tile(128)`"));
        }
        let (a_rows, a_cols) = if a_in_registers {
            register_a(a)?;
            (64, 16)
        } else {
            matrix_extents(a)?
        };
        let (b_rows, n) = matrix_extents(b)?;
        let width_exists = n % WIDTH_STEP == 0 && (WIDTH_STEP..=MAX_WIDTH).contains(&n);
        if (a_rows, a_cols, b_rows) != (64, 16, 16) || !width_exists {
            return Err(Reject::new(
                Progress::Size,
                format!(
                    "multiplies a 64×16 A by a 16×N B, N a multiple of {WIDTH_STEP} up to \
                     {MAX_WIDTH}; this spec's A is {a_rows}×{a_cols} and B {b_rows}×{n}"
                ),
            ));
        }
        let accumulators = atoms::wgmma_m64nnk16_accumulators(n);
        let fragment = accumulators.levels();
        if c.count as i64 != accumulators.values() || essential(&c.dims) != essential(&fragment) {
            return Err(Reject::new(
                Progress::Layout,
                format!(
                    "wants C per thread as {} ({} fp32 values); the {} is {}",
                    shape_text(&fragment),
                    accumulators.values(),
                    c.role,
                    shape_text(&c.dims)
                ),
            ));
        }
        let a_form = if a_in_registers {
            ASource::Registers
        } else {
            ASource::Shared(operand_form(a, |m, k| (m, k))?)
        };
        let b_form = operand_form(b, |k, n| (n, k))?;
        if let Some(arch) = request.arch.filter(|arch| !arch.is_arch_specific()) {
            return Err(Reject::new(
                Progress::Target,
                format!("needs sm_90a (Hopper's arch-specific instructions); the target is {arch}"),
            )
            .with_help(format!("compile for {}", Arch::Sm90a)));
        }
        Ok(Plan::Wgmma(WgmmaPlan {
            pattern: *self,
            n,
            a: a_form,
            b: b_form,
        }))
    }
}

/// Checks an A read from registers: each thread's 8 halves as
/// `mma.m16n8k16`'s A fragment `[2,2].[1,2]`, or as two column-adjacent
/// 64×8 accumulator tiles rounded to 16 bits (attention's P) — accepted
/// only because the atom tables prove them the same elements.
fn register_a(a: &OperandInfo) -> Result<(), Reject> {
    let fragment = atoms::wgmma_m64nnk16_a_registers();
    let tile = atoms::wgmma_m64nnk16_accumulators(8);
    if a.count as i64 != fragment.values() {
        return Err(Reject::new(
            Progress::Size,
            format!(
                "takes {} elements of A per thread from registers; the {} has {}",
                fragment.values(),
                a.role,
                a.count
            ),
        ));
    }
    if is_c_pair(&a.dims, &tile.levels()) {
        atoms::c_pair_is_a(&tile, &fragment).map_err(|mismatch| {
            Reject::new(
                Progress::Layout,
                format!(
                    "takes two accumulator tiles side by side as A only where they are A; here \
                     {mismatch}"
                ),
            )
        })?;
    } else if essential(&a.dims) != essential(&fragment.levels()) {
        return Err(Reject::new(
            Progress::Layout,
            format!(
                "wants A from registers per thread as {} (or two 64×8 accumulator tiles); the {} \
                 is {}",
                shape_text(&fragment.levels()),
                a.role,
                shape_text(&a.dims)
            ),
        ));
    }
    expect_packed(a)
}

/// The (rows, columns) of a one-level matrix operand; a mode may be
/// hierarchical (`(8,2)` k rows of an MN-major tile), counted by its size.
fn matrix_extents(operand: &OperandInfo) -> Result<(i64, i64), Reject> {
    match (operand.dims.as_slice(), operand.modes.as_slice()) {
        ([level], [modes]) if modes.len() == 2 => {
            let rows: i64 = level[..modes[0]].iter().product();
            let columns: i64 = level[modes[0]..].iter().product();
            Ok((rows, columns))
        }
        _ => Err(Reject::new(
            Progress::Layout,
            format!(
                "reads each shared operand as one rows × columns tile; the {} is {}",
                operand.role,
                shape_text(&operand.dims)
            ),
        )
        .with_help("tile the shared tensor down to the 64×16 (A) or 16×N (B) tile itself")),
    }
}

const LAYOUT_HELP: &str = "lay the shared tile out under the 128-byte swizzle, K-major in rows of \
                           64 16-bit elements (e.g. `[BM, 64 : 64, 1].fp16.SH.Swizzle<3, 3, 3>` \
                           for A) or MN-major in 64×8 atoms (e.g. `[(64, BM/64), (8, 8) : (1, \
                           4096), (64, 512)].fp16.SH.Swizzle<3, 3, 3>` for a column-major A)";

/// How `operand` is laid out: K-major or MN-major under the 128-byte
/// swizzle (the module's comment), its elements (i, j) mapped by `mn_k` to
/// (row along M or N, k).
fn operand_form(
    operand: &OperandInfo,
    mn_k: impl Fn(i64, i64) -> (i64, i64),
) -> Result<OperandForm, Reject> {
    let place = operand
        .memory_place()
        .map_err(|reason| Reject::new(Progress::Layout, reason))?;
    let swizzled = place
        .swizzle
        .is_some_and(|s| (s.bits(), s.base(), s.shift()) == (3, 3, 3));
    if operand.scalar.bytes() != 2 || !swizzled {
        return Err(Reject::new(
            Progress::Layout,
            format!(
                "reads 16-bit tiles under the 128-byte swizzle `Swizzle<3,3,3>`; the {} is {}",
                operand.role, operand.ty
            ),
        )
        .with_help(LAYOUT_HELP));
    }
    let (rows, _) = matrix_extents(operand)?;
    // (mn, k, offset) of every element, its offset from the view's origin.
    let mut elements = Vec::with_capacity(operand.count);
    for e in 0..operand.count as i64 {
        let (mn, k) = mn_k(e % rows, e / rows);
        let Some(offset) = place.offsets[e as usize].as_const() else {
            return Err(Reject::new(
                Progress::Layout,
                format!(
                    "reads tiles of constant offsets; element {e} of the {} is at +{}",
                    operand.role, place.offsets[e as usize]
                ),
            ));
        };
        elements.push((mn, k, offset));
    }
    let k_major = k_major();
    let off_k_major = elements
        .iter()
        .find(|&&(mn, k, offset)| offset != element_offset(&k_major, Major::K, mn, k));
    let Some(&(mn, k, offset)) = off_k_major else {
        starts_a_row_group(operand, &place.base, false)?;
        return Ok(OperandForm {
            transposed: false,
            fields: immediate_fields(&k_major),
        });
    };
    match mn_major(&elements) {
        Ok(fields) => {
            starts_a_row_group(operand, &place.base, true)?;
            Ok(OperandForm {
                transposed: true,
                fields,
            })
        }
        Err(why) => Err(Reject::new(
            Progress::Layout,
            format!(
                "reads K-major rows of {ROW} elements or MN-major 64×8 atoms: element (mn {mn}, \
                 k {k}) of the {} is at +{offset}, not +{} (K-major); MN-major: {why}",
                operand.role,
                element_offset(&k_major, Major::K, mn, k)
            ),
        )
        .with_help(LAYOUT_HELP)),
    }
}

/// The descriptor fields of MN-major elements `(mn, k, offset)`, or why
/// they are not MN-major: the atoms' distances along K (SBO) and along M
/// or N (LBO) are read off elements (0, 8) and (64, 0), and every element
/// must then be where the canonical layout puts it.
fn mn_major(elements: &[(i64, i64, i64)]) -> Result<i64, String> {
    let at = |mn: i64, k: i64| elements.iter().find(|e| (e.0, e.1) == (mn, k)).map(|e| e.2);
    let stride_k = at(0, 8).unwrap_or(GROUP);
    let stride_mn = at(ROW, 0).unwrap_or(GROUP);
    for (what, stride) in [("along K", stride_k), ("along M or N", stride_mn)] {
        if stride <= 0 || stride % GROUP != 0 || stride * 2 > MAX_OFFSET_BYTES {
            return Err(format!(
                "the atoms {what} are {stride} elements apart, not a positive multiple of \
                 {GROUP} (1024 bytes) that a descriptor holds"
            ));
        }
    }
    let descriptor = mn_major_descriptor(stride_k, stride_mn);
    for &(mn, k, offset) in elements {
        let expected = element_offset(&descriptor, Major::Mn, mn, k);
        if offset != expected {
            return Err(format!(
                "element (mn {mn}, k {k}) would be at +{expected}, with atoms {stride_k} \
                 elements apart along K and {stride_mn} along M or N"
            ));
        }
    }
    Ok(immediate_fields(&descriptor))
}

/// Checks that the view's origin `base` (unswizzled, in elements) begins
/// an 8-row group: every term but the constant carries a factor of 512,
/// and the constant is a multiple of 512 plus, for a K-major tile, one of
/// the 16-element k-slices of the group's first row (0, 16, 32 or 48); an
/// MN-major tile starts its atom.
fn starts_a_row_group(operand: &OperandInfo, base: &Expr, transposed: bool) -> Result<(), Reject> {
    let (terms, constant) = split_sum(base);
    let unaligned = terms
        .iter()
        .find(|term| constant_factor(term).is_none_or(|(_, factor)| factor % GROUP != 0));
    let within = constant.rem_euclid(GROUP);
    let (slices, allowed) = if transposed {
        (within == 0, "0: an MN-major tile starts an atom")
    } else {
        (within % 16 == 0 && within < ROW, "0, 16, 32 or 48 along K")
    };
    let reason = match unaligned {
        Some(term) => format!(
            "the {}'s origin has the term `{term}`, not a multiple of {GROUP} elements",
            operand.role
        ),
        None if !slices => format!(
            "the {}'s origin is {within} elements past an 8-row group, not where a tile may \
             begin ({allowed})",
            operand.role
        ),
        None => return Ok(()),
    };
    Err(Reject::new(
        Progress::Alignment,
        format!(
            "reads tiles that begin an 8-row group of the swizzle (a multiple of {GROUP} \
             elements, plus {allowed}); {reason}"
        ),
    )
    .with_help("tile the shared tensor in 64-row (A) or N-row (B) tiles of 64-element rows"))
}

/// Emits an accepted warpgroup multiply.
pub fn emit(
    lowering: &mut KernelLowering,
    request: &Request,
    plan: &WgmmaPlan,
) -> Result<(), LowerError> {
    let (c, a, b) = (&request.outputs[0], &request.inputs[0], &request.inputs[1]);
    let a_operand = match plan.a {
        ASource::Shared(form) => descriptor(lowering, a, form.fields)?.into(),
        ASource::Registers => Operand::Vector(lowering.read_words(a)?),
    };
    let b_descriptor = descriptor(lowering, b, plan.b.fields)?;
    let accumulators = lowering.target_words(c)?;
    if !lowering.wgmma_batch_open {
        lowering.out.emit("wgmma.fence.sync.aligned", Vec::new())?;
    }
    let ab = type_name(plan.pattern.inputs);
    let form = match plan.a {
        ASource::Shared(_) => "",
        ASource::Registers => "/regA",
    };
    let name = format!(
        "wgmma.mma_async.sync.aligned.m64n{}k16.f32.{ab}.{ab}{form}",
        plan.n
    );
    // scale-d: 1 adds into C, 0 overwrites it; A and B not negated; each
    // transposed where it is MN-major (an A in registers has no such bit).
    let mut operands = vec![
        Operand::Vector(accumulators),
        a_operand,
        b_descriptor.into(),
        imm(i64::from(request.kind.accumulates())),
        imm(1),
        imm(1),
    ];
    if let ASource::Shared(form) = plan.a {
        operands.push(imm(i64::from(form.transposed)));
    }
    operands.push(imm(i64::from(plan.b.transposed)));
    lowering.out.emit(&name, operands)?;
    if plan.pattern.asynchronous {
        lowering.wgmma_batch_open = true;
        return Ok(());
    }
    lowering
        .out
        .emit("wgmma.commit_group.sync.aligned", Vec::new())?;
    lowering
        .out
        .emit("wgmma.wait_group.sync.aligned", vec![imm(0)])?;
    lowering.wgmma_batch_open = false;
    Ok(())
}

/// The matrix descriptor of a checked operand: its unswizzled start address
/// in 16-byte units, then `fields`.
fn descriptor(
    lowering: &mut KernelLowering,
    operand: &OperandInfo,
    fields: i64,
) -> Result<Reg, LowerError> {
    let start = lowering.unswizzled_shared_address(operand)?;
    let units = lowering.out.reg(RegClass::B32);
    lowering
        .out
        .emit("shr.u32", vec![units.into(), start.into(), imm(4)])?;
    let wide = lowering.out.reg(RegClass::B64);
    lowering
        .out
        .emit("cvt.u64.u32", vec![wide.into(), units.into()])?;
    let descriptor = lowering.out.reg(RegClass::B64);
    lowering
        .out
        .emit("or.b64", vec![descriptor.into(), wide.into(), imm(fields)])?;
    Ok(descriptor)
}
