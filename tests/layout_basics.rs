//! The layout value itself: construction, accessors, evaluation at indices
//! and (hierarchical or partly flat) coordinates, index ↔ coordinate, and
//! robustness on hostile inputs.

mod layout_gen;

use graphene::layout::int_tuple::{self, flat, leaf};
use graphene::layout::{IntTuple, Layout, LayoutError, Tuple};
use layout_gen::{arb_layout, layout, offsets, sorted_offsets};
use proptest::prelude::*;

/// The coordinate `c` with mode `i` replaced by its 1-D index (partly flat).
fn flatten_mode(c: &IntTuple, l: &Layout, i: usize) -> IntTuple {
    match c {
        Tuple::Node(parts) => {
            let mut parts = parts.clone();
            let mode = l.mode(i).unwrap();
            parts[i] = Tuple::Leaf(mode.index(&parts[i]).unwrap());
            Tuple::Node(parts)
        }
        leaf @ Tuple::Leaf(_) => leaf.clone(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn evaluation_agrees_at_indices_and_coordinates(l in arb_layout()) {
        let all = offsets(&l);
        prop_assert_eq!(l.offsets().collect::<Vec<_>>(), all.clone());
        for i in 0..l.size() {
            let c = l.coordinate(i).unwrap();
            prop_assert!(c.is_congruent(l.shape()));
            prop_assert_eq!(l.index(&c).unwrap(), i);
            prop_assert_eq!(l.eval_coord(&c).unwrap(), all[i as usize]);
            prop_assert_eq!(l.eval_unbounded(i).unwrap(), all[i as usize]);
            // Each mode may be given as a 1-D index instead.
            for m in 0..l.rank() {
                prop_assert_eq!(l.eval_coord(&flatten_mode(&c, &l, m)).unwrap(), all[i as usize]);
            }
            // The whole coordinate may be a 1-D index.
            prop_assert_eq!(l.eval_coord(&Tuple::Leaf(i)).unwrap(), all[i as usize]);
        }
    }

    #[test]
    fn size_cosize_and_structure(l in arb_layout()) {
        prop_assert_eq!(l.size(), int_tuple::product(l.shape()).unwrap());
        let max = offsets(&l).into_iter().max().unwrap();
        prop_assert_eq!(l.cosize(), max + 1); // strides are non-negative here
        prop_assert_eq!(offsets(&l.flatten()), offsets(&l));
        prop_assert!(l.flatten().depth() <= 1);
        let rebuilt = Layout::from_modes(&l.modes()).unwrap();
        prop_assert_eq!(offsets(&rebuilt), offsets(&l));
        prop_assert_eq!(rebuilt.rank(), l.rank());
        let doubled = l.concat(&l).unwrap();
        prop_assert_eq!(doubled.rank(), 2 * l.rank());
        prop_assert_eq!(doubled.size(), l.size() * l.size());
    }

    #[test]
    fn compact_layouts_are_bijections(shape in layout_gen::arb_layout().prop_map(|l| l.shape().clone())) {
        let col = Layout::col_major(shape.clone()).unwrap();
        let row = Layout::row_major(shape).unwrap();
        let all: Vec<i64> = (0..col.size()).collect();
        prop_assert_eq!(offsets(&col), all.clone()); // first mode fastest
        prop_assert_eq!(sorted_offsets(&row), all);
    }

    #[test]
    fn hostile_indices_are_errors_not_panics(l in arb_layout(), i in any::<i64>()) {
        let in_domain = (0..l.size()).contains(&i);
        prop_assert_eq!(l.eval(i).is_ok(), in_domain);
        prop_assert_eq!(l.coordinate(i).is_ok(), in_domain);
        let _ = l.eval_unbounded(i);
        let _ = l.eval_coord(&flat(&[i, i]));
    }

    #[test]
    fn hostile_shapes_are_errors_not_panics(
        shape in prop::collection::vec(any::<i64>(), 0..4),
        stride in prop::collection::vec(any::<i64>(), 0..4),
    ) {
        let result = Layout::new(flat(&shape), flat(&stride));
        if shape.len() != stride.len() {
            prop_assert!(matches!(result, Err(LayoutError::Incongruent { .. })), "{:?}", result);
        }
        let _ = Layout::col_major(flat(&shape));
        let _ = Layout::row_major(flat(&shape));
    }
}

#[test]
fn column_major_is_the_default_and_row_major_exists() {
    assert_eq!(layout("[4,8]"), layout("[4,8 : 1,4]"));
    assert_eq!(layout("(4,(2,4))").to_string(), "(4,(2,4)):(1,(4,8))");
    assert_eq!(
        Layout::row_major(flat(&[4, 8])).unwrap(),
        layout("[4,8 : 8,1]")
    );
}

#[test]
fn modes_and_errors() {
    let c = layout("[4,(2,4) : 2,(1,8)]");
    assert_eq!((c.rank(), c.depth(), c.size(), c.cosize()), (2, 2, 32, 32));
    assert_eq!(c.mode(0).unwrap(), Layout::leaf(4, 2).unwrap());
    assert!(matches!(
        c.mode(5),
        Err(LayoutError::ModeOutOfRange {
            index: 5,
            rank: 2,
            ..
        })
    ));
    assert!(matches!(
        c.eval(32),
        Err(LayoutError::IndexOutOfRange { .. })
    ));
    let bad = Tuple::Node(vec![leaf(0), flat(&[2, 0])]);
    assert!(matches!(
        c.eval_coord(&bad),
        Err(LayoutError::BadCoordinate { .. })
    ));
    let message = c.eval_coord(&bad).unwrap_err().to_string();
    assert_eq!(
        message,
        "coordinate (0,(2,0)) does not fit shape (4,(2,4)): 2 is outside [0, 2)"
    );
}

#[test]
fn error_messages_name_the_condition_and_the_operands() {
    let incongruent = Layout::new(flat(&[4, 8]), leaf(1)).unwrap_err().to_string();
    assert_eq!(
        incongruent,
        "shape (4,8) and stride 1 are not congruent: they must have the same tree, leaf for leaf"
    );
    let zero = Layout::new(flat(&[4, 0]), flat(&[1, 4]))
        .unwrap_err()
        .to_string();
    assert_eq!(
        zero,
        "shape (4,0) has a mode of size 0: every mode must have size at least 1"
    );
}

/// Layouts with sizes and strides near the limits of `i64`.
fn arb_extreme_layout() -> impl Strategy<Value = Option<Layout>> {
    let sizes = prop::sample::select(vec![1i64, 2, 3, 5, 1 << 20, 1 << 31, 1 << 40, 1 << 61]);
    let strides = prop::sample::select(vec![
        0i64,
        1,
        -1,
        3,
        1 << 20,
        1 << 31,
        -(1 << 40),
        1 << 61,
        i64::MAX / 3,
        i64::MIN / 5,
    ]);
    (
        prop::collection::vec(sizes, 1..4),
        prop::collection::vec(strides, 3),
    )
        .prop_map(|(shape, stride)| {
            let stride = stride[..shape.len()].to_vec();
            Layout::new(flat(&shape), flat(&stride)).ok()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Every algebra function returns, Ok or Err, on layouts near the limits
    /// of i64 (debug builds panic on any unchecked overflow).
    #[test]
    fn the_algebra_never_panics(a in arb_extreme_layout(), b in arb_extreme_layout(), i in any::<i64>()) {
        use graphene::layout::*;
        let (Some(a), Some(b)) = (a, b) else { return Ok(()) };
        let _ = (coalesce(&a), filter(&a), right_inverse(&a), left_inverse(&a));
        let _ = composition(&a, &b);
        let _ = complement(&a, b.size());
        let _ = complement(&a, b.shape().clone());
        let tiler = Tiler::Layout(b.clone());
        let _ = (logical_divide(&a, &tiler), zipped_divide(&a, &tiler), tiled_divide(&a, &tiler));
        let _ = (logical_product(&a, &tiler), blocked_product(&a, &b), raked_product(&a, &b));
        let modes = vec![tiler.clone(); a.rank()];
        let _ = tile(&a, &modes);
        let _ = reshape(&a, &b);
        let _ = digit_coordinates(&a, i);
        let _ = (a.eval_unbounded(i), a.eval(i), a.coordinate(i), a.cosize());
        let _ = a.eval_coord(&flat(&[i, i, i]));
        let sw = SwizzledLayout::new(Swizzle::new(3, 3, 3).unwrap(), i, a.clone());
        let _ = (sw.eval(0), sw.compose(&b), sw.shifted(i));
        let _ = (int_tuple::prefix_product(a.shape()), int_tuple::suffix_product(a.shape()));
        let _ = (int_tuple::shape_div(a.shape(), b.shape()), int_tuple::ceil_div(a.shape(), b.shape()));
        let _ = int_tuple::crd2idx(&flat(&[i, i, i]), a.shape());
        let _ = int_tuple::inner_product(a.shape(), a.stride());
    }
}
