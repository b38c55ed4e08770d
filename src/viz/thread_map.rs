//! Drawing: thread-data maps — which thread, and which of its values, owns
//! each element of a grid — drawn in both directions: element → owner (a
//! grid of `T4:v1` cells, or `W3` cells when zoomed out to warps) and
//! thread → elements (one row per thread); cells coloured by block,
//! thread, warp, quad or value.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use super::table::{Cell, Table, caption, index_label};
use super::{MAX_CELLS, Style, VizError};
use crate::layout::Layout;

/// The most elements a thread map of [`ThreadMap::new`] holds: the widest
/// atom's operand, the 64 × 256 accumulators of `wgmma.m64n256k16`.
pub const MAX_ATOM_CELLS: u64 = 64 * 256;

/// The most cells a map zoomed out to warps (or a tiled atom) holds: its
/// cells are short (`W3`) and only the cells shown are drawn, so block
/// tiles of a million elements still draw.
pub const MAX_MAP_CELLS: u64 = 1 << 20;

/// The threads of a warp: a cell zoomed out to warps shows thread / 32.
pub(crate) const WARP: i64 = 32;
/// The threads of a quad (lanes 4g..4g+3, the `mma` fragments' groups).
const QUAD: i64 = 4;

/// What a thread-data map's colours tell apart.
///
/// Rule: colour never changes the text (labels stay `T5:v2`); it is taken
/// from the cell's first owner. `Block` (the default) is the map's blocks,
/// e.g. the 8×8 matrices of `ldmatrix`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ColorBy {
    /// The map's blocks (separated by rules as well).
    #[default]
    Block,
    /// Each thread its own colour.
    Thread,
    /// Threads `32w..32w+31` one colour.
    Warp,
    /// Threads `4q..4q+3` one colour.
    Quad,
    /// The value (register element) number.
    Value,
}

impl ColorBy {
    /// Every choice, in the order `:set colorby` lists them.
    pub const ALL: [ColorBy; 5] = [
        ColorBy::Block,
        ColorBy::Thread,
        ColorBy::Warp,
        ColorBy::Quad,
        ColorBy::Value,
    ];

    /// The colour key of a cell owned first by `owner` in block `block`.
    fn key(self, owner: Owner, block: Option<u64>) -> Option<u64> {
        match self {
            ColorBy::Block => block,
            ColorBy::Thread => Some(owner.thread as u64),
            ColorBy::Warp => Some((owner.thread / WARP) as u64),
            ColorBy::Quad => Some((owner.thread / QUAD) as u64),
            ColorBy::Value => Some(owner.value as u64),
        }
    }
}

/// `block`, `thread`, `warp`, `quad`, `value`.
impl fmt::Display for ColorBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ColorBy::Block => "block",
            ColorBy::Thread => "thread",
            ColorBy::Warp => "warp",
            ColorBy::Quad => "quad",
            ColorBy::Value => "value",
        })
    }
}

/// The names `Display` writes; `Err` lists them.
impl FromStr for ColorBy {
    type Err = String;

    fn from_str(text: &str) -> Result<ColorBy, String> {
        ColorBy::ALL
            .into_iter()
            .find(|choice| choice.to_string() == text)
            .ok_or_else(|| {
                let names: Vec<String> = ColorBy::ALL.iter().map(ToString::to_string).collect();
                format!("`{text}` is not one of {}", names.join(", "))
            })
    }
}

/// One owner of an element: thread `thread` holds it as its value number
/// `value` (for an instruction fragment, the element index `e` of
/// `docs/ptx-fragments.md`).
///
/// Rule: both numbers are ≥ 0. Ordered by thread, then value.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Owner {
    /// The thread (a lane, for warp-wide instructions).
    pub thread: i64,
    /// Which of the thread's values holds the element.
    pub value: i64,
}

