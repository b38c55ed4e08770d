//! Stage 0, the algebra: the operations that look at a layout's image —
//! `filter` (the injective part), `complement` (the layout that fills the
//! holes), and the right and left inverses.

use super::composition::coalesce_pairs;
use super::error::{LayoutError, LayoutResult, mul};
use super::int_tuple::{self, IntTuple};
use super::layout_value::Layout;
use super::tuple::Tuple;

/// The layout without its stride-0 and size-1 modes, coalesced: the
/// injective part of `L` (when `L` has no other repeated offsets).
///
/// Postcondition: the image of the result is the image of `L`; `1:0` when
/// nothing is left.
///
/// ```
/// use graphene::layout::{Layout, filter};
/// let l: Layout = "(4,3,2):(1,0,4)".parse().unwrap();
/// assert_eq!(filter(&l).to_string(), "8:1");
/// ```
pub fn filter(layout: &Layout) -> Layout {
    let pairs = filtered_pairs(layout);
    // A sub-list of valid modes, coalesced: sizes and reaches only shrink.
    Layout::from_valid_pairs(&pairs)
}

fn filtered_pairs(layout: &Layout) -> Vec<(i64, i64)> {
    coalesce_pairs(layout.leaves().into_iter().filter(|&(_, d)| d != 0))
}

/// The complement of `A` within the codomain bound `cotarget` (an integer,
/// or a shape whose modes are rounded up one by one as in CuTe): the layout
/// `C` of the "repetitions" of `A`, so that `(A, C)` covers `[0, M)`.
///
/// Postconditions, for `A' = filter(A)`:
/// - `C` has strictly increasing strides (and depth ≤ 1);
/// - `C(i) ∉ image(A)` for `0 < i < size(C)`: the images meet only at 0;
/// - `(A', C)` is a bijection onto `[0, size(A')·size(C))`, and
///   `size(A')·size(C) ≥ M` for an integer cotarget `M`.
///
/// Errors: a negative stride; modes of `A` that overlap or interleave, or
/// leave a gap that is not a whole multiple of what lies below it — the
/// sorted strides must each be a multiple of the previous stride × shape
/// (CuTe floors this quotient and returns a complement that does not
/// cover; we refuse).
///
/// ```
/// use graphene::layout::{Layout, complement};
/// let a: Layout = "4:2".parse().unwrap();
/// assert_eq!(complement(&a, 24).unwrap().to_string(), "(2,3):(1,8)");
/// let b: Layout = "(2,2):(1,6)".parse().unwrap();
/// assert_eq!(complement(&b, 24).unwrap().to_string(), "(3,2):(2,12)");
/// ```
pub fn complement(layout: &Layout, cotarget: impl Into<IntTuple>) -> LayoutResult<Layout> {
    let cotarget = cotarget.into();
    let failure = |condition: String| LayoutError::Complement {
        layout: layout.to_string(),
        cotarget: cotarget.to_string(),
        condition,
    };
    if let Some(&&bad) = cotarget.leaves().iter().find(|&&&m| m < 1) {
        return Err(failure(format!(
            "the codomain bound {bad} must be at least 1"
        )));
    }
    let mut modes = filtered_pairs(layout);
    if modes == [(1, 0)] {
        let size = int_tuple::product(&cotarget)?;
        return Ok(Layout::from_valid_pairs(&coalesce_pairs([(size, 1)])));
    }
    if let Some(&(_, stride)) = modes.iter().find(|&&(_, d)| d < 0) {
        return Err(LayoutError::NegativeStride {
            operation: "complement",
            layout: layout.to_string(),
            stride,
        });
    }
    // Stable: equal strides keep their order, as CuTe's repeated minimum does.
    modes.sort_by_key(|&(_, d)| d);
    let mut result = Vec::with_capacity(modes.len() + 1);
    let mut span = 1i64;
    for &(s, d) in &modes {
        if d % span != 0 {
            return Err(failure(format!(
                "stride {d} of mode {s}:{d} is not a multiple of {span}, the extent of the \
                 modes with smaller strides (the modes overlap, interleave, or leave a gap \
                 that cannot be filled by a layout)"
            )));
        }
        result.push((d / span, span));
        span = mul(d, s, "complement stride")?;
    }
    let rest = int_tuple::product(&int_tuple::ceil_div(&cotarget, &Tuple::Leaf(span))?)?;
    result.push((rest, span));
    Layout::from_pairs(&coalesce_pairs(result))
}

/// The right inverse: the largest `R` such that `L(R(i)) == i` for every
/// `i < size(R)` — the contiguous run `[0, size(R))` of `L`'s image, read
/// back as indices.
///
/// Postconditions: `L(R(i)) == i` for `i < size(R)`; `depth(R) ≤ 1`;
/// `R` is `1:0` when `L(0) … ` starts no run (e.g. all strides ≠ 1).
///
/// ```
/// use graphene::layout::{Layout, right_inverse};
/// let l: Layout = "(4,2):(2,1)".parse().unwrap();
/// assert_eq!(right_inverse(&l).to_string(), "(2,4):(4,1)");
/// ```
pub fn right_inverse(layout: &Layout) -> Layout {
    let modes = coalesce_pairs(layout.leaves());
    let index_strides = exclusive_products(&modes);
    let mut order: Vec<usize> = (0..modes.len()).collect();
    order.sort_by_key(|&i| modes[i].1);
    let mut result = vec![(1i64, 0i64)];
    let mut expected = 1i64;
    for i in order {
        let (s, d) = modes[i];
        if d == expected {
            result.push((s, index_strides[i]));
            // Bounded by the size of L: the run never passes its last offset.
            match s.checked_mul(d) {
                Some(next) => expected = next,
                None => break,
            }
        }
    }
    Layout::from_valid_pairs(&coalesce_pairs(result))
}

