//! Reference stage: the outermost spec's operands with the dims bound —
//! every level's extents and strides as integers — and the numbering of
//! their elements as buffer offsets ([`FlatIndex`]), in element order, as
//! matrices, or split into kept and reduced modes.

use std::ops::Range;

use rayon::prelude::*;

use super::ReferenceError;
use crate::expr::{EvalError, Expr, Var};
use crate::ir::{BufferId, BufferKind, Kernel, Memory, Scalar, View};
use crate::layout::{Swizzle, Tuple};

/// One leaf mode of a resolved layout: `extent : stride`.
///
/// Rule: `extent ≥ 1`, `stride ≥ 0` (what the checker admits in a type).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Leaf {
    /// Number of coordinates.
    pub extent: i64,
    /// Offset step per coordinate, in elements.
    pub stride: i64,
}

/// A numbering of elements by buffer offsets: element `i` is written in
/// the mixed radix of `leaves` (first leaf fastest, colexicographic) and
/// lives at `swizzle(base + Σ digit_j · stride_j)`.
#[derive(Clone, PartialEq, Debug)]
pub struct FlatIndex {
    base: i64,
    leaves: Vec<Leaf>,
    swizzle: Option<Swizzle>,
    len: usize,
}

impl FlatIndex {
    /// The numbering over `leaves` from `base`; errors when the element
    /// count does not fit a `usize` or an extent is not positive.
    pub fn new(
        base: i64,
        leaves: Vec<Leaf>,
        swizzle: Option<Swizzle>,
    ) -> Result<FlatIndex, ReferenceError> {
        let mut len: usize = 1;
        for leaf in &leaves {
            let extent = usize::try_from(leaf.extent)
                .ok()
                .filter(|&e| e >= 1)
                .ok_or_else(|| {
                    ReferenceError::Shape(format!("an extent of {} elements", leaf.extent))
                })?;
            len = len.checked_mul(extent).ok_or_else(|| {
                ReferenceError::Shape("more elements than this machine can address".to_string())
            })?;
        }
        Ok(FlatIndex {
            base,
            leaves,
            swizzle,
            len,
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements (never: extents are at least 1).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The leaves, fastest first.
    pub fn leaves(&self) -> &[Leaf] {
        &self.leaves
    }

    /// The buffer offset of element `i` (`i < len()`).
    pub fn offset(&self, i: usize) -> i64 {
        self.offsets(i..i + 1).next().unwrap_or(self.base)
    }

    /// The offsets of the elements in `range`, in order: an odometer over
    /// the leaves, so each step costs one addition (and a carry now and then).
    pub fn offsets(&self, range: Range<usize>) -> Offsets<'_> {
        let start = range.start.min(self.len);
        let mut digits = Vec::with_capacity(self.leaves.len());
        let mut rest = start as u64;
        let mut unswizzled = self.base;
        for leaf in &self.leaves {
            let extent = leaf.extent as u64;
            let digit = (rest % extent) as i64;
            rest /= extent;
            digits.push(digit);
            unswizzled = unswizzled.wrapping_add(digit.wrapping_mul(leaf.stride));
        }
        Offsets {
            index: self,
            digits,
            unswizzled,
            remaining: range.end.min(self.len).saturating_sub(start),
        }
    }
}

/// Iterator over consecutive element offsets of a [`FlatIndex`].
#[derive(Clone, Debug)]
pub struct Offsets<'a> {
    index: &'a FlatIndex,
    digits: Vec<i64>,
    unswizzled: i64,
    remaining: usize,
}

impl Iterator for Offsets<'_> {
    type Item = i64;

