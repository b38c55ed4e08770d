//! Stage 0, the algebra: integer tuples (`IntTuple`), the material of shapes,
//! strides and coordinates, with CuTe's integer helpers. All arithmetic is
//! checked: an overflow is a [`LayoutError::Overflow`], never a wrap or a panic.

use super::error::{LayoutError, LayoutResult, mul};
use super::tuple::Tuple;

/// A hierarchical tuple of `i64`: a shape, a stride or a coordinate.
///
/// Rule: a *shape* has every leaf ≥ 1; a *stride* is congruent to its shape
/// and may hold any integer; a *coordinate* into a shape is congruent to it, or
/// coarser (a leaf standing for a whole sub-tuple is a 1-D index into it).
pub type IntTuple = Tuple<i64>;

/// A leaf tuple.
///
/// ```
/// use graphene::layout::int_tuple::leaf;
/// assert_eq!(leaf(8).to_string(), "8");
/// ```
pub fn leaf(value: i64) -> IntTuple {
    Tuple::Leaf(value)
}

/// A flat tuple `(v0, v1, …)` of leaves.
///
/// ```
/// use graphene::layout::int_tuple::flat;
/// assert_eq!(flat(&[4, 8]).to_string(), "(4,8)");
/// ```
pub fn flat(values: &[i64]) -> IntTuple {
    Tuple::Node(values.iter().copied().map(Tuple::Leaf).collect())
}

/// Checks that `shape` is a valid shape (every leaf ≥ 1, product fits in i64)
/// and returns its size.
///
/// ```
/// use graphene::layout::int_tuple::{check_shape, flat};
/// assert_eq!(check_shape(&flat(&[4, 8])).unwrap(), 32);
/// assert!(check_shape(&flat(&[4, 0])).is_err());
/// ```
pub fn check_shape(shape: &IntTuple) -> LayoutResult<i64> {
    if let Some(&&bad) = shape.leaves().iter().find(|&&&s| s < 1) {
        return Err(LayoutError::NonPositiveSize {
            shape: shape.to_string(),
            size: bad,
        });
    }
    product(shape)
}

/// The product of the leaves (the size of a shape); 1 for `()`.
///
/// ```
/// use graphene::layout::int_tuple::{product, flat};
/// assert_eq!(product(&flat(&[4, 2, 3])).unwrap(), 24);
/// ```
pub fn product(t: &IntTuple) -> LayoutResult<i64> {
    t.leaves()
        .into_iter()
        .try_fold(1i64, |acc, &v| mul(acc, v, "product"))
        .map_err(|_| LayoutError::Overflow {
            operation: "product",
            operands: t.to_string(),
        })
}

/// The sum of the leaves; 0 for `()`.
///
/// ```
/// use graphene::layout::int_tuple::{sum, flat};
/// assert_eq!(sum(&flat(&[4, 2, 3])).unwrap(), 9);
/// ```
pub fn sum(t: &IntTuple) -> LayoutResult<i64> {
    t.leaves()
        .into_iter()
        .try_fold(0i64, |acc, &v| acc.checked_add(v))
        .ok_or_else(|| LayoutError::Overflow {
            operation: "sum",
            operands: t.to_string(),
        })
}

/// `Σ a_i · b_i` over the leaves of two congruent tuples.
///
/// ```
/// use graphene::layout::int_tuple::{inner_product, flat};
/// assert_eq!(inner_product(&flat(&[1, 2]), &flat(&[3, 4])).unwrap(), 11);
/// ```
pub fn inner_product(a: &IntTuple, b: &IntTuple) -> LayoutResult<i64> {
    if !a.is_congruent(b) {
        return Err(LayoutError::Incongruent {
            shape: a.to_string(),
            stride: b.to_string(),
        });
    }
    a.leaves()
        .into_iter()
        .zip(b.leaves())
        .try_fold(0i64, |acc, (&x, &y)| x.checked_mul(y)?.checked_add(acc))
        .ok_or_else(|| LayoutError::Overflow {
            operation: "inner product",
            operands: format!("{a} and {b}"),
        })
}

