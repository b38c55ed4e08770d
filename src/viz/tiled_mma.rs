//! Drawing: a tiled MMA — one `mma.m16n8k16` atom laid over a grid of warps
//! and repeated along M and N, as CuTe's `TiledMMA` does — drawn in CuTe's
//! arrangement: A to the left, B above, C in place. Every element is placed
//! from the atom's own fragments (`crate::atoms`), never re-derived.

use super::atom::MmaInput;
use super::table::{Cell, Table, caption};
use super::thread_map::{ColorBy, MAX_MAP_CELLS, Owner, ThreadMap, WARP};
use super::{Style, VizError};
use crate::atoms::{self, Fragment};

/// The most warps a tiling may have: a block's 1024 threads.
pub const MAX_TILED_WARPS: i64 = 32;

/// An `mma.m16n8k16` tiled over `warps.0 × warps.1` warps (warp `w` at
/// `(w % warps.0, w / warps.0)`, column-major as CuTe's atom layout) and
/// repeated `repeat.0 × repeat.1` times along M and N.
///
/// Rule: element `(m, n)` of C belongs to the atom instance of warp
/// `(wm, wn)` and repeat `(rm, rn)` where `m = i + 16·(wm + WM·rm)` and
/// `n = j + 8·(wn + WN·rn)` (CuTe's default tiling, no permutation); that
/// warp's thread `32w + lane` holds it as value `e + 4·(rm + RM·rn)`, `e`
/// its value in the atom. A (M × 16) is held by every warp of a warp row
/// (`v = e + 8·rm`), B (16 × N) by every warp of a warp column (`v = e +
/// 4·rn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TiledMma {
    /// The atom's input type.
    pub input: MmaInput,
    /// The warp grid, `(along M, along N)`.
    pub warps: (i64, i64),
    /// The repeats of the warp grid's tile, `(along M, along N)`.
    pub repeat: (i64, i64),
}

/// The three operands of a tiled MMA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TiledMaps {
    /// A, `M × K`.
    pub a: ThreadMap,
    /// B, `K × N`.
    pub b: ThreadMap,
    /// C and D, `M × N`.
    pub c: ThreadMap,
}

impl TiledMma {
    /// The tiling after checking its extents: every factor at least 1, at
    /// most [`MAX_TILED_WARPS`] warps, and a C of at most `MAX_MAP_CELLS`.
    pub fn new(
        input: MmaInput,
        warps: (i64, i64),
        repeat: (i64, i64),
    ) -> Result<TiledMma, VizError> {
        let tiled = TiledMma {
            input,
            warps,
            repeat,
        };
        let bad = |reason: String| VizError::BadTiling {
            tiling: tiled.name(),
            reason,
        };
        if [warps.0, warps.1, repeat.0, repeat.1]
            .iter()
            .any(|&n| n < 1)
        {
            return Err(bad("warps and repeats must be at least 1".to_string()));
        }
        let warp_count = warps.0.saturating_mul(warps.1);
        if warp_count > MAX_TILED_WARPS {
            return Err(bad(format!(
                "{warp_count} warps; a block has at most {MAX_TILED_WARPS}"
            )));
        }
        let (m, n, k) = tiled.shape();
        let cells = m.saturating_mul(n).max(m.saturating_mul(k));
        if cells as u64 > MAX_MAP_CELLS {
            return Err(bad(format!(
                "C is {m} × {n}; at most {MAX_MAP_CELLS} elements are drawn"
            )));
        }
        Ok(tiled)
    }

    /// `(M, N, K)` of the whole tile.
    pub fn shape(&self) -> (i64, i64, i64) {
        let (m, n, k) = atoms::mma_m16n8k16().shape;
        (
            m.saturating_mul(self.warps.0).saturating_mul(self.repeat.0),
            n.saturating_mul(self.warps.1).saturating_mul(self.repeat.1),
            k,
        )
    }

    /// How the REPL names it: `mma.m16n8k16.f16 warps 2x2 repeat 2x4`.
    pub fn name(&self) -> String {
        let input = match self.input {
            MmaInput::F16 => "f16",
            MmaInput::Bf16 => "bf16",
        };
        format!(
            "mma.m16n8k16.{input} warps {}x{} repeat {}x{}",
            self.warps.0, self.warps.1, self.repeat.0, self.repeat.1
        )
    }