/// Who owns each element of a `rows × cols` grid (row `r`, column `c`).
///
/// Invariants: `1 ≤ rows·cols ≤ MAX_ATOM_CELLS` (`MAX_MAP_CELLS` for a
/// [`ThreadMap::large`] one); each cell's owners are sorted
/// and without repeats (a cell may have none, or several when data is
/// replicated); the block shape divides the drawing into separated,
/// coloured blocks (the whole grid by default: no separators).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadMap {
    title: String,
    rows: usize,
    cols: usize,
    block: (usize, usize),
    show_values: bool,
    warps: bool,
    color_by: ColorBy,
    owners: Vec<Vec<Owner>>,
}

impl ThreadMap {
    /// An empty map (no element owned yet) titled `title`.
    pub fn new(title: impl Into<String>, rows: usize, cols: usize) -> Result<ThreadMap, VizError> {
        ThreadMap::bounded(title.into(), rows, cols, MAX_ATOM_CELLS)
    }

    /// An empty map of up to [`MAX_MAP_CELLS`] cells: for maps drawn in
    /// warp cells ([`ThreadMap::in_warps`]) or a tiled atom's operands,
    /// whose grids are drawn only as far as they are shown.
    pub fn large(
        title: impl Into<String>,
        rows: usize,
        cols: usize,
    ) -> Result<ThreadMap, VizError> {
        ThreadMap::bounded(title.into(), rows, cols, MAX_MAP_CELLS)
    }

    /// An empty map of at most `most` cells: a drawing that caps thread
    /// cells lower than the atoms need (the REPL's `:map`, at `MAX_CELLS`).
    pub fn bounded(
        title: String,
        rows: usize,
        cols: usize,
        most: u64,
    ) -> Result<ThreadMap, VizError> {
        let cells = rows
            .checked_mul(cols)
            .filter(|&n| n >= 1 && n as u64 <= most);
        let Some(cells) = cells else {
            return Err(VizError::BadThreadMap {
                title,
                reason: format!("a {rows} × {cols} grid; a map needs between 1 and {most} cells"),
            });
        };
        Ok(ThreadMap {
            title,
            rows,
            cols,
            block: (rows, cols),
            show_values: true,
            warps: false,
            color_by: ColorBy::Block,
            owners: vec![Vec::new(); cells],
        })
    }

    /// The same map drawn zoomed out: each cell `W3`, the warp of its
    /// owner (thread / 32), so that a block tile of any size reads as the
    /// warps' regions.
    pub fn in_warps(mut self) -> ThreadMap {
        self.warps = true;
        self
    }

    /// Whether cells stand for warps (`W3`).
    pub fn shows_warps(&self) -> bool {
        self.warps
    }

    /// The same map with cells coloured by `color_by`.
    pub fn colored_by(mut self, color_by: ColorBy) -> ThreadMap {
        self.color_by = color_by;
        self
    }

    /// The same map drawn in blocks of `rows × cols` elements (e.g. the 8×8
    /// matrices of an `ldmatrix`), separated and coloured. Zero means the
    /// whole extent.
    pub fn with_blocks(mut self, rows: usize, cols: usize) -> ThreadMap {
        let whole = |n: usize, all: usize| if n == 0 { all } else { n.min(all) };
        self.block = (whole(rows, self.rows), whole(cols, self.cols));
        self
    }

    /// The same map drawn with threads only (`T3`), for maps where the
    /// value number says little (which thread gives a row's address).
    pub fn threads_only(mut self) -> ThreadMap {
        self.show_values = false;
        self
    }

    /// Records that `owner` holds element `(row, col)`.
    pub fn assign(&mut self, row: usize, col: usize, owner: Owner) -> Result<(), VizError> {
        if row >= self.rows || col >= self.cols || owner.thread < 0 || owner.value < 0 {
            return Err(VizError::BadThreadMap {
                title: self.title.clone(),
                reason: format!(
                    "element ({row},{col}) owned by thread {} value {}: the grid is {} × {} and numbers must be at least 0",
                    owner.thread, owner.value, self.rows, self.cols
                ),
            });
        }
        let owners = &mut self.owners[row * self.cols + col];
        if let Err(at) = owners.binary_search(&owner) {
            owners.insert(at, owner);
        }
        Ok(())
    }

