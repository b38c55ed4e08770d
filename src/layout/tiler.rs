//! Stage 0, the algebra: tilers and what is done with them — the divides
//! (`logical_divide`, `zipped_divide`, `tiled_divide`), which split a layout
//! into tiles (the tiler's image) and the rest (the tiler's complement); the
//! products (`logical_product`, `blocked_product`, `raked_product`), which
//! repeat a block over a tiler; and by-mode composition.

use std::fmt;

use super::complement::complement;
use super::composition::{coalesce, composition};
use super::error::{LayoutError, LayoutResult, mul};
use super::layout_value::Layout;
use super::tuple::Tuple;

/// What a divide or product applies to a layout (CuTe's `Tiler`).
///
/// Rule: a `ByMode` tiler has at most as many entries as the layout it is
/// applied to has top-level modes; the modes beyond its entries are left
/// alone. Written `<3:3, (2,4):(1,8)>` (CuTe's tile notation), `_` for `Keep`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Tiler {
    /// One layout applied to the (sub)layout as a 1-D function.
    Layout(Layout),
    /// `_`: the mode is left as it is (not divided, not multiplied).
    Keep,
    /// One tiler per top-level mode.
    ByMode(Vec<Tiler>),
}

impl Tiler {
    /// CuTe's reading of a shape as a tiler: one compact `n:1` per mode, so
    /// `Tiler::shape(&[128, 32])` is `<128:1, 32:1>`.
    ///
    /// ```
    /// use graphene::layout::Tiler;
    /// assert_eq!(Tiler::shape(&[8, 8]).unwrap().to_string(), "<8:1,8:1>");
    /// ```
    pub fn shape(extents: &[i64]) -> LayoutResult<Tiler> {
        extents
            .iter()
            .map(|&n| Layout::leaf(n, 1).map(Tiler::Layout))
            .collect::<LayoutResult<Vec<_>>>()
            .map(Tiler::ByMode)
    }
}

impl From<Layout> for Tiler {
    fn from(layout: Layout) -> Tiler {
        Tiler::Layout(layout)
    }
}

/// CuTe notation: a layout, `_`, or `<T0,T1,…>`.
impl fmt::Display for Tiler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tiler::Layout(layout) => write!(f, "{layout}"),
            Tiler::Keep => f.write_str("_"),
            Tiler::ByMode(tilers) => {
                f.write_str("<")?;
                for (i, tiler) in tilers.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{tiler}")?;
                }
                f.write_str(">")
            }
        }
    }
}

/// The modes of `layout` that a by-mode tiler of `count` entries applies to,
/// or the rank error of `operation`.
pub(crate) fn checked_modes(
    operation: &'static str,
    layout: &Layout,
    count: usize,
) -> LayoutResult<Vec<Layout>> {
    let modes = layout.modes();
    if count > modes.len() {
        return Err(LayoutError::TilerRank {
            operation,
            layout: layout.to_string(),
            rank: modes.len(),
            tilers: count,
            condition: "a by-mode tiler may not have more entries than the layout has modes",
        });
    }
    Ok(modes)
}

/// By-mode composition `L ∘ <T0, T1, …>`: each tiler composed with its
/// mode, `_` keeping the mode, extra modes kept.
///
/// Postcondition: mode `i` of the result is `composition(mode_i(L), T_i)`.
///
/// ```
/// use graphene::layout::{Layout, Tiler, composition_by_mode};
/// let a: Layout = "(12,(4,8)):(59,(13,1))".parse().unwrap();
/// let tiler = Tiler::ByMode(vec![
///     Tiler::Layout("3:4".parse().unwrap()),
///     Tiler::Layout("8:2".parse().unwrap()),
/// ]);
/// assert_eq!(composition_by_mode(&a, &tiler).unwrap().to_string(), "(3,(2,4)):(236,(26,1))");
/// ```
pub fn composition_by_mode(layout: &Layout, tiler: &Tiler) -> LayoutResult<Layout> {
    match tiler {
        Tiler::Layout(t) => composition(layout, t),
        Tiler::Keep => Ok(layout.clone()),
        Tiler::ByMode(tilers) => {
            let mut modes = checked_modes("composition", layout, tilers.len())?;
            for (mode, tiler) in modes.iter_mut().zip(tilers) {
                *mode = composition_by_mode(mode, tiler)?;
            }
            Layout::from_modes(&modes)
        }
    }
}

