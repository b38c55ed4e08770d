//! Instruction atoms: the shared-memory operands of Hopper's
//! `wgmma.mma_async.m64nNk16` — where in shared memory the hardware reads
//! each element of A (64×16) and B (16×N, 16-bit elements) for each of the
//! four layouts a matrix descriptor can name (no swizzle, and the 32-, 64-
//! and 128-byte swizzles), K-major or MN-major, and the 64-bit descriptor
//! itself. The lowering encodes its descriptors and checks its operands'
//! layouts with these; the REPL's `:atom wgmma.m64nNk16 A|B MODE` draws them.
//!
//! The canonical layouts are CuTe's (`make_gmma_desc`), counted in bytes,
//! with `W` the 16-byte chunks of one row of the swizzle pattern (1, 2, 4,
//! 8). An operand is `mn × 16`: `mn` its rows along M (A) or N (B), `k` its
//! 16 columns along K.
//!
//! - **K-major** (transpose bit 0): a row of 8 k's is one 16-byte chunk.
//!   8-row groups are `SBO` bytes apart. Without a swizzle, 8 rows of one
//!   chunk make a 128-byte "core matrix" (rows 16 bytes apart) and the two
//!   chunks along K are `LBO` bytes apart; with one, rows are `16·W` bytes
//!   apart and the chunks along K adjacent (the descriptor's LBO unused).
//! - **MN-major** (transpose bit 1): 8 consecutive rows (16 bytes) are one
//!   chunk, `W` chunks side by side make a row of the pattern, and the 8 k's
//!   of a group are rows `16·W` bytes apart. Without a swizzle (`W` = 1) the
//!   8-row chunks are `SBO` apart and the k groups `LBO`; with one, the
//!   `8·W`-row atoms are `LBO` apart along M or N and the k groups `SBO`.
//!
//! A swizzle then XORs byte-address bits `[4, 4 + log2 W)` (the chunk) with
//! bits `[7, 7 + log2 W)`, `Sw<log2 W, 4, 3>` on bytes, applied to the
//! absolute address: the start address must sit at a multiple of the
//! pattern's `128·W` bytes for the pictures' offsets to be the hardware's.

use crate::layout::Swizzle;

/// The bytes of one element (wgmma's k16 shapes take 16-bit inputs).
pub const ELEMENT_BYTES: i64 = 2;

/// The elements in one 16-byte chunk.
const CHUNK_ELEMENTS: i64 = 16 / ELEMENT_BYTES;

/// The layout a descriptor names: its swizzle mode (bits 62–63).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SharedSwizzle {
    /// No swizzle ("interleaved"): 8×16-byte core matrices.
    None,
    /// The 32-byte swizzle, `Sw<1,4,3>` on bytes.
    Bytes32,
    /// The 64-byte swizzle, `Sw<2,4,3>` on bytes.
    Bytes64,
    /// The 128-byte swizzle, `Sw<3,4,3>` on bytes (`Swizzle<3,3,3>` on
    /// 16-bit element offsets).
    Bytes128,
}

impl SharedSwizzle {
    /// Every mode, narrowest first.
    pub const ALL: [SharedSwizzle; 4] = [
        SharedSwizzle::None,
        SharedSwizzle::Bytes32,
        SharedSwizzle::Bytes64,
        SharedSwizzle::Bytes128,
    ];

    /// The value of the descriptor's swizzle-mode field (PTX ISA: 0 none,
    /// 1 128-byte, 2 64-byte, 3 32-byte).
    pub fn field(self) -> u64 {
        match self {
            SharedSwizzle::None => 0,
            SharedSwizzle::Bytes128 => 1,
            SharedSwizzle::Bytes64 => 2,
            SharedSwizzle::Bytes32 => 3,
        }
    }

    /// The 16-byte chunks in one row of the pattern (`W`).
    pub fn row_chunks(self) -> i64 {
        match self {
            SharedSwizzle::None => 1,
            SharedSwizzle::Bytes32 => 2,
            SharedSwizzle::Bytes64 => 4,
            SharedSwizzle::Bytes128 => 8,
        }
    }

    /// The swizzle on byte addresses, `Sw<log2 W, 4, 3>`; `None` for none.
    pub fn on_bytes(self) -> Option<Swizzle> {
        let bits = i64::from(self.row_chunks().trailing_zeros());
        (bits > 0).then(|| {
            Swizzle::new(bits, 4, 3)
                .unwrap_or_else(|error| panic!("Sw<{bits},4,3> is a valid swizzle: {error}"))
        })
    }

    /// The REPL's word for it: `none`, `sw32`, `sw64`, `sw128`.
    pub fn word(self) -> &'static str {
        match self {
            SharedSwizzle::None => "none",
            SharedSwizzle::Bytes32 => "sw32",
            SharedSwizzle::Bytes64 => "sw64",
            SharedSwizzle::Bytes128 => "sw128",
        }
    }
}

