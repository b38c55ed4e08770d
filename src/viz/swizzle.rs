//! Drawing: why a swizzle removes bank conflicts — which offset bits it
//! XORs into which, the chunk-by-chunk permutation it applies to each row,
//! and the banks of the access it was made for, a column of 16-byte chunks
//! read one per row (as `ldmatrix` reads a K-major tile), before and after;
//! and where a bulk tensor copy (TMA) lands each chunk of its box.

use super::banks::{WarpAccess, bank_report, banks};
use super::table::{Cell, Table, caption, index_label};
use super::{Style, VizError};
use crate::layout::Swizzle;

/// The most chunks per row the permutation grid draws (`2^S` of them).
const MAX_CHUNKS: i64 = 64;

/// How `swizzle` works on a shared tile of `element_bytes`-byte elements:
/// its bits, its permutation of the `2^M`-element chunks of each
/// row (a row being the `2^(M+S)` elements one step of the source bits
/// spans), and the banks of 8 lanes each reading chunk 0 of rows 0–7,
/// unswizzled and swizzled.
///
/// ```
/// use graphene::layout::Swizzle;
/// use graphene::viz::{Style, swizzle_explained};
/// let text = swizzle_explained(Swizzle::new(3, 3, 3).unwrap(), 2, &Style::plain(80)).unwrap();
/// assert!(text.contains("bits 6-8 of an element offset XORed into bits 3-5"));
/// assert!(text.contains("8-way"));
/// assert!(text.contains("conflict-free"));
/// ```
pub fn swizzle_explained(
    swizzle: Swizzle,
    element_bytes: i64,
    style: &Style,
) -> Result<String, VizError> {
    let (b, m, s) = (swizzle.bits(), swizzle.base(), swizzle.shift());
    if b == 0 || s <= 0 {
        return Err(VizError::Unexplained {
            swizzle: swizzle.to_string(),
            reason: "it moves no bits down into a chunk index; the explanation draws swizzles with B ≥ 1 and S > 0".to_string(),
        });
    }
    let mut out = String::new();
    let source = m + s;
    caption(
        &format!(
            "{swizzle}: {} of an element offset XORed into {}; the other bits pass through",
            bit_range(source, b),
            bit_range(m, b)
        ),
        style,
        &mut out,
    );
    out.push_str(&bit_diagram(swizzle));
    let chunk_elements = 1i64 << m;
    let row_elements = 1i64 << source;
    let chunk_bytes = chunk_elements * element_bytes;
    caption(
        &format!(
            "with {element_bytes}-byte elements: a chunk is 2^{m} = {chunk_elements} elements ({chunk_bytes} bytes), a row 2^{source} = {row_elements} elements ({} bytes, {} chunks); chunk c of row r is stored at chunk c XOR (r mod {}) of the same row:",
            row_elements * element_bytes,
            row_elements / chunk_elements,
            1i64 << b
        ),
        style,
        &mut out,
    );
    out.push_str(&chunk_grid(swizzle, style));
    out.push('\n');
    if ![1, 2, 4, 8, 16].contains(&chunk_bytes) {
        caption(
            &format!(
                "(a chunk of {chunk_bytes} bytes is not one shared-memory access, so no bank picture is drawn)"
            ),
            style,
            &mut out,
        );
        return Ok(out);
    }
    let lanes = 1i64 << b.min(3);
    let column = |apply: bool| -> Vec<Option<i64>> {
        (0..lanes)
            .map(|row| {
                let offset = row * row_elements;
                Some(if apply { swizzle.apply(offset) } else { offset })
            })
            .collect()
    };
    for (apply, when) in [(false, "without the swizzle"), (true, "with it")] {
        let access = WarpAccess::new(&column(apply), element_bytes, chunk_bytes)?;
        let degree = bank_report(&access).degree();
        let verdict = if degree <= 1 {
            "conflict-free".to_string()
        } else {
            format!("{degree}-way conflict")
        };
        caption(
            &format!(
                "lanes 0-{} each read chunk 0 of rows 0-{} ({chunk_bytes} bytes, as ldmatrix reads a column of a row-major tile), {when}: {verdict}",
                lanes - 1,
                lanes - 1
            ),
            style,
            &mut out,
        );
        out.push_str(&banks(&access, style));
        out.push('\n');
    }
    Ok(out)
}

