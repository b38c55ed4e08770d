//! Stage 3, lowering: what an atomic spec's operand is, per thread — its
//! elements in element order (docs/language.md, "Element order and
//! fragments"), where each lives (buffer offsets in memory, register slots
//! in a register array), and what can be proven about them: contiguity and
//! alignment, the conditions of vector instructions.

use super::broadcast::{Broadcast, distinct_view};
use crate::diag::Span;
use crate::expr::Expr;
use crate::index::prove::Prover;
use crate::ir::print::{Names, Print};
use crate::ir::{BufferId, Memory, Scalar, View};
use crate::layout::{Swizzle, Tuple};

/// The most elements one per-thread operand may have.
pub const MAX_ELEMENTS: usize = 4096;

/// The largest alignment any instruction asks for (16-byte vectors).
pub const MAX_ALIGN: u32 = 16;

/// One operand of an atomic spec, analysed.
///
/// Rule: `dims` and `count` describe the view's shape (per level, the
/// extents of its flattened modes, outermost level first); `place` says
/// where element `e` (in element order) lives, or why that is unknown.
#[derive(Clone, PartialEq, Debug)]
pub struct OperandInfo {
    /// `output`, `input 1`, …
    pub role: String,
    /// The full type as text.
    pub ty: String,
    /// Where the operand was written.
    pub span: Span,
    /// Element type.
    pub scalar: Scalar,
    /// Memory space.
    pub memory: Memory,
    /// The storage it views.
    pub buffer: BufferId,
    /// Per level, the extents of its flattened modes.
    pub dims: Vec<Vec<i64>>,
    /// Per level, how many of those flattened extents each top-level mode
    /// has (`[(2,4),8]` → `[2, 1]`).
    pub modes: Vec<Vec<usize>>,
    /// Number of elements.
    pub count: usize,
    /// Where the elements are, or why that cannot be said.
    pub place: Result<Place, String>,
    /// For a memory view with a stride-0 mode of more than one element:
    /// its distinct elements, which one read moves.
    pub broadcast: Option<Box<Broadcast>>,
    /// For a view of a partial tile: per bound, where each element lies
    /// along the tiled mode (`ir::Bound`).
    pub bounds: Vec<ElementBound>,
}

/// One bound of an operand, element by element.
///
/// Rule: element `e` exists along this bound when `coordinates[e] <
/// extent`.
#[derive(Clone, PartialEq, Debug)]
pub struct ElementBound {
    /// The tiled mode's extent.
    pub extent: Expr,
    /// The coordinate of each element along the tiled mode (simplified).
    pub coordinates: Vec<Expr>,
    /// Each element's coordinate minus element 0's, where that is a
    /// constant.
    pub from_first: Vec<Option<i64>>,
}

/// Where the elements of an operand live.
#[derive(Clone, PartialEq, Debug)]
pub enum Place {
    /// In global or shared memory.
    Memory(MemoryPlace),
    /// In a register array: the slot of each element.
    Registers(Vec<i64>),
}

/// The elements of a memory operand.
///
/// Rule: element `e` is at buffer offset `swizzle(base + offsets[e])`;
/// `contiguous` means the elements occupy consecutive physical offsets in
/// element order (after the swizzle), `align` is a proven alignment in bytes
/// of element 0's address (at most [`MAX_ALIGN`]).
#[derive(Clone, PartialEq, Debug)]
pub struct MemoryPlace {
    /// Offset of the view's origin (simplified, unswizzled).
    pub base: Expr,
    /// Offset of each element from `base` (simplified, unswizzled).
    pub offsets: Vec<Expr>,
    /// Whether the elements are physically consecutive.
    pub contiguous: bool,
    /// A proven divisor of `base`, in elements.
    pub base_divisor: i64,
    /// Proven alignment of element 0, in bytes.
    pub align: u32,
    /// The buffer's storage permutation.
    pub swizzle: Option<Swizzle>,
}