/// Exclusive prefix products of the leaves, left to right, congruent to `t`:
/// the compact column-major strides of shape `t` (first mode fastest).
///
/// ```
/// use graphene::layout::int_tuple::prefix_product;
/// let shape: graphene::layout::IntTuple = "(4,(2,3))".parse::<graphene::layout::Layout>()
///     .unwrap().shape().clone();
/// assert_eq!(prefix_product(&shape).unwrap().to_string(), "(1,(4,8))");
/// ```
pub fn prefix_product(t: &IntTuple) -> LayoutResult<IntTuple> {
    let leaves: Vec<i64> = t.leaves().into_iter().copied().collect();
    let mut products = Vec::with_capacity(leaves.len());
    let mut running = 1i64;
    for (i, &v) in leaves.iter().enumerate() {
        products.push(running);
        if i + 1 < leaves.len() {
            running = mul(running, v, "prefix product")?;
        }
    }
    Ok(rebuild(t, products))
}

/// Exclusive products of the leaves taken right to left, congruent to `t`:
/// the compact row-major strides of shape `t` (last leaf fastest).
///
/// ```
/// use graphene::layout::int_tuple::{suffix_product, flat};
/// assert_eq!(suffix_product(&flat(&[4, 8])).unwrap().to_string(), "(8,1)");
/// ```
pub fn suffix_product(t: &IntTuple) -> LayoutResult<IntTuple> {
    let leaves: Vec<i64> = t.leaves().into_iter().copied().collect();
    let mut products = vec![1i64; leaves.len()];
    let mut running = 1i64;
    for i in (0..leaves.len()).rev() {
        products[i] = running;
        if i > 0 {
            running = mul(running, leaves[i], "suffix product")?;
        }
    }
    Ok(rebuild(t, products))
}

/// The tree of `profile` filled with `values` (which has one value per leaf).
pub(crate) fn rebuild(profile: &IntTuple, values: Vec<i64>) -> IntTuple {
    let count = values.len();
    debug_assert_eq!(count, profile.leaf_count());
    profile
        .rebuild_with(&mut values.into_iter())
        .unwrap_or_else(|| Tuple::Node(Vec::new()))
}

/// Whether `a` and `b` have the same tree.
///
/// ```
/// use graphene::layout::int_tuple::{congruent, flat, leaf};
/// assert!(congruent(&flat(&[4, 8]), &flat(&[1, 4])));
/// assert!(!congruent(&flat(&[4, 8]), &leaf(32)));
/// ```
pub fn congruent(a: &IntTuple, b: &IntTuple) -> bool {
    a.is_congruent(b)
}

/// CuTe's partial order "`a` is at most as deep as `b`": equal at every node
/// of `a`, and a leaf of `a` may stand for a whole sub-tree of `b`.
///
/// ```
/// use graphene::layout::int_tuple::{weakly_congruent, flat, leaf};
/// assert!(weakly_congruent(&leaf(7), &flat(&[2, 3])));
/// assert!(!weakly_congruent(&flat(&[2, 3]), &leaf(6)));
/// ```
pub fn weakly_congruent(a: &IntTuple, b: &IntTuple) -> bool {
    match (a, b) {
        (Tuple::Leaf(_), _) => true,
        (Tuple::Node(_), Tuple::Leaf(_)) => false,
        (Tuple::Node(x), Tuple::Node(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| weakly_congruent(p, q))
        }
    }
}

/// CuTe's "shape `a` is compatible with shape `b`": every coordinate of `a` is
/// also a coordinate of `b`, i.e. `a` is weakly congruent to `b` and each leaf
/// of `a` equals the size of the sub-tree of `b` it stands for.
///
/// ```
/// use graphene::layout::int_tuple::{compatible, flat, leaf};
/// assert!(compatible(&leaf(6), &flat(&[2, 3])));
/// assert!(!compatible(&leaf(5), &flat(&[2, 3])));
/// ```
pub fn compatible(a: &IntTuple, b: &IntTuple) -> bool {
    match (a, b) {
        (Tuple::Leaf(x), _) => product(b).is_ok_and(|size| size == *x),
        (Tuple::Node(_), Tuple::Leaf(_)) => false,
        (Tuple::Node(x), Tuple::Node(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| compatible(p, q))
        }
    }
}

fn positive_divisor(operation: &'static str, a: &IntTuple, b: i64) -> LayoutResult<()> {
    if b < 1 {
        return Err(LayoutError::Divisibility {
            operation,
            lhs: a.to_string(),
            rhs: b.to_string(),
            condition: "the divisor must be at least 1".to_string(),
        });
    }
    Ok(())
}