    /// A, B and C: which thread of the tiling holds which element as which
    /// value, placed instance by instance from the atom's fragments.
    pub fn maps(&self) -> Result<TiledMaps, VizError> {
        let atom = atoms::mma_m16n8k16();
        let (m, n, k) = self.shape();
        let (wm_count, wn_count) = self.warps;
        let (rm_count, rn_count) = self.repeat;
        let mut a = ThreadMap::large("A", m as usize, k as usize)?.with_blocks(16, 16);
        let mut b = ThreadMap::large("B", k as usize, n as usize)?.with_blocks(16, 8);
        let mut c = ThreadMap::large("C", m as usize, n as usize)?.with_blocks(16, 8);
        let (atom_m, atom_n, _) = atom.shape;
        for wn in 0..wn_count {
            for wm in 0..wm_count {
                let warp = wm + wm_count * wn;
                // Warp w's lane l is thread 32w + l of the tiling.
                let thread_of = |atom_thread: i64| -> Result<i64, VizError> {
                    Ok(WARP * warp + atom.lanes.eval(atom_thread)?)
                };
                for rn in 0..rn_count {
                    for rm in 0..rm_count {
                        let m0 = atom_m * (wm + wm_count * rm);
                        let n0 = atom_n * (wn + wn_count * rn);
                        let c_value = atom.c.values() * (rm + rm_count * rn);
                        place(&mut c, &atom.c, &thread_of, (m0, n0), c_value)?;
                        // A and B do not depend on the other axis's repeat;
                        // placing them once per repeat of their own axis
                        // suffices (owners are kept without repeats anyway).
                        if rn == 0 {
                            place(&mut a, &atom.a, &thread_of, (m0, 0), atom.a.values() * rm)?;
                        }
                        if rm == 0 {
                            place(&mut b, &atom.b, &thread_of, (0, n0), atom.b.values() * rn)?;
                        }
                    }
                }
            }
        }
        Ok(TiledMaps { a, b, c })
    }

    /// What the picture shows, for its caption; the value strides are the
    /// atom's own fragment sizes.
    fn summary(&self) -> String {
        let atom = atoms::mma_m16n8k16();
        let (m, n, k) = self.shape();
        let (atom_m, atom_n, _) = atom.shape;
        let (wm, wn) = self.warps;
        let (rm, rn) = self.repeat;
        let threads = WARP * wm * wn;
        let (a_values, b_values, c_values) = (atom.a.values(), atom.b.values(), atom.c.values());
        format!(
            "{name}: D ({m}×{n}) = A ({m}×{k}) · B ({k}×{n}) + C by {threads} threads: the mma.m16n8k16 atom on {wm}×{wn} warps (warp w at (w % {wm}, w / {wm})), its {}×{} tile repeated {rm}×{rn} along M and N. CuTe's arrangement: A left (rows m, columns k), B above (rows k, columns n), C in place; thread T = 32w + lane. Values: C's v(E + {c_values}·(i + {rm}·j)) is the atom's vE in repeat (i, j); A's v(E + {a_values}·i) in repeat i along M (held by every warp of its row: +n more); B's v(E + {b_values}·j) in repeat j along N (held by every warp of its column)",
            atom_m * wm,
            atom_n * wn,
            name = self.name(),
        )
    }
}

/// Puts every element of `fragment` into `map` at `(row, col) + at`, atom
/// thread `i` as thread `thread_of(i)`, its value `e` as `e + first_value`.
fn place(
    map: &mut ThreadMap,
    fragment: &Fragment,
    thread_of: &dyn Fn(i64) -> Result<i64, VizError>,
    at: (i64, i64),
    first_value: i64,
) -> Result<(), VizError> {
    for (thread, value, row, col) in fragment.elements() {
        map.assign(
            (at.0 + row) as usize,
            (at.1 + col) as usize,
            Owner {
                thread: thread_of(thread)?,
                value: first_value + value,
            },
        )?;
    }
    Ok(())
}

/// Which region of the combined picture a cell is in; its blocks are told
/// apart from the other regions' by separators.
#[derive(Clone, Copy)]
enum Region {
    Corner,
    B,
    A,
    C,
}

