//! Drawing: shared-memory banks — which of the 32 four-byte banks a warp's
//! access hits, phase by phase, with its conflict degree and the words in
//! conflict; and the bank of every element of a shared tile.
//!
//! The model: shared memory is 32 banks of 4-byte words (word `w` is in
//! bank `w mod 32`). A warp's access is served in phases: 16-byte accesses
//! per quarter warp (8 lanes), 8-byte ones per half warp (16 lanes), 4-byte
//! and narrower ones for the whole warp. In a phase, lanes touching the same
//! word share it (broadcast); distinct words in the same bank are served one
//! after the other. The conflict degree of a phase is the largest number of
//! distinct words it touches in one bank.

use std::collections::BTreeMap;
use std::ops::Range;

use super::layout_grid::{axes, summarise};
use super::table::{Cell, Table, caption, index_label, paint, width_of};
use super::{Style, VizError};
use crate::layout::SwizzledLayout;

/// The number of shared-memory banks.
pub const BANKS: usize = 32;
/// The width of a bank word, in bytes.
const WORD_BYTES: i64 = 4;
/// The lanes of a warp.
const WARP: usize = 32;

/// One warp-wide shared-memory access: lane `i` touches `access_bytes`
/// bytes from byte address `addresses[i]` (`None`: the lane is inactive).
///
/// Invariants (checked by [`WarpAccess::new`]): at most 32 lanes;
/// `access_bytes` is 1, 2, 4, 8 or 16 and a multiple of `element_bytes`;
/// every address is ≥ 0 and a multiple of `access_bytes` (as the hardware
/// requires).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WarpAccess {
    addresses: Vec<Option<i64>>,
    element_bytes: i64,
    access_bytes: i64,
}

impl WarpAccess {
    /// The access of lane `i` starting at element offset
    /// `element_offsets[i]` of a shared buffer of `element_bytes`-byte
    /// elements (byte address = offset × element bytes).
    ///
    /// ```
    /// use graphene::viz::WarpAccess;
    /// let rows: Vec<Option<i64>> = (0..32).map(|l| Some(l * 8)).collect();
    /// assert!(WarpAccess::new(&rows, 2, 16).is_ok());
    /// assert!(WarpAccess::new(&rows, 2, 12).is_err());
    /// ```
    pub fn new(
        element_offsets: &[Option<i64>],
        element_bytes: i64,
        access_bytes: i64,
    ) -> Result<WarpAccess, VizError> {
        let bad = |reason: String| Err(VizError::BadAccess { reason });
        if element_offsets.len() > WARP {
            return bad(format!(
                "{} lanes given; a warp has 32",
                element_offsets.len()
            ));
        }
        if ![1, 2, 4, 8, 16].contains(&access_bytes) {
            return bad(format!(
                "{access_bytes}-byte accesses: shared memory serves 1, 2, 4, 8 or 16 bytes"
            ));
        }
        if ![1, 2, 4, 8, 16].contains(&element_bytes) || access_bytes % element_bytes != 0 {
            return bad(format!(
                "{element_bytes}-byte elements in {access_bytes}-byte accesses: the access must hold whole elements of 1, 2, 4, 8 or 16 bytes"
            ));
        }
        let mut addresses = Vec::with_capacity(element_offsets.len());
        for (lane, offset) in element_offsets.iter().enumerate() {
            let Some(offset) = *offset else {
                addresses.push(None);
                continue;
            };
            let address = match offset.checked_mul(element_bytes) {
                Some(a) if a >= 0 => a,
                Some(_) | None => {
                    return bad(format!(
                        "lane {lane}: element offset {offset} has no byte address in shared memory"
                    ));
                }
            };
            if address % access_bytes != 0 {
                return bad(format!(
                    "lane {lane}: byte address {address} is not aligned to the {access_bytes}-byte access"
                ));
            }
            addresses.push(Some(address));
        }
        Ok(WarpAccess {
            addresses,
            element_bytes,
            access_bytes,
        })
    }

    /// The byte address of each lane's access.
    pub fn addresses(&self) -> &[Option<i64>] {
        &self.addresses
    }

    /// Bytes per lane.
    pub fn access_bytes(&self) -> i64 {
        self.access_bytes
    }

    /// Bytes per element.
    pub fn element_bytes(&self) -> i64 {
        self.element_bytes
    }