/// CuTe's `ceil_div` of shapes. Tuple by tuple: element-wise, missing modes of
/// `b` count as 1 (so `rank(a) ≥ rank(b)`). Tuple by integer: the divisor is
/// folded left to right (`ceil_div((4,5,6), 40) = (1,1,3)`). Integer by tuple:
/// by the product of `b`. Integers: `⌈a/b⌉`.
///
/// Postcondition: for an integer `b`, `product(result) · b ≥ product(a)`.
///
/// ```
/// use graphene::layout::int_tuple::{ceil_div, flat, leaf};
/// assert_eq!(ceil_div(&flat(&[4, 5, 6]), &leaf(40)).unwrap().to_string(), "(1,1,3)");
/// assert_eq!(ceil_div(&leaf(7), &leaf(2)).unwrap(), leaf(4));
/// ```
pub fn ceil_div(a: &IntTuple, b: &IntTuple) -> LayoutResult<IntTuple> {
    match (a, b) {
        (Tuple::Node(xs), Tuple::Node(ys)) => {
            if ys.len() > xs.len() {
                return Err(LayoutError::Divisibility {
                    operation: "ceil_div",
                    lhs: a.to_string(),
                    rhs: b.to_string(),
                    condition: "the divisor has more modes than the dividend".to_string(),
                });
            }
            let one = Tuple::Leaf(1);
            xs.iter()
                .enumerate()
                .map(|(i, x)| ceil_div(x, ys.get(i).unwrap_or(&one)))
                .collect::<LayoutResult<Vec<_>>>()
                .map(Tuple::Node)
        }
        (Tuple::Node(_), Tuple::Leaf(d)) => {
            positive_divisor("ceil_div", a, *d)?;
            check_shape(a)?;
            fold_divide(a, *d, &mut |x, y| Ok(ceil_div_int(x, y)))
        }
        (Tuple::Leaf(_), Tuple::Node(_)) => ceil_div(a, &Tuple::Leaf(product(b)?)),
        (Tuple::Leaf(x), Tuple::Leaf(d)) => {
            positive_divisor("ceil_div", a, *d)?;
            Ok(Tuple::Leaf(ceil_div_int(*x, *d)))
        }
    }
}

/// `⌈x / d⌉` for `d ≥ 1`, without overflow.
pub(crate) fn ceil_div_int(x: i64, d: i64) -> i64 {
    x.div_euclid(d) + i64::from(x.rem_euclid(d) != 0)
}

/// Folds the integer divisor `d` over the modes of the tuple `a` left to
/// right: mode i is divided by what is left of `d`, and what is left of `d`
/// is divided by mode i.
fn fold_divide(
    a: &IntTuple,
    d: i64,
    divide: &mut impl FnMut(i64, i64) -> LayoutResult<i64>,
) -> LayoutResult<IntTuple> {
    let mut rest = d;
    fold_divide_rec(a, &mut rest, divide)
}

fn fold_divide_rec(
    a: &IntTuple,
    rest: &mut i64,
    divide: &mut impl FnMut(i64, i64) -> LayoutResult<i64>,
) -> LayoutResult<IntTuple> {
    match a {
        Tuple::Leaf(x) => {
            let quotient = divide(*x, *rest)?;
            *rest = divide(*rest, *x)?;
            Ok(Tuple::Leaf(quotient))
        }
        Tuple::Node(modes) => modes
            .iter()
            .map(|mode| fold_divide_rec(mode, rest, divide))
            .collect::<LayoutResult<Vec<_>>>()
            .map(Tuple::Node),
    }
}

