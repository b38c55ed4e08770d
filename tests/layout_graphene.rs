//! Graphene's operations (`tile`, `reshape`, `digit_coordinates`) checked
//! against the numbers of the Graphene paper (seed 000, §3–5) and by their
//! contracts over small layouts.

mod layout_gen;

use graphene::layout::int_tuple::flat;
use graphene::layout::{
    IntTuple, Layout, Tiler, Tuple, composition, digit_coordinates, digit_decomposable, reshape,
    tile,
};
use layout_gen::{arb_injective_layout, arb_layout, arb_layout_sized, layout, sorted_offsets};
use proptest::prelude::*;

fn tiler(text: &str) -> Tiler {
    Tiler::Layout(layout(text))
}

/// The 4×8 grid of `l`, row by row, as the paper prints it.
fn grid(l: &Layout) -> Vec<Vec<i64>> {
    (0..4)
        .map(|r| {
            (0..8)
                .map(|c| l.eval_coord(&flat(&[r, c])).unwrap())
                .collect()
        })
        .collect()
}

#[test]
fn section_3_2_layouts_at_the_listed_coordinates() {
    let a = layout("[4,8 : 1,4]");
    let b = layout("[4,8 : 8,1]");
    let c = layout("[4,(2,4) : 2,(1,8)]");
    // The paper lists D's strides as (1,4),(1,8), but its grid and D[0,3]=10
    // need (1,4),(2,8): with (1,8) the two modes would overlap.
    let d = layout("[(2,2),(2,4) : (1,4),(2,8)]");
    assert_eq!(a.eval_coord(&flat(&[0, 3])).unwrap(), 12);
    assert_eq!(b.eval_coord(&flat(&[0, 3])).unwrap(), 3);
    assert_eq!(c.eval_coord(&flat(&[0, 3])).unwrap(), 9);
    let c_hier = Tuple::Node(vec![Tuple::Leaf(0), flat(&[1, 1])]);
    assert_eq!(c.eval_coord(&c_hier).unwrap(), 9);
    assert_eq!(d.eval_coord(&flat(&[0, 3])).unwrap(), 10);
    let d_hier = Tuple::Node(vec![flat(&[0, 0]), flat(&[1, 1])]);
    assert_eq!(d.eval_coord(&d_hier).unwrap(), 10);
}

#[test]
fn section_3_2_whole_grids() {
    let cases: [(&str, [[i64; 8]; 4]); 4] = [
        (
            "[4,8 : 1,4]",
            [
                [0, 4, 8, 12, 16, 20, 24, 28],
                [1, 5, 9, 13, 17, 21, 25, 29],
                [2, 6, 10, 14, 18, 22, 26, 30],
                [3, 7, 11, 15, 19, 23, 27, 31],
            ],
        ),
        (
            "[4,8 : 8,1]",
            [
                [0, 1, 2, 3, 4, 5, 6, 7],
                [8, 9, 10, 11, 12, 13, 14, 15],
                [16, 17, 18, 19, 20, 21, 22, 23],
                [24, 25, 26, 27, 28, 29, 30, 31],
            ],
        ),
        (
            "[4,(2,4) : 2,(1,8)]",
            [
                [0, 1, 8, 9, 16, 17, 24, 25],
                [2, 3, 10, 11, 18, 19, 26, 27],
                [4, 5, 12, 13, 20, 21, 28, 29],
                [6, 7, 14, 15, 22, 23, 30, 31],
            ],
        ),
        (
            "[(2,2),(2,4) : (1,4),(2,8)]",
            [
                [0, 2, 8, 10, 16, 18, 24, 26],
                [1, 3, 9, 11, 17, 19, 25, 27],
                [4, 6, 12, 14, 20, 22, 28, 30],
                [5, 7, 13, 15, 21, 23, 29, 31],
            ],
        ),
    ];
    for (text, expected) in cases {
        let expected: Vec<Vec<i64>> = expected.iter().map(|row| row.to_vec()).collect();
        assert_eq!(grid(&layout(text)), expected, "{text}");
    }
}

#[test]
fn section_3_3_tilings() {
    let a = layout("[4,8 : 1,4]");
    let cases = [
        (
            vec![tiler("[2:1]"), tiler("[4:1]")],
            "[2,2 : 2,16].[2,4 : 1,4]",
        ),
        (
            vec![tiler("[2:2]"), tiler("[4:1]")],
            "[2,2 : 1,16].[2,4 : 2,4]",
        ),
        (
            vec![tiler("[2:2]"), tiler("[2,2 : 1,4]")],
            "[2,2 : 1,8].[2,(2,2) : 2,(4,16)]",
        ),
    ];
    for (tilers, expected) in cases {
        assert_eq!(tile(&a, &tilers).unwrap().to_string(), expected);
    }
}