/// `bit 7`, or `bits 6-8`: the `count` bits from `low`.
fn bit_range(low: i64, count: i64) -> String {
    match count {
        1 => format!("bit {low}"),
        _ => format!("bits {low}-{}", low + count - 1),
    }
}

/// The offset's bits, highest first: `y` the source bits, `z` the target
/// bits, `.` the rest.
fn bit_diagram(swizzle: Swizzle) -> String {
    let (source, target) = (swizzle.source_mask(), swizzle.target_mask());
    let top = 64 - source.leading_zeros() as i64;
    let mut numbers = String::from("  bit    ");
    let mut marks = String::from("  offset ");
    for bit in (0..top).rev() {
        numbers.push_str(&format!("{bit:>3}"));
        let mark = if source >> bit & 1 == 1 {
            'y'
        } else if target >> bit & 1 == 1 {
            'z'
        } else {
            '.'
        };
        marks.push_str(&format!("{mark:>3}"));
    }
    format!("{numbers}\n{marks}     z ← z XOR y\n")
}

/// Rows `0 .. 2^B` (the source bits' values) by chunks `0 .. 2^S` of a row:
/// where each chunk is stored.
fn chunk_grid(swizzle: Swizzle, style: &Style) -> String {
    let (b, m, s) = (swizzle.bits(), swizzle.base(), swizzle.shift());
    let chunks = (1i64 << s).min(MAX_CHUNKS);
    let rows = 1i64 << b;
    let place = |row: u64, chunk: u64| {
        let offset = ((row as i64) << (m + s)) | ((chunk as i64) << m);
        (swizzle.apply(offset) >> m) & ((1 << s) - 1)
    };
    let row_label = |r: u64| format!("row {r}");
    // Coloured by where the chunk goes; no tile separators between cells.
    let cell = |r: u64, c: u64| {
        let to = place(r, c) as u64;
        Cell {
            text: to.to_string(),
            tile: None,
            color: Some(to % (1 << b)),
        }
    };
    let table = Table {
        rows: rows as u64,
        cols: chunks as u64,
        row_label: &row_label,
        col_label: &index_label,
        cell: &cell,
        corner: None,
    };
    let mut out = String::new();
    table.render(style, &mut out);
    out
}