/// CuTe's `shape_div`: like [`ceil_div`], but each integer division must be
/// exact one way or the other (`a % b == 0` or `b % a == 0`), so that the
/// result divides the shape without remainder (`shape_div((4,5,6), 40) =
/// (1,1,3)`; `shape_div(6, 4)` is an error).
///
/// ```
/// use graphene::layout::int_tuple::{shape_div, flat, leaf};
/// assert_eq!(shape_div(&flat(&[4, 5, 6]), &leaf(40)).unwrap().to_string(), "(1,1,3)");
/// assert!(shape_div(&leaf(6), &leaf(4)).is_err());
/// ```
pub fn shape_div(a: &IntTuple, b: &IntTuple) -> LayoutResult<IntTuple> {
    let exact = |x: i64, y: i64| -> LayoutResult<i64> {
        if x % y == 0 || y % x == 0 {
            Ok(ceil_div_int(x, y))
        } else {
            Err(LayoutError::Divisibility {
                operation: "shape_div",
                lhs: a.to_string(),
                rhs: b.to_string(),
                condition: format!("neither of {x} and {y} divides the other"),
            })
        }
    };
    match (a, b) {
        (Tuple::Node(xs), Tuple::Node(ys)) => {
            if xs.len() != ys.len() {
                return Err(LayoutError::Divisibility {
                    operation: "shape_div",
                    lhs: a.to_string(),
                    rhs: b.to_string(),
                    condition: "the two tuples have different ranks".to_string(),
                });
            }
            xs.iter()
                .zip(ys)
                .map(|(x, y)| shape_div(x, y))
                .collect::<LayoutResult<Vec<_>>>()
                .map(Tuple::Node)
        }
        (Tuple::Node(_), Tuple::Leaf(d)) => {
            positive_divisor("shape_div", a, *d)?;
            check_shape(a)?;
            let mut exact = exact;
            fold_divide(a, *d, &mut exact)
        }
        (Tuple::Leaf(_), Tuple::Node(_)) => shape_div(a, &Tuple::Leaf(product(b)?)),
        (Tuple::Leaf(x), Tuple::Leaf(d)) => {
            positive_divisor("shape_div", a, *d)?;
            if *x < 1 {
                return Err(LayoutError::NonPositiveSize {
                    shape: a.to_string(),
                    size: *x,
                });
            }
            exact(*x, *d).map(Tuple::Leaf)
        }
    }
}

fn bad_coordinate(coord: &IntTuple, shape: &IntTuple, reason: impl Into<String>) -> LayoutError {
    LayoutError::BadCoordinate {
        coord: coord.to_string(),
        shape: shape.to_string(),
        reason: reason.into(),
    }
}

/// The colexicographic 1-D index of `coord` in `shape` (first mode fastest).
/// `coord` may be coarser than `shape`: a leaf standing for a sub-tuple is
/// already a 1-D index into it.
///
/// Postcondition: `idx2crd(crd2idx(c, s), s)` is `c` refined to the tree of `s`.
///
/// ```
/// use graphene::layout::int_tuple::{crd2idx, flat, IntTuple};
/// use graphene::layout::Tuple::{Leaf, Node};
/// let shape: IntTuple = Node(vec![Leaf(4), Node(vec![Leaf(2), Leaf(4)])]);
/// assert_eq!(crd2idx(&flat(&[1, 3]), &shape).unwrap(), 13);
/// ```
pub fn crd2idx(coord: &IntTuple, shape: &IntTuple) -> LayoutResult<i64> {
    match (coord, shape) {
        (Tuple::Leaf(c), _) => {
            let size = product(shape)?;
            if (0..size).contains(c) {
                Ok(*c)
            } else {
                Err(bad_coordinate(
                    coord,
                    shape,
                    format!("{c} is outside [0, {size})"),
                ))
            }
        }
        (Tuple::Node(_), Tuple::Leaf(_)) => Err(bad_coordinate(
            coord,
            shape,
            "a tuple coordinate needs a tuple mode",
        )),
        (Tuple::Node(cs), Tuple::Node(ss)) => {
            if cs.len() != ss.len() {
                return Err(bad_coordinate(
                    coord,
                    shape,
                    format!("{} components for {} modes", cs.len(), ss.len()),
                ));
            }
            let mut index = 0i64;
            let mut scale = 1i64;
            for (c, s) in cs.iter().zip(ss) {
                let sub = crd2idx(c, s).map_err(|error| match error {
                    LayoutError::BadCoordinate { reason, .. } => {
                        bad_coordinate(coord, shape, reason)
                    }
                    other => other,
                })?;
                index = sub
                    .checked_mul(scale)
                    .and_then(|term| term.checked_add(index))
                    .ok_or_else(|| LayoutError::Overflow {
                        operation: "index",
                        operands: format!("{coord} in {shape}"),
                    })?;
                scale = mul(scale, product(s)?, "index")?;
            }
            Ok(index)
        }
    }
}