/// The tiles of a tiling, listed as the paper does: tiles row-major over the
/// outer 2×2 grid, each tile's offsets row by row.
fn listed_tiles(t: &graphene::layout::Tiled) -> Vec<Vec<i64>> {
    let mut tiles = Vec::new();
    for outer_row in 0..2 {
        for outer_col in 0..2 {
            let base = t.outer.eval_coord(&flat(&[outer_row, outer_col])).unwrap();
            let inner_rows = t.inner.mode(0).unwrap().size();
            let inner_cols = t.inner.mode(1).unwrap().size();
            let mut offsets = Vec::new();
            for r in 0..inner_rows {
                for c in 0..inner_cols {
                    offsets.push(base + t.inner.eval_coord(&flat(&[r, c])).unwrap());
                }
            }
            tiles.push(offsets);
        }
    }
    tiles
}

#[test]
fn section_3_3_tile_contents_as_printed() {
    let a = layout("[4,8 : 1,4]");
    let interleaved = tile(&a, &[tiler("[2:2]"), tiler("[4:1]")]).unwrap();
    assert_eq!(
        listed_tiles(&interleaved),
        vec![
            vec![0, 4, 8, 12, 2, 6, 10, 14],
            vec![16, 20, 24, 28, 18, 22, 26, 30],
            vec![1, 5, 9, 13, 3, 7, 11, 15],
            vec![17, 21, 25, 29, 19, 23, 27, 31],
        ]
    );
    let both = tile(&a, &[tiler("[2:2]"), tiler("[2,2 : 1,4]")]).unwrap();
    assert_eq!(
        listed_tiles(&both),
        vec![
            vec![0, 4, 16, 20, 2, 6, 18, 22],
            vec![8, 12, 24, 28, 10, 14, 26, 30],
            vec![1, 5, 17, 21, 3, 7, 19, 23],
            vec![9, 13, 25, 29, 11, 15, 27, 31],
        ]
    );
    // The regular tiling: tile (a,b), element (r,c) is A[2a+r, 4b+c].
    let regular = tile(&a, &[tiler("[2:1]"), tiler("[4:1]")]).unwrap();
    for (to, ti) in [(0, 0), (1, 1), (2, 5), (3, 7)] {
        let (ta, tb) = (to % 2, to / 2);
        let (r, c) = (ti % 2, ti / 2);
        let offset = regular.outer.eval_coord(&flat(&[ta, tb])).unwrap()
            + regular.inner.eval_coord(&flat(&[r, c])).unwrap();
        assert_eq!(
            offset,
            a.eval_coord(&flat(&[2 * ta + r, 4 * tb + c])).unwrap()
        );
    }
}

#[test]
fn section_4_thread_groups() {
    let warp = layout("[32:1]");
    let groups = tile(&warp, &[tiler("8")]).unwrap();
    assert_eq!(groups.to_string(), "[4 : 8].[8 : 1]");
    let groups_2d = reshape(&groups.outer, &layout("[2,2 : 2,1]")).unwrap();
    assert_eq!(groups_2d.ir().to_string(), "[2,2 : 16,8]");
    // The indices the paper's CUDA code computes.
    for tid in 0..32 {
        let outer = digit_coordinates(&groups_2d, tid).unwrap();
        assert_eq!(outer, flat(&[(tid / 16) % 2, (tid / 8) % 2]));
        let inner = digit_coordinates(&groups.inner, tid).unwrap();
        assert_eq!(inner, Tuple::Leaf(tid % 8));
    }

    let quad_pairs = tile(&warp, &[tiler("[4,2 : 1,16]")]).unwrap();
    assert_eq!(quad_pairs.to_string(), "[4 : 4].[(4,2) : (1,16)]");
    for tid in 0..32 {
        let qp_idx = digit_coordinates(&quad_pairs.outer, tid).unwrap();
        assert_eq!(qp_idx, Tuple::Leaf((tid / 4) % 4));
        let quad = digit_coordinates(&quad_pairs.inner, tid).unwrap();
        let expected: IntTuple = Tuple::Node(vec![flat(&[tid % 4, (tid / 16) % 2])]);
        assert_eq!(quad, expected);
    }
}

#[test]
fn section_2_ldmatrix_listing_shapes() {
    let src = layout("[16,16]");
    let t7 = tile(&src, &[Tiler::shape(&[8, 8]).unwrap()]).unwrap();
    assert_eq!(t7.to_string(), "[2,2 : 8,128].[8,8 : 1,16]");
    let t9 = tile(&t7.inner, &[Tiler::shape(&[1, 8]).unwrap()]).unwrap();
    assert_eq!(t9.outer.shape().to_string(), "(8,1)");
    assert_eq!(t9.inner.shape().to_string(), "(1,8)");
    // Thread `grp_local_idx` reads row `grp_local_idx`: 8 contiguous halves.
    for row in 0..8 {
        let start = t9.outer.eval_coord(&flat(&[row, 0])).unwrap();
        let offsets: Vec<i64> = (0..8)
            .map(|c| start + t9.inner.eval_coord(&flat(&[0, c])).unwrap())
            .collect();
        assert_eq!(offsets, (0..8).map(|c| row + 16 * c).collect::<Vec<_>>());
    }
}