impl OperandInfo {
    /// Analyses `view` with the kernel's facts; `role` names it in messages.
    pub fn analyse(
        view: &View,
        role: String,
        ty: String,
        prover: &Prover,
        names: &Names,
    ) -> OperandInfo {
        let mut info = OperandInfo {
            role,
            ty,
            span: view.span,
            scalar: view.ty.scalar,
            memory: view.ty.memory,
            buffer: view.buffer,
            dims: Vec::new(),
            modes: Vec::new(),
            count: 0,
            place: Err(String::new()),
            broadcast: None,
            bounds: Vec::new(),
        };
        info.place = info.locate(view, prover, names);
        if info.place.is_ok() {
            info.bounds = view
                .bounds
                .iter()
                .map(|bound| {
                    let coordinates = coordinates(bound, info.count, prover);
                    let from_first = coordinates
                        .iter()
                        .map(|c| {
                            prover
                                .simplify(&Expr::sub(c.clone(), coordinates[0].clone()))
                                .as_const()
                        })
                        .collect();
                    ElementBound {
                        extent: prover.simplify(&bound.extent),
                        coordinates,
                        from_first,
                    }
                })
                .collect();
        }
        if info.place.is_ok()
            && let Some((distinct, source)) = distinct_view(view, info.count)
        {
            let role = format!("{} (its stride-0 modes cut to one element)", info.role);
            let ty = distinct.ty.display(names).to_string();
            info.broadcast = Some(Box::new(Broadcast {
                distinct: OperandInfo::analyse(&distinct, role, ty, prover, names),
                source,
            }));
        }
        info
    }

    /// The operand one read of it moves: the distinct elements of a
    /// broadcast, the operand itself otherwise.
    pub fn read_access(&self) -> &OperandInfo {
        match &self.broadcast {
            Some(broadcast) => &broadcast.distinct,
            None => self,
        }
    }

    fn locate(&mut self, view: &View, prover: &Prover, names: &Names) -> Result<Place, String> {
        let mut levels = Vec::with_capacity(view.ty.levels.len());
        for level in &view.ty.levels {
            let extents = constant_extents(&level.shape, names)?;
            let strides: Vec<&Expr> = level.stride.leaves();
            if strides.len() != extents.len() {
                return Err("its shape and strides are not congruent".into());
            }
            self.dims.push(extents.clone());
            self.modes.push(
                level
                    .shape
                    .modes()
                    .into_iter()
                    .map(|mode| mode.leaf_count())
                    .collect(),
            );
            levels.push((extents, strides));
        }
        let count = levels
            .iter()
            .flat_map(|(extents, _)| extents)
            .try_fold(1usize, |count, extent| count.checked_mul(*extent as usize))
            .filter(|count| *count <= MAX_ELEMENTS)
            .ok_or_else(|| format!("a per-thread operand has at most {MAX_ELEMENTS} elements"))?;
        self.count = count;
        let offsets: Vec<Expr> = (0..count)
            .map(|e| prover.simplify(&element_offset(&levels, e)))
            .collect();
        match view.ty.memory {
            Memory::Registers => {
                let base = prover.simplify(&view.base);
                let mut slots = Vec::with_capacity(count);
                for offset in &offsets {
                    let slot = prover.simplify(&Expr::add(base.clone(), offset.clone()));
                    match slot.as_const() {
                        Some(slot) => slots.push(slot),
                        None => {
                            return Err(format!(
                                "its register slot `{slot}` is not a compile-time constant"
                            ));
                        }
                    }
                }
                Ok(Place::Registers(slots))
            }
            Memory::Global | Memory::Shared => {
                let base = prover.simplify(&view.base);
                let base_divisor = prover.divisor(&base);
                let swizzle = view.ty.swizzle.filter(|swizzle| !swizzle.is_identity());
                let dense = offsets
                    .iter()
                    .enumerate()
                    .all(|(e, offset)| offset.as_const() == Some(e as i64));
                // A swizzle keeps runs of 2^M elements that start at a multiple
                // of the run's length together.
                let contiguous = dense
                    && match swizzle {
                        None => true,
                        Some(swizzle) => {
                            let run = count as i64;
                            run <= 1 << swizzle.base()
                                && (run as u64).is_power_of_two()
                                && base_divisor % run == 0
                        }
                    };
                let mut low_bits = base_divisor.trailing_zeros();
                if let Some(swizzle) = swizzle {
                    low_bits = low_bits.min(swizzle.base() as u32);
                }
                let align = (1u64 << low_bits.min(8))
                    .saturating_mul(u64::from(view.ty.scalar.bytes()))
                    .min(u64::from(MAX_ALIGN)) as u32;
                Ok(Place::Memory(MemoryPlace {
                    base,
                    offsets,
                    contiguous,
                    base_divisor,
                    align,
                    swizzle,
                }))
            }
        }
    }

