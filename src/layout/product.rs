//! Stage 0, the algebra: the products — `logical_product` (repeat a block
//! over the layout of a tiler), and its rank-sensitive forms
//! `blocked_product` and `raked_product`.

use super::complement::complement;
use super::composition::composition;
use super::divide::{Tiler, checked_modes};
use super::error::{LayoutResult, mul};
use super::layout_value::Layout;
use super::tuple::Tuple;

/// CuTe's `logical_product`: `(A, A* ∘ B)` with
/// `A* = complement(A, size(A)·cosize(B))` — mode 0 is the block `A`, mode 1
/// places one copy of it at each element of `B`. A by-mode tiler multiplies
/// each mode (`_` leaves it alone).
///
/// Postconditions: rank 2 (for a layout tiler); mode 0 is `A`; mode 1 is
/// compatible with `B` and equals `composition(A*, B)`; when `A` is compact
/// and `B` is injective the result is injective, and when both are compact
/// it is a bijection onto `[0, size(A)·size(B))`.
///
/// ```
/// use graphene::layout::{Layout, Tiler, logical_product};
/// let a: Layout = "(2,2):(4,1)".parse().unwrap();
/// let b = Tiler::Layout("6:1".parse().unwrap());
/// assert_eq!(logical_product(&a, &b).unwrap().to_string(), "((2,2),(2,3)):((4,1),(2,8))");
/// ```
pub fn logical_product(block: &Layout, tiler: &Tiler) -> LayoutResult<Layout> {
    match tiler {
        Tiler::Layout(b) => {
            let bound = mul(block.size(), b.cosize(), "logical_product codomain")?;
            let repeats = composition(&complement(block, bound)?, b)?;
            Layout::from_modes(&[block.clone(), repeats])
        }
        Tiler::Keep => Ok(block.clone()),
        Tiler::ByMode(tilers) => {
            let mut modes = checked_modes("logical_product", block, tilers.len())?;
            for (mode, tiler) in modes.iter_mut().zip(tilers) {
                *mode = logical_product(mode, tiler)?;
            }
            Layout::from_modes(&modes)
        }
    }
}

/// Pads `layout` with `1:0` modes up to `rank` (CuTe's `append<R>`).
fn padded_modes(layout: &Layout, rank: usize) -> LayoutResult<Vec<Layout>> {
    let mut modes = layout.modes();
    while modes.len() < rank {
        modes.push(Layout::leaf(1, 0)?);
    }
    Ok(modes)
}

/// The logical product of `block` and `tiler`, both padded to the larger
/// rank, as (block modes, repeat modes) paired mode by mode.
fn paired_product(block: &Layout, tiler: &Layout) -> LayoutResult<Vec<(Layout, Layout)>> {
    let rank = block.rank().max(tiler.rank());
    let block_modes = padded_modes(block, rank)?;
    let tiler_modes = padded_modes(tiler, rank)?;
    let block = Layout::from_modes(&block_modes)?;
    let tiler_padded = Layout::from_modes(&tiler_modes)?;
    let product = logical_product(&block, &Tiler::Layout(tiler_padded.clone()))?;
    let repeats = product.mode(1)?;
    // The repeats follow the tiler's modes; a one-leaf tiler is one mode even
    // when its composition came out as a tuple.
    let repeat_modes = match tiler_padded.shape() {
        Tuple::Leaf(_) => vec![repeats],
        Tuple::Node(_) => repeats.modes(),
    };
    Ok(block_modes.into_iter().zip(repeat_modes).collect())
}

/// CuTe's `blocked_product`: the block repeated over the tiler, mode by
/// mode — mode `i` of the result is `(block_i, repeat_i)`, so the block is
/// contiguous within each mode ("a 2×5 block tiled 3×4").
///
/// Postconditions: `rank(result) == max(rank(A), rank(B))`; mode `i` has
/// size `size(A_i)·size(B_i)`; the result enumerates the same offsets as
/// `logical_product(A', B')` of the padded operands.
///
/// ```
/// use graphene::layout::{Layout, blocked_product};
/// let block: Layout = "(2,5):(5,1)".parse().unwrap();
/// let tiler: Layout = "(3,4):(1,3)".parse().unwrap();
/// assert_eq!(
///     blocked_product(&block, &tiler).unwrap().to_string(),
///     "((2,3),(5,4)):((5,10),(1,30))"
/// );
/// ```
pub fn blocked_product(block: &Layout, tiler: &Layout) -> LayoutResult<Layout> {
    let modes = paired_product(block, tiler)?
        .into_iter()
        .map(|(b, r)| Layout::from_modes(&[b, r]))
        .collect::<LayoutResult<Vec<_>>>()?;
    Layout::from_modes(&modes)
}

/// CuTe's `raked_product`: like [`blocked_product`] but each mode is
/// `(repeat_i, block_i)`, so the copies of the block interleave ("rake")
/// within each mode.
///
/// Postconditions: `rank(result) == max(rank(A), rank(B))`; mode `i` is
/// mode `i` of `blocked_product` with its two sub-modes swapped.
///
/// ```
/// use graphene::layout::{Layout, raked_product};
/// let block: Layout = "(2,5):(5,1)".parse().unwrap();
/// let tiler: Layout = "(3,4):(1,3)".parse().unwrap();
/// assert_eq!(
///     raked_product(&block, &tiler).unwrap().to_string(),
///     "((3,2),(4,5)):((10,5),(30,1))"
/// );
/// ```
pub fn raked_product(block: &Layout, tiler: &Layout) -> LayoutResult<Layout> {
    let modes = paired_product(block, tiler)?
        .into_iter()
        .map(|(b, r)| Layout::from_modes(&[r, b]))
        .collect::<LayoutResult<Vec<_>>>()?;
    Layout::from_modes(&modes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(text: &str) -> Layout {
        text.parse().unwrap()
    }

    #[test]
    fn cute_guide_product_example() {
        let a = layout("(2,2):(4,1)");
        let p = logical_product(&a, &Tiler::Layout(layout("6:1"))).unwrap();
        assert_eq!(p.to_string(), "((2,2),(2,3)):((4,1),(2,8))");
    }

    #[test]
    fn rank_padding() {
        // A rank-1 block over a rank-2 tiler gets a `1:0` mode to pair with.
        let p = blocked_product(&layout("4:1"), &layout("(2,3):(1,2)")).unwrap();
        assert_eq!(p.to_string(), "((4,2),(1,3)):((1,4),(0,8))");
        let p = blocked_product(&layout("(2,2):(1,2)"), &layout("3:1")).unwrap();
        assert_eq!(p.to_string(), "((2,3),(2,1)):((1,4),(2,0))");
    }

    #[test]
    fn by_mode_products() {
        let p = logical_product(
            &layout("(2,5):(5,1)"),
            &Tiler::ByMode(vec![Tiler::Layout(layout("3:1")), Tiler::Keep]),
        )
        .unwrap();
        // Per mode, the complement fills the holes of `2:5` below size·cosize = 6.
        assert_eq!(p.to_string(), "((2,3),5):((5,1),1)");
    }

    #[test]
    fn non_complementable_blocks_are_errors() {
        assert!(logical_product(&layout("(2,2):(2,3)"), &Tiler::Layout(layout("2:1"))).is_err());
    }
}