/// The left inverse (CuTe's quasi-inverse): `R` with `R(L(i)) == i` for
/// every `i < size(L)` when `L` is injective, and `L(R(L(i))) == L(i)` when
/// `L` repeats offsets only through stride-0 modes.
///
/// Errors: a negative stride; sorted non-zero strides where one is not a
/// multiple of the previous (the modes interleave), or is below the previous
/// stride × size (the modes overlap). CuTe checks only the first rule and
/// returns, for some overlapping layouts such as `(2,3):(12,6)`, a layout
/// that breaks its own postcondition; we refuse those.
///
/// ```
/// use graphene::layout::{Layout, left_inverse};
/// let l: Layout = "(2,2):(3,6)".parse().unwrap();
/// let inverse = left_inverse(&l).unwrap();
/// for i in 0..4 {
///     assert_eq!(inverse.eval(l.eval(i).unwrap()).unwrap(), i);
/// }
/// ```
pub fn left_inverse(layout: &Layout) -> LayoutResult<Layout> {
    let modes = coalesce_pairs(layout.leaves());
    if let Some(&(_, stride)) = modes.iter().find(|&&(_, d)| d < 0) {
        return Err(LayoutError::NegativeStride {
            operation: "left inverse",
            layout: layout.to_string(),
            stride,
        });
    }
    let index_strides = exclusive_products(&modes);
    let mut order: Vec<usize> = (0..modes.len()).collect();
    order.sort_by_key(|&i| modes[i].1);
    let mut shapes: Vec<i64> = Vec::new();
    let mut strides: Vec<i64> = vec![0];
    let mut covered = 1i64;
    let mut span = 1i64;
    for &i in &order {
        let (s, d) = modes[i];
        if d == 0 {
            continue;
        }
        let condition = if d % covered != 0 {
            Some(format!(
                "stride {d} is not a multiple of {covered}, the stride below it (the modes \
                 interleave)"
            ))
        } else if d < span {
            Some(format!(
                "stride {d} is below {span}, the extent of the modes with smaller strides (the \
                 modes overlap, so offsets repeat)"
            ))
        } else {
            None
        };
        if let Some(condition) = condition {
            return Err(LayoutError::LeftInverse {
                layout: layout.to_string(),
                condition,
            });
        }
        shapes.push(d / covered);
        strides.push(index_strides[i]);
        covered = d;
        // At most the cosize, which fits.
        span = d.saturating_mul(s);
    }
    let last = order.last().map_or(1, |&i| modes[i].0);
    shapes.push(last);
    Layout::from_pairs(&coalesce_pairs(shapes.into_iter().zip(strides)))
}

/// Exclusive prefix products of the shapes: the 1-D index stride of each mode.
fn exclusive_products(modes: &[(i64, i64)]) -> Vec<i64> {
    let mut running = 1i64;
    modes
        .iter()
        .map(|&(s, _)| {
            let current = running;
            // The product of all shapes is the size, which fits.
            running = running.saturating_mul(s);
            current
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(text: &str) -> Layout {
        text.parse().unwrap()
    }

    #[test]
    fn cute_documentation_complements() {
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
                "{a}"
            );
        }
    }

    #[test]
    fn complement_of_nothing_is_the_codomain() {
        assert_eq!(complement(&layout("4:0"), 6).unwrap().to_string(), "6:1");
        assert_eq!(complement(&layout("1:5"), 1).unwrap().to_string(), "1:0");
    }

    #[test]
    fn shape_cotargets_round_up_per_mode() {
        // As in CuTe: ceil_div((3,4), 2) = (2,4), so the rest has size 8.
        let c = complement(&layout("2:1"), Tuple::Node(vec![3.into(), 4.into()])).unwrap();
        assert_eq!(c.to_string(), "8:2");
    }

    #[test]
    fn non_complementable_layouts_are_errors() {
        for a in ["(2,2):(1,1)", "(2,2):(2,3)", "(2,2):(2,5)"] {
            assert!(
                matches!(
                    complement(&layout(a), 24),
                    Err(LayoutError::Complement { .. })
                ),
                "{a}"
            );
        }
        assert!(matches!(
            complement(&layout("4:-1"), 8),
            Err(LayoutError::NegativeStride { .. })
        ));
        assert!(complement(&layout("4:1"), 0).is_err());
    }

    #[test]
    fn inverses() {
        assert_eq!(
            right_inverse(&layout("(4,2):(2,1)")).to_string(),
            "(2,4):(4,1)"
        );
        assert_eq!(right_inverse(&layout("4:2")).to_string(), "1:0");
        assert_eq!(right_inverse(&layout("(2,4):(1,3)")).to_string(), "2:1");
        assert_eq!(
            left_inverse(&layout("(2,4):(4,1)")).unwrap().to_string(),
            "(4,2):(2,1)"
        );
        assert!(matches!(
            left_inverse(&layout("(2,2):(2,3)")),
            Err(LayoutError::LeftInverse { .. })
        ));
        assert!(left_inverse(&layout("4:-1")).is_err());
        assert!(matches!(
            left_inverse(&layout("(2,3):(12,6)")),
            Err(LayoutError::LeftInverse { .. })
        ));
        // Repeats through a stride-0 mode are fine.
        assert_eq!(
            left_inverse(&layout("(3,4):(0,1)")).unwrap().to_string(),
            "4:3"
        );
    }
}