    /// Bytes of all elements together.
    pub fn bytes(&self) -> u32 {
        self.count as u32 * self.scalar.bytes()
    }

    /// The memory place, or why there is none.
    pub fn memory_place(&self) -> Result<&MemoryPlace, String> {
        match &self.place {
            Ok(Place::Memory(place)) => Ok(place),
            Ok(Place::Registers(_)) => Err(format!("the {} is in registers", self.role)),
            Err(reason) => Err(format!("the {}: {reason}", self.role)),
        }
    }

    /// The register slots, or why there are none.
    pub fn register_slots(&self) -> Result<&[i64], String> {
        match &self.place {
            Ok(Place::Registers(slots)) => Ok(slots),
            Ok(Place::Memory(_)) => Err(format!("the {} is in memory", self.role)),
            Err(reason) => Err(format!("the {}: {reason}", self.role)),
        }
    }

    /// Whether one load or store moves the whole operand: its bytes are
    /// 2, 4, 8 or 16, the elements are contiguous and element 0 is aligned
    /// to the access size. The error says which condition fails, in the
    /// terms of the instruction `name`.
    pub fn single_access(&self, name: &str) -> Result<u32, String> {
        let place = self.memory_place()?;
        let bytes = self.bytes();
        if ![2, 4, 8, 16].contains(&bytes) {
            return Err(format!(
                "one `{name}` moves 2, 4, 8 or 16 bytes; the {} has {} elements ({bytes} bytes)",
                self.role, self.count
            ));
        }
        if !place.contiguous {
            return Err(format!(
                "the {} {}",
                self.role,
                place.why_not_contiguous(self.count)
            ));
        }
        if place.align < bytes {
            return Err(self.alignment_reason(bytes));
        }
        Ok(bytes)
    }

    /// Why element 0 is not proven `bytes`-aligned: `needs 16-byte
    /// alignment; the input's offset is proven only a multiple of 2 elements
    /// (4 bytes)`.
    pub fn alignment_reason(&self, bytes: u32) -> String {
        let place = self.memory_place();
        let divisor = place.as_ref().map_or(1, |place| place.base_divisor);
        let align = place.as_ref().map_or(1, |place| place.align);
        let element_bytes = i64::from(self.scalar.bytes());
        let offset_bytes = divisor.saturating_mul(element_bytes);
        let proven = if divisor >= 1 << 20 {
            format!("{align}-byte aligned")
        } else {
            let plural = if divisor == 1 { "" } else { "s" };
            let mut text =
                format!("a multiple of {divisor} element{plural} ({offset_bytes} bytes)");
            if i64::from(align) != offset_bytes {
                text.push_str(&format!(", so {align}-byte aligned"));
            }
            text
        };
        format!(
            "needs {bytes}-byte alignment; the {}'s offset is proven only {proven}",
            self.role
        )
    }

    /// The register index of each packed pair of 16-bit elements, or why
    /// the elements are not packed pairs (elements `2i`, `2i+1` must be the
    /// low and high half of one register: slots `2r`, `2r+1`).
    pub fn packed_pairs(&self) -> Result<Vec<i64>, String> {
        let slots = self.register_slots()?;
        if self.scalar.bytes() != 2 {
            return Err(format!("the {} is not a 16-bit type", self.role));
        }
        if slots.len() % 2 != 0 {
            return Err(format!(
                "the {} has an odd number of 16-bit elements ({})",
                self.role,
                slots.len()
            ));
        }
        let mut pairs = Vec::with_capacity(slots.len() / 2);
        for (i, pair) in slots.chunks(2).enumerate() {
            if pair[0] % 2 != 0 || pair[1] != pair[0] + 1 {
                return Err(format!(
                    "the {}'s elements {} and {} are register slots {} and {}, not a packed \
                     pair (slots 2r and 2r+1)",
                    self.role,
                    2 * i,
                    2 * i + 1,
                    pair[0],
                    pair[1]
                ));
            }
            pairs.push(pair[0] / 2);
        }
        Ok(pairs)
    }
}

