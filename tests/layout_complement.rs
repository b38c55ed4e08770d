//! Contract tests for `filter`, `complement`, `right_inverse` and
//! `left_inverse`, against brute force over small layouts.

mod layout_gen;

use std::collections::BTreeSet;

use graphene::layout::{
    Layout, LayoutError, complement, filter, int_tuple, left_inverse, right_inverse,
};
use layout_gen::{
    all_flat_layouts, arb_injective_layout, arb_layout, is_injective, layout, offsets,
    sorted_offsets,
};
use proptest::prelude::*;

/// Checks every postcondition of `complement(a, m)` for an integer bound.
fn check_complement(a: &Layout, m: i64, c: &Layout) {
    let filtered = filter(a);
    // Strictly increasing strides, depth ≤ 1.
    assert!(c.depth() <= 1, "{c}");
    let strides: Vec<i64> = c.leaves().iter().map(|&(_, d)| d).collect();
    if c.size() > 1 {
        assert!(
            strides.windows(2).all(|w| w[0] < w[1]),
            "{a} within {m}: {c}"
        );
    }
    // Images meet only at 0.
    let image: BTreeSet<i64> = offsets(a).into_iter().collect();
    for i in 1..c.size() {
        assert!(
            !image.contains(&c.eval(i).unwrap()),
            "{a} within {m}: {c} hits A at {i}"
        );
    }
    // (filter(A), C) is a bijection onto [0, size·size) covering [0, m).
    let both = Layout::from_modes(&[filtered.clone(), c.clone()]).unwrap();
    let total = filtered.size() * c.size();
    assert!(total >= m, "{a} within {m}: {c} covers only {total}");
    assert_eq!(
        sorted_offsets(&both),
        (0..total).collect::<Vec<_>>(),
        "{a} within {m}: {c}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn complement_meets_its_postconditions(a in arb_layout(), extra in 1i64..=4) {
        let m = a.cosize() * extra;
        match complement(&a, m) {
            Ok(c) => check_complement(&a, m, &c),
            Err(LayoutError::Complement { .. }) => {
                // Refused: then the filtered layout really does not tile
                // [0, size·k) with some other layout: its sorted strides break
                // the multiple-of-span rule, so it is not injective or its
                // modes interleave or leave uneven gaps.
                let pairs = filter(&a).leaves();
                let mut sorted = pairs.clone();
                sorted.sort_by_key(|&(_, d)| d);
                let mut span = 1;
                let mut broken = false;
                for (s, d) in sorted {
                    broken |= d % span != 0;
                    span = s * d;
                }
                prop_assert!(broken, "{} refused", a);
            }
            Err(other) => prop_assert!(false, "{}: {}", a, other),
        }
    }

    #[test]
    fn injective_layouts_with_even_gaps_always_have_complements(
        a in arb_injective_layout(256),
        extra in 1i64..=3,
    ) {
        let m = a.cosize() * extra;
        let c = complement(&a, m).unwrap();
        check_complement(&a, m, &c);
    }

    #[test]
    fn filter_keeps_the_image(a in arb_layout()) {
        let f = filter(&a);
        let image: BTreeSet<i64> = offsets(&a).into_iter().collect();
        let filtered: BTreeSet<i64> = offsets(&f).into_iter().collect();
        prop_assert_eq!(image, filtered);
        prop_assert!(f.leaves().iter().all(|&(s, d)| d != 0 || s == 1));
    }

    #[test]
    fn right_inverse_meets_its_postcondition(a in arb_layout()) {
        let r = right_inverse(&a);
        prop_assert!(r.depth() <= 1);
        for i in 0..r.size() {
            let j = r.eval(i).unwrap();
            prop_assert!((0..a.size()).contains(&j));
            prop_assert_eq!(a.eval(j).unwrap(), i, "{} with R = {}", a, r);
        }
        // Largest: the run [0, size(R)) cannot be extended by one.
        let image: BTreeSet<i64> = offsets(&a).into_iter().collect();
        if is_injective(&a) && image.contains(&r.size()) && a.eval(0).unwrap() == 0 {
            // Then the next offset lies in a mode R did not take, whose stride
            // is not the next in line; CuTe stops at the first gap in strides.
            let strides: BTreeSet<i64> = a.leaves().iter().filter(|l| l.0 > 1).map(|l| l.1).collect();
            prop_assert!(!strides.contains(&r.size()), "{} with R = {}", a, r);
        }
    }

    #[test]
    fn left_inverse_inverts_injective_layouts(a in arb_injective_layout(256)) {
        let l = left_inverse(&a).unwrap();
        for i in 0..a.size() {
            prop_assert_eq!(l.eval(a.eval(i).unwrap()).unwrap(), i, "{} with L = {}", a, l);
        }
    }

    #[test]
    fn left_inverse_is_a_quasi_inverse(a in arb_layout()) {
        match left_inverse(&a) {
            Ok(l) => {
                let injective = is_injective(&a);
                for i in 0..a.size() {
                    let offset = a.eval(i).unwrap();
                    let back = l.eval(offset).unwrap();
                    prop_assert_eq!(a.eval(back).unwrap(), offset, "{} with L = {}", a, l);
                    if injective {
                        prop_assert_eq!(back, i);
                    }
                }
            }
            Err(LayoutError::LeftInverse { .. }) => prop_assert!(overlaps_or_interleaves(&a)),
            Err(other) => prop_assert!(false, "{}: {}", a, other),
        }
    }
}

