//! Stage 0, the algebra: the `Layout` value — a pair of congruent integer
//! tuples `shape : stride` — its constructors, its modes, and its evaluation as
//! a function from 1-D indices and coordinates to offsets.

use super::error::{LayoutError, LayoutResult, overflow};
use super::int_tuple::{self, IntTuple};
use super::tuple::Tuple;

/// A CuTe layout: a function from coordinates of `shape` to integer offsets,
/// `L(c) = Σ c_i · stride_i` over the leaves.
///
/// A 1-D index `i` in `[0, size)` stands for the coordinate that enumerates
/// `shape` colexicographically (first mode fastest), so `L(i)` is defined too.
///
/// Invariants (checked by [`Layout::new`], kept by every operation):
/// - `shape` and `stride` are congruent;
/// - every leaf of `shape` is ≥ 1 (strides may be any integer, zero included);
/// - `size` and `Σ (shape_i − 1)·|stride_i|` fit in an `i64`, so evaluating
///   inside the domain never overflows;
/// - a top-level tuple of exactly one *leaf* mode is stored as that leaf:
///   `(8):(1)` and `8:1` are the same layout (the IR writes both `[8 : 1]`).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Layout {
    shape: IntTuple,
    stride: IntTuple,
}

impl Layout {
    /// A layout from a shape and a congruent stride.
    ///
    /// ```
    /// use graphene::layout::{Layout, int_tuple::flat};
    /// let l = Layout::new(flat(&[4, 8]), flat(&[1, 4])).unwrap();
    /// assert_eq!(l.to_string(), "(4,8):(1,4)");
    /// assert!(Layout::new(flat(&[4, 0]), flat(&[1, 4])).is_err());
    /// ```
    pub fn new(shape: IntTuple, stride: IntTuple) -> LayoutResult<Layout> {
        if !shape.is_congruent(&stride) {
            return Err(LayoutError::Incongruent {
                shape: shape.to_string(),
                stride: stride.to_string(),
            });
        }
        int_tuple::check_shape(&shape)?;
        let reach = shape
            .leaves()
            .into_iter()
            .zip(stride.leaves())
            .try_fold(0i64, |acc, (&s, &d)| {
                (s - 1).checked_mul(d.checked_abs()?)?.checked_add(acc)
            });
        if reach.and_then(|r| r.checked_add(1)).is_none() {
            return Err(overflow("cosize", format_args!("{shape}:{stride}")));
        }
        let (shape, stride) = match (shape, stride) {
            (Tuple::Node(mut s), Tuple::Node(mut d))
                if s.len() == 1 && matches!(s[0], Tuple::Leaf(_)) =>
            {
                (s.remove(0), d.remove(0))
            }
            pair => pair,
        };
        Ok(Layout { shape, stride })
    }

    /// A layout whose invariants the caller has established (an algebra
    /// result built from a valid layout by steps that keep sizes and reaches).
    /// Still normalises a one-leaf top-level tuple.
    pub(crate) fn from_valid(shape: IntTuple, stride: IntTuple) -> Layout {
        debug_assert!(Layout::new(shape.clone(), stride.clone()).is_ok());
        match (shape, stride) {
            (Tuple::Node(mut s), Tuple::Node(mut d))
                if s.len() == 1 && matches!(s[0], Tuple::Leaf(_)) =>
            {
                Layout {
                    shape: s.remove(0),
                    stride: d.remove(0),
                }
            }
            (shape, stride) => Layout { shape, stride },
        }
    }

    /// The flat layout of `(shape, stride)` pairs known to satisfy the
    /// invariants: a leaf for one pair, a depth-1 tuple otherwise.
    pub(crate) fn from_valid_pairs(pairs: &[(i64, i64)]) -> Layout {
        match pairs {
            [(s, d)] => Layout::from_valid(Tuple::Leaf(*s), Tuple::Leaf(*d)),
            [] | [_, _, ..] => Layout::from_valid(
                Tuple::Node(pairs.iter().map(|&(s, _)| Tuple::Leaf(s)).collect()),
                Tuple::Node(pairs.iter().map(|&(_, d)| Tuple::Leaf(d)).collect()),
            ),
        }
    }

