//! Contract tests for `Swizzle` and swizzled layouts: the bit formula,
//! involution, bijection on each period block, composition on the right, and
//! the bank-conflict property the `Sw<3,3,3>` pattern exists for.

mod layout_gen;

use std::collections::BTreeSet;

use graphene::layout::int_tuple::flat;
use graphene::layout::{Swizzle, SwizzledLayout, composition, parse_swizzled_layout};
use layout_gen::{arb_layout_sized, layout};
use proptest::prelude::*;

fn all_swizzles(max_total: i64) -> Vec<Swizzle> {
    let mut out = Vec::new();
    for b in 0..=4 {
        for m in 0..=4 {
            for s in -6i64..=6 {
                if b + m + s.abs() <= max_total {
                    if let Ok(sw) = Swizzle::new(b, m, s) {
                        out.push(sw);
                    }
                }
            }
        }
    }
    out
}

/// The definition, written bit by bit.
fn reference(sw: Swizzle, x: i64) -> i64 {
    let (b, m, s) = (sw.bits(), sw.base(), sw.shift());
    let mut y = x;
    for k in 0..b {
        let (from, to) = if s >= 0 {
            (m + s + k, m + k)
        } else {
            (m + k, m - s + k)
        };
        let bit = (x >> from) & 1;
        y ^= bit << to;
    }
    y
}

#[test]
fn every_small_swizzle_matches_the_bit_definition_and_is_an_involution() {
    let swizzles = all_swizzles(10);
    assert!(swizzles.len() > 100);
    for sw in swizzles {
        let period = sw.period();
        let mut image = BTreeSet::new();
        for x in 0..period * 2 {
            let y = sw.apply(x);
            assert_eq!(y, reference(sw, x), "{sw} at {x}");
            assert_eq!(sw.apply(y), x, "{sw} is not an involution at {x}");
            // Each period block maps onto itself.
            assert_eq!(y / period, x / period, "{sw} leaves its block at {x}");
            if x < period {
                image.insert(y);
            }
        }
        assert_eq!(
            image.len() as i64,
            period,
            "{sw} is not a bijection on its period"
        );
    }
}

#[test]
fn sw333_on_an_8x64_fp16_tile_is_bank_conflict_free_for_ldmatrix() {
    // Row-major 8×64 halves: each row is 128 bytes = 8 chunks of 16 bytes.
    let tile = parse_swizzled_layout("Sw<3,3,3> o (8,64):(64,1)").unwrap();
    for chunk in 0..8 {
        // ldmatrix: 8 threads each read the 16-byte chunk `chunk` of rows 0..8.
        let banks: BTreeSet<i64> = (0..8)
            .map(|row| {
                let half = tile.eval_coord(&flat(&[row, chunk * 8])).unwrap();
                half * 2 / 4 % 32
            })
            .collect();
        // 8 rows × 4 banks per chunk: all 32 banks, no two rows alike.
        assert_eq!(banks.len(), 8, "chunk {chunk}");
    }
    // Without the swizzle every row's chunk lands in the same 4 banks.
    let plain = layout("(8,64):(64,1)");
    let banks: BTreeSet<i64> = (0..8)
        .map(|row| plain.eval(row).unwrap() * 2 / 4 % 32)
        .collect();
    assert_eq!(banks.len(), 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn swizzled_layouts_evaluate_as_swizzle_after_offset_and_layout(
        l in arb_layout_sized(256, None),
        offset in 0i64..1024,
        choice in 0usize..200,
    ) {
        let swizzles = all_swizzles(12);
        let sw = swizzles[choice % swizzles.len()];
        let s = SwizzledLayout::new(sw, offset, l.clone());
        for i in 0..l.size() {
            prop_assert_eq!(s.eval(i).unwrap(), sw.apply(offset + l.eval(i).unwrap()));
        }
        // Distinct offsets stay distinct (the swizzle is a bijection).
        let image: BTreeSet<i64> = (0..l.size()).map(|i| l.eval(i).unwrap()).collect();
        let swizzled: BTreeSet<i64> = (0..l.size()).map(|i| s.eval(i).unwrap()).collect();
        prop_assert_eq!(image.len(), swizzled.len());
    }

    #[test]
    fn composition_on_the_right_distributes(
        l in arb_layout_sized(256, None),
        b in arb_layout_sized(32, None),
        choice in 0usize..200,
    ) {
        let swizzles = all_swizzles(12);
        let sw = swizzles[choice % swizzles.len()];
        let s = SwizzledLayout::new(sw, 16, l.clone());
        if let Ok(composed) = s.compose(&b) {
            prop_assert_eq!(composed.layout(), &composition(&l, &b).unwrap());
            for i in 0..b.size() {
                let inner = b.eval(i).unwrap();
                if inner < l.size() {
                    prop_assert_eq!(composed.eval(i).unwrap(), s.eval(inner).unwrap());
                }
            }
        }
    }
}

#[test]
fn views_keep_the_swizzle_of_the_allocation() {
    let smem = parse_swizzled_layout("[8,64 : 64,1].Swizzle<3,3,3>").unwrap();
    // Row 3 as a view: the offset moves by L(3,0), and the row's own layout
    // is the composition with the indices of row 0 (every 8th index).
    let start = smem.layout().eval_coord(&flat(&[3, 0])).unwrap();
    let row = smem
        .shifted(start)
        .unwrap()
        .compose(&layout("64:8"))
        .unwrap();
    assert_eq!(row.to_string(), "Sw<3,3,3> o 192 o 64:1");
    assert_eq!(row.ir().to_string(), "(192 + [64 : 1]).Swizzle<3,3,3>");
    for c in 0..64 {
        assert_eq!(
            row.eval(c).unwrap(),
            smem.eval_coord(&flat(&[3, c])).unwrap()
        );
    }
}
