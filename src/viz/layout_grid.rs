//! Drawing: layouts as grids of offsets — a plain layout, a swizzled one, a
//! tiled one (its tiles as blocks), and the tiles of a tiling shown in place
//! inside the layout they were cut from.

use std::collections::BTreeMap;

use super::table::{Cell, Table, caption, index_label, tile_letter};
use super::{MAX_CELLS, Style, VizError};
use crate::layout::{Layout, SwizzledLayout, Tiled, Tuple};

/// One axis of a drawing: the layout leaves that vary along it, enumerated
/// colexicographically (first leaf fastest), as a 1-D index.
#[derive(Clone, Debug)]
pub(super) struct Axis {
    leaves: Vec<(i64, i64)>,
    pub(super) size: u64,
}

impl Axis {
    fn of(modes: &[Layout]) -> Axis {
        let leaves: Vec<(i64, i64)> = modes.iter().flat_map(Layout::leaves).collect();
        // A sub-product of a valid layout's size, so it fits.
        let size = leaves.iter().map(|&(s, _)| s as u64).product();
        Axis { leaves, size }
    }

    /// The offset contributed by 1-D index `index < size` along this axis.
    /// Never overflows: its magnitude is bounded by the layout's reach.
    pub(super) fn offset(&self, index: u64) -> i64 {
        let mut rest = index as i64;
        let mut offset = 0;
        for &(s, d) in &self.leaves {
            offset += (rest % s) * d;
            rest /= s;
        }
        offset
    }
}

/// How a layout is laid on the page: cell `(r, c)` shows
/// `rows.offset(r) + cols.offset(c)`, which is `L(r + size(rows)·c)`.
pub(super) struct Axes {
    pub(super) rows: Axis,
    pub(super) cols: Axis,
    /// Says which modes run down and which across, for the caption.
    pub(super) how: String,
}

/// Rank ≥ 2: mode 0 runs down, the other modes (colexicographic, mode 1
/// fastest) across. A rank-1 layout whose mode is a tuple is drawn by that
/// tuple's modes; a one-leaf layout is one row; a scalar is one cell.
pub(super) fn axes(layout: &Layout) -> Axes {
    let mut current = layout.clone();
    let mut word = "mode";
    while current.rank() == 1 && current.depth() > 0 {
        current = current.modes().remove(0);
        word = "sub-mode";
    }
    let modes = current.modes();
    if current.depth() == 0 {
        let cols = Axis::of(&modes);
        let how = format!("one row of {} (a rank-1 layout)", cols.size);
        return Axes {
            rows: Axis::of(&[]),
            cols,
            how,
        };
    }
    if modes.is_empty() {
        return Axes {
            rows: Axis::of(&[]),
            cols: Axis::of(&[]),
            how: "one cell (a scalar)".to_string(),
        };
    }
    let rows = Axis::of(&modes[..1]);
    let cols = Axis::of(&modes[1..]);
    let across = match modes.len() {
        2 => format!("{word} 1 ({})", cols.size),
        n => format!(
            "{word}s 1..{} flattened ({}, {word} 1 fastest)",
            n - 1,
            cols.size
        ),
    };
    let how = format!("rows: {word} 0 ({}), columns: {across}", rows.size);
    Axes { rows, cols, how }
}

/// The rank-2 layout `(rows, columns)` that draws several levels
/// `outer.….inner` as nested blocks, each level on its own axes as
/// [`layout_grid`] draws it: block-row `i` of the outer level holds the rows
/// of the levels inside it, and so on. Row `r` and column `c` of its grid
/// show the offset `Σ level_j(c_j)` of the element drawn there, exactly the
/// cell [`tiled_grid`] draws at `(r, c)` for two levels.
///
/// Rule: mode 0 lists the row leaves of every level, innermost level first
/// (so it runs fastest), mode 1 the column leaves likewise; a level with no
/// rows or columns contributes nothing (`1:0` when no level does).
///
/// ```
/// use graphene::layout::Layout;
/// use graphene::viz::blocks_layout;
/// let outer: Layout = "[2,2 : 2,16]".parse().unwrap();
/// let inner: Layout = "[2,4 : 1,4]".parse().unwrap();
/// let page = blocks_layout(&[outer, inner]).unwrap();
/// assert_eq!(page.to_string(), "((2,2),(4,2)):((1,2),(4,16))");
/// ```
pub fn blocks_layout(levels: &[Layout]) -> Result<Layout, VizError> {
    let mut rows = Vec::new();
    let mut cols = Vec::new();
    for level in levels.iter().rev() {
        let level_axes = axes(level);
        rows.extend(level_axes.rows.leaves);
        cols.extend(level_axes.cols.leaves);
    }
    let mode = |leaves: Vec<(i64, i64)>| -> (Tuple<i64>, Tuple<i64>) {
        if leaves.is_empty() {
            return (Tuple::Leaf(1), Tuple::Leaf(0));
        }
        let (shape, stride): (Vec<_>, Vec<_>) = leaves
            .into_iter()
            .map(|(s, d)| (Tuple::Leaf(s), Tuple::Leaf(d)))
            .unzip();
        (Tuple::Node(shape), Tuple::Node(stride))
    };
    let (row_shape, row_stride) = mode(rows);
    let (col_shape, col_stride) = mode(cols);
    Ok(Layout::new(
        Tuple::Node(vec![row_shape, col_shape]),
        Tuple::Node(vec![row_stride, col_stride]),
    )?)
}