/// Where a bulk tensor copy (TMA) lands each 16-byte chunk of its box:
/// `rows` rows of `row_bytes` bytes (the box's innermost dim, the rest of
/// the box one row after another), written from byte `first_byte` of
/// shared memory under `swizzle` on byte offsets (`Swizzle<B, 4, 3>`, or
/// the identity). Each cell is the chunk, within its line, that the
/// hardware stores chunk `c` of row `r` at: a line is the bytes the
/// swizzle's source bits step over (`2^(4+3)` = 128 for the hardware's
/// swizzles), or one row without a swizzle. Drawn as [`swizzle_explained`]
/// draws its permutation, coloured by where a chunk goes.
///
/// ```
/// use graphene::layout::Swizzle;
/// use graphene::viz::{Style, landing_grid};
/// let sw = Swizzle::new(3, 4, 3).unwrap();
/// let text = landing_grid(sw, 0, 16, 128, &Style::plain(80)).unwrap();
/// // Row 5 of a 128-byte swizzle: chunk c lands at c XOR 5.
/// let row5 = text.lines().find(|l| l.trim_start().starts_with("row 5 ")).unwrap();
/// assert!(row5.ends_with("5 4 7 6 1 0 3 2"), "{row5}");
/// ```
pub fn landing_grid(
    swizzle: Swizzle,
    first_byte: i64,
    rows: i64,
    row_bytes: i64,
    style: &Style,
) -> Result<String, VizError> {
    if rows < 1 || row_bytes < 16 || row_bytes % 16 != 0 {
        return Err(VizError::Unexplained {
            swizzle: swizzle.to_string(),
            reason: format!(
                "a box lands in rows of a multiple of 16 bytes; this one has {rows} rows of {row_bytes} bytes"
            ),
        });
    }
    let (b, m, s) = (swizzle.bits(), swizzle.base(), swizzle.shift());
    let line = if b == 0 { row_bytes } else { 1i64 << (m + s) };
    let overflow = || VizError::Overflow {
        what: format!("{rows} rows of {row_bytes} bytes from byte {first_byte}"),
    };
    first_byte
        .checked_add(rows.checked_mul(row_bytes).ok_or_else(overflow)?)
        .ok_or_else(overflow)?;
    let place = |row: u64, chunk: u64| {
        let offset = first_byte + row as i64 * row_bytes + chunk as i64 * 16;
        swizzle.apply(offset).rem_euclid(line) / 16
    };
    let row_label = |r: u64| format!("row {r}");
    let cell = |r: u64, c: u64| {
        let to = place(r, c) as u64;
        Cell {
            text: to.to_string(),
            tile: None,
            color: Some(to % (1 << b)),
        }
    };
    let table = Table {
        rows: rows as u64,
        cols: (row_bytes / 16) as u64,
        row_label: &row_label,
        col_label: &index_label,
        cell: &cell,
        corner: None,
    };
    let mut out = String::new();
    table.render(style, &mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_128_byte_swizzle_spreads_a_chunk_column_over_all_banks() {
        let sw = Swizzle::new(3, 3, 3).unwrap();
        let text = swizzle_explained(sw, 2, &Style::plain(100)).unwrap();
        assert!(
            text.contains("without the swizzle: 8-way conflict"),
            "{text}"
        );
        assert!(text.contains("with it: conflict-free"), "{text}");
        // Row 5: chunk c goes to c XOR 5.
        let row5 = text
            .lines()
            .find(|line| line.starts_with("row 5"))
            .expect("row 5");
        let cells: Vec<&str> = row5.split('|').nth(1).unwrap().split_whitespace().collect();
        assert_eq!(cells, ["5", "4", "7", "6", "1", "0", "3", "2"]);
    }

    #[test]
    fn the_bit_diagram_marks_source_and_target_bits() {
        let diagram = bit_diagram(Swizzle::new(2, 4, 3).unwrap());
        // The marks, before the legend `z ← z XOR y`.
        let line = diagram.lines().nth(1).unwrap();
        let bits = line.split('←').next().unwrap().trim_end();
        let bits = bits.strip_suffix('z').unwrap_or(bits);
        let marks: String = bits.chars().filter(|c| "yz.".contains(*c)).collect();
        // Bits 8..0: y y at 8-7, . at 6, z z at 5-4, . at 3-0.
        assert_eq!(marks, "yy.zz....");
    }

    #[test]
    fn a_swizzle_that_moves_nothing_is_refused() {
        assert!(swizzle_explained(Swizzle::identity(), 2, &Style::default()).is_err());
    }

    #[test]
    fn a_smaller_swizzle_leaves_a_smaller_conflict() {
        // Swizzle<2,3,3> on fp16: rows 0-3 differ, rows 4-7 repeat them.
        let text =
            swizzle_explained(Swizzle::new(2, 3, 3).unwrap(), 2, &Style::plain(100)).unwrap();
        assert!(
            text.contains("without the swizzle: 4-way conflict"),
            "{text}"
        );
        assert!(text.contains("with it: conflict-free"), "{text}");
    }
}