    /// Lanes served together: 8 for 16-byte accesses, 16 for 8-byte ones,
    /// 32 for 4 bytes and less.
    pub fn lanes_per_phase(&self) -> usize {
        match self.access_bytes {
            16 => 8,
            8 => 16,
            _ => WARP,
        }
    }

    fn address(&self, lane: usize) -> Option<i64> {
        self.addresses.get(lane).copied().flatten()
    }
}

/// One 4-byte word touched in a phase, and the lanes that touch it.
///
/// Rule: `byte_address` is a multiple of 4; `lanes` ascending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WordAccess {
    /// The word's byte address.
    pub byte_address: i64,
    /// The lanes whose access covers it.
    pub lanes: Vec<usize>,
}

/// One phase of an access: its lanes and, per bank, the distinct words it
/// touches there.
///
/// Rule: `banks` has 32 entries, bank `b` listing its words by ascending
/// address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phase {
    /// The lanes served in this phase.
    pub lanes: Range<usize>,
    /// Per bank, the distinct words touched.
    pub banks: Vec<Vec<WordAccess>>,
}

impl Phase {
    /// The conflict degree: the most distinct words in one bank (0 when no
    /// lane of the phase is active, 1 when conflict-free).
    pub fn degree(&self) -> usize {
        self.banks.iter().map(Vec::len).max().unwrap_or(0)
    }

    /// The lowest-numbered bank with the most words, if any word is touched.
    pub fn worst_bank(&self) -> Option<usize> {
        let degree = self.degree();
        (degree > 0)
            .then(|| self.banks.iter().position(|words| words.len() == degree))
            .flatten()
    }
}

/// The bank analysis of a [`WarpAccess`].
///
/// Rule: the phases partition lanes 0..32 in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BankReport {
    /// The phases, in lane order.
    pub phases: Vec<Phase>,
}

impl BankReport {
    /// The worst phase's conflict degree (1: conflict-free).
    pub fn degree(&self) -> usize {
        self.phases.iter().map(Phase::degree).max().unwrap_or(0)
    }

    /// How many bank passes the access takes: the sum of the phases'
    /// degrees.
    pub fn wavefronts(&self) -> usize {
        self.phases.iter().map(Phase::degree).sum()
    }

    /// How many it would take without conflicts: one per active phase.
    pub fn ideal_wavefronts(&self) -> usize {
        self.phases.iter().filter(|p| p.degree() > 0).count()
    }
}

/// The phases, the words per bank in each, and so the conflict degree of a
/// warp's access.
///
/// ```
/// use graphene::viz::{WarpAccess, bank_report};
/// // 32 lanes reading fp32 column 0 of a row-major 32×32 tile: all in bank 0.
/// let column: Vec<Option<i64>> = (0..32).map(|l| Some(l * 32)).collect();
/// let report = bank_report(&WarpAccess::new(&column, 4, 4).unwrap());
/// assert_eq!(report.degree(), 32);
/// ```
pub fn bank_report(access: &WarpAccess) -> BankReport {
    let per_phase = access.lanes_per_phase();
    let words_per_lane = (access.access_bytes / WORD_BYTES).max(1);
    let phases = (0..WARP / per_phase)
        .map(|p| {
            let lanes = p * per_phase..(p + 1) * per_phase;
            let mut banks: Vec<BTreeMap<i64, Vec<usize>>> = vec![BTreeMap::new(); BANKS];
            for lane in lanes.clone() {
                let Some(address) = access.address(lane) else {
                    continue;
                };
                let first_word = address / WORD_BYTES;
                for word in first_word..first_word + words_per_lane {
                    banks[(word % BANKS as i64) as usize]
                        .entry(word * WORD_BYTES)
                        .or_default()
                        .push(lane);
                }
            }
            let banks = banks
                .into_iter()
                .map(|words| {
                    words
                        .into_iter()
                        .map(|(byte_address, lanes)| WordAccess {
                            byte_address,
                            lanes,
                        })
                        .collect()
                })
                .collect();
            Phase { lanes, banks }
        })
        .collect();
    BankReport { phases }
}

/// One character per word count: `.` none, `1`–`9`, then `a` = 10 … `w` = 32.
fn count_mark(words: usize) -> char {
    match words {
        0 => '.',
        n => char::from_digit(n as u32, 36).unwrap_or('+'),
    }
}