    /// The flat layout of `(shape, stride)` pairs, checked.
    pub(crate) fn from_pairs(pairs: &[(i64, i64)]) -> LayoutResult<Layout> {
        match pairs {
            [(s, d)] => Layout::leaf(*s, *d),
            [] | [_, _, ..] => Layout::new(
                Tuple::Node(pairs.iter().map(|&(s, _)| Tuple::Leaf(s)).collect()),
                Tuple::Node(pairs.iter().map(|&(_, d)| Tuple::Leaf(d)).collect()),
            ),
        }
    }

    /// The one-mode layout `shape:stride`.
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// assert_eq!(Layout::leaf(4, 2).unwrap().to_string(), "4:2");
    /// ```
    pub fn leaf(shape: i64, stride: i64) -> LayoutResult<Layout> {
        Layout::new(Tuple::Leaf(shape), Tuple::Leaf(stride))
    }

    /// The rank-0 layout `():()`: one element, at offset 0 (a scalar's `[]`).
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// assert_eq!(Layout::empty().ir().to_string(), "[]");
    /// assert_eq!(Layout::empty().eval(0).unwrap(), 0);
    /// ```
    pub fn empty() -> Layout {
        Layout {
            shape: Tuple::Node(Vec::new()),
            stride: Tuple::Node(Vec::new()),
        }
    }

    /// The compact column-major layout of `shape` (first mode fastest): the
    /// strides are the exclusive prefix products. This is the meaning of a
    /// shape written without strides.
    ///
    /// ```
    /// use graphene::layout::{Layout, int_tuple::flat};
    /// assert_eq!(Layout::col_major(flat(&[4, 8])).unwrap().to_string(), "(4,8):(1,4)");
    /// ```
    pub fn col_major(shape: IntTuple) -> LayoutResult<Layout> {
        int_tuple::check_shape(&shape)?;
        let stride = int_tuple::prefix_product(&shape)?;
        Layout::new(shape, stride)
    }

    /// The compact row-major layout of `shape` (last leaf fastest).
    ///
    /// ```
    /// use graphene::layout::{Layout, int_tuple::flat};
    /// assert_eq!(Layout::row_major(flat(&[4, 8])).unwrap().to_string(), "(4,8):(8,1)");
    /// ```
    pub fn row_major(shape: IntTuple) -> LayoutResult<Layout> {
        int_tuple::check_shape(&shape)?;
        let stride = int_tuple::suffix_product(&shape)?;
        Layout::new(shape, stride)
    }

    /// The layout whose top-level modes are `modes`, in order (CuTe's
    /// `make_layout(L0, L1, …)`): each given layout becomes one mode.
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// let a = Layout::leaf(4, 1).unwrap();
    /// let b: Layout = "(2,2):(4,8)".parse().unwrap();
    /// assert_eq!(Layout::from_modes(&[a, b]).unwrap().to_string(), "(4,(2,2)):(1,(4,8))");
    /// ```
    pub fn from_modes(modes: &[Layout]) -> LayoutResult<Layout> {
        Layout::new(
            Tuple::Node(modes.iter().map(|m| m.shape.clone()).collect()),
            Tuple::Node(modes.iter().map(|m| m.stride.clone()).collect()),
        )
    }

    /// The modes of `self` followed by the modes of `other`.
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// let a: Layout = "(4,2):(1,4)".parse().unwrap();
    /// let b = Layout::leaf(3, 8).unwrap();
    /// assert_eq!(a.concat(&b).unwrap().to_string(), "(4,2,3):(1,4,8)");
    /// ```
    pub fn concat(&self, other: &Layout) -> LayoutResult<Layout> {
        let mut modes = self.modes();
        modes.extend(other.modes());
        Layout::from_modes(&modes)
    }

    /// The shape.
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// let l: Layout = "(4,(2,4)):(2,(1,8))".parse().unwrap();
    /// assert_eq!(l.shape().to_string(), "(4,(2,4))");
    /// ```
    pub fn shape(&self) -> &IntTuple {
        &self.shape
    }

    /// The stride, congruent to the shape.
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// let l: Layout = "(4,(2,4)):(2,(1,8))".parse().unwrap();
    /// assert_eq!(l.stride().to_string(), "(2,(1,8))");
    /// ```
    pub fn stride(&self) -> &IntTuple {
        &self.stride
    }