/// When a drawing has more than [`MAX_CELLS`] cells, writes the summary
/// line and returns the corner size to draw; `None` when it is drawn whole.
pub(super) fn summarise(
    layout: &Layout,
    cells: u64,
    style: &Style,
    out: &mut String,
) -> Option<u64> {
    if cells <= MAX_CELLS {
        return None;
    }
    caption(
        &format!(
            "too large to draw whole ({cells} cells): shape {}, stride {}, size {}, cosize {}; its top-left corner:",
            layout.shape(),
            layout.stride(),
            layout.size(),
            layout.cosize()
        ),
        style,
        out,
    );
    Some(8)
}

/// The grid of a layout: each cell is the offset of its coordinate. Mode 0
/// runs down, the other modes across (flattened colexicographically); the
/// caption says which. Row and column labels are 1-D indices into those
/// modes. More than [`MAX_CELLS`] cells are summarised.
///
/// ```
/// use graphene::layout::Layout;
/// use graphene::viz::{Style, layout_grid};
/// let a: Layout = "[4,8 : 1,4]".parse().unwrap();
/// let grid = layout_grid(&a, &Style::default());
/// assert!(grid.lines().any(|l| l == "0 |  0  4  8 12 16 20 24 28"));
/// ```
pub fn layout_grid(layout: &Layout, style: &Style) -> String {
    let axes = axes(layout);
    let mut out = String::new();
    let title = format!("{}: offset of each coordinate; {}", layout.ir(), axes.how);
    let corner = grid_preamble(layout, &axes, &title, style, &mut out);
    let cell = |r, c| Cell::plain((axes.rows.offset(r) + axes.cols.offset(c)).to_string());
    Table {
        rows: axes.rows.size,
        cols: axes.cols.size,
        row_label: &index_label,
        col_label: &index_label,
        cell: &cell,
        corner,
    }
    .render(style, &mut out);
    out
}

/// Writes a warning line when `layout` gives two coordinates the same
/// offset, naming the offset and both coordinates as `place` spells a 1-D
/// index of `layout` (after `what`, e.g. "coordinates" or "cells").
/// What a grid of `layout`'s coordinates writes above its cells: the
/// caption `title`, the warning if two coordinates share an offset, and the
/// summary of a grid past `MAX_CELLS` (whose corner it returns).
fn grid_preamble(
    layout: &Layout,
    axes: &Axes,
    title: &str,
    style: &Style,
    out: &mut String,
) -> Option<u64> {
    caption(title, style, out);
    warn_if_not_injective(
        layout,
        "coordinates",
        &|index| index.to_string(),
        style,
        out,
    );
    summarise(layout, axes.rows.size * axes.cols.size, style, out)
}

fn warn_if_not_injective(
    layout: &Layout,
    what: &str,
    place: &dyn Fn(i64) -> String,
    style: &Style,
    out: &mut String,
) {
    if let Some((offset, first, second)) = first_collision(layout) {
        caption(
            &format!(
                "warning: not injective: offset {offset} is the offset of {what} {} and {} (a \
                 stride-0 mode or overlapping strides), so it appears more than once; as an \
                 output such a layout would write one element twice",
                place(first),
                place(second)
            ),
            style,
            out,
        );
    }
}

/// The most coordinates [`first_collision`] looks at: a larger layout is
/// drawn without the check rather than slowly.
const COLLISION_SCAN: i64 = 1 << 20;

