//! Contract tests for the divides and products: each equals its definition
//! (a composition, a concatenation, a regrouping) point by point, and is a
//! bijection where CuTe says so.

mod layout_gen;

use graphene::layout::{
    IntTuple, Layout, LayoutError, Tiler, Tuple, blocked_product, coalesce, complement,
    composition, composition_by_mode, logical_divide, logical_product, raked_product, tiled_divide,
    zipped_divide,
};
use layout_gen::{
    arb_compact_layout, arb_injective_layout, arb_layout, arb_layout_sized, is_injective, layout,
    offsets, sorted_offsets,
};
use proptest::prelude::*;

/// The coordinate list `parts` in the tree a layout of `shape` expects: a
/// leaf shape (a one-leaf level, stored as the leaf) takes the single part.
fn wrap_like(parts: Vec<IntTuple>, shape: &IntTuple) -> IntTuple {
    match shape {
        Tuple::Leaf(_) => parts.into_iter().next().unwrap_or(Tuple::Leaf(0)),
        Tuple::Node(_) => Tuple::Node(parts),
    }
}

/// Every coordinate of a layout, in index order.
fn coordinates(l: &Layout) -> Vec<IntTuple> {
    (0..l.size()).map(|i| l.coordinate(i).unwrap()).collect()
}

fn expected_divide(l: &Layout, t: &Layout) -> Result<Layout, LayoutError> {
    let rest = complement(t, coalesce(l).shape().clone())?;
    composition(l, &Layout::from_modes(&[t.clone(), rest])?)
}