    /// The map of a CuTe thread–value layout: `tv` has rank 2, mode 0 the
    /// thread and mode 1 the value (each as a 1-D index), and `tv(t, v)` is
    /// the column-major index `row + rows·col` of the element thread `t`
    /// holds as value `v`.
    ///
    /// ```
    /// use graphene::layout::Layout;
    /// use graphene::viz::{Owner, ThreadMap};
    /// let tv: Layout = "((4,8),(2,2)):((32,1),(16,8))".parse().unwrap();
    /// let c = ThreadMap::from_tv_layout("mma C", &tv, 16, 8).unwrap();
    /// assert_eq!(c.owners(9, 3), [Owner { thread: 5, value: 3 }]);
    /// ```
    pub fn from_tv_layout(
        title: impl Into<String>,
        tv: &Layout,
        rows: usize,
        cols: usize,
    ) -> Result<ThreadMap, VizError> {
        let mut map = ThreadMap::new(title, rows, cols)?;
        let title = map.title.clone();
        let bad = |reason: String| VizError::BadThreadMap {
            title: title.clone(),
            reason,
        };
        if tv.rank() != 2 {
            return Err(bad(format!(
                "the thread-value layout {tv} must have rank 2 (threads, values)"
            )));
        }
        if tv.size() as u64 > 16 * MAX_CELLS {
            return Err(bad(format!("{tv} has more than {} pairs", 16 * MAX_CELLS)));
        }
        let threads = tv.mode(0)?.size();
        let cells = (rows * cols) as i64;
        for (index, element) in tv.offsets().enumerate() {
            let index = index as i64;
            if !(0..cells).contains(&element) {
                return Err(bad(format!(
                    "{tv} maps thread {} value {} to {element}, outside the {rows} × {cols} grid",
                    index % threads,
                    index / threads
                )));
            }
            let (row, col) = (
                (element % rows as i64) as usize,
                (element / rows as i64) as usize,
            );
            let owner = Owner {
                thread: index % threads,
                value: index / threads,
            };
            map.assign(row, col, owner)?;
        }
        Ok(map)
    }

    /// Whether cells show value numbers (`T4:v1`) or threads only (`T4`).
    pub fn shows_values(&self) -> bool {
        self.show_values
    }

    /// The title, shown in captions.
    pub fn title(&self) -> &str {
        &self.title
    }

    /// The number of rows of the grid.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The number of columns of the grid.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The owners of element `(row, col)`, sorted; empty outside the grid.
    pub fn owners(&self, row: usize, col: usize) -> &[Owner] {
        if row < self.rows && col < self.cols {
            &self.owners[row * self.cols + col]
        } else {
            &[]
        }
    }

    /// Every thread that owns something, ascending.
    pub fn threads(&self) -> Vec<i64> {
        let mut threads: Vec<i64> = self.owners.iter().flatten().map(|o| o.thread).collect();
        threads.sort_unstable();
        threads.dedup();
        threads
    }

    /// What thread `thread` holds: `(value, row, col)`, sorted.
    pub fn elements_of(&self, thread: i64) -> Vec<(i64, usize, usize)> {
        self.by_thread()
            .range((thread, i64::MIN)..=(thread, i64::MAX))
            .flat_map(|(&(_, value), cells)| cells.iter().map(move |&(r, c)| (value, r, c)))
            .collect()
    }

    /// `(thread, value)` → the elements it holds, in row-major order.
    fn by_thread(&self) -> BTreeMap<(i64, i64), Vec<(usize, usize)>> {
        let mut map: BTreeMap<(i64, i64), Vec<(usize, usize)>> = BTreeMap::new();
        for (index, owners) in self.owners.iter().enumerate() {
            for owner in owners {
                map.entry((owner.thread, owner.value))
                    .or_default()
                    .push((index / self.cols, index % self.cols));
            }
        }
        map
    }