/// Whether the non-zero-stride modes, sorted by stride, overlap or
/// interleave (some stride is not a multiple of the one below, or is below
/// the extent of the modes below it).
fn overlaps_or_interleaves(a: &Layout) -> bool {
    let mut modes: Vec<(i64, i64)> = a
        .leaves()
        .into_iter()
        .filter(|l| l.0 > 1 && l.1 != 0)
        .collect();
    modes.sort_by_key(|&(_, d)| d);
    modes
        .windows(2)
        .any(|w| w[1].1 % w[0].1 != 0 || w[1].1 < w[0].0 * w[0].1)
}

#[test]
fn exhaustive_small_complements() {
    let mut ok = 0;
    for a in all_flat_layouts(&[1, 2, 3, 4], &[0, 1, 2, 3, 4, 6, 8, 12]) {
        for m in [1, 5, 24, 48] {
            if let Ok(c) = complement(&a, m) {
                check_complement(&a, m, &c);
                ok += 1;
            }
        }
    }
    assert!(ok > 1000, "{ok}");
}

#[test]
fn cute_guide_values() {
    for (a, m, expected) in [
        ("4:1", 24, "6:4"),
        ("6:4", 24, "4:1"),
        ("(4,6):(1,4)", 24, "1:0"),
        ("4:2", 24, "(2,3):(1,8)"),
        ("(2,4):(1,6)", 24, "3:2"),
        ("(2,2):(1,6)", 24, "(3,2):(2,12)"),
    ] {
        assert_eq!(
            complement(&layout(a), m).unwrap().to_string(),
            expected,
            "{a} within {m}"
        );
    }
}

#[test]
fn shape_cotargets_are_rounded_up_mode_by_mode() {
    let cotarget = int_tuple::flat(&[3, 4]);
    let c = complement(&layout("2:1"), cotarget).unwrap();
    assert_eq!(c.to_string(), "8:2");
}

#[test]
fn inverse_examples() {
    let a = layout("(4,(2,3)):(2,(1,8))");
    let r = right_inverse(&a);
    assert_eq!(r.to_string(), "(2,4,3):(4,1,8)");
    let l = left_inverse(&a).unwrap();
    for i in 0..a.size() {
        assert_eq!(l.eval(a.eval(i).unwrap()).unwrap(), i);
    }
}