/// `1 phase`, `4 phases`.
fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `T0-T7`, or `T5` for a one-lane range.
fn lane_range(lanes: &Range<usize>) -> String {
    match lanes.len() {
        1 => format!("T{}", lanes.start),
        _ => format!("T{}-T{}", lanes.start, lanes.end - 1),
    }
}

/// The bank picture of a warp access: per phase a strip of the 32 banks
/// (each mark the number of distinct words the phase touches in that bank)
/// and the phase's conflict degree; the verdict; for each conflicting phase
/// the words of its worst bank with their byte addresses and lanes; and the
/// byte address of every lane's access.
pub fn banks(access: &WarpAccess, style: &Style) -> String {
    let report = bank_report(access);
    let mut out = String::new();
    let per_phase = access.lanes_per_phase();
    caption(
        &format!(
            "warp access: {}-byte accesses of {}-byte elements, served in {} of {per_phase} lanes; a mark is the number of distinct 4-byte words the phase touches in that bank ('.' none, 1-9, a=10 … w=32)",
            access.access_bytes,
            access.element_bytes,
            counted(report.phases.len(), "phase")
        ),
        style,
        &mut out,
    );
    let labels: Vec<String> = report
        .phases
        .iter()
        .enumerate()
        .map(|(p, phase)| format!("phase {p} ({})", lane_range(&phase.lanes)))
        .collect();
    let label_width = labels.iter().map(|l| width_of(l)).max().unwrap_or(0);
    let mut ruler = vec![' '; BANKS];
    for bank in (0..BANKS).step_by(8) {
        for (i, digit) in bank.to_string().chars().enumerate() {
            ruler[bank + i] = digit;
        }
    }
    let ruler: String = ruler.into_iter().collect();
    out.push_str(&format!("{:>label_width$}  {}\n", "bank", ruler.trim_end()));
    for (label, phase) in labels.iter().zip(&report.phases) {
        let strip: String = phase
            .banks
            .iter()
            .map(|words| {
                let mark = count_mark(words.len()).to_string();
                match words.len() {
                    0 => mark,
                    1 => paint(&mark, Some(1), style),
                    _ => paint(&mark, Some(0), style),
                }
            })
            .collect();
        let verdict = match phase.degree() {
            0 => "idle".to_string(),
            1 => "no conflict".to_string(),
            n => format!("{n}-way"),
        };
        out.push_str(&format!("{label:>label_width$}  {strip}  {verdict}\n"));
    }
    let verdict = match report.degree() {
        0 => "no lane is active".to_string(),
        1 => format!(
            "conflict-free: {}, one per phase",
            counted(report.wavefronts(), "wavefront")
        ),
        n => format!(
            "{n}-way bank conflict: {} wavefronts where {} would do",
            report.wavefronts(),
            report.ideal_wavefronts()
        ),
    };
    caption(&verdict, style, &mut out);
    for (p, phase) in report.phases.iter().enumerate() {
        let Some(bank) = phase.worst_bank().filter(|_| phase.degree() > 1) else {
            continue;
        };
        let words: Vec<String> = phase.banks[bank]
            .iter()
            .map(|w| {
                let lanes: Vec<String> = w.lanes.iter().map(|l| format!("T{l}")).collect();
                format!("{} ({})", w.byte_address, lanes.join(","))
            })
            .collect();
        caption(
            &format!(
                "phase {p}, bank {bank}: {} words at bytes {}",
                words.len(),
                words.join(", ")
            ),
            style,
            &mut out,
        );
    }
    caption(
        "byte address of each lane's access (row: phase; column: lane within the phase):",
        style,
        &mut out,
    );
    let cell = |p: u64, i: u64| {
        let lane = p as usize * per_phase + i as usize;
        match access.address(lane) {
            Some(address) => {
                let bank = (address / WORD_BYTES) % BANKS as i64;
                Cell {
                    text: address.to_string(),
                    tile: None,
                    color: Some(bank as u64),
                }
            }
            None => Cell::plain("·".to_string()),
        }
    };
    let row_label = |p: u64| format!("phase {p}");
    let col_label = |i: u64| format!("+{i}");
    Table {
        rows: report.phases.len() as u64,
        cols: per_phase as u64,
        row_label: &row_label,
        col_label: &col_label,
        cell: &cell,
        corner: None,
    }
    .render(style, &mut out);
    out
}