/// The coordinate, congruent to `shape`, of the 1-D index `index`
/// (colexicographic: first mode fastest).
///
/// ```
/// use graphene::layout::int_tuple::{idx2crd, flat};
/// assert_eq!(idx2crd(13, &flat(&[4, 8])).unwrap().to_string(), "(1,3)");
/// ```
pub fn idx2crd(index: i64, shape: &IntTuple) -> LayoutResult<IntTuple> {
    let size = check_shape(shape)?;
    if !(0..size).contains(&index) {
        return Err(bad_coordinate(
            &Tuple::Leaf(index),
            shape,
            format!("{index} is outside [0, {size})"),
        ));
    }
    let digits: Vec<i64> = shape
        .leaves()
        .into_iter()
        .scan(index, |rest, &s| {
            let digit = *rest % s;
            *rest /= s;
            Some(digit)
        })
        .collect();
    Ok(rebuild(shape, digits))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Tuple::{Leaf, Node};

    #[test]
    fn prefix_and_suffix_products_follow_the_tree() {
        let shape = Node(vec![Leaf(2), Node(vec![Leaf(3), Leaf(4)])]);
        assert_eq!(prefix_product(&shape).unwrap().to_string(), "(1,(2,6))");
        assert_eq!(suffix_product(&shape).unwrap().to_string(), "(12,(4,1))");
        assert_eq!(prefix_product(&Leaf(9)).unwrap(), Leaf(1));
        assert_eq!(prefix_product(&Node(vec![])).unwrap(), Node(vec![]));
    }

    #[test]
    fn products_overflow_into_errors() {
        let huge = flat(&[i64::MAX / 2, 3]);
        assert!(matches!(product(&huge), Err(LayoutError::Overflow { .. })));
        assert!(matches!(
            suffix_product(&flat(&[3, i64::MAX / 2, 3])),
            Err(LayoutError::Overflow { .. })
        ));
        assert!(inner_product(&flat(&[i64::MAX, 1]), &flat(&[2, 1])).is_err());
    }

    #[test]
    fn shape_div_folds_and_checks_divisibility() {
        assert_eq!(
            shape_div(&flat(&[4, 5, 6]), &leaf(40)).unwrap(),
            flat(&[1, 1, 3])
        );
        assert_eq!(shape_div(&leaf(4), &leaf(8)).unwrap(), leaf(1));
        assert_eq!(
            shape_div(&flat(&[8, 6]), &flat(&[2, 3])).unwrap(),
            flat(&[4, 2])
        );
        assert!(shape_div(&flat(&[4, 6]), &leaf(3)).is_err());
        assert!(shape_div(&leaf(4), &leaf(0)).is_err());
    }

    #[test]
    fn ceil_div_rounds_up_per_mode() {
        assert_eq!(ceil_div(&flat(&[3, 4]), &leaf(2)).unwrap(), flat(&[2, 4]));
        assert_eq!(
            ceil_div(&flat(&[6, 4]), &flat(&[4])).unwrap(),
            flat(&[2, 4])
        );
        assert!(ceil_div(&flat(&[6]), &flat(&[4, 2])).is_err());
        assert_eq!(ceil_div_int(-3, 2), -1);
        assert_eq!(ceil_div_int(i64::MAX, 1), i64::MAX);
    }

    #[test]
    fn coordinates_round_trip_through_indices() {
        let shape = Node(vec![Leaf(3), Node(vec![Leaf(2), Leaf(4)])]);
        for index in 0..24 {
            let coord = idx2crd(index, &shape).unwrap();
            assert!(coord.is_congruent(&shape));
            assert_eq!(crd2idx(&coord, &shape).unwrap(), index);
        }
        // A leaf stands for the whole sub-tuple it replaces.
        assert_eq!(crd2idx(&flat(&[2, 5]), &shape).unwrap(), 2 + 5 * 3);
        assert!(crd2idx(&flat(&[3, 0]), &shape).is_err());
        assert!(crd2idx(&flat(&[0, 8]), &shape).is_err());
        assert!(crd2idx(&flat(&[0]), &shape).is_err());
        assert!(idx2crd(24, &shape).is_err());
        assert!(idx2crd(-1, &shape).is_err());
    }

    #[test]
    fn congruence_relations() {
        let a = Node(vec![Leaf(6), Leaf(4)]);
        let b = Node(vec![Node(vec![Leaf(2), Leaf(3)]), Leaf(4)]);
        assert!(weakly_congruent(&a, &b));
        assert!(!weakly_congruent(&b, &a));
        assert!(compatible(&a, &b));
        assert!(!compatible(&Node(vec![Leaf(5), Leaf(4)]), &b));
        assert!(!congruent(&a, &b));
    }

    #[test]
    fn shapes_must_be_positive() {
        assert!(matches!(
            check_shape(&flat(&[4, 0])),
            Err(LayoutError::NonPositiveSize { size: 0, .. })
        ));
        assert_eq!(check_shape(&Node(vec![])).unwrap(), 1);
    }
}