    /// The number of coordinates: the product of the shape.
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// let l: Layout = "(4,(2,4)):(2,(1,8))".parse().unwrap();
    /// assert_eq!((l.size(), l.cosize(), l.rank(), l.depth()), (32, 32, 2, 2));
    /// ```
    pub fn size(&self) -> i64 {
        // Checked by `new`; the product of valid sizes cannot overflow.
        let mut size = 1i64;
        self.for_each_leaf(&mut |s, _| size *= s);
        size
    }

    /// The size of the codomain: `Σ (shape_i − 1)·|stride_i| + 1`, which for
    /// non-negative strides is one past the largest offset.
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// // Gapped: 8 coordinates spread over offsets 0..=21.
    /// let l: Layout = "(4,2):(2,16)".parse().unwrap();
    /// assert_eq!((l.size(), l.cosize()), (8, 23));
    /// ```
    pub fn cosize(&self) -> i64 {
        let mut reach = 0i64;
        self.for_each_leaf(&mut |s, d| reach += (s - 1) * d.abs());
        reach + 1
    }

    /// Calls `f(shape, stride)` for each leaf, left to right, without
    /// allocating (evaluation is on the hot path of the lowering).
    fn for_each_leaf(&self, f: &mut impl FnMut(i64, i64)) {
        fn walk(shape: &IntTuple, stride: &IntTuple, f: &mut impl FnMut(i64, i64)) {
            match (shape, stride) {
                (Tuple::Leaf(s), Tuple::Leaf(d)) => f(*s, *d),
                (Tuple::Node(ss), Tuple::Node(ds)) => {
                    for (s, d) in ss.iter().zip(ds) {
                        walk(s, d, f);
                    }
                }
                // Congruent by the type's invariant.
                (Tuple::Leaf(_), Tuple::Node(_)) | (Tuple::Node(_), Tuple::Leaf(_)) => {}
            }
        }
        walk(&self.shape, &self.stride, f);
    }

    /// The number of top-level modes (1 for a leaf layout).
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// let l: Layout = "(4,(2,4)):(2,(1,8))".parse().unwrap();
    /// assert_eq!(l.rank(), 2);
    /// assert_eq!("8:1".parse::<Layout>().unwrap().rank(), 1);
    /// ```
    pub fn rank(&self) -> usize {
        self.shape.rank()
    }

    /// The nesting depth of the shape (0 for a leaf layout).
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// assert_eq!("(4,(2,4)):(2,(1,8))".parse::<Layout>().unwrap().depth(), 2);
    /// assert_eq!("8:1".parse::<Layout>().unwrap().depth(), 0);
    /// ```
    pub fn depth(&self) -> usize {
        self.shape.depth()
    }

    /// The `(shape, stride)` pairs of the leaves, left to right.
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// let l: Layout = "(4,(2,4)):(2,(1,8))".parse().unwrap();
    /// assert_eq!(l.leaves(), [(4, 2), (2, 1), (4, 8)]);
    /// ```
    pub fn leaves(&self) -> Vec<(i64, i64)> {
        self.shape
            .leaves()
            .into_iter()
            .zip(self.stride.leaves())
            .map(|(&s, &d)| (s, d))
            .collect()
    }

    /// Top-level mode `i` as a layout of its own.
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// let l: Layout = "(4,(2,4)):(2,(1,8))".parse().unwrap();
    /// assert_eq!(l.mode(1).unwrap().to_string(), "(2,4):(1,8)");
    /// assert!(l.mode(2).is_err());
    /// ```
    pub fn mode(&self, i: usize) -> LayoutResult<Layout> {
        self.modes()
            .into_iter()
            .nth(i)
            .ok_or_else(|| LayoutError::ModeOutOfRange {
                index: i,
                rank: self.rank(),
                layout: self.to_string(),
            })
    }

    /// All top-level modes; a leaf layout is its own single mode.
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// let l: Layout = "(4,(2,4)):(2,(1,8))".parse().unwrap();
    /// let modes: Vec<String> = l.modes().iter().map(|m| m.to_string()).collect();
    /// assert_eq!(modes, ["4:2", "(2,4):(1,8)"]);
    /// ```
    pub fn modes(&self) -> Vec<Layout> {
        match (&self.shape, &self.stride) {
            (Tuple::Node(s), Tuple::Node(d)) => s
                .iter()
                .zip(d)
                .map(|(s, d)| Layout {
                    shape: s.clone(),
                    stride: d.clone(),
                })
                .collect(),
            (Tuple::Leaf(_), _) | (Tuple::Node(_), Tuple::Leaf(_)) => vec![self.clone()],
        }
    }