/// The bank of every element of a shared tile: the grid of `tile` (drawn
/// as `layout_grid` draws it), each cell the bank holding the element's
/// first byte, `(offset × element bytes / 4) mod 32`; with colour, cells
/// are coloured by 16-byte group of banks (bank / 4).
///
/// ```
/// use graphene::layout::SwizzledLayout;
/// use graphene::viz::{Style, bank_grid};
/// let tile: SwizzledLayout = "(2,4):(4,1)".parse().unwrap();
/// let grid = bank_grid(&tile, 4, &Style::default()).unwrap();
/// assert!(grid.ends_with("0 | 0 1 2 3\n1 | 4 5 6 7\n"));
/// ```
pub fn bank_grid(
    tile: &SwizzledLayout,
    element_bytes: i64,
    style: &Style,
) -> Result<String, VizError> {
    if ![1, 2, 4, 8, 16].contains(&element_bytes) {
        return Err(VizError::BadAccess {
            reason: format!("{element_bytes}-byte elements: expected 1, 2, 4, 8 or 16"),
        });
    }
    let layout = tile.layout();
    let reach = layout.cosize() - 1;
    let fits = tile.offset().abs().checked_add(reach).and_then(|r| {
        // The swizzle can set bits up to its period; stay clear of them too.
        r.checked_add(tile.swizzle().period())?
            .checked_mul(element_bytes)
    });
    if fits.is_none() {
        return Err(VizError::Overflow {
            what: tile.ir().to_string(),
        });
    }
    let axes = axes(layout);
    let mut out = String::new();
    caption(
        &format!(
            "{}, {element_bytes}-byte elements: the bank of each element (byte address / 4 mod 32); {}",
            tile.ir(),
            axes.how
        ),
        style,
        &mut out,
    );
    let corner = summarise(layout, axes.rows.size * axes.cols.size, style, &mut out);
    let sw = tile.swizzle();
    let base = tile.offset();
    let cell = |r, c| {
        let offset = sw.apply(base + axes.rows.offset(r) + axes.cols.offset(c));
        let bank = (offset * element_bytes)
            .div_euclid(WORD_BYTES)
            .rem_euclid(BANKS as i64);
        Cell {
            text: bank.to_string(),
            tile: None,
            color: Some(bank as u64 / 4),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn lanes(f: impl Fn(i64) -> i64) -> Vec<Option<i64>> {
        (0..32).map(|l| Some(f(l))).collect()
    }

    #[test]
    fn phases_follow_the_access_width() {
        for (bytes, phases) in [(16, 4), (8, 2), (4, 1), (2, 1)] {
            let access = WarpAccess::new(&lanes(|l| l * bytes), 1, bytes).unwrap();
            let report = bank_report(&access);
            assert_eq!(report.phases.len(), phases, "{bytes}-byte");
            assert_eq!(report.degree(), 1, "{bytes}-byte contiguous");
        }
    }

    #[test]
    fn broadcast_is_not_a_conflict() {
        let same = WarpAccess::new(&lanes(|_| 0), 4, 4).unwrap();
        let report = bank_report(&same);
        assert_eq!(report.degree(), 1);
        assert_eq!(report.phases[0].banks[0][0].lanes.len(), 32);
    }

    #[test]
    fn inactive_lanes_and_idle_phases() {
        let mut offsets = lanes(|l| l * 8);
        offsets.truncate(8);
        let report = bank_report(&WarpAccess::new(&offsets, 2, 16).unwrap());
        let degrees: Vec<usize> = report.phases.iter().map(Phase::degree).collect();
        assert_eq!(degrees, [1, 0, 0, 0]);
        assert_eq!((report.wavefronts(), report.ideal_wavefronts()), (1, 1));
    }

    #[test]
    fn bad_accesses_are_errors() {
        assert!(WarpAccess::new(&lanes(|l| l), 2, 16).is_err()); // misaligned
        assert!(WarpAccess::new(&lanes(|_| -8), 2, 16).is_err());
        assert!(WarpAccess::new(&lanes(|_| i64::MAX), 2, 16).is_err());
        assert!(WarpAccess::new(&[Some(0); 33], 2, 16).is_err());
        assert!(WarpAccess::new(&lanes(|l| l), 4, 2).is_err());
        assert!(WarpAccess::new(&lanes(|l| l), 3, 12).is_err());
    }

    #[test]
    fn marks_count_to_32() {
        assert_eq!(count_mark(0), '.');
        assert_eq!(count_mark(9), '9');
        assert_eq!(count_mark(10), 'a');
        assert_eq!(count_mark(32), 'w');
    }
}