/// The tiled MMA drawn as CuTe draws a `TiledMMA`: one grid of `K + M` rows
/// and `K + N` columns, B (`k0…`, `n0…`) above C, A (`m0…`, `k0…`) left of
/// C, the top-left corner empty. Each cell is `Tt:vV` (`+n` when n more
/// threads hold it), coloured by `color_by` (`Block`: the atom instance).
///
/// ```
/// use graphene::viz::{ColorBy, MmaInput, Style, TiledMma, tiled_mma};
/// let tiled = TiledMma::new(MmaInput::F16, (2, 2), (1, 1)).unwrap();
/// let text = tiled_mma(&tiled, &Style::plain(400), ColorBy::Block).unwrap();
/// // Row m16 of C starts with warp 1's lane 0 (warp (1, 0)).
/// assert!(text.lines().any(|l| l.starts_with("m16 |") && l.contains("T32:v0")));
/// ```
pub fn tiled_mma(tiled: &TiledMma, style: &Style, color_by: ColorBy) -> Result<String, VizError> {
    let maps = tiled.maps()?;
    let (a, b, c) = (
        maps.a.colored_by(color_by),
        maps.b.colored_by(color_by),
        maps.c.colored_by(color_by),
    );
    let (k, m) = (b.rows() as u64, a.rows() as u64);
    let n = b.cols() as u64;
    let region = |r: u64, col: u64| match (r < k, col < k) {
        (true, true) => Region::Corner,
        (true, false) => Region::B,
        (false, true) => Region::A,
        (false, false) => Region::C,
    };
    let cell = |r: u64, col: u64| {
        let (map, row, column, number) = match region(r, col) {
            Region::Corner => return Cell::plain(String::new()),
            Region::B => (&b, r, col - k, 1),
            Region::A => (&a, r - k, col, 2),
            Region::C => (&c, r - k, col - k, 3),
        };
        let drawn = map.cell(row as usize, column as usize);
        // Separators between the regions and between atom instances: the
        // region number above the block's own number.
        Cell {
            tile: Some((number << 32) | drawn.tile.unwrap_or(0)),
            ..drawn
        }
    };
    let row_label = |r: u64| {
        if r < k {
            format!("k{r}")
        } else {
            format!("m{}", r - k)
        }
    };
    let col_label = |col: u64| {
        if col < k {
            format!("k{col}")
        } else {
            format!("n{}", col - k)
        }
    };
    let mut out = String::new();
    caption(&tiled.summary(), style, &mut out);
    Table {
        rows: k + m,
        cols: k + n,
        row_label: &row_label,
        col_label: &col_label,
        cell: &cell,
        corner: None,
    }
    .render(style, &mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_warp_once_is_the_atom() {
        let tiled = TiledMma::new(MmaInput::F16, (1, 1), (1, 1)).unwrap();
        let maps = tiled.maps().unwrap();
        let atom = super::super::AtomName::MmaM16n8k16 {
            input: MmaInput::F16,
        }
        .maps();
        for (tiled_map, atom_map) in [
            (&maps.a, &atom[0]),
            (&maps.b, &atom[1]),
            (&maps.c, &atom[2]),
        ] {
            for r in 0..atom_map.rows() {
                for col in 0..atom_map.cols() {
                    assert_eq!(tiled_map.owners(r, col), atom_map.owners(r, col));
                }
            }
        }
    }

    #[test]
    fn every_c_element_has_one_owner_and_every_thread_its_values_once() {
        let tiled = TiledMma::new(MmaInput::Bf16, (2, 2), (2, 4)).unwrap();
        assert_eq!(tiled.shape(), (64, 64, 16));
        let maps = tiled.maps().unwrap();
        let mut seen = std::collections::BTreeSet::new();
        for r in 0..64 {
            for col in 0..64 {
                let [owner] = maps.c.owners(r, col) else {
                    panic!("({r},{col}) has {:?}", maps.c.owners(r, col))
                };
                assert!(seen.insert((owner.thread, owner.value)));
                // Each warp holds its own 16×8 atom tiles.
                let warp = owner.thread / 32;
                assert_eq!(
                    (warp % 2, warp / 2),
                    ((r as i64 / 16) % 2, (col as i64 / 8) % 2)
                );
            }
        }
        // 128 threads × 4 values × 8 repeats.
        assert_eq!(seen.len(), 128 * 32);
        // A is shared by the two warps of a warp row.
        assert_eq!(maps.a.owners(0, 0).len(), 2);
        assert_eq!(maps.b.owners(0, 0).len(), 2);
    }

    #[test]
    fn tilings_past_the_limits_are_refused() {
        assert!(TiledMma::new(MmaInput::F16, (0, 1), (1, 1)).is_err());
        assert!(TiledMma::new(MmaInput::F16, (8, 8), (1, 1)).is_err());
        assert!(TiledMma::new(MmaInput::F16, (4, 8), (64, 64)).is_err());
        assert!(TiledMma::new(MmaInput::F16, (2, 4), (4, 8)).is_ok());
    }
}