    /// The same function with a depth-≤1 shape: the leaves as top-level modes.
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// let l: Layout = "(4,(2,4)):(2,(1,8))".parse().unwrap();
    /// assert_eq!(l.flatten().to_string(), "(4,2,4):(2,1,8)");
    /// ```
    pub fn flatten(&self) -> Layout {
        Layout {
            shape: self.shape.flatten(),
            stride: self.stride.flatten(),
        }
    }

    /// `L(index)` for a 1-D index in `[0, size)`.
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// let c: Layout = "[4,(2,4) : 2,(1,8)]".parse().unwrap();
    /// assert_eq!(c.eval(12).unwrap(), 9); // row 0, column 3
    /// assert!(c.eval(32).is_err());
    /// ```
    pub fn eval(&self, index: i64) -> LayoutResult<i64> {
        let size = self.size();
        if !(0..size).contains(&index) {
            return Err(LayoutError::IndexOutOfRange {
                index,
                size,
                layout: self.to_string(),
            });
        }
        Ok(self.eval_in_domain(index))
    }

    /// `L(index)` for an index already known to be in `[0, size)`; cannot
    /// overflow by the type's invariant.
    pub(crate) fn eval_in_domain(&self, index: i64) -> i64 {
        let mut rest = index;
        let mut offset = 0i64;
        self.for_each_leaf(&mut |s, d| {
            offset += (rest % s) * d;
            rest /= s;
        });
        offset
    }

    /// `L(coord)` for a hierarchical coordinate, or a partly flat one where a
    /// leaf stands for a 1-D index into the sub-tuple it replaces.
    ///
    /// ```
    /// use graphene::layout::{Layout, int_tuple::flat};
    /// let c: Layout = "[4,(2,4) : 2,(1,8)]".parse().unwrap();
    /// assert_eq!(c.eval_coord(&flat(&[0, 3])).unwrap(), 9);
    /// ```
    pub fn eval_coord(&self, coord: &IntTuple) -> LayoutResult<i64> {
        let index = int_tuple::crd2idx(coord, &self.shape)?;
        Ok(self.eval_in_domain(index))
    }

    /// CuTe's extension of `L` to every integer: the last leaf is taken as
    /// unbounded, and digits are split with truncating division (so negative
    /// indices give negated offsets). Equals [`Layout::eval`] inside the
    /// domain; composition relies on it when the right operand reaches past
    /// `size(L)`.
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// let l: Layout = "(4,2):(1,10)".parse().unwrap();
    /// assert_eq!(l.eval_unbounded(13).unwrap(), 1 + 3 * 10);
    /// ```
    pub fn eval_unbounded(&self, index: i64) -> LayoutResult<i64> {
        let leaves = self.leaves();
        let mut rest = index;
        let mut offset = 0i64;
        for (i, &(s, d)) in leaves.iter().enumerate() {
            let digit = if i + 1 == leaves.len() {
                rest
            } else {
                rest % s
            };
            offset = digit
                .checked_mul(d)
                .and_then(|term| term.checked_add(offset))
                .ok_or_else(|| overflow("offset", format_args!("{self} at {index}")))?;
            rest /= s;
        }
        Ok(offset)
    }

    /// The coordinate (congruent to the shape) of a 1-D index.
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// let d: Layout = "[(2,2),(2,4) : (1,4),(2,8)]".parse().unwrap();
    /// assert_eq!(d.coordinate(12).unwrap().to_string(), "((0,0),(1,1))");
    /// ```
    pub fn coordinate(&self, index: i64) -> LayoutResult<IntTuple> {
        int_tuple::idx2crd(index, &self.shape)
    }

    /// The 1-D index of a (possibly partly flat) coordinate.
    ///
    /// ```
    /// use graphene::layout::{Layout, int_tuple::flat};
    /// let d: Layout = "[(2,2),(2,4) : (1,4),(2,8)]".parse().unwrap();
    /// assert_eq!(d.index(&flat(&[0, 3])).unwrap(), 12);
    /// ```
    pub fn index(&self, coord: &IntTuple) -> LayoutResult<i64> {
        int_tuple::crd2idx(coord, &self.shape)
    }