/// `L ∘ (T, complement(T, shape(coalesce(L))))`: the tile `L ∘ T` and the
/// rest, for a layout tiler.
fn divide_by_layout(layout: &Layout, tiler: &Layout) -> LayoutResult<(Layout, Layout)> {
    let cotarget = coalesce(layout).shape().clone();
    let rest = complement(tiler, cotarget)?;
    let divided = composition(layout, &Layout::from_modes(&[tiler.clone(), rest])?)?;
    Ok((divided.mode(0)?, divided.mode(1)?))
}

/// CuTe's `logical_divide`: for a layout tiler `T`, the rank-2 layout
/// `L ∘ (T, T*)` with `T* = complement(T, shape(coalesce(L)))` — mode 0 is
/// the tile, mode 1 enumerates the tiles. A by-mode tiler divides each mode
/// (`_` leaves it whole and undivided).
///
/// Postconditions: `result == composition(L, (T, T*))` as functions; mode 0
/// equals `composition(L, T)`; when `T` and `T*` tile the domain exactly
/// (`size(T)·size(T*) == size(L)`) the result has the same image as `L`, so
/// it is a bijection onto `L`'s image whenever `L` is injective.
///
/// ```
/// use graphene::layout::{Layout, Tiler, logical_divide};
/// let a: Layout = "(4,2,3):(2,1,8)".parse().unwrap();
/// let t = Tiler::Layout("4:2".parse().unwrap());
/// assert_eq!(logical_divide(&a, &t).unwrap().to_string(), "((2,2),(2,3)):((4,1),(2,8))");
/// ```
pub fn logical_divide(layout: &Layout, tiler: &Tiler) -> LayoutResult<Layout> {
    match tiler {
        Tiler::Layout(t) => {
            let (tile, rest) = divide_by_layout(layout, t)?;
            Layout::from_modes(&[tile, rest])
        }
        Tiler::Keep => Ok(layout.clone()),
        Tiler::ByMode(tilers) => {
            let mut modes = checked_modes("logical_divide", layout, tilers.len())?;
            for (mode, tiler) in modes.iter_mut().zip(tilers) {
                *mode = logical_divide(mode, tiler)?;
            }
            Layout::from_modes(&modes)
        }
    }
}

/// Where a mode left whole by `_` goes when tiles and rests are gathered.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum KeptMode {
    /// With the rests (CuTe): the mode is not tiled, tile part `1:0`.
    InRest,
    /// With the tiles (Graphene's `tile`): the whole mode is one tile, rest `1:0`.
    InTile,
}

/// Splits `layout` by `tiler` into (tiles, rests), gathering by-mode results
/// as CuTe's `zip2_by` does: `((T0,T1,…), (R0,R1,…,extra modes))`.
pub(crate) fn divide_pair(
    operation: &'static str,
    layout: &Layout,
    tiler: &Tiler,
    kept: KeptMode,
) -> LayoutResult<(Layout, Layout)> {
    match tiler {
        Tiler::Layout(t) => divide_by_layout(layout, t),
        Tiler::Keep => {
            let unit = Layout::leaf(1, 0)?;
            Ok(match kept {
                KeptMode::InRest => (unit, layout.clone()),
                KeptMode::InTile => (layout.clone(), unit),
            })
        }
        Tiler::ByMode(tilers) => {
            let modes = checked_modes(operation, layout, tilers.len())?;
            let mut tiles = Vec::with_capacity(tilers.len());
            let mut rests = Vec::with_capacity(modes.len());
            for (mode, tiler) in modes.iter().zip(tilers) {
                let (tile, rest) = divide_pair(operation, mode, tiler, kept)?;
                tiles.push(tile);
                rests.push(rest);
            }
            rests.extend(modes.into_iter().skip(tilers.len()));
            Ok((Layout::from_modes(&tiles)?, Layout::from_modes(&rests)?))
        }
    }
}

