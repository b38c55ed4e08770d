//! Stage 0, the algebra: Graphene's operations on tensors and thread groups,
//! written with the CuTe algebra — `tile` (a by-mode logical divide into an
//! outer and an inner level), `reshape` (a composition) and
//! `digit_coordinates` (the coordinate of a linear thread id, for
//! `.indices()`).

use std::fmt;

use super::composition::composition;
use super::error::{LayoutError, LayoutResult};
use super::int_tuple::{IntTuple, rebuild};
use super::layout_value::Layout;
use super::tiler::{KeptMode, Tiler, divide_pair};
use super::tuple::Tuple;

/// A layout split into two levels: `outer` enumerates the tiles, `inner` is
/// the tile. The offset of (outer coordinate, inner coordinate) is
/// `outer(c_o) + inner(c_i)`.
///
/// Rule: `outer` and `inner` have the rank of the tiled layout (one mode per
/// mode tiled); printed in the IR as the two levels `[outer].[inner]`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Tiled {
    /// The layout of the tiles (the rest modes of the divide).
    pub outer: Layout,
    /// The layout of one tile (the tile modes of the divide).
    pub inner: Layout,
}

impl Tiled {
    /// Whether the tiling covers `original` exactly, with no partial tiles:
    /// `size(outer)·size(inner) == size(original)`. When a tiler does not
    /// divide its mode, the last tiles run past the mode (their offsets
    /// continue its stride) and the caller must guard those coordinates.
    ///
    /// ```
    /// use graphene::layout::{Layout, Tiler, tile};
    /// let a: Layout = "[4,8]".parse().unwrap();
    /// let exact = tile(&a, &[Tiler::shape(&[2, 4]).unwrap()]).unwrap();
    /// assert!(exact.is_exact(&a));
    /// let partial = tile(&a, &[Tiler::shape(&[3, 4]).unwrap()]).unwrap();
    /// assert!(!partial.is_exact(&a));
    /// ```
    pub fn is_exact(&self, original: &Layout) -> bool {
        self.outer.size().checked_mul(self.inner.size()) == Some(original.size())
    }
}

/// The IR's two-level notation: `[2,2 : 2,16].[2,4 : 1,4]`.
impl fmt::Display for Tiled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.outer.ir(), self.inner.ir())
    }
}

/// Graphene's `X.tile(T0, T1, …)`: mode `i` of `L` is split by
/// `logical_divide(L_i, T_i)`; the tile parts form `inner` and the rest
/// parts form `outer`. A `Tiler::Keep` (`_`) makes the whole mode one tile
/// (its outer mode is `1:0`). One tiler is needed per top-level mode; as a
/// shorthand, a single by-mode tiler with one entry per mode (a shape tiler
/// such as `Tiler::shape(&[8, 8])`, the IR's `X.tile([8,8])`) stands for the
/// list of its entries.
///
/// Postconditions: `outer(c_o) + inner(c_i)`, over all coordinates, lists
/// the offsets of `L` (as a multiset) when the tilers divide their modes
/// exactly; mode `i` of `inner` equals `composition(L_i, T_i)`.
///
/// ```
/// use graphene::layout::{Layout, Tiler, tile};
/// let a: Layout = "[4,8 : 1,4]".parse().unwrap();
/// let t = tile(&a, &[
///     Tiler::Layout("[2:2]".parse().unwrap()),
///     Tiler::Layout("[2,2 : 1,4]".parse().unwrap()),
/// ]).unwrap();
/// assert_eq!(t.to_string(), "[2,2 : 1,8].[2,(2,2) : 2,(4,16)]");
/// ```
pub fn tile(layout: &Layout, tilers: &[Tiler]) -> LayoutResult<Tiled> {
    let expanded;
    let tilers = match tilers {
        [Tiler::ByMode(entries)] if layout.rank() > 1 && entries.len() == layout.rank() => {
            expanded = entries.clone();
            expanded.as_slice()
        }
        _ => tilers,
    };
    if tilers.len() != layout.rank() {
        return Err(LayoutError::TilerRank {
            operation: "tile",
            layout: layout.to_string(),
            rank: layout.rank(),
            tilers: tilers.len(),
            condition: "tile needs exactly one tiler (a layout or `_`) per mode",
        });
    }
    let by_mode = Tiler::ByMode(tilers.to_vec());
    let (inner, outer) = divide_pair("tile", layout, &by_mode, KeptMode::InTile)?;
    Ok(Tiled { outer, inner })
}

/// Graphene's `X.reshape(R)`: the composition `L ∘ R`, which re-views the
/// same elements with `R`'s shape.
///
/// Postconditions: `result(c) == L(R(c))` for every coordinate `c` of `R`;
/// `size(result) == size(L)` (a reshape of a different size is an error).
///
/// ```
/// use graphene::layout::{Layout, reshape};
/// let groups: Layout = "[4 : 8]".parse().unwrap();
/// let r = reshape(&groups, &"[2,2 : 2,1]".parse().unwrap()).unwrap();
/// assert_eq!(r.ir().to_string(), "[2,2 : 16,8]");
/// ```
pub fn reshape(layout: &Layout, target: &Layout) -> LayoutResult<Layout> {
    if layout.size() != target.size() {
        return Err(LayoutError::SizeMismatch {
            operation: "reshape",
            layout: layout.to_string(),
            size: layout.size(),
            target: target.to_string(),
            target_size: target.size(),
        });
    }
    composition(layout, target)
}

