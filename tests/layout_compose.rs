//! Contract tests for `coalesce` and `composition`, against brute force over
//! small layouts: every result is checked point by point.

mod layout_gen;

use graphene::layout::{
    Layout, LayoutError, Tiler, coalesce, composition, composition_by_mode, int_tuple, reshape,
};
use layout_gen::{all_flat_layouts, arb_compact_layout, arb_layout, layout, offsets};
use proptest::prelude::*;

/// `(A ∘ B)(i) == A(B(i))` for every `i`, and the shape is compatible with B's.
fn check_composition(a: &Layout, b: &Layout, r: &Layout) {
    assert!(
        int_tuple::compatible(b.shape(), r.shape()),
        "{a} o {b} = {r}: shape not compatible with {}",
        b.shape()
    );
    for i in 0..b.size() {
        let expected = a.eval_unbounded(b.eval(i).unwrap()).unwrap();
        assert_eq!(r.eval(i).unwrap(), expected, "{a} o {b} = {r} at {i}");
    }
    // Coordinates too, not only 1-D indices.
    for i in 0..b.size() {
        let c = b.coordinate(i).unwrap();
        assert_eq!(r.eval_coord(&c).unwrap(), r.eval(i).unwrap());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn coalesce_keeps_the_function(l in arb_layout()) {
        let c = coalesce(&l);
        prop_assert!(c.depth() <= 1);
        prop_assert_eq!(c.size(), l.size());
        prop_assert_eq!(offsets(&c), offsets(&l));
        // Coalescing is idempotent and never leaves a mergeable neighbour.
        prop_assert_eq!(coalesce(&c), c.clone());
        let leaves = c.leaves();
        for pair in leaves.windows(2) {
            prop_assert!(pair[0].0 * pair[0].1 != pair[1].1 && pair[0].0 != 1 && pair[1].0 != 1);
        }
    }

    #[test]
    fn composition_meets_its_postcondition(a in arb_layout(), b in arb_layout()) {
        if let Ok(r) = composition(&a, &b) {
            check_composition(&a, &b, &r);
        }
    }

    #[test]
    fn composition_with_a_contiguous_left_operand_always_succeeds(
        a in arb_compact_layout(256),
        b in arb_layout(),
    ) {
        // A left operand that is one mode, inside and past its domain (its
        // last leaf is not a size-1 leaf with some other stride), imposes no
        // divisibility.
        let last_is_real = a.leaves().last().is_some_and(|&(s, _)| s > 1);
        if coalesce(&a).rank() == 1 && last_is_real {
            let r = composition(&a, &b).unwrap();
            check_composition(&a, &b, &r);
        }
    }

    #[test]
    fn composition_with_the_identity(a in arb_layout()) {
        // A ∘ size(A):1 is A as a 1-D function; identity ∘ A is A.
        let id = Layout::leaf(a.size(), 1).unwrap();
        let r = composition(&a, &id).unwrap();
        prop_assert_eq!(offsets(&r), offsets(&a));
        let r = composition(&Layout::leaf(a.cosize().max(1) * 2, 1).unwrap(), &a).unwrap();
        prop_assert_eq!(offsets(&r), offsets(&a));
    }

    #[test]
    fn composition_is_associative_where_defined(
        a in arb_layout(),
        b in arb_compact_layout(64),
        c in arb_layout(),
    ) {
        if let (Ok(ab), Ok(bc)) = (composition(&a, &b), composition(&b, &c)) {
            if let (Ok(ab_c), Ok(a_bc)) = (composition(&ab, &c), composition(&a, &bc)) {
                if c.eval(c.size() - 1).unwrap() < b.size() {
                    prop_assert_eq!(offsets(&ab_c), offsets(&a_bc));
                }
            }
        }
    }
}

#[test]
fn exhaustive_small_flat_compositions() {
    let lefts = all_flat_layouts(&[1, 2, 3, 4], &[0, 1, 2, 3, 4, 8]);
    let rights = all_flat_layouts(&[1, 2, 3, 4], &[0, 1, 2, 4]);
    let (mut ok, mut refused) = (0usize, 0usize);
    for a in &lefts {
        for b in &rights {
            match composition(a, b) {
                Ok(r) => {
                    check_composition(a, b, &r);
                    ok += 1;
                }
                Err(LayoutError::Composition { .. }) => refused += 1,
                Err(other) => panic!("{a} o {b}: unexpected {other}"),
            }
        }
    }
    // The check is not vacuous: most small compositions exist (the refused
    // ones map some run of B's image to a non-affine sequence of A).
    assert!(ok > 3 * refused, "{ok} composed, {refused} refused");
}

#[test]
fn negative_strides_compose_by_truncating_extension() {
    let lefts = all_flat_layouts(&[2, 3, 4], &[-3, -1, 1, 2, 5]);
    let rights = all_flat_layouts(&[1, 2, 3], &[-4, -2, -1, 0, 1, 3]);
    let mut ok = 0;
    for a in &lefts {
        for b in &rights {
            if let Ok(r) = composition(a, b) {
                check_composition(a, b, &r);
                ok += 1;
            }
        }
    }
    assert!(ok > 1000, "{ok}");
}

#[test]
fn cute_guide_examples() {
    let cases = [
        ("20:2", "(5,4):(4,1)", "(5,4):(8,2)"),
        ("(10,2):(16,4)", "(5,4):(1,5)", "(5,(2,2)):(16,(80,4))"),
        ("(6,2):(8,2)", "(4,3):(3,1)", "((2,2),3):((24,2),8)"),
        (
            "(3,6,2,8):(1,100,1000,10000)",
            "16:9",
            "(2,2,4):(300,1000,10000)",
        ),
    ];
    for (a, b, expected) in cases {
        let r = composition(&layout(a), &layout(b)).unwrap();
        assert_eq!(r.to_string(), expected, "{a} o {b}");
    }
}

#[test]
fn by_mode_composition_examples() {
    let a = layout("(12,(4,8)):(59,(13,1))");
    let tiler = Tiler::ByMode(vec![
        Tiler::Layout(layout("3:4")),
        Tiler::Layout(layout("8:2")),
    ]);
    assert_eq!(
        composition_by_mode(&a, &tiler).unwrap().to_string(),
        "(3,(2,4)):(236,(26,1))"
    );
    let shape = Tiler::shape(&[3, 8]).unwrap();
    assert_eq!(
        composition_by_mode(&a, &shape).unwrap().to_string(),
        "(3,(4,2)):(59,(13,1))"
    );
}

#[test]
fn reshape_is_composition_of_equal_size() {
    let warp_groups = layout("[4 : 8]");
    let r = reshape(&warp_groups, &layout("[2,2 : 2,1]")).unwrap();
    assert_eq!(r.ir().to_string(), "[2,2 : 16,8]");
    assert_eq!(
        r,
        composition(&warp_groups, &layout("[2,2 : 2,1]")).unwrap()
    );
}

#[test]
fn overflow_is_an_error_not_a_wrap() {
    let a = layout("(2,2):(1,4611686018427387904)");
    let b = layout("(2,2):(1,2)");
    assert!(composition(&a, &b).is_ok());
    let big = layout("2:4611686018427387903");
    assert!(matches!(
        composition(&big, &layout("2:3")),
        Err(LayoutError::Overflow { .. })
    ));
}