fn arb_small_tiler() -> impl Strategy<Value = Layout> {
    arb_layout_sized(16, None)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn logical_divide_is_its_definition(l in arb_layout(), t in arb_small_tiler()) {
        match (logical_divide(&l, &Tiler::Layout(t.clone())), expected_divide(&l, &t)) {
            (Ok(d), Ok(e)) => {
                prop_assert_eq!(&d, &e);
                prop_assert_eq!(d.rank(), 2);
                let tile = d.mode(0).unwrap();
                prop_assert_eq!(offsets(&tile), offsets(&composition(&l, &t).unwrap()));
            }
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert!(false, "{:?} vs {:?}", a, b),
        }
    }

    #[test]
    fn exact_divides_permute_the_elements(l in arb_compact_layout(256), t in arb_injective_layout(16)) {
        if let Ok(d) = logical_divide(&l, &Tiler::Layout(t.clone())) {
            if d.size() == l.size() {
                prop_assert_eq!(sorted_offsets(&d), sorted_offsets(&l), "{} / {} = {}", l, t, d);
            }
        }
    }

    #[test]
    fn zipped_and_tiled_divides_regroup_the_logical_divide(
        l in arb_layout_sized(256, None),
        t0 in arb_small_tiler(),
        t1 in arb_small_tiler(),
        keep_second in any::<bool>(),
    ) {
        let rank = l.rank();
        let mut entries = vec![Tiler::Layout(t0)];
        if rank >= 2 {
            entries.push(if keep_second { Tiler::Keep } else { Tiler::Layout(t1) });
        }
        let tiler = Tiler::ByMode(entries.clone());
        let logical = logical_divide(&l, &tiler);
        let zipped = zipped_divide(&l, &tiler);
        let tiled = tiled_divide(&l, &tiler);
        let (logical, zipped, tiled) = match (logical, zipped, tiled) {
            (Ok(a), Ok(b), Ok(c)) => (a, b, c),
            (Err(_), Err(_), Err(_)) => return Ok(()),
            other => { prop_assert!(false, "{:?}", other); unreachable!() }
        };
        let k = entries.len();
        let z_tiles = zipped.mode(0).unwrap();
        let z_rests = zipped.mode(1).unwrap();
        for c in coordinates(&logical) {
            let parts = match &c { Tuple::Node(p) => p.clone(), leaf => vec![leaf.clone()] };
            let mut tiles = Vec::new();
            let mut rests = Vec::new();
            for (i, part) in parts.iter().enumerate() {
                if i >= k {
                    rests.push(part.clone());
                } else if matches!(entries[i], Tiler::Keep) {
                    tiles.push(Tuple::Leaf(0));
                    rests.push(part.clone());
                } else if let Tuple::Node(pair) = part {
                    tiles.push(pair[0].clone());
                    rests.push(pair[1].clone());
                }
            }
            let value = logical.eval_coord(&c).unwrap();
            let zc = Tuple::Node(vec![
                wrap_like(tiles.clone(), z_tiles.shape()),
                wrap_like(rests.clone(), z_rests.shape()),
            ]);
            prop_assert_eq!(zipped.eval_coord(&zc).unwrap(), value, "{} zipped at {}", l, zc);
            let mut tc = vec![wrap_like(tiles, z_tiles.shape())];
            tc.extend(rests);
            prop_assert_eq!(tiled.eval_coord(&Tuple::Node(tc)).unwrap(), value);
        }
        // The tiles are the by-mode compositions (CuTe: mode 0 of the zipped
        // divide is `composition(L, tiler)`).
        let modes = l.modes();
        for (i, entry) in entries.iter().enumerate() {
            if let Tiler::Layout(t) = entry {
                prop_assert_eq!(z_tiles.mode(i).unwrap(), composition(&modes[i], t).unwrap());
            }
        }
        let full = Tiler::ByMode(entries.iter().map(|e| match e {
            Tiler::Keep => Tiler::Layout(Layout::leaf(1, 0).unwrap()),
            other => other.clone(),
        }).collect());
        if k == rank {
            prop_assert_eq!(offsets(&z_tiles), offsets(&composition_by_mode(&l, &full).unwrap()));
        }
    }

    #[test]
    fn logical_product_is_its_definition(a in arb_layout_sized(32, None), b in arb_layout_sized(16, None)) {
        let result = logical_product(&a, &Tiler::Layout(b.clone()));
        let expected = complement(&a, a.size() * b.cosize())
            .and_then(|c| composition(&c, &b))
            .and_then(|r| Layout::from_modes(&[a.clone(), r]));
        match (result, expected) {
            (Ok(p), Ok(e)) => {
                prop_assert_eq!(&p, &e);
                prop_assert_eq!(p.mode(0).unwrap(), a.clone());
                if is_injective(&a) && is_injective(&b) {
                    prop_assert!(is_injective(&p), "{} x {} = {}", a, b, p);
                }
            }
            (Err(x), Err(y)) => prop_assert_eq!(x, y),
            (x, y) => prop_assert!(false, "{:?} vs {:?}", x, y),
        }
    }

    #[test]
    fn compact_products_are_bijections(a in arb_compact_layout(32), b in arb_compact_layout(16)) {
        let n = a.size() * b.size();
        let p = logical_product(&a, &Tiler::Layout(b.clone())).unwrap();
        prop_assert_eq!(sorted_offsets(&p), (0..n).collect::<Vec<_>>(), "{} x {}", a, b);
        let blocked = blocked_product(&a, &b).unwrap();
        prop_assert_eq!(sorted_offsets(&blocked), (0..n).collect::<Vec<_>>());
        let raked = raked_product(&a, &b).unwrap();
        prop_assert_eq!(sorted_offsets(&raked), (0..n).collect::<Vec<_>>());
    }

    #[test]
    fn blocked_and_raked_pair_the_modes(a in arb_injective_layout(32), b in arb_injective_layout(16)) {
        let blocked = match blocked_product(&a, &b) { Ok(p) => p, Err(_) => return Ok(()) };
        let raked = raked_product(&a, &b).unwrap();
        let rank = a.rank().max(b.rank());
        prop_assert_eq!(blocked.rank(), rank);
        prop_assert_eq!(raked.rank(), rank);
        let a_modes = a.modes();
        let b_modes = b.modes();
        for i in 0..rank {
            let mode = blocked.mode(i).unwrap();
            let size_a = a_modes.get(i).map_or(1, Layout::size);
            let size_b = b_modes.get(i).map_or(1, Layout::size);
            prop_assert_eq!(mode.size(), size_a * size_b);
            prop_assert_eq!(mode.mode(0).unwrap().size(), size_a);
        }
        // Raked is blocked with each mode's two parts swapped.
        for c in coordinates(&blocked) {
            let swapped = match &c {
                Tuple::Node(modes) => Tuple::Node(modes.iter().map(|m| match m {
                    Tuple::Node(pair) => Tuple::Node(vec![pair[1].clone(), pair[0].clone()]),
                    leaf => leaf.clone(),
                }).collect()),
                leaf => leaf.clone(),
            };
            prop_assert_eq!(raked.eval_coord(&swapped).unwrap(), blocked.eval_coord(&c).unwrap());
        }
    }
}