#[test]
fn section_5_4_gemm_listing() {
    let a = layout("[1024,1024]");
    let t6 = tile(&a, &[tiler("128"), Tiler::Keep]).unwrap();
    assert_eq!(t6.outer.shape().to_string(), "(8,1)");
    assert_eq!(t6.inner.shape().to_string(), "(128,1024)");
    let t8 = tile(&a, &[Tiler::shape(&[128, 128]).unwrap()]).unwrap();
    assert_eq!(t8.to_string(), "[8,8 : 128,131072].[128,128 : 1,1024]");
    let t14 = tile(&t8.inner, &[Tiler::shape(&[8, 8]).unwrap()]).unwrap();
    assert_eq!(t14.to_string(), "[16,16 : 8,8192].[8,8 : 1,1024]");
    // The generated code's index: bid_m*128 + bid_n*131072 + tid_m*8 +
    // tid_n*8192 + m + n*1024, with tid_m = tid%16, tid_n = (tid/16)%16.
    let threads = layout("[16,16]");
    for (bid, tid, m, n) in [(0, 0, 0, 0), (9, 17, 3, 5), (63, 255, 7, 7)] {
        let blocks = layout("[8,8]");
        let b = digit_coordinates(&blocks, bid).unwrap();
        let t = digit_coordinates(&threads, tid).unwrap();
        let offset = t8.outer.eval_coord(&b).unwrap()
            + t14.outer.eval_coord(&t).unwrap()
            + t14.inner.eval_coord(&flat(&[m, n])).unwrap();
        let (bid_m, bid_n, tid_m, tid_n) = (bid % 8, (bid / 8) % 8, tid % 16, (tid / 16) % 16);
        assert_eq!(
            offset,
            bid_m * 128 + bid_n * 131072 + tid_m * 8 + tid_n * 8192 + m + n * 1024
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn tiles_reproduce_the_original_offsets(
        l in arb_layout(),
        t0 in arb_injective_layout(8),
        t1 in arb_injective_layout(8),
        t2 in arb_injective_layout(8),
        keep in prop::collection::vec(prop::bool::weighted(0.2), 3),
    ) {
        let candidates = [t0, t1, t2];
        let tilers: Vec<Tiler> = (0..l.rank())
            .map(|i| if keep[i] { Tiler::Keep } else { Tiler::Layout(candidates[i].clone()) })
            .collect();
        let Ok(t) = tile(&l, &tilers) else { return Ok(()) };
        prop_assert_eq!(t.outer.rank(), l.rank());
        prop_assert_eq!(t.inner.rank(), l.rank());
        let modes = l.modes();
        for (i, tiler) in tilers.iter().enumerate() {
            let inner_mode = t.inner.mode(i).unwrap();
            match tiler {
                Tiler::Layout(ti) => prop_assert_eq!(inner_mode, composition(&modes[i], ti).unwrap()),
                Tiler::Keep => prop_assert_eq!(inner_mode, modes[i].clone()),
                Tiler::ByMode(_) => prop_assert!(false),
            }
        }
        if t.outer.size() * t.inner.size() == l.size() {
            let mut sums: Vec<i64> = Vec::new();
            for o in t.outer.offsets() {
                for i in t.inner.offsets() {
                    sums.push(o + i);
                }
            }
            sums.sort_unstable();
            prop_assert_eq!(sums, sorted_offsets(&l), "{} tiled into {}", l, t);
        }
    }

    #[test]
    fn digit_coordinates_invert_qualifying_layouts(l in arb_layout_sized(256, None)) {
        match digit_decomposable(&l) {
            Ok(()) => {
                for i in 0..l.size() {
                    let c = l.coordinate(i).unwrap();
                    let id = l.eval(i).unwrap();
                    prop_assert_eq!(digit_coordinates(&l, id).unwrap(), c, "{} at {}", l, id);
                }
            }
            Err(_) => {
                prop_assert!(digit_coordinates(&l, 0).is_err());
                // Refused layouts have a zero stride, or a sorted stride that
                // is not a multiple of the extent below it.
                let mut modes: Vec<(i64, i64)> = l.leaves().into_iter().filter(|m| m.0 > 1).collect();
                modes.sort_by_key(|m| m.1);
                let broken = modes.iter().any(|m| m.1 <= 0)
                    || modes.windows(2).any(|w| w[1].1 % (w[0].0 * w[0].1) != 0);
                prop_assert!(broken);
            }
        }
    }

    #[test]
    fn compact_layouts_have_digit_coordinates(l in layout_gen::arb_compact_layout(256)) {
        prop_assert!(digit_decomposable(&l).is_ok(), "{}", l);
    }

    #[test]
    fn reshape_is_composition(l in arb_layout(), r in arb_layout()) {
        if l.size() == r.size() {
            prop_assert_eq!(reshape(&l, &r), composition(&l, &r));
        } else {
            prop_assert!(reshape(&l, &r).is_err());
        }
    }
}