    /// Every offset in index order: `L(0), L(1), …, L(size − 1)`.
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// let l: Layout = "(2,2):(2,1)".parse().unwrap();
    /// assert_eq!(l.offsets().collect::<Vec<_>>(), [0, 2, 1, 3]);
    /// ```
    pub fn offsets(&self) -> Offsets {
        let leaves = self.leaves();
        Offsets {
            digits: vec![0; leaves.len()],
            leaves,
            offset: 0,
            remaining: self.size(),
        }
    }
}

/// Iterator over a layout's offsets in index order (an odometer over the
/// leaves, first leaf fastest). Rule: yields exactly `size` values.
#[derive(Clone, Debug)]
pub struct Offsets {
    leaves: Vec<(i64, i64)>,
    digits: Vec<i64>,
    offset: i64,
    remaining: i64,
}

impl Iterator for Offsets {
    type Item = i64;

    fn next(&mut self) -> Option<i64> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let current = self.offset;
        if self.remaining > 0 {
            for (digit, &(s, d)) in self.digits.iter_mut().zip(&self.leaves) {
                if *digit + 1 < s {
                    *digit += 1;
                    self.offset += d;
                    break;
                }
                self.offset -= *digit * d;
                *digit = 0;
            }
        }
        Some(current)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.remaining).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Offsets {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::int_tuple::{flat, leaf};

    #[test]
    fn new_checks_congruence_sizes_and_overflow() {
        assert!(matches!(
            Layout::new(flat(&[4, 8]), leaf(1)),
            Err(LayoutError::Incongruent { .. })
        ));
        assert!(matches!(
            Layout::new(flat(&[4, -2]), flat(&[1, 4])),
            Err(LayoutError::NonPositiveSize { size: -2, .. })
        ));
        assert!(matches!(
            Layout::new(flat(&[3, 2]), flat(&[i64::MAX / 2, 1])),
            Err(LayoutError::Overflow { .. })
        ));
        assert!(Layout::new(leaf(2), leaf(i64::MIN)).is_err());
        assert!(Layout::new(flat(&[1 << 32, 1 << 32]), flat(&[1, 0])).is_err());
    }

    #[test]
    fn one_leaf_tuples_are_stored_as_the_leaf() {
        let wrapped = Layout::new(flat(&[8]), flat(&[1])).unwrap();
        assert_eq!(wrapped, Layout::leaf(8, 1).unwrap());
        let nested = Layout::new(
            Tuple::Node(vec![flat(&[4, 2])]),
            Tuple::Node(vec![flat(&[1, 16])]),
        )
        .unwrap();
        assert_eq!(nested.rank(), 1);
        assert_eq!(nested.to_string(), "((4,2)):((1,16))");
    }

    #[test]
    fn size_cosize_rank_depth() {
        let l = Layout::new(
            Tuple::Node(vec![leaf(4), flat(&[2, 4])]),
            Tuple::Node(vec![leaf(2), flat(&[1, 8])]),
        )
        .unwrap();
        assert_eq!((l.size(), l.cosize(), l.rank(), l.depth()), (32, 32, 2, 2));
        assert_eq!(Layout::empty().size(), 1);
        assert_eq!(Layout::empty().cosize(), 1);
        assert_eq!(Layout::empty().eval(0).unwrap(), 0);
        assert_eq!(Layout::leaf(4, -3).unwrap().cosize(), 10);
        assert_eq!(l.flatten().to_string(), "(4,2,4):(2,1,8)");
    }

    #[test]
    fn offsets_match_eval() {
        let l = Layout::new(flat(&[3, 1, 4]), flat(&[5, 7, -2])).unwrap();
        let via_eval: Vec<i64> = (0..l.size()).map(|i| l.eval(i).unwrap()).collect();
        assert_eq!(l.offsets().collect::<Vec<_>>(), via_eval);
        assert_eq!(l.offsets().len(), 12);
    }

    #[test]
    fn unbounded_evaluation_extends_the_last_leaf() {
        let l = Layout::new(flat(&[4, 2]), flat(&[1, 10])).unwrap();
        for i in 0..8 {
            assert_eq!(l.eval_unbounded(i).unwrap(), l.eval(i).unwrap());
        }
        assert_eq!(l.eval_unbounded(9).unwrap(), 1 + 20);
        assert_eq!(l.eval_unbounded(-5).unwrap(), -1 - 10);
        assert!(l.eval_unbounded(i64::MAX).is_err());
    }
}