/// How an operand is laid out, as the instruction's transpose bit says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Major {
    /// K runs fastest (transpose bit 0): A row-major, B column-major.
    K,
    /// M (A) or N (B) runs fastest (transpose bit 1).
    Mn,
}

/// A wgmma matrix descriptor: where an operand starts and how it is laid
/// out. Byte offsets are multiples of 16 below 2^18 (14-bit fields of
/// 16-byte units).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MatrixDescriptor {
    /// The shared-memory byte address of element (0, 0).
    pub start_address: i64,
    /// LBO: K-major without a swizzle, the bytes between the two chunks
    /// along K; MN-major, between k groups (no swizzle) or between atoms
    /// along M or N (swizzled). Unused by swizzled K-major layouts.
    pub leading_byte_offset: i64,
    /// SBO: K-major, the bytes between 8-row groups; MN-major, between
    /// 8-row chunks (no swizzle) or between k groups (swizzled).
    pub stride_byte_offset: i64,
    /// The layout's swizzle.
    pub swizzle: SharedSwizzle,
}

/// The 14-bit field of 16-byte units a byte offset is written as.
fn units(bytes: i64) -> u64 {
    ((bytes >> 4) & 0x3fff) as u64
}

impl MatrixDescriptor {
    /// The densest descriptor of an `mn × 16` operand starting at byte 0:
    /// K-major, the 8-row groups one after another (no swizzle: each
    /// group's two core matrices side by side, LBO 128, SBO 256; swizzled:
    /// rows of `16·W` bytes, SBO `128·W`, LBO 16 as unused); MN-major, the
    /// two k groups one after another (no swizzle: LBO = the `mn/8` chunks
    /// of a group, SBO 128; swizzled: SBO `128·W`, the atoms along M or N
    /// after both k groups, LBO `256·W`).
    pub fn compact(major: Major, swizzle: SharedSwizzle, mn: i64) -> MatrixDescriptor {
        let w = swizzle.row_chunks();
        let (leading, stride) = match (major, swizzle) {
            (Major::K, SharedSwizzle::None) => (128, 256),
            (Major::K, _) => (16, 128 * w),
            (Major::Mn, SharedSwizzle::None) => (128 * (mn / 8).max(1), 128),
            (Major::Mn, _) => (256 * w, 128 * w),
        };
        MatrixDescriptor {
            start_address: 0,
            leading_byte_offset: leading,
            stride_byte_offset: stride,
            swizzle,
        }
    }

    /// The 64-bit descriptor: start address (bits 0–13), LBO (16–29) and
    /// SBO (32–45) in 16-byte units, the swizzle mode (62–63).
    pub fn encode(&self) -> u64 {
        units(self.start_address)
            | (units(self.leading_byte_offset) << 16)
            | (units(self.stride_byte_offset) << 32)
            | (self.swizzle.field() << 62)
    }

    /// The descriptor without its start address: what the lowering ORs
    /// with the start address it computes at run time.
    pub fn fields(&self) -> u64 {
        MatrixDescriptor {
            start_address: 0,
            ..*self
        }
        .encode()
    }

    /// The byte offset from the start address of element `(mn, k)` before
    /// the swizzle (the canonical layout of the module's comment).
    pub fn unswizzled_offset(&self, major: Major, mn: i64, k: i64) -> i64 {
        let w = self.swizzle.row_chunks();
        let (lbo, sbo) = (self.leading_byte_offset, self.stride_byte_offset);
        let within = ELEMENT_BYTES * (k % CHUNK_ELEMENTS);
        match (major, self.swizzle) {
            (Major::K, SharedSwizzle::None) => {
                16 * (mn % 8) + sbo * (mn / 8) + lbo * (k / CHUNK_ELEMENTS) + within
            }
            (Major::K, _) => {
                16 * w * (mn % 8) + sbo * (mn / 8) + 16 * (k / CHUNK_ELEMENTS) + within
            }
            (Major::Mn, SharedSwizzle::None) => {
                ELEMENT_BYTES * (mn % 8) + sbo * (mn / 8) + 16 * (k % 8) + lbo * (k / 8)
            }
            (Major::Mn, _) => {
                ELEMENT_BYTES * (mn % 8)
                    + 16 * ((mn / 8) % w)
                    + lbo * (mn / (8 * w))
                    + 16 * w * (k % 8)
                    + sbo * (k / 8)
            }
        }
    }