/// CuTe's `zipped_divide`: `logical_divide` with the tiles gathered into
/// mode 0 and the rests (then any modes the tiler did not reach) into mode 1:
/// `((TileM,TileN), (RestM,RestN,L,…))`. A `_` entry puts its whole mode
/// with the rests (tile part `1:0`).
///
/// Postconditions: mode 0 equals `composition_by_mode(L, tiler)`; the result
/// enumerates the same offsets as `logical_divide(L, tiler)`, regrouped.
///
/// ```
/// use graphene::layout::{Layout, Tiler, zipped_divide};
/// let a: Layout = "(9,(4,8)):(59,(13,1))".parse().unwrap();
/// let tiler = Tiler::ByMode(vec![
///     Tiler::Layout("3:3".parse().unwrap()),
///     Tiler::Layout("(2,4):(1,8)".parse().unwrap()),
/// ]);
/// let z = zipped_divide(&a, &tiler).unwrap();
/// assert_eq!(z.to_string(), "((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))");
/// ```
pub fn zipped_divide(layout: &Layout, tiler: &Tiler) -> LayoutResult<Layout> {
    let (tiles, rests) = divide_pair("zipped_divide", layout, tiler, KeptMode::InRest)?;
    Layout::from_modes(&[tiles, rests])
}

/// CuTe's `tiled_divide`: `zipped_divide` with the rest mode unpacked:
/// `((TileM,TileN), RestM, RestN, L, …)`.
///
/// Postcondition: mode 0 is mode 0 of `zipped_divide`, and modes 1.. are the
/// modes of its mode 1, in order.
///
/// ```
/// use graphene::layout::{Layout, Tiler, tiled_divide};
/// let a: Layout = "(8,8):(1,8)".parse().unwrap();
/// let t = tiled_divide(&a, &Tiler::shape(&[2, 4]).unwrap()).unwrap();
/// assert_eq!(t.to_string(), "((2,4),4,2):((1,8),2,32)");
/// ```
pub fn tiled_divide(layout: &Layout, tiler: &Tiler) -> LayoutResult<Layout> {
    let (tiles, rests) = divide_pair("tiled_divide", layout, tiler, KeptMode::InRest)?;
    let mut modes = vec![tiles];
    modes.extend(rests.modes());
    Layout::from_modes(&modes)
}

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
    fn cute_guide_divide_example() {
        let a = layout("(9,(4,8)):(59,(13,1))");
        let tiler = Tiler::ByMode(vec![
            Tiler::Layout(layout("3:3")),
            Tiler::Layout(layout("(2,4):(1,8)")),
        ]);
        let d = logical_divide(&a, &tiler).unwrap();
        assert_eq!(
            d.to_string(),
            "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))"
        );
        let z = zipped_divide(&a, &tiler).unwrap();
        assert_eq!(z.mode(0).unwrap(), composition_by_mode(&a, &tiler).unwrap());
    }

    #[test]
    fn keep_entries_and_extra_modes() {
        let a = layout("(4,6,5):(1,4,24)");
        let tiler = Tiler::ByMode(vec![Tiler::Keep, Tiler::Layout(layout("3:1"))]);
        assert_eq!(
            logical_divide(&a, &tiler).unwrap().to_string(),
            "(4,(3,2),5):(1,(4,12),24)"
        );
        assert_eq!(
            zipped_divide(&a, &tiler).unwrap().to_string(),
            "((1,3),(4,2,5)):((0,4),(1,12,24))"
        );
        assert_eq!(
            tiled_divide(&a, &tiler).unwrap().to_string(),
            "((1,3),4,2,5):((0,4),1,12,24)"
        );
    }

    #[test]
    fn too_many_tilers_is_an_error() {
        let tiler = Tiler::shape(&[2, 2, 2]).unwrap();
        for result in [
            logical_divide(&layout("(4,4):(1,4)"), &tiler),
            zipped_divide(&layout("(4,4):(1,4)"), &tiler),
            composition_by_mode(&layout("(4,4):(1,4)"), &tiler),
        ] {
            assert!(matches!(result, Err(LayoutError::TilerRank { .. })));
        }
    }

    #[test]
    fn tilers_print_in_cute_tile_notation() {
        let t = Tiler::ByMode(vec![Tiler::Keep, Tiler::Layout(layout("(2,4):(1,8)"))]);
        assert_eq!(t.to_string(), "<_,(2,4):(1,8)>");
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
