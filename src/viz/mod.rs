//! Drawing (no pipeline stage; used by the REPL): layouts, tiles, thread-data
//! maps and shared-memory banks as ASCII grids. Depends only on `layout` and
//! on plain data; every function returns a deterministic `String`.
//!
//! - [`layout_grid`], [`swizzled_grid`], [`tiled_grid`], [`tiles_in_place`]:
//!   the offset of every coordinate, tiles told apart by letters, separators
//!   and (when asked) colours; [`blocks_layout`], the page layout of levels
//!   drawn as nested blocks.
//! - [`ThreadMap`], [`element_view`], [`thread_view`], [`thread_map`]: who
//!   owns which element, in both directions, in thread or warp cells,
//!   coloured by block, thread, warp, quad or value ([`ColorBy`]).
//! - [`AtomName`], [`atom`]: the thread-data maps of `ldmatrix`, `mma`,
//!   Volta's macro-MMA and `wgmma`, `ldmatrix` linked to the `mma` it
//!   feeds, and `wgmma`'s operands in shared memory with their
//!   descriptors, drawn from the atom tables (`crate::atoms`);
//!   [`TiledMma`], [`tiled_mma`]: an `mma` atom tiled over warps and
//!   repeated, in CuTe's arrangement (A left, B above, C in place).
//! - [`WarpAccess`], [`bank_report`], [`banks`], [`bank_grid`]: which banks a
//!   warp's shared-memory access hits, phase by phase, and its conflict degree.
//! - [`swizzle_explained`]: which bits a swizzle XORs into which, its chunk
//!   permutation, and the banks of a chunk column before and after.
//! - [`svg`]: any drawing as SVG, from the text it prints with colour on.
//!
//! `docs/viz.md` says what each drawing shows and how to read a cell.

mod atom;
mod banks;
mod layout_grid;
mod linked;
mod svg;
mod swizzle;
mod table;
mod thread_map;
mod tiled_mma;
mod wgmma_operand;

pub use crate::atoms::LdmatrixCount;
pub use atom::{AtomName, MmaInput, WgmmaOperand, atom, atom_colored_by};
pub use banks::{BANKS, BankReport, Phase, WarpAccess, WordAccess, bank_grid, bank_report, banks};
pub use layout_grid::{blocks_layout, layout_grid, swizzled_grid, tiled_grid, tiles_in_place};
pub use svg::{svg, svg_text};
pub use swizzle::{landing_grid, swizzle_explained};
pub use thread_map::{
    ColorBy, MAX_ATOM_CELLS, MAX_MAP_CELLS, Owner, ThreadMap, element_view, thread_map, thread_view,
};
pub use tiled_mma::{MAX_TILED_WARPS, TiledMaps, TiledMma, tiled_mma};

use thiserror::Error;

use crate::layout::LayoutError;

/// Drawings with more cells than this are summarised (shape, stride, size,
/// cosize and a corner of the grid) instead of drawn whole.
pub const MAX_CELLS: u64 = 4096;

/// How a drawing is rendered.
///
/// Rule: `width` bounds the length of every grid line (in characters) and
/// `height` the number of grid rows. Rows that do not fit are elided with an
/// `… N more rows` marker; columns that do not fit wrap into panels, each
/// headed `columns A-B (of N):`, so that every column is drawn (a summary's
/// corner is cut with `… N more columns` instead). At least one row and one
/// column are always drawn; a column wider than `width` is drawn anyway,
/// with a note saying so. With `color` off the output is plain
/// text whose only non-ASCII characters are `…`, `·`, `→` and `×`; with it
/// on, the same text with ANSI colour codes around cells, so that stripping
/// the codes gives the monochrome drawing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    /// Wrap cells in ANSI colour codes.
    pub color: bool,
    /// The widest line a grid may draw, in characters.
    pub width: usize,
    /// The most grid rows drawn before eliding.
    pub height: usize,
}

impl Style {
    /// The width used when output is not a terminal.
    pub const DEFAULT_WIDTH: usize = 64;
    /// The height used when output is not a terminal.
    pub const DEFAULT_HEIGHT: usize = 64;

    /// Monochrome, `width` columns wide, default height.
    pub fn plain(width: usize) -> Style {
        Style {
            color: false,
            width,
            height: Style::DEFAULT_HEIGHT,
        }
    }

    /// The same style with colour on.
    pub fn colored(self) -> Style {
        Style {
            color: true,
            ..self
        }
    }
}

/// Monochrome, 64 columns, 64 rows: the form used when not on a terminal.
impl Default for Style {
    fn default() -> Style {
        Style::plain(Style::DEFAULT_WIDTH)
    }
}

/// Why a drawing could not be made. Each message names the offending input.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum VizError {
    /// The layout algebra refused an operand.
    #[error(transparent)]
    Layout(#[from] LayoutError),

    /// An offset of the drawing does not fit in an `i64`.
    #[error("offsets of {what} do not fit in a 64-bit integer")]
    Overflow {
        /// The drawing's subject, in IR notation.
        what: String,
    },

    /// `tiles_in_place` needs the tiling to be of the layout it is drawn on.
    #[error("cannot draw the tiles of {tiled} inside {original}: {reason}")]
    NotInPlace {
        /// The tiled value, `[outer].[inner]`.
        tiled: String,
        /// The layout it was supposedly tiled from.
        original: String,
        /// Which condition failed.
        reason: String,
    },

    /// No atom of that name.
    #[error("unknown atom `{name}`; the atoms are: {known}")]
    UnknownAtom {
        /// The name asked for.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },

    /// A thread map was given an element outside its grid, or is too large.
    #[error("thread map {title}: {reason}")]
    BadThreadMap {
        /// The map's title.
        title: String,
        /// Which condition failed.
        reason: String,
    },

    /// A tiled atom past what a block or a drawing holds.
    #[error("cannot tile {tiling}: {reason}")]
    BadTiling {
        /// The tiling, as the REPL writes it.
        tiling: String,
        /// Which condition failed.
        reason: String,
    },

    /// A swizzle the explanation cannot draw (it moves no bits upward).
    #[error("cannot explain {swizzle}: {reason}")]
    Unexplained {
        /// The swizzle, `Sw<B,M,S>`.
        swizzle: String,
        /// Which condition failed.
        reason: String,
    },

    /// A warp access that shared memory cannot serve as described.
    #[error("warp access: {reason}")]
    BadAccess {
        /// Which condition failed.
        reason: String,
    },
}