    /// The map zoomed out to tiles of `tile_rows × tile_cols` elements:
    /// cell `(i, j)` stands for rows `tile_rows·i ..` and columns
    /// `tile_cols·j ..` (the last tiles may be partial) and is drawn in warp
    /// cells — `W2` when warp 2 alone owns the tile, `W2+3` when 3 more
    /// warps own parts of it. Each warp that owns something in a tile is
    /// recorded once, as its first thread.
    pub fn in_tiles(&self, tile_rows: usize, tile_cols: usize) -> Result<ThreadMap, VizError> {
        if tile_rows == 0 || tile_cols == 0 {
            return Err(VizError::BadThreadMap {
                title: self.title.clone(),
                reason: format!("tiles of {tile_rows} × {tile_cols} elements"),
            });
        }
        let (rows, cols) = (self.rows.div_ceil(tile_rows), self.cols.div_ceil(tile_cols));
        let mut tiles = ThreadMap::large(
            format!(
                "{}, in tiles of {tile_rows}×{tile_cols} (cell (i,j): rows {tile_rows}·i.., columns {tile_cols}·j..)",
                self.title
            ),
            rows,
            cols,
        )?
        .in_warps()
        .colored_by(self.color_by);
        for (index, owners) in self.owners.iter().enumerate() {
            let (row, col) = (index / self.cols, index % self.cols);
            for owner in owners {
                let warp = Owner {
                    thread: WARP * (owner.thread / WARP),
                    value: 0,
                };
                tiles.assign(row / tile_rows, col / tile_cols, warp)?;
            }
        }
        Ok(tiles)
    }

    /// The block (colexicographic block number) of element `(row, col)`,
    /// or `None` when the map is one block.
    fn block_of(&self, row: usize, col: usize) -> Option<u64> {
        let (br, bc) = self.block;
        if (br, bc) == (self.rows, self.cols) {
            return None;
        }
        let blocks_down = self.rows.div_ceil(br);
        Some((row / br + blocks_down * (col / bc)) as u64)
    }

    /// The cell of element `(row, col)` as the element view draws it: its
    /// first owner (`T4:v1`, `T4`, or `W0` zoomed out to warps), `+n` for
    /// n more, `·` for none; its block as the tile, coloured as asked.
    pub(crate) fn cell(&self, row: usize, col: usize) -> Cell {
        let owners = self.owners(row, col);
        let block = self.block_of(row, col);
        let text = match owners.first() {
            None => "·".to_string(),
            Some(first) if self.warps => {
                let mut warps: Vec<i64> = owners.iter().map(|o| o.thread / WARP).collect();
                warps.dedup();
                format!("W{}{}", first.thread / WARP, more(warps.len() - 1))
            }
            Some(first) if self.show_values => format!(
                "T{}:v{}{}",
                first.thread,
                first.value,
                more(owners.len() - 1)
            ),
            Some(first) => format!("T{}{}", first.thread, more(owners.len() - 1)),
        };
        Cell {
            text,
            tile: block,
            color: owners
                .first()
                .and_then(|&first| self.color_by.key(first, block)),
        }
    }
}

/// A count of further entries, `+3`, or nothing.
fn more(extra: usize) -> String {
    if extra == 0 {
        String::new()
    } else {
        format!("+{extra}")
    }
}

/// Element → owner: the map's grid, each cell `T4:v1` (thread 4, value 1),
/// or `T4` for a threads-only map; `+n` when n more threads own the element
/// too; `·` when none does. Blocks are separated and coloured.
pub fn element_view(map: &ThreadMap, style: &Style) -> String {
    let mut out = String::new();
    let reading = if map.warps {
        "a cell Ww is warp w (threads 32w..32w+31), Ww+n: and n more warps"
    } else if map.show_values {
        "a cell Tt:vV is value V of thread t"
    } else {
        "a cell Tt is thread t"
    };
    caption(
        &format!("{}: element → owner; {reading}", map.title),
        style,
        &mut out,
    );
    let cell = |r: u64, c: u64| map.cell(r as usize, c as usize);
    Table {
        rows: map.rows as u64,
        cols: map.cols as u64,
        row_label: &index_label,
        col_label: &index_label,
        cell: &cell,
        corner: None,
    }
    .render(style, &mut out);
    out
}