    fn next(&mut self) -> Option<i64> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let current = self.unswizzled;
        if self.remaining > 0 {
            // Carry through the leaves that wrap around.
            for (digit, leaf) in self.digits.iter_mut().zip(&self.index.leaves) {
                *digit += 1;
                self.unswizzled = self.unswizzled.wrapping_add(leaf.stride);
                if *digit < leaf.extent {
                    break;
                }
                self.unswizzled = self
                    .unswizzled
                    .wrapping_sub(leaf.extent.wrapping_mul(leaf.stride));
                *digit = 0;
            }
        }
        Some(match self.index.swizzle {
            Some(swizzle) => swizzle.apply(current),
            None => current,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

/// Elements per parallel task of a gather or a comparison: large enough to
/// amortise a task, small enough to spread 2^16-element tensors.
pub(crate) const CHUNK: usize = 1 << 14;

/// The values of `data` at the offsets of `index`, in index order. An
/// offset outside `data` is an error naming `operand` (the checker keeps
/// views inside their buffers; this guards the reference all the same).
pub fn gather(index: &FlatIndex, data: &[f64], operand: &str) -> Result<Vec<f64>, ReferenceError> {
    let mut out = vec![0.0; index.len()];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .try_for_each(|(chunk, values)| {
            let start = chunk * CHUNK;
            for (value, offset) in values.iter_mut().zip(index.offsets(start..start + CHUNK)) {
                *value = *usize::try_from(offset)
                    .ok()
                    .and_then(|at| data.get(at))
                    .ok_or_else(|| ReferenceError::OutOfBounds {
                        operand: operand.to_string(),
                        offset,
                        elements: data.len(),
                    })?;
            }
            Ok(())
        })?;
    Ok(out)
}

/// An operand of the outermost spec with the dims bound.
///
/// Rule: `levels` holds, outermost level first, each level's top-level
/// modes as their leaves (left to right); element `c` lives at
/// `swizzle(base + Σ level_j(c_j))` in buffer `buffer`.
#[derive(Clone, PartialEq, Debug)]
pub struct ResolvedView {
    /// `%name` of the buffer, for messages.
    pub name: String,
    /// The storage.
    pub buffer: BufferId,
    /// The ABI position when the buffer is a `GL` parameter.
    pub param: Option<u32>,
    /// Element type.
    pub scalar: Scalar,
    /// Memory space of the buffer.
    pub memory: Memory,
    /// Elements the buffer holds (its declared cosize).
    pub buffer_elements: usize,
    base: i64,
    levels: Vec<Vec<Vec<Leaf>>>,
    swizzle: Option<Swizzle>,
    elements: usize,
}

/// Evaluates `expr` with only the dims bound: a thread, block or loop
/// variable means the operand is not one whole tensor.
fn eval_with_dims(expr: &Expr, dims: &[i64], operand: &str) -> Result<i64, ReferenceError> {
    let env = |var: Var| match var {
        Var::Dim(i) => dims.get(i as usize).copied(),
        Var::ThreadId | Var::BlockId | Var::Loop(_) => None,
    };
    expr.eval(&env).map_err(|error| match error {
        EvalError::Unbound(var @ (Var::ThreadId | Var::BlockId | Var::Loop(_))) => {
            ReferenceError::PerThread {
                operand: operand.to_string(),
                variable: var.to_string(),
            }
        }
        EvalError::Unbound(Var::Dim(i)) => ReferenceError::Dims(format!(
            "no value for dim {i} ({} values given)",
            dims.len()
        )),
        EvalError::DivisionByZero(_) | EvalError::Overflow(_) => ReferenceError::Eval {
            operand: operand.to_string(),
            error,
        },
    })
}

fn leaves_of(
    shape: &Tuple<Expr>,
    stride: &Tuple<Expr>,
    dims: &[i64],
    operand: &str,
) -> Result<Vec<Leaf>, ReferenceError> {
    let extents = shape.leaves();
    let strides = stride.leaves();
    if !shape.is_congruent(stride) {
        return Err(ReferenceError::Shape(format!(
            "{operand}: shape and stride are not congruent"
        )));
    }
    extents
        .into_iter()
        .zip(strides)
        .map(|(extent, stride)| {
            Ok(Leaf {
                extent: eval_with_dims(extent, dims, operand)?,
                stride: eval_with_dims(stride, dims, operand)?,
            })
        })
        .collect()
}

impl ResolvedView {
    /// Binds `dims` (the kernel's symbolic dimensions, in order) in `view`.
    pub fn resolve(
        kernel: &Kernel,
        view: &View,
        dims: &[i64],
    ) -> Result<ResolvedView, ReferenceError> {
        let buffer = kernel.buffers.get(view.buffer.0 as usize).ok_or_else(|| {
            ReferenceError::Shape(format!("buffer {} is not in the kernel", view.buffer.0))
        })?;
        let name = format!("%{}", buffer.name);
        let param = match buffer.kind {
            BufferKind::Param(position) => Some(position),
            BufferKind::Shared | BufferKind::Registers | BufferKind::Temporary => None,
        };
        let buffer_elements = eval_with_dims(&buffer.elements, dims, &name)?;
        let buffer_elements = usize::try_from(buffer_elements).map_err(|_| {
            ReferenceError::Shape(format!("{name} holds {buffer_elements} elements"))
        })?;
        let base = eval_with_dims(&view.base, dims, &name)?;
        let mut levels = Vec::with_capacity(view.ty.levels.len());
        let mut elements: usize = 1;
        for level in &view.ty.levels {
            let mut modes = Vec::new();
            for (shape, stride) in level.shape.modes().into_iter().zip(level.stride.modes()) {
                let leaves = leaves_of(shape, stride, dims, &name)?;
                for leaf in &leaves {
                    let extent = usize::try_from(leaf.extent)
                        .ok()
                        .filter(|&e| e >= 1)
                        .ok_or_else(|| {
                            ReferenceError::Shape(format!(
                                "{name} has an extent of {}",
                                leaf.extent
                            ))
                        })?;
                    elements = elements.checked_mul(extent).ok_or_else(|| {
                        ReferenceError::Shape(format!("{name} has too many elements"))
                    })?;
                }
                modes.push(leaves);
            }
            levels.push(modes);
        }
        Ok(ResolvedView {
            name,
            buffer: view.buffer,
            param,
            scalar: view.ty.scalar,
            memory: view.ty.memory,
            buffer_elements,
            base,
            levels,
            swizzle: view.ty.swizzle,
            elements,
        })
    }

    /// Number of elements of the view.
    pub fn elements(&self) -> usize {
        self.elements
    }

    /// Bytes the view's elements occupy.
    pub fn bytes(&self) -> u128 {
        self.elements as u128 * u128::from(self.scalar.bytes())
    }

    /// The view in element order: innermost level fastest, inside a level
    /// first mode fastest (docs/language.md, "Element order").
    pub fn element_order(&self) -> Result<FlatIndex, ReferenceError> {
        let leaves = self
            .levels
            .iter()
            .rev()
            .flat_map(|modes| modes.iter().flatten().copied())
            .collect();
        FlatIndex::new(self.base, leaves, self.swizzle)
    }

    /// Each element's coordinate along logical mode `axis`, in element
    /// order (what `Init<index(axis)>` stores).
    pub fn coordinates(&self, axis: usize) -> Result<Vec<f64>, ReferenceError> {
        let modes = self.logical_modes().filter(|modes| axis < modes.len());
        let Some(modes) = modes else {
            return Err(ReferenceError::Shape(format!(
                "{}: `Init<index({axis})>` names no logical mode of it",
                self.name
            )));
        };
        // Every leaf in element order (innermost level first), with the
        // weight of its digit in mode `axis` (0 for the other modes).
        let mut weight = 1;
        let mut digits = Vec::new();
        for level in self.levels.iter().rev() {
            for (mode, leaves) in level.iter().enumerate() {
                for leaf in leaves {
                    if mode == axis {
                        digits.push((leaf.extent, weight));
                        weight *= leaf.extent;
                    } else {
                        digits.push((leaf.extent, 0));
                    }
                }
            }
        }
        debug_assert_eq!(
            weight,
            modes[axis].iter().map(|l| l.extent).product::<i64>()
        );
        Ok((0..self.elements as i64)
            .map(|element| {
                let mut rest = element;
                let mut coordinate = 0;
                for (extent, weight) in &digits {
                    coordinate += (rest % extent) * weight;
                    rest /= extent;
                }
                coordinate as f64
            })
            .collect())
    }

    /// The logical modes: mode `i` gathers mode `i` of every level, the
    /// innermost level's leaves first (a tile's rows before the grid's).
    /// `None` when the levels have different ranks.
    pub fn logical_modes(&self) -> Option<Vec<Vec<Leaf>>> {
        let rank = self.levels.first()?.len();
        if self.levels.iter().any(|modes| modes.len() != rank) {
            return None;
        }
        Some(
            (0..rank)
                .map(|mode| {
                    self.levels
                        .iter()
                        .rev()
                        .flat_map(|modes| modes[mode].iter().copied())
                        .collect()
                })
                .collect(),
        )
    }

    /// The view as a batch of matrices: `(rows, columns, batch)` leaves of
    /// its logical modes; a scalar is 1×1, two modes are one matrix (no
    /// batch leaves), a third mode is the batch. `None` for any other rank.
    pub fn matrix(&self) -> Option<(Vec<Leaf>, Vec<Leaf>, Vec<Leaf>)> {
        let mut modes = self.logical_modes()?;
        match modes.len() {
            0 => Some((Vec::new(), Vec::new(), Vec::new())),
            2 | 3 => {
                let batch = if modes.len() == 3 {
                    modes.pop()?
                } else {
                    Vec::new()
                };
                let columns = modes.pop()?;
                let rows = modes.pop()?;
                Some((rows, columns, batch))
            }
            _ => None,
        }
    }

    /// A numbering of the view's elements over `leaves` (taken from this
    /// view, in any order), from the view's base, with its swizzle.
    pub fn index_over(&self, leaves: Vec<Leaf>) -> Result<FlatIndex, ReferenceError> {
        FlatIndex::new(self.base, leaves, self.swizzle)
    }
}

/// Number of elements over `leaves` (1 for none).
pub fn extent_of(leaves: &[Leaf]) -> usize {
    leaves.iter().map(|leaf| leaf.extent as usize).product()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(extent: i64, stride: i64) -> Leaf {
        Leaf { extent, stride }
    }

    #[test]
    fn offsets_count_colexicographically_and_carry() {
        // (2,3):(1,10): 0 1 10 11 20 21.
        let index = FlatIndex::new(5, vec![leaf(2, 1), leaf(3, 10)], None).unwrap();
        assert_eq!(index.len(), 6);
        let all: Vec<i64> = index.offsets(0..6).collect();
        assert_eq!(all, [5, 6, 15, 16, 25, 26]);
        // Starting in the middle gives the same tail; ranges clamp at len.
        let tail: Vec<i64> = index.offsets(3..100).collect();
        assert_eq!(tail, [16, 25, 26]);
        assert_eq!(index.offset(4), 25);
    }

    #[test]
    fn offsets_apply_the_swizzle_last() {
        let swizzle = Swizzle::new(1, 0, 1).unwrap(); // bit 1 into bit 0
        let index = FlatIndex::new(0, vec![leaf(4, 1)], Some(swizzle)).unwrap();
        let all: Vec<i64> = index.offsets(0..4).collect();
        assert_eq!(all, [0, 1, 3, 2]);
    }

    #[test]
    fn gather_reads_in_index_order_and_rejects_offsets_past_the_end() {
        let data: Vec<f64> = (0..12).map(f64::from).collect();
        // The transpose of a 3x4 column-major matrix.
        let index = FlatIndex::new(0, vec![leaf(4, 3), leaf(3, 1)], None).unwrap();
        let values = gather(&index, &data, "%x").unwrap();
        assert_eq!(values[..5], [0.0, 3.0, 6.0, 9.0, 1.0]);
        let past = FlatIndex::new(6, vec![leaf(4, 2)], None).unwrap();
        let error = gather(&past, &data, "%x").unwrap_err();
        assert_eq!(
            error.to_string(),
            "%x: offset 12 is outside its buffer of 12 elements"
        );
    }

    #[test]
    fn a_large_gather_matches_single_offsets_across_chunks() {
        let index = FlatIndex::new(3, vec![leaf(100, 7), leaf(700, 1000)], None).unwrap();
        let data: Vec<f64> = (0..800_000).map(|v| f64::from(v) * 0.5).collect();
        let values = gather(&index, &data, "%big").unwrap();
        for i in [0, 1, 99, 100, CHUNK - 1, CHUNK, CHUNK + 1, 69_999] {
            assert_eq!(values[i], data[index.offset(i) as usize], "element {i}");
        }
    }

    #[test]
    fn non_positive_extents_are_errors() {
        assert!(FlatIndex::new(0, vec![leaf(0, 1)], None).is_err());
        assert!(FlatIndex::new(0, vec![leaf(i64::MAX, 1), leaf(i64::MAX, 1)], None).is_err());
    }
}