/// The first offset `layout` gives two coordinates (1-D, colexicographic):
/// `(offset, first, second)`; `None` when it is injective (or too large to
/// scan).
pub(super) fn first_collision(layout: &Layout) -> Option<(i64, i64, i64)> {
    if layout.size() > COLLISION_SCAN {
        return None;
    }
    let mut seen = std::collections::HashMap::new();
    for (index, offset) in layout.offsets().enumerate() {
        if let Some(first) = seen.insert(offset, index as i64) {
            return Some((offset, first, index as i64));
        }
    }
    None
}

/// The grid of a swizzled layout `Sw ∘ (offset + L)`: each cell is the
/// swizzled offset of its coordinate, drawn on `L`'s axes as
/// [`layout_grid`] draws them. With colour, cells are coloured by the bits
/// the swizzle rewrites, which shows the permutation's pattern.
///
/// ```
/// use graphene::layout::SwizzledLayout;
/// use graphene::viz::{Style, swizzled_grid};
/// let s: SwizzledLayout = "Sw<1,0,1> o (2,2):(2,1)".parse().unwrap();
/// let grid = swizzled_grid(&s, &Style::default()).unwrap();
/// assert!(grid.ends_with("0 | 0 1\n1 | 3 2\n"));
/// ```
pub fn swizzled_grid(swizzled: &SwizzledLayout, style: &Style) -> Result<String, VizError> {
    let layout = swizzled.layout();
    let reach = layout.cosize() - 1;
    let base = swizzled.offset();
    if base.checked_add(reach).is_none() || base.checked_sub(reach).is_none() {
        return Err(VizError::Overflow {
            what: swizzled.ir().to_string(),
        });
    }
    let axes = axes(layout);
    let mut out = String::new();
    let title = format!(
        "{}: swizzled offset Sw(offset + L(c)) of each coordinate; {}",
        swizzled.ir(),
        axes.how
    );
    // A swizzle permutes offsets, so the swizzled layout repeats an offset
    // exactly where the layout does: the layout's own warning is the one.
    let corner = grid_preamble(layout, &axes, &title, style, &mut out);
    let sw = swizzled.swizzle();
    let target = sw.target_mask();
    let cell = |r, c| {
        let value = sw.apply(base + axes.rows.offset(r) + axes.cols.offset(c));
        Cell {
            text: value.to_string(),
            tile: None,
            color: (target != 0).then(|| ((value & target) >> target.trailing_zeros()) as u64),
        }
    };
    Table {
        rows: axes.rows.size,
        cols: axes.cols.size,
        row_label: &index_label,
        col_label: &index_label,
        cell: &cell,
        corner,
    }
    .render(style, &mut out);
    Ok(out)
}

/// The offsets of a tiled value `outer.inner` never overflow when both
/// reaches together fit.
fn check_reach(tiled: &Tiled) -> Result<(), VizError> {
    (tiled.outer.cosize() - 1)
        .checked_add(tiled.inner.cosize() - 1)
        .map(|_| ())
        .ok_or_else(|| VizError::Overflow {
            what: tiled.to_string(),
        })
}