/// Thread → elements: one row per owning thread (`T0`, `T1`, …), one column
/// per value number (`v0`, `v1`, …); a cell is the `(row,col)` of the
/// element that thread holds as that value, `+n` when it holds n more under
/// the same number, `·` when none. Cells are coloured by the element's block.
pub fn thread_view(map: &ThreadMap, style: &Style) -> String {
    let mut out = String::new();
    caption(
        &format!(
            "{}: thread → its elements; row Tt, column vV: the (row,col) thread t holds as value V",
            map.title
        ),
        style,
        &mut out,
    );
    let by_thread = map.by_thread();
    let threads = map.threads();
    let values = by_thread.keys().map(|&(_, v)| v + 1).max().unwrap_or(0);
    let cell = |r: u64, v: u64| {
        let key = (threads[r as usize], v as i64);
        match by_thread.get(&key).map(Vec::as_slice) {
            Some([(row, col), rest @ ..]) => Cell {
                text: format!("({row},{col}){}", more(rest.len())),
                tile: None,
                color: map.color_by.key(
                    Owner {
                        thread: key.0,
                        value: key.1,
                    },
                    map.block_of(*row, *col),
                ),
            },
            Some([]) | None => Cell::plain("·".to_string()),
        }
    };
    let row_label = |r: u64| format!("T{}", threads[r as usize]);
    let col_label = |v: u64| format!("v{v}");
    Table {
        rows: threads.len() as u64,
        cols: values as u64,
        row_label: &row_label,
        col_label: &col_label,
        cell: &cell,
        corner: None,
    }
    .render(style, &mut out);
    out
}

