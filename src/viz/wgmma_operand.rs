//! Drawing: an operand of Hopper's `wgmma.m64nNk16` in shared memory — for
//! A (64×16) or B (16×N), the byte each element is read from under the
//! layout a matrix descriptor names (no swizzle, or the 32-, 64- or
//! 128-byte swizzle; K-major or MN-major), and that descriptor's fields
//! and 64-bit word. Both come from `crate::atoms::MatrixDescriptor`, the
//! encoding the lowering emits.

use crate::atoms::{Major, MatrixDescriptor, SharedSwizzle};

use super::Style;
use super::atom::WgmmaOperand;
use super::table::{Cell, Table, caption, index_label};

/// The operand's rows along M (A: 64) or N (B: n).
fn mn_rows(n: i64, operand: WgmmaOperand) -> i64 {
    match operand {
        WgmmaOperand::A => 64,
        WgmmaOperand::B => n,
    }
}

/// The descriptor drawn: the compact layout of the operand at byte 0.
pub(super) fn descriptor(
    n: i64,
    operand: WgmmaOperand,
    swizzle: SharedSwizzle,
    major: Major,
) -> MatrixDescriptor {
    MatrixDescriptor::compact(major, swizzle, mn_rows(n, operand))
}

fn swizzle_text(swizzle: SharedSwizzle) -> &'static str {
    match swizzle {
        SharedSwizzle::None => "no swizzle: 8 rows × 16 bytes make a 128-byte core matrix",
        SharedSwizzle::Bytes32 => {
            "the 32-byte swizzle (Sw<1,4,3> on byte addresses: 16-byte chunk bit 4 XOR bit 7)"
        }
        SharedSwizzle::Bytes64 => {
            "the 64-byte swizzle (Sw<2,4,3> on byte addresses: chunk bits 4-5 XOR bits 7-8)"
        }
        SharedSwizzle::Bytes128 => {
            "the 128-byte swizzle (Sw<3,4,3> on byte addresses: chunk bits 4-6 XOR bits 7-9; Swizzle<3,3,3> on 16-bit element offsets)"
        }
    }
}

/// What the picture shows, for the caption's first lines.
pub(super) fn summary(
    n: i64,
    operand: WgmmaOperand,
    swizzle: SharedSwizzle,
    major: Major,
) -> String {
    let (name, shape, axes) = match operand {
        WgmmaOperand::A => ("A", "64×16".to_string(), "row m, column k"),
        WgmmaOperand::B => ("B", format!("16×{n}"), "row k, column n"),
    };
    let order = match (major, operand) {
        (Major::K, _) => "K-major (transpose bit 0: 8 consecutive k are one 16-byte chunk)",
        (Major::Mn, WgmmaOperand::A) => {
            "M-major (transpose bit 1: 8 consecutive m are one 16-byte chunk)"
        }
        (Major::Mn, WgmmaOperand::B) => {
            "N-major (transpose bit 1: 8 consecutive n are one 16-byte chunk)"
        }
    };
    let slice = match (major, swizzle) {
        (Major::K, SharedSwizzle::Bytes64 | SharedSwizzle::Bytes128) => format!(
            " A row of the pattern is {} bytes, {} k's: these 16 are its first 32 bytes, and the next k steps' descriptors start 32 bytes further.",
            16 * swizzle.row_chunks(),
            8 * swizzle.row_chunks()
        ),
        (Major::K, SharedSwizzle::None | SharedSwizzle::Bytes32) | (Major::Mn, _) => String::new(),
    };
    format!(
        "wgmma.m64n{n}k16 {name} ({shape} f16/bf16, {axes}) read from shared memory through a matrix descriptor: {order}, {}. Each cell is the byte address the hardware reads that element from (2 bytes), for the densest such layout starting at byte 0 (a start address that is a multiple of 1024 gives the same picture shifted); blocks are 8×8 elements.{slice}",
        swizzle_text(swizzle)
    )
}