impl MemoryPlace {
    /// Why the elements are not contiguous, in words.
    pub fn why_not_contiguous(&self, count: usize) -> String {
        let gap = self
            .offsets
            .iter()
            .enumerate()
            .find(|(e, offset)| offset.as_const() != Some(*e as i64));
        match (gap, self.swizzle) {
            (Some((e, offset)), _) => format!(
                "is not contiguous: element {e} is at offset +{offset} from element 0, not +{e}"
            ),
            (None, Some(swizzle)) => format!(
                "is contiguous before its Swizzle<{},{},{}>, which keeps only aligned runs of {} \
                 elements together ({count} elements from a multiple of {})",
                swizzle.bits(),
                swizzle.base(),
                swizzle.shift(),
                1i64 << swizzle.base(),
                self.base_divisor
            ),
            (None, None) => "is not contiguous".into(),
        }
    }
}

fn constant_extents(shape: &Tuple<Expr>, names: &Names) -> Result<Vec<i64>, String> {
    shape
        .leaves()
        .into_iter()
        .map(|extent| match extent.as_const() {
            Some(value) if value >= 1 => Ok(value),
            Some(value) => Err(format!("it has the extent {value}")),
            None => Err(format!(
                "it has the symbolic extent `{}`; an atomic spec needs constant per-thread \
                 shapes",
                extent.display(names)
            )),
        })
        .collect()
}

/// The coordinate along `bound` of each of the view's `count` elements.
fn coordinates(bound: &crate::ir::Bound, count: usize, prover: &Prover) -> Vec<Expr> {
    let levels: Vec<(Vec<i64>, Vec<&Expr>)> = bound
        .levels
        .iter()
        .map(|level| {
            let extents = level
                .shape
                .leaves()
                .into_iter()
                .map(|e| e.as_const().unwrap_or(1))
                .collect();
            (extents, level.stride.leaves())
        })
        .collect();
    (0..count)
        .map(|e| {
            let offset = Expr::add(bound.origin.clone(), element_offset(&levels, e));
            prover.simplify(&offset)
        })
        .collect()
}