/// Both views of a map: [`element_view`], a blank line, [`thread_view`].
pub fn thread_map(map: &ThreadMap, style: &Style) -> String {
    format!("{}\n{}", element_view(map, style), thread_view(map, style))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_stay_sorted_and_unique() {
        let mut map = ThreadMap::new("m", 2, 2).unwrap();
        for (t, v) in [(3, 0), (1, 1), (3, 0), (1, 0)] {
            map.assign(
                1,
                0,
                Owner {
                    thread: t,
                    value: v,
                },
            )
            .unwrap();
        }
        let owners: Vec<(i64, i64)> = map
            .owners(1, 0)
            .iter()
            .map(|o| (o.thread, o.value))
            .collect();
        assert_eq!(owners, [(1, 0), (1, 1), (3, 0)]);
        assert!(map.owners(5, 5).is_empty());
        assert!(
            map.assign(
                2,
                0,
                Owner {
                    thread: 0,
                    value: 0
                }
            )
            .is_err()
        );
        assert!(
            map.assign(
                0,
                0,
                Owner {
                    thread: -1,
                    value: 0
                }
            )
            .is_err()
        );
    }

    #[test]
    fn sizes_are_bounded() {
        assert!(ThreadMap::new("m", 0, 4).is_err());
        assert!(ThreadMap::new("m", 64, 256).is_ok());
        assert!(ThreadMap::new("m", 65, 256).is_err());
        assert!(ThreadMap::large("m", 1024, 1024).is_ok());
        assert!(ThreadMap::large("m", 1025, 1024).is_err());
        assert!(ThreadMap::new("m", usize::MAX, 2).is_err());
    }

    #[test]
    fn both_views_of_a_small_map() {
        let mut map = ThreadMap::new("pairs", 2, 2).unwrap().with_blocks(1, 0);
        map.assign(
            0,
            0,
            Owner {
                thread: 0,
                value: 0,
            },
        )
        .unwrap();
        map.assign(
            0,
            1,
            Owner {
                thread: 0,
                value: 1,
            },
        )
        .unwrap();
        map.assign(
            1,
            0,
            Owner {
                thread: 1,
                value: 0,
            },
        )
        .unwrap();
        map.assign(
            1,
            0,
            Owner {
                thread: 2,
                value: 0,
            },
        )
        .unwrap();
        let out = thread_map(&map, &Style::default());
        let expected = "\
pairs: element → owner; a cell Tt:vV is value V of thread t
          0       1
0 |   T0:v0   T0:v1
  |----------------
1 | T1:v0+1       ·

pairs: thread → its elements; row Tt, column vV: the (row,col)
thread t holds as value V
        v0    v1
T0 | (0,0) (0,1)
T1 | (1,0)     ·
T2 | (1,0)     ·
";
        assert_eq!(out, expected);
        assert_eq!(map.elements_of(0), [(0, 0, 0), (1, 0, 1)]);
    }

    #[test]
    fn warp_cells_name_each_elements_warps_and_colours_follow_the_choice() {
        let mut map = ThreadMap::large("w", 2, 2).unwrap().in_warps();
        for (row, col, thread) in [(0, 0, 3), (0, 1, 40), (1, 0, 33), (1, 0, 70), (1, 1, 31)] {
            let owner = Owner { thread, value: 0 };
            map.assign(row, col, owner).unwrap();
        }
        let texts: Vec<String> = [(0, 0), (0, 1), (1, 0), (1, 1)]
            .iter()
            .map(|&(r, c)| map.cell(r, c).text)
            .collect();
        assert_eq!(texts, ["W0", "W1", "W1+1", "W0"]);
        let colour = |map: &ThreadMap, r, c| map.cell(r, c).color;
        let by_warp = map.clone().colored_by(ColorBy::Warp);
        assert_eq!(colour(&by_warp, 0, 0), colour(&by_warp, 1, 1));
        assert_ne!(colour(&by_warp, 0, 0), colour(&by_warp, 0, 1));
        let by_thread = map.clone().colored_by(ColorBy::Thread);
        assert_ne!(colour(&by_thread, 0, 0), colour(&by_thread, 1, 1));
        let by_quad = map.colored_by(ColorBy::Quad);
        assert_eq!(colour(&by_quad, 0, 0), Some(0));
        assert_eq!(colour(&by_quad, 1, 1), Some(7));
        for choice in ColorBy::ALL {
            assert_eq!(choice.to_string().parse::<ColorBy>(), Ok(choice));
        }
        assert!("lane".parse::<ColorBy>().is_err());
    }

    #[test]
    fn tiles_name_every_warp_that_owns_part_of_them() {
        let mut map = ThreadMap::new("t", 4, 4).unwrap();
        for r in 0..4 {
            for c in 0..4 {
                // Rows 0-1: warp 0; rows 2-3: warp 1, except column 3 of row 3.
                let thread = if r < 2 { c as i64 } else { 32 + c as i64 };
                let thread = if (r, c) == (3, 3) { 64 } else { thread };
                map.assign(r, c, Owner { thread, value: 0 }).unwrap();
            }
        }
        let tiles = map.in_tiles(2, 3).unwrap();
        assert_eq!((tiles.rows(), tiles.cols()), (2, 2));
        let texts: Vec<String> = [(0, 0), (0, 1), (1, 0), (1, 1)]
            .iter()
            .map(|&(r, c)| tiles.cell(r, c).text)
            .collect();
        assert_eq!(texts, ["W0", "W0", "W1", "W1+1"]);
        assert!(map.in_tiles(0, 2).is_err());
    }

    #[test]
    fn tv_layouts_must_fit_the_grid() {
        let tv: Layout = "(4,2):(1,4)".parse().unwrap();
        assert!(ThreadMap::from_tv_layout("t", &tv, 2, 4).is_ok());
        assert!(ThreadMap::from_tv_layout("t", &tv, 2, 3).is_err());
        let rank1: Layout = "8:1".parse().unwrap();
        assert!(ThreadMap::from_tv_layout("t", &rank1, 2, 4).is_err());
    }
}