    /// The shared-memory byte address the hardware reads element `(mn, k)`
    /// from: the start address plus the canonical offset, swizzled.
    pub fn address(&self, major: Major, mn: i64, k: i64) -> i64 {
        let unswizzled = self.start_address + self.unswizzled_offset(major, mn, k);
        self.swizzle
            .on_bytes()
            .map_or(unswizzled, |swizzle| swizzle.apply(unswizzled))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// Every element of a compact `mn × 16` operand has its own two bytes,
    /// and together they fill `32·mn` bytes from the start: the compact
    /// layouts are dense and the swizzles permutations.
    #[test]
    fn compact_operands_fill_their_bytes_once() {
        for major in [Major::K, Major::Mn] {
            for swizzle in SharedSwizzle::ALL {
                for mn in [64, 8, 256] {
                    let descriptor = MatrixDescriptor::compact(major, swizzle, mn);
                    let mut seen = BTreeSet::new();
                    for m in 0..mn {
                        for k in 0..16 {
                            let at = descriptor.address(major, m, k);
                            assert_eq!(at % 2, 0);
                            assert!(seen.insert(at), "{major:?} {swizzle:?} ({m},{k}) at {at}");
                        }
                    }
                    // The 16 k's need not fill the pattern's rows (a
                    // 64-byte row holds 32, an MN-major atom 8·W rows),
                    // but no byte is outside the rows and groups they use.
                    let w = swizzle.row_chunks();
                    let span = (32 * mn * (w / 2).max(1)).max(256 * w);
                    assert!(
                        seen.iter().all(|&at| (0..span).contains(&at)),
                        "{major:?} {swizzle:?}"
                    );
                }
            }
        }
    }

    /// The PTX ISA's core matrix: without a swizzle, K-major, the 8 rows
    /// of 8 k's are 128 contiguous bytes, row r at byte 16r.
    #[test]
    fn an_unswizzled_core_matrix_is_128_contiguous_bytes() {
        let descriptor = MatrixDescriptor::compact(Major::K, SharedSwizzle::None, 64);
        for m in 0..8 {
            for k in 0..8 {
                assert_eq!(descriptor.address(Major::K, m, k), 16 * m + 2 * k);
            }
        }
        // The chunk along K is LBO away; the next 8 rows SBO away.
        assert_eq!(descriptor.address(Major::K, 0, 8), 128);
        assert_eq!(descriptor.address(Major::K, 8, 0), 256);
    }

    /// The 128-byte swizzle on bytes is `Swizzle<3,3,3>` on 16-bit element
    /// offsets: K-major rows of 64 elements, `mn·64 + k`, as the lowering
    /// lays A and B out.
    #[test]
    fn the_128_byte_swizzle_is_swizzle_333_on_elements() {
        let elements = Swizzle::new(3, 3, 3).unwrap();
        let descriptor = MatrixDescriptor::compact(Major::K, SharedSwizzle::Bytes128, 64);
        for m in 0..64 {
            for k in 0..16 {
                let offset = m * 64 + k;
                assert_eq!(descriptor.unswizzled_offset(Major::K, m, k), 2 * offset);
                assert_eq!(
                    descriptor.address(Major::K, m, k),
                    2 * elements.apply(offset)
                );
            }
        }
    }

    /// Chunk c of row r (rows of W chunks, 16·W bytes) lands at chunk
    /// c XOR (r / (8/W) mod W) of its row: the swizzle XORs the chunk with
    /// byte bits 7.., which are the row's bits from log2(8/W) on — every
    /// row for the 128-byte swizzle, every other for 64, every fourth for 32.
    #[test]
    fn each_swizzle_moves_chunk_c_of_row_r_to_c_xor_r() {
        for swizzle in [
            SharedSwizzle::Bytes32,
            SharedSwizzle::Bytes64,
            SharedSwizzle::Bytes128,
        ] {
            let w = swizzle.row_chunks();
            let descriptor = MatrixDescriptor::compact(Major::K, swizzle, 64);
            for r in 0..8 {
                for c in 0..2 {
                    let at = descriptor.address(Major::K, r, 8 * c);
                    assert_eq!(at / (16 * w), r, "{swizzle:?}");
                    let moved = c ^ ((r / (8 / w)) % w);
                    assert_eq!((at % (16 * w)) / 16, moved, "{swizzle:?} row {r}");
                }
            }
        }
    }

    /// The encoding of the PTX ISA's table: LBO in bits 16–29, SBO in
    /// 32–45, both in 16-byte units; the mode in 62–63.
    #[test]
    fn descriptors_encode_their_fields() {
        let d = MatrixDescriptor {
            start_address: 0x400,
            leading_byte_offset: 16,
            stride_byte_offset: 1024,
            swizzle: SharedSwizzle::Bytes128,
        };
        assert_eq!(d.encode(), 0x40 | (1 << 16) | (64 << 32) | (1 << 62));
        assert_eq!(d.fields(), d.encode() & !0x3fff);
        let none = MatrixDescriptor::compact(Major::K, SharedSwizzle::None, 64);
        assert_eq!(none.encode(), (8 << 16) | (16 << 32));
        let sw32 = MatrixDescriptor::compact(Major::K, SharedSwizzle::Bytes32, 64);
        assert_eq!(sw32.encode() >> 62, 3);
    }
}