/// The descriptor's fields in words, then the picture's grid.
pub(super) fn draw(
    n: i64,
    operand: WgmmaOperand,
    swizzle: SharedSwizzle,
    major: Major,
    style: &Style,
) -> String {
    let descriptor = descriptor(n, operand, swizzle, major);
    let mut out = String::new();
    let (leading, stride) = match (major, swizzle) {
        (Major::K, SharedSwizzle::None) => (
            "between the two 8-k core matrices along K",
            "between 8-row groups",
        ),
        (Major::K, _) => ("unused by swizzled K-major layouts", "between 8-row groups"),
        (Major::Mn, SharedSwizzle::None) => (
            "between the two groups of 8 k",
            "between 8-row chunks along M or N",
        ),
        (Major::Mn, _) => (
            "between swizzle atoms along M or N",
            "between the two groups of 8 k",
        ),
    };
    caption(
        &format!(
            "matrix descriptor: start address {} (bits 0-13: address/16); leading byte offset {} ({leading}; bits 16-29: {}); stride byte offset {} ({stride}; bits 32-45: {}); swizzle mode {} (bits 62-63) = 0x{:016x}",
            descriptor.start_address,
            descriptor.leading_byte_offset,
            descriptor.leading_byte_offset >> 4,
            descriptor.stride_byte_offset,
            descriptor.stride_byte_offset >> 4,
            swizzle.field(),
            descriptor.encode()
        ),
        style,
        &mut out,
    );
    out.push('\n');
    let (rows, cols) = match operand {
        WgmmaOperand::A => (64, 16),
        WgmmaOperand::B => (16, n),
    };
    let cell = |r: u64, c: u64| {
        let (r, c) = (r as i64, c as i64);
        let (mn, k) = match operand {
            WgmmaOperand::A => (r, c),
            WgmmaOperand::B => (c, r),
        };
        let address = descriptor.address(major, mn, k);
        let blocks_down = (rows as u64).div_ceil(8) as i64;
        Cell {
            text: address.to_string(),
            tile: Some((r / 8 + blocks_down * (c / 8)) as u64),
            // Coloured by 16-byte chunk of the pattern's row, which shows
            // how the swizzle moves chunks.
            color: Some(((address / 16) % swizzle.row_chunks()) as u64),
        }
    };
    Table {
        rows: rows as u64,
        cols: cols as u64,
        row_label: &index_label,
        col_label: &index_label,
        cell: &cell,
        corner: None,
    }
    .render(style, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The densest K-major operand under the 128-byte swizzle is the one
    /// the lowering lays A and B out in: the PTX ISA's fields for it are
    /// LBO 1 (unused), SBO 64 (1024 bytes), mode 1.
    #[test]
    fn the_128_byte_k_major_descriptor_is_the_lowerings() {
        for (n, operand) in [(64, WgmmaOperand::A), (256, WgmmaOperand::B)] {
            let d = descriptor(n, operand, SharedSwizzle::Bytes128, Major::K);
            assert_eq!(d.fields(), (1 << 16) | (64 << 32) | (1 << 62));
        }
    }

    /// The caption names what each offset spans in the layout drawn, and
    /// the grid's rows are where the canonical layout puts them: without a
    /// swizzle, a core matrix's rows 16 bytes apart, its neighbour along K
    /// LBO = 128 bytes on.
    #[test]
    fn an_unswizzled_a_reads_core_matrices_of_sixteen_byte_rows() {
        let text = draw(
            64,
            WgmmaOperand::A,
            SharedSwizzle::None,
            Major::K,
            &Style::plain(200),
        );
        let words = text.replace('\n', " ");
        assert!(
            words.contains(
                "leading byte offset 128 (between the two 8-k core matrices along K; bits 16-29: 8)"
            ),
            "{words}"
        );
        assert!(
            words.contains("stride byte offset 256 (between 8-row groups"),
            "{words}"
        );
        let row = |r: usize| -> Vec<i64> {
            let line = text
                .lines()
                .find(|line| {
                    line.split_once(" |")
                        .is_some_and(|(l, _)| l.trim() == r.to_string())
                })
                .unwrap();
            line.split_once(" |")
                .unwrap()
                .1
                .split_whitespace()
                .filter(|t| *t != "|")
                .map(|t| t.parse().unwrap())
                .collect()
        };
        for r in 0..8 {
            let expected: Vec<i64> = (0..16)
                .map(|k| 16 * r as i64 + 2 * (k % 8) + 128 * (k / 8))
                .collect();
            assert_eq!(row(r), expected, "row {r}");
        }
        // Rows 8-15 are the next 8-row group, SBO = 256 bytes on.
        assert_eq!(row(8)[0], 256);
    }

    /// A wide B wraps into panels and keeps every column: the last panel
    /// ends at column N - 1.
    #[test]
    fn a_wide_b_keeps_every_column() {
        let text = draw(
            256,
            WgmmaOperand::B,
            SharedSwizzle::Bytes64,
            Major::Mn,
            &Style::plain(64),
        );
        assert!(text.contains(" (of 256):\n"), "{text}");
        let last = text.lines().rfind(|l| l.starts_with("columns ")).unwrap();
        assert!(last.ends_with("-255 (of 256):"), "{last}");
        assert!(text.lines().all(|l| l.chars().count() <= 64));
    }
}