/// The tiles of a tiled value as blocks: tile `(i, j)` of the outer level
/// is the block at block-row `i`, block-column `j`, and inside it the inner
/// level is drawn as [`layout_grid`] would draw it. Each cell is the offset
/// `outer(tile) + inner(element)` followed by the tile's letter (`a`, `b`, …
/// in colexicographic order of the outer level); separators run between
/// tiles and, with colour, each tile has its own. A legend (the outer level
/// as a grid of `letter=base offset`) follows.
///
/// ```
/// use graphene::layout::{Layout, Tiled};
/// use graphene::viz::{Style, tiled_grid};
/// let t = Tiled { outer: "[2,2 : 2,16]".parse().unwrap(), inner: "[2,4 : 1,4]".parse().unwrap() };
/// let grid = tiled_grid(&t, &Style::default()).unwrap();
/// assert!(grid.contains("0 |  0a  4a  8a 12a | 16c 20c 24c 28c"));
/// ```
pub fn tiled_grid(tiled: &Tiled, style: &Style) -> Result<String, VizError> {
    check_reach(tiled)?;
    let (outer, inner) = (axes(&tiled.outer), axes(&tiled.inner));
    let overflow = || VizError::Overflow {
        what: tiled.to_string(),
    };
    let rows = outer
        .rows
        .size
        .checked_mul(inner.rows.size)
        .ok_or_else(overflow)?;
    let cols = outer
        .cols
        .size
        .checked_mul(inner.cols.size)
        .ok_or_else(overflow)?;
    let mut out = String::new();
    caption(
        &format!(
            "{tiled}: {} tiles of {} elements, as blocks; cell = offset, letter = tile. Tiles: {}. Inside a tile: {}",
            tiled.outer.size(),
            tiled.inner.size(),
            outer.how,
            inner.how
        ),
        style,
        &mut out,
    );
    // The page layout's 1-D index is `row + rows·col` of the grid drawn.
    let page = blocks_layout(&[tiled.outer.clone(), tiled.inner.clone()])?;
    let cell_at = |index: i64| format!("({},{})", index % rows as i64, index / rows as i64);
    warn_if_not_injective(&page, "cells", &cell_at, style, &mut out);
    let corner = match rows.checked_mul(cols) {
        Some(cells) if cells <= MAX_CELLS => None,
        Some(_) | None => {
            caption(
                &format!("too large to draw whole ({rows} × {cols} cells); its top-left corner:"),
                style,
                &mut out,
            );
            Some(8)
        }
    };
    let cell = |r: u64, c: u64| {
        let (tile_row, tile_col) = (r / inner.rows.size, c / inner.cols.size);
        let offset = outer.rows.offset(tile_row)
            + outer.cols.offset(tile_col)
            + inner.rows.offset(r % inner.rows.size)
            + inner.cols.offset(c % inner.cols.size);
        let tile = tile_row + outer.rows.size * tile_col;
        Cell::in_tile(format!("{offset}{}", tile_letter(tile)), tile)
    };
    Table {
        rows,
        cols,
        row_label: &index_label,
        col_label: &index_label,
        cell: &cell,
        corner,
    }
    .render(style, &mut out);
    legend(&tiled.outer, &outer, corner.is_some(), style, &mut out);
    Ok(out)
}

/// The legend of a tiling: the outer level as a grid whose cells read
/// `letter=base offset`, coloured like the tiles; only its corner when the
/// grid it explains was `summarised` (or it has too many cells itself), as
/// a corner of tiles is all that grid shows.
fn legend(outer_layout: &Layout, outer: &Axes, summarised: bool, style: &Style, out: &mut String) {
    caption(
        &format!(
            "tiles {}: letter=base offset of each tile",
            outer_layout.ir()
        ),
        style,
        out,
    );
    let corner = (summarised || outer.rows.size * outer.cols.size > MAX_CELLS).then_some(8);
    let cell = |r: u64, c: u64| {
        let tile = r + outer.rows.size * c;
        let base = outer.rows.offset(r) + outer.cols.offset(c);
        Cell {
            text: format!("{}={base}", tile_letter(tile)),
            tile: None,
            color: Some(tile),
        }
    };
    Table {
        rows: outer.rows.size,
        cols: outer.cols.size,
        row_label: &index_label,
        col_label: &index_label,
        cell: &cell,
        corner,
    }
    .render(style, out);
}