#[test]
fn cute_guide_values() {
    let a = layout("(4,2,3):(2,1,8)");
    let d = logical_divide(&a, &Tiler::Layout(layout("4:2"))).unwrap();
    assert_eq!(d.to_string(), "((2,2),(2,3)):((4,1),(2,8))");

    let a = layout("(9,(4,8)):(59,(13,1))");
    let tiler = Tiler::ByMode(vec![
        Tiler::Layout(layout("3:3")),
        Tiler::Layout(layout("(2,4):(1,8)")),
    ]);
    let z = zipped_divide(&a, &tiler).unwrap();
    assert_eq!(z.mode(0).unwrap().to_string(), "(3,(2,4)):(177,(13,2))");
    assert_eq!(z.mode(1).unwrap().shape().to_string(), "(3,(2,2))");

    let p = logical_product(&layout("(2,2):(4,1)"), &Tiler::Layout(layout("6:1"))).unwrap();
    assert_eq!(p.to_string(), "((2,2),(2,3)):((4,1),(2,8))");
}

/// A broadcast mode (stride 0, `.broadcast` in the language) divides like
/// any other: its tiles and rests keep stride 0, so every piece of a
/// broadcast names the same element all along the mode.
#[test]
fn divides_of_stride_zero_modes_keep_stride_zero() {
    let row = layout("(64,32):(0,1)");
    let tiler = Tiler::shape(&[16, 8]).unwrap();
    let z = zipped_divide(&row, &tiler).unwrap();
    assert_eq!(z.to_string(), "((16,8),(4,4)):((0,1),(0,8))");
    let d = logical_divide(&layout("64:0"), &Tiler::Layout(layout("4:2"))).unwrap();
    assert_eq!(d.to_string(), "(4,(2,8)):(0,(0,0))");
    // The divide rearranges the row's coordinates: each of its 32 offsets
    // is still named once per row, 64 times.
    assert_eq!(sorted_offsets(&z), sorted_offsets(&row));
    assert_eq!(sorted_offsets(&z).iter().filter(|&&o| o == 31).count(), 64);
}

#[test]
fn gemm_sized_divide() {
    let matrix = layout("[4096,4096]");
    let tiler = Tiler::shape(&[128, 32]).unwrap();
    let z = zipped_divide(&matrix, &tiler).unwrap();
    assert_eq!(z.to_string(), "((128,32),(32,128)):((1,4096),(128,131072))");
    let t = tiled_divide(&matrix, &tiler).unwrap();
    assert_eq!(
        t.ir().to_string(),
        "[(128,32),32,128 : (1,4096),128,131072]"
    );
}

#[test]
fn exhaustive_small_exact_divides() {
    use layout_gen::all_flat_layouts;
    let bijections: Vec<Layout> = all_flat_layouts(&[2, 3, 4, 6], &[1, 2, 3, 4, 6, 8, 12, 24])
        .into_iter()
        .filter(|l| sorted_offsets(l) == (0..l.size()).collect::<Vec<_>>())
        .collect();
    let tilers = all_flat_layouts(&[1, 2, 3, 4], &[1, 2, 3, 4, 6, 8]);
    let mut exact = 0;
    for l in &bijections {
        for t in &tilers {
            if let Ok(d) = logical_divide(l, &Tiler::Layout(t.clone())) {
                assert_eq!(
                    offsets(&d.mode(0).unwrap()),
                    offsets(&composition(l, t).unwrap())
                );
                if d.size() == l.size() {
                    assert_eq!(sorted_offsets(&d), sorted_offsets(l), "{l} / {t}");
                    exact += 1;
                }
            }
        }
    }
    assert!(exact > 1000, "{exact}");
}