/// The offset of element `e` (in element order) from the view's origin:
/// the innermost level varies fastest, and inside a level the first mode.
fn element_offset(levels: &[(Vec<i64>, Vec<&Expr>)], e: usize) -> Expr {
    let mut rest = e as i64;
    let mut offset = Expr::Const(0);
    for (extents, strides) in levels.iter().rev() {
        for (extent, stride) in extents.iter().zip(strides) {
            let coordinate = rest % extent;
            rest /= extent;
            offset = Expr::add(
                offset,
                Expr::mul(Expr::Const(coordinate), (*stride).clone()),
            );
        }
    }
    offset
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Var;
    use crate::ir::{Level, TensorType};

    fn level(extents: &[i64], strides: &[i64]) -> Level {
        let tuple = |values: &[i64]| {
            Tuple::Node(
                values
                    .iter()
                    .map(|v| Tuple::Leaf(Expr::Const(*v)))
                    .collect(),
            )
        };
        Level {
            shape: tuple(extents),
            stride: tuple(strides),
        }
    }

    fn view(levels: Vec<Level>, scalar: Scalar, memory: Memory, base: Expr) -> View {
        View {
            buffer: BufferId(0),
            base,
            ty: TensorType {
                levels,
                scalar,
                memory,
                swizzle: None,
            },
            bounds: Vec::new(),
            span: Span::DUMMY,
        }
    }

    fn analyse(view: &View, prover: &Prover) -> OperandInfo {
        OperandInfo::analyse(view, "input".into(), "t".into(), prover, &Names::NONE)
    }

    fn tid() -> Expr {
        Expr::var(Var::ThreadId)
    }

    #[test]
    fn element_order_is_innermost_level_first_then_first_mode() {
        // [2,2 : 4,2].[1,2 : 4,1] over registers: the paper's %11.
        let v = view(
            vec![level(&[2, 2], &[4, 2]), level(&[1, 2], &[4, 1])],
            Scalar::Fp16,
            Memory::Registers,
            Expr::Const(0),
        );
        let info = analyse(&v, &Prover::with_threads(32));
        assert_eq!(info.dims, vec![vec![2, 2], vec![1, 2]]);
        assert_eq!(info.register_slots().unwrap(), &[0, 1, 4, 5, 2, 3, 6, 7]);
        assert_eq!(info.packed_pairs().unwrap(), vec![0, 2, 1, 3]);
    }

    #[test]
    fn unpacked_register_pairs_are_refused_with_the_slots() {
        // Column-major [2,4] tiled [1,2] pairs slots (0,2): not packed.
        let v = view(
            vec![level(&[2, 2], &[1, 4]), level(&[1, 2], &[1, 2])],
            Scalar::Fp16,
            Memory::Registers,
            Expr::Const(0),
        );
        let reason = analyse(&v, &Prover::with_threads(32))
            .packed_pairs()
            .unwrap_err();
        assert!(reason.contains("slots 0 and 2"), "{reason}");
    }

    #[test]
    fn a_row_of_eight_halves_is_contiguous_and_16_byte_aligned() {
        // The ldmatrix row: base (tid/16 % 2)*128 + (tid/8 % 2)*8 + (tid % 8)*16.
        let base = Expr::add(
            Expr::add(
                Expr::mul(Expr::rem(Expr::div(tid(), 16.into()), 2.into()), 128.into()),
                Expr::mul(Expr::rem(Expr::div(tid(), 8.into()), 2.into()), 8.into()),
            ),
            Expr::mul(Expr::rem(tid(), 8.into()), 16.into()),
        );
        let v = view(
            vec![level(&[1, 8], &[16, 1])],
            Scalar::Fp16,
            Memory::Shared,
            base,
        );
        let info = analyse(&v, &Prover::with_threads(32));
        let place = info.memory_place().unwrap();
        assert!(place.contiguous);
        assert_eq!(place.align, 16);
        assert_eq!(info.single_access("ld.shared.v4.b32"), Ok(16));
    }

    #[test]
    fn misaligned_and_strided_views_say_why() {
        // Eight halves starting at 2 * tid: only 4-byte alignment is proven.
        let v = view(
            vec![level(&[8], &[1])],
            Scalar::Fp16,
            Memory::Global,
            Expr::mul(tid(), 2.into()),
        );
        let info = analyse(&v, &Prover::with_threads(64));
        let reason = info.single_access("ld.global.v4.b32").unwrap_err();
        assert_eq!(
            reason,
            "needs 16-byte alignment; the input's offset is proven only a multiple of 2 \
             elements (4 bytes)"
        );
        // A column of a row-major 16x16 tile: element 1 is 16 further.
        let v = view(
            vec![level(&[8, 1], &[16, 1])],
            Scalar::Fp16,
            Memory::Shared,
            Expr::Const(0),
        );
        let reason = analyse(&v, &Prover::with_threads(32))
            .single_access("ld.shared.v4.b32")
            .unwrap_err();
        assert!(reason.contains("element 1 is at offset +16"), "{reason}");
    }

    #[test]
    fn swizzles_keep_aligned_runs_contiguous_only() {
        let swizzled = |base: Expr, extent: i64| {
            let mut v = view(
                vec![level(&[extent], &[1])],
                Scalar::Fp16,
                Memory::Shared,
                base,
            );
            v.ty.swizzle = Some(Swizzle::new(3, 3, 3).unwrap());
            analyse(&v, &Prover::with_threads(128))
        };
        let chunk = swizzled(Expr::mul(tid(), 8.into()), 8);
        assert!(chunk.memory_place().unwrap().contiguous);
        assert_eq!(chunk.memory_place().unwrap().align, 16);
        // 16 elements cross a swizzle unit of 8.
        let long = swizzled(Expr::mul(tid(), 16.into()), 16);
        let place = long.memory_place().unwrap();
        assert!(!place.contiguous);
        assert!(place.why_not_contiguous(16).contains("Swizzle<3,3,3>"));
        // Half a unit from its middle stays together; a whole unit from the
        // middle straddles two units.
        let half = swizzled(Expr::add(Expr::mul(tid(), 8.into()), 4.into()), 4);
        assert!(half.memory_place().unwrap().contiguous);
        let straddling = swizzled(Expr::add(Expr::mul(tid(), 8.into()), 4.into()), 8);
        assert!(!straddling.memory_place().unwrap().contiguous);
    }

    #[test]
    fn symbolic_extents_are_refused() {
        let shape = Tuple::Node(vec![Tuple::Leaf(Expr::var(Var::Dim(0)))]);
        let stride = Tuple::Node(vec![Tuple::Leaf(Expr::Const(1))]);
        let v = view(
            vec![Level { shape, stride }],
            Scalar::Fp32,
            Memory::Global,
            Expr::Const(0),
        );
        let info = analyse(&v, &Prover::with_threads(32));
        let reason = info.place.unwrap_err();
        assert!(reason.contains("symbolic extent"), "{reason}");
    }
}