/// The tiles of `tiled` shown in place: the grid of `original` (drawn as
/// [`layout_grid`] draws it), each cell its offset followed by the letter of
/// the tile that holds that offset. Separators run wherever neighbouring
/// cells belong to different tiles, so contiguous tiles show as blocks and
/// interleaved ones as stripes; the letters (and colours) say which is
/// which. This is how the Graphene paper draws tilings (§3.3).
///
/// Errors unless `tiled` covers exactly the offsets of `original`, each
/// once: the tiling must be exact and `original` injective.
///
/// ```
/// use graphene::layout::{Layout, Tiler, tile};
/// use graphene::viz::{Style, tiles_in_place};
/// let a: Layout = "[4,8 : 1,4]".parse().unwrap();
/// let t = tile(&a, &[Tiler::Layout("[2:2]".parse().unwrap()), Tiler::Layout("[4:1]".parse().unwrap())]).unwrap();
/// let grid = tiles_in_place(&a, &t, &Style::default()).unwrap();
/// assert!(grid.contains("1 |  1b  5b  9b 13b | 17d 21d 25d 29d"));
/// ```
pub fn tiles_in_place(original: &Layout, tiled: &Tiled, style: &Style) -> Result<String, VizError> {
    check_reach(tiled)?;
    let not_in_place = |reason: String| VizError::NotInPlace {
        tiled: tiled.to_string(),
        original: original.ir().to_string(),
        reason,
    };
    if !tiled.is_exact(original) {
        return Err(not_in_place(format!(
            "the tiling has {} × {} elements but the layout has {}",
            tiled.outer.size(),
            tiled.inner.size(),
            original.size()
        )));
    }
    let outer = axes(&tiled.outer);
    let axes = axes(original);
    let mut out = String::new();
    caption(
        &format!(
            "{tiled} inside {}: each element at its place in the layout, lettered by its tile; {}",
            original.ir(),
            axes.how
        ),
        style,
        &mut out,
    );
    let size = original.size() as u64;
    if let Some(corner) = summarise(original, size, style, &mut out) {
        caption("(tiles not drawn: too many cells)", style, &mut out);
        let cell = |r, c| Cell::plain((axes.rows.offset(r) + axes.cols.offset(c)).to_string());
        Table {
            rows: axes.rows.size,
            cols: axes.cols.size,
            row_label: &index_label,
            col_label: &index_label,
            cell: &cell,
            corner: Some(corner),
        }
        .render(style, &mut out);
        legend(&tiled.outer, &outer, true, style, &mut out);
        return Ok(out);
    }
    let mut index_of: BTreeMap<i64, u64> = BTreeMap::new();
    for (index, offset) in original.offsets().enumerate() {
        if index_of.insert(offset, index as u64).is_some() {
            return Err(not_in_place(format!(
                "offset {offset} appears twice in the layout, so offsets cannot place the tiles"
            )));
        }
    }
    let mut tile_of: Vec<Option<u64>> = vec![None; size as usize];
    for (tile, base) in tiled.outer.offsets().enumerate() {
        let tile = tile as u64;
        for element in tiled.inner.offsets() {
            let offset = base + element;
            let index = *index_of.get(&offset).ok_or_else(|| {
                not_in_place(format!(
                    "offset {offset} of tile {} is not an offset of the layout",
                    tile_letter(tile)
                ))
            })?;
            let slot = &mut tile_of[index as usize];
            if let Some(other) = slot.replace(tile) {
                return Err(not_in_place(format!(
                    "tiles {} and {} both hold offset {offset}",
                    tile_letter(other),
                    tile_letter(tile)
                )));
            }
        }
    }
    let cell = |r: u64, c: u64| {
        let offset = axes.rows.offset(r) + axes.cols.offset(c);
        // Every index was given exactly one tile above (exact and injective).
        let tile = tile_of[(r + axes.rows.size * c) as usize].unwrap_or_default();
        Cell::in_tile(format!("{offset}{}", tile_letter(tile)), tile)
    };
    Table {
        rows: axes.rows.size,
        cols: axes.cols.size,
        row_label: &index_label,
        col_label: &index_label,
        cell: &cell,
        corner: None,
    }
    .render(style, &mut out);
    legend(&tiled.outer, &outer, false, style, &mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(text: &str) -> Layout {
        text.parse().unwrap()
    }

    #[test]
    fn axes_follow_the_modes() {
        let d = axes(&layout("[(2,2),(2,4) : (1,4),(2,8)]"));
        assert_eq!((d.rows.size, d.cols.size), (4, 8));
        assert_eq!(d.rows.offset(3) + d.cols.offset(3), 10 + 5);
        let quad = axes(&layout("[(4,2) : (1,16)]"));
        assert_eq!((quad.rows.size, quad.cols.size), (4, 2));
        assert_eq!(quad.cols.offset(1), 16);
        let row = axes(&layout("[8 : 2]"));
        assert_eq!((row.rows.size, row.cols.size), (1, 8));
        let scalar = axes(&Layout::empty());
        assert_eq!((scalar.rows.size, scalar.cols.size), (1, 1));
        let rank3 = axes(&layout("[2,3,4]"));
        assert_eq!((rank3.rows.size, rank3.cols.size), (2, 12));
        assert_eq!(rank3.cols.offset(5), 2 * 2 + 6);
    }

    #[test]
    fn blocks_layout_draws_what_tiled_grid_draws() {
        let tiled = Tiled {
            outer: layout("[2,2 : 16,8]"),
            inner: layout("[8 : 1]"),
        };
        let page = blocks_layout(&[tiled.outer.clone(), tiled.inner.clone()]).unwrap();
        let (outer, inner) = (axes(&tiled.outer), axes(&tiled.inner));
        let page_axes = axes(&page);
        assert_eq!((page_axes.rows.size, page_axes.cols.size), (2, 16));
        for r in 0..2 {
            for c in 0..16 {
                let expected = outer.rows.offset(r / inner.rows.size)
                    + outer.cols.offset(c / inner.cols.size)
                    + inner.rows.offset(r % inner.rows.size)
                    + inner.cols.offset(c % inner.cols.size);
                assert_eq!(
                    page_axes.rows.offset(r) + page_axes.cols.offset(c),
                    expected
                );
            }
        }
        let one = blocks_layout(&[layout("[4,8 : 1,4]")]).unwrap();
        assert_eq!(one.to_string(), "((4),(8)):((1),(4))");
        let scalar = blocks_layout(&[Layout::empty()]).unwrap();
        assert_eq!(scalar.size(), 1);
    }

    #[test]
    fn huge_layouts_are_summarised() {
        let big = layout("[4096,4096]");
        let out = layout_grid(&big, &Style::default());
        assert!(out.contains("16777216 cells"), "{out}");
        assert!(out.contains("… 4088 more rows"), "{out}");
        assert!(out.lines().count() < 20, "{out}");
    }

    #[test]
    fn in_place_needs_the_tiling_of_the_layout() {
        let a = layout("[4,8 : 1,4]");
        let wrong = Tiled {
            outer: layout("[2,2 : 2,16]"),
            inner: layout("[2,4 : 1,8]"),
        };
        assert!(matches!(
            tiles_in_place(&a, &wrong, &Style::default()),
            Err(VizError::NotInPlace { .. })
        ));
        let repeated = layout("[4,8 : 0,4]");
        let t = Tiled {
            outer: layout("[2,2 : 0,16]"),
            inner: layout("[2,4 : 0,4]"),
        };
        assert!(tiles_in_place(&repeated, &t, &Style::default()).is_err());
    }

    #[test]
    fn overflowing_tilings_are_errors() {
        let t = Tiled {
            outer: layout("[2 : 4611686018427387904]"),
            inner: layout("[2 : 4611686018427387904]"),
        };
        assert!(matches!(
            tiled_grid(&t, &Style::default()),
            Err(VizError::Overflow { .. })
        ));
    }

    #[test]
    fn a_layout_that_names_an_offset_twice_is_drawn_with_a_warning() {
        let broadcast: Layout = "[2,2 : 0,1]".parse().unwrap();
        assert_eq!(first_collision(&broadcast), Some((0, 0, 1)));
        let out = layout_grid(&broadcast, &Style::plain(200));
        assert!(
            out.contains("warning: not injective: offset 0 is the offset of coordinates 0 and 1"),
            "{out}"
        );
        let overlapping: Layout = "[4,2 : 1,2]".parse().unwrap();
        assert_eq!(first_collision(&overlapping), Some((2, 2, 4)));
        let injective: Layout = "[4,8 : 1,4]".parse().unwrap();
        assert_eq!(first_collision(&injective), None);
        assert!(!layout_grid(&injective, &Style::plain(200)).contains("warning"));
    }

    #[test]
    fn swizzled_and_tiled_pictures_warn_where_offsets_repeat() {
        let swizzled: SwizzledLayout = "Sw<1,0,1> o (2,2):(0,1)".parse().unwrap();
        let out = swizzled_grid(&swizzled, &Style::plain(200)).unwrap();
        assert!(
            out.contains("not injective: offset 0 is the offset of coordinates 0 and 1"),
            "{out}"
        );
        let clean: SwizzledLayout = "Sw<1,0,1> o (2,2):(2,1)".parse().unwrap();
        assert!(
            !swizzled_grid(&clean, &Style::plain(200))
                .unwrap()
                .contains("warning")
        );
        // Tiles overlapping: tile 1 starts at offset 1, inside tile 0.
        let overlapping = Tiled {
            outer: layout("[2 : 1]"),
            inner: layout("[2 : 1]"),
        };
        let out = tiled_grid(&overlapping, &Style::plain(200)).unwrap();
        // The page is one row: cell (0,1) is tile 0's offset 1, (0,2) tile 1's.
        assert!(
            out.contains("not injective: offset 1 is the offset of cells (0,1) and (0,2)"),
            "{out}"
        );
        let exact = Tiled {
            outer: layout("[2 : 2]"),
            inner: layout("[2 : 1]"),
        };
        assert!(
            !tiled_grid(&exact, &Style::plain(200))
                .unwrap()
                .contains("warning")
        );
    }
}
