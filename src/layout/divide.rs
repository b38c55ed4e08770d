//! Stage 0, the algebra: tilers and the divides — `logical_divide`,
//! `zipped_divide`, `tiled_divide` — which split a layout into tiles (the
//! tiler's image) and the rest (the tiler's complement), and by-mode
//! composition.

use std::fmt;

use super::complement::complement;
use super::composition::{coalesce, composition};
use super::error::{LayoutError, LayoutResult};
use super::layout_value::Layout;

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
        assert_eq!(d.to_string(), "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))");
        let z = zipped_divide(&a, &tiler).unwrap();
        assert_eq!(z.mode(0).unwrap(), composition_by_mode(&a, &tiler).unwrap());
    }

    #[test]
    fn keep_entries_and_extra_modes() {
        let a = layout("(4,6,5):(1,4,24)");
        let tiler = Tiler::ByMode(vec![Tiler::Keep, Tiler::Layout(layout("3:1"))]);
        assert_eq!(logical_divide(&a, &tiler).unwrap().to_string(), "(4,(3,2),5):(1,(4,12),24)");
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
}