/// Checks that `L` has *digit coordinates*: its leaves of size > 1 have
/// positive strides and, sorted by stride, each stride is a multiple of the
/// previous stride × the previous size. Then `L` is injective, its modes do
/// not interleave, and `(id / stride) % shape` reads each coordinate off.
///
/// Not interleaving (each stride ≥ the previous stride × size) is not
/// enough for that formula: in `((2,2)):((2,10))` the id 10 is the
/// coordinate (0,1), yet `(10 / 2) % 2 = 1`. The multiple rule is what makes
/// the higher modes vanish modulo each lower one.
///
/// ```
/// use graphene::layout::{Layout, digit_decomposable};
/// assert!(digit_decomposable(&"[2,2 : 16,8]".parse().unwrap()).is_ok());
/// assert!(digit_decomposable(&"[4,2 : 1,2]".parse().unwrap()).is_err());
/// ```
pub fn digit_decomposable(layout: &Layout) -> LayoutResult<()> {
    let failure = |condition: String| LayoutError::NotDigitDecomposable {
        layout: layout.to_string(),
        condition,
    };
    let mut modes: Vec<(i64, i64)> = layout
        .leaves()
        .into_iter()
        .filter(|&(s, _)| s > 1)
        .collect();
    if let Some(&(s, d)) = modes.iter().find(|&&(_, d)| d <= 0) {
        return Err(failure(format!(
            "mode {s}:{d} has a stride below 1, so ids do not determine its coordinate"
        )));
    }
    modes.sort_by_key(|&(_, d)| d);
    for pair in modes.windows(2) {
        let ((s0, d0), (s1, d1)) = (pair[0], pair[1]);
        // An extent past i64 cannot divide any stride.
        let span = s0.checked_mul(d0);
        if span.is_none_or(|span| d1 % span != 0) {
            let span = span.map_or_else(|| format!("{s0}·{d0}"), |span| span.to_string());
            let how = if d1 < s0.saturating_mul(d0) {
                "interleaves with"
            } else {
                "is not aligned to"
            };
            return Err(failure(format!(
                "mode {s1}:{d1} {how} mode {s0}:{d0}: its stride is not a multiple of {span}"
            )));
        }
    }
    Ok(())
}

/// The coordinate of linear id `id` in a layout with digit coordinates:
/// leaf by leaf `(id / stride) % shape` (size-1 leaves give 0). This is
/// what `#g.indices()` binds for the thread or block with that id.
///
/// Postcondition: for every coordinate `c` of `L`,
/// `digit_coordinates(L, L(c)) == c` (congruent to the shape).
///
/// ```
/// use graphene::layout::{Layout, digit_coordinates};
/// let g: Layout = "[2,2 : 16,8]".parse().unwrap();
/// assert_eq!(digit_coordinates(&g, 24).unwrap().to_string(), "(1,1)");
/// ```
pub fn digit_coordinates(layout: &Layout, id: i64) -> LayoutResult<IntTuple> {
    digit_decomposable(layout)?;
    if id < 0 {
        return Err(LayoutError::BadCoordinate {
            coord: id.to_string(),
            shape: layout.shape().to_string(),
            reason: "a linear id must be at least 0".to_string(),
        });
    }
    let digits: Vec<i64> = layout
        .leaves()
        .into_iter()
        .map(|(s, d)| if s == 1 { 0 } else { (id / d) % s })
        .collect();
    Ok(match layout.shape() {
        Tuple::Leaf(_) => Tuple::Leaf(digits.first().copied().unwrap_or(0)),
        shape @ Tuple::Node(_) => rebuild(shape, digits),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(text: &str) -> Layout {
        text.parse().unwrap()
    }

    fn tiler(text: &str) -> Tiler {
        Tiler::Layout(layout(text))
    }

    #[test]
    fn whole_modes_become_one_tile() {
        let a = layout("[1024,1024]");
        let t = tile(&a, &[tiler("128"), Tiler::Keep]).unwrap();
        assert_eq!(t.to_string(), "[8,1 : 128,0].[128,1024 : 1,1024]");
    }

    #[test]
    fn tiler_count_must_match_the_rank() {
        let a = layout("[4,8]");
        assert!(matches!(
            tile(&a, &[tiler("2")]),
            Err(LayoutError::TilerRank { .. })
        ));
        assert!(tile(&a, &[Tiler::shape(&[2, 4]).unwrap()]).is_ok());
    }

    #[test]
    fn reshape_keeps_the_size() {
        assert!(matches!(
            reshape(&layout("[4 : 8]"), &layout("[2,4]")),
            Err(LayoutError::SizeMismatch { .. })
        ));
    }

    #[test]
    fn digit_rules() {
        assert!(digit_decomposable(&layout("[4,2 : 0,1]")).is_err());
        assert!(digit_decomposable(&layout("[4,1,2 : 1,0,4]")).is_ok());
        assert!(digit_decomposable(&layout("[4,2 : 2,1]")).is_ok());
        assert!(digit_decomposable(&layout("[4,2 : 2,3]")).is_err());
        assert!(digit_decomposable(&layout("[2,2 : 2,10]")).is_err());
        assert!(digit_decomposable(&layout("[2,2 : 2,12]")).is_ok());
        assert_eq!(
            digit_coordinates(&layout("[(4,2) : (1,16)]"), 21)
                .unwrap()
                .to_string(),
            "((1,1))"
        );
        assert!(digit_coordinates(&layout("[8 : 1]"), -1).is_err());
        assert_eq!(
            digit_coordinates(&Layout::empty(), 5).unwrap(),
            Tuple::Node(vec![])
        );
    }
}
