//! Stage 0, the algebra: `coalesce` (the simplest layout with the same
//! function) and `composition` (`(A ∘ B)(c) = A(B(c))` as a layout), the two
//! operations every other one is built from.
//!
//! Composition follows CuTe's algorithm: the left operand is coalesced, the
//! right one is distributed over its modes, and each right leaf `n:d` is
//! "divided out" of the left modes. Where CuTe only states its divisibility
//! conditions (and, for values it cannot see at compile time, skips them),
//! we check every condition that the postcondition needs, and one CuTe does
//! not state: the right operand's modes must not add up across a left mode's
//! boundary (a carry there would break `A(B0(c0) + B1(c1)) = A(B0(c0)) +
//! A(B1(c1))`). See `docs/layout.md`.

use super::error::{LayoutError, LayoutResult, mul, overflow};
use super::int_tuple::{IntTuple, ceil_div_int};
use super::layout_value::Layout;
use super::tuple::Tuple;

/// The layout with the fewest modes that has the same function on the domain.
///
/// Postconditions: `size(result) == size(L)`; `depth(result) ≤ 1`;
/// `result(i) == L(i)` for every `i < size(L)`. Size-1 modes are dropped and
/// neighbours with `shape_0 · stride_0 == stride_1` merge; a layout of size 1
/// becomes `1:0`.
///
/// ```
/// use graphene::layout::{Layout, coalesce};
/// let l: Layout = "(2,(1,6)):(1,(6,2))".parse().unwrap();
/// assert_eq!(coalesce(&l).to_string(), "12:1");
/// ```
pub fn coalesce(layout: &Layout) -> Layout {
    // Merging keeps the size and `Σ (s−1)|d|`, so the result is valid.
    Layout::from_valid_pairs(&coalesce_pairs(layout.leaves()))
}

/// Coalesces `(shape, stride)` pairs: skip size 1, merge `s0·d0 == d1`.
/// Never empty: an all-size-1 list gives `[(1, 0)]`.
pub(crate) fn coalesce_pairs(pairs: impl IntoIterator<Item = (i64, i64)>) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (s, d) in pairs {
        if s == 1 {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.0.checked_mul(last.1) == Some(d) => last.0 *= s,
            Some(_) | None => out.push((s, d)),
        }
    }
    if out.is_empty() {
        out.push((1, 0));
    }
    out
}

/// Coalesces while keeping the function *outside* the domain too, as CuTe's
/// `coalesce_x`: the last pair is the unbounded one of
/// [`Layout::eval_unbounded`], so it is never dropped, and only merged into
/// a neighbour whose extension it continues.
fn coalesce_unbounded(layout: &Layout) -> Vec<(i64, i64)> {
    let mut leaves = layout.leaves();
    let (_, last_stride) = leaves.pop().unwrap_or((1, 0));
    let mut out = coalesce_pairs(leaves);
    if out == [(1, 0)] {
        out.clear();
    }
    // Size 2 stands for "at least two": the last mode's size is never read.
    match out.last_mut() {
        Some(last) if last.0.checked_mul(last.1) == Some(last_stride) => last.0 *= 2,
        Some(_) | None => out.push((2, last_stride)),
    }
    out
}

/// How far the right operand's leaves reach into each bounded mode of the
/// left operand, to check that they never carry into the next mode.
struct Reach {
    /// Per bounded left mode: the largest digit the positive leaves add up to.
    positive: Vec<i64>,
    /// Per bounded left mode: the same for negative leaves (as a magnitude).
    negative: Vec<i64>,
    /// Some positive (negative) leaf of size > 1 exists.
    any_positive: bool,
    any_negative: bool,
    /// Some positive (negative) leaf reaches a bounded mode.
    positive_bounded: bool,
    negative_bounded: bool,
}

/// The layout `A ∘ B`: `B`'s coordinates in, `A`'s offsets out.
///
/// Postconditions: the shape of the result is compatible with `B`'s (each
/// leaf of `B` becomes a leaf or a tuple of the same size); `result(c) ==
/// A(B(c))` for every coordinate `c` of `B`, where `A` is extended past its
/// size as in [`Layout::eval_unbounded`].
///
/// Errors (the operands and the failing mode are named): a stride of `B`
/// that neither divides nor is divisible by the mode of `A` it lands in; a
/// shape of `B` that does not split evenly across modes of `A`; two modes of
/// `B` whose digits add up past a mode of `A` (the sum would carry); leaves of
/// both signs meeting in a bounded mode of `A`; overflow.
///
/// ```
/// use graphene::layout::{Layout, composition};
/// let a: Layout = "(6,2):(8,2)".parse().unwrap();
/// let b: Layout = "(4,3):(3,1)".parse().unwrap();
/// assert_eq!(composition(&a, &b).unwrap().to_string(), "((2,2),3):((24,2),8)");
/// ```
pub fn composition(lhs: &Layout, rhs: &Layout) -> LayoutResult<Layout> {
    let modes = coalesce_unbounded(lhs);
    let bounded = modes.len() - 1;
    let mut reach = Reach {
        positive: vec![0; bounded],
        negative: vec![0; bounded],
        any_positive: false,
        any_negative: false,
        positive_bounded: false,
        negative_bounded: false,
    };
    let failure = |condition: String| LayoutError::Composition {
        lhs: lhs.to_string(),
        rhs: rhs.to_string(),
        condition,
    };
    let (shape, stride) = compose_tree(&modes, rhs.shape(), rhs.stride(), &mut reach, &failure)?;
    for (j, &(s, _)) in modes[..bounded].iter().enumerate() {
        let worst = reach.positive[j].max(reach.negative[j]);
        if worst >= s {
            return Err(failure(format!(
                "the modes of the right operand add up to digit {worst} in mode {s}:{} of the \
                 coalesced left operand, which has only {s} values, so their sum would carry",
                modes[j].1
            )));
        }
    }
    if (reach.positive_bounded && reach.any_negative)
        || (reach.negative_bounded && reach.any_positive)
    {
        return Err(failure(
            "positive and negative strides of the right operand meet below the last mode of \
             the left operand, where their sum would borrow"
                .to_string(),
        ));
    }
    Layout::new(shape, stride).map_err(|error| match error {
        LayoutError::Overflow { .. } => overflow("composition", format_args!("{lhs} o {rhs}")),
        other => other,
    })
}

/// Right distributivity: `A ∘ (B0, B1, …) = (A ∘ B0, A ∘ B1, …)`.
fn compose_tree(
    modes: &[(i64, i64)],
    shape: &IntTuple,
    stride: &IntTuple,
    reach: &mut Reach,
    failure: &impl Fn(String) -> LayoutError,
) -> LayoutResult<(IntTuple, IntTuple)> {
    match (shape, stride) {
        (Tuple::Leaf(n), Tuple::Leaf(d)) => {
            let pairs = compose_leaf(modes, *n, *d, reach, failure)?;
            Ok(match pairs.as_slice() {
                [(s, d)] => (Tuple::Leaf(*s), Tuple::Leaf(*d)),
                [] | [_, _, ..] => (
                    Tuple::Node(pairs.iter().map(|&(s, _)| Tuple::Leaf(s)).collect()),
                    Tuple::Node(pairs.iter().map(|&(_, d)| Tuple::Leaf(d)).collect()),
                ),
            })
        }
        (Tuple::Node(ss), Tuple::Node(ds)) => {
            let mut shapes = Vec::with_capacity(ss.len());
            let mut strides = Vec::with_capacity(ss.len());
            for (s, d) in ss.iter().zip(ds) {
                let (s, d) = compose_tree(modes, s, d, reach, failure)?;
                shapes.push(s);
                strides.push(d);
            }
            Ok((Tuple::Node(shapes), Tuple::Node(strides)))
        }
        // A valid layout's shape and stride are congruent.
        (Tuple::Leaf(_), Tuple::Node(_)) | (Tuple::Node(_), Tuple::Leaf(_)) => {
            Err(LayoutError::Incongruent {
                shape: shape.to_string(),
                stride: stride.to_string(),
            })
        }
    }
}

/// `A ∘ (n:d)` for the coalesced modes of `A` (the last one unbounded): walk
/// the modes of `A`, dividing the stride `d` out of each, then taking as much
/// of the shape `n` as the mode holds.
fn compose_leaf(
    modes: &[(i64, i64)],
    n: i64,
    d: i64,
    reach: &mut Reach,
    failure: &impl Fn(String) -> LayoutError,
) -> LayoutResult<Vec<(i64, i64)>> {
    if d == 0 {
        return Ok(vec![(n, 0)]);
    }
    let sign = d.signum();
    if n > 1 {
        if sign > 0 {
            reach.any_positive = true;
        } else {
            reach.any_negative = true;
        }
    }
    let mut out = Vec::new();
    let mut rest_shape = n;
    let mut rest_stride = d;
    let (bounded, last) = modes.split_at(modes.len() - 1);
    for (j, &(s, mode_stride)) in bounded.iter().enumerate() {
        // `d` is not i64::MIN (layout invariant), so `abs` is exact.
        let magnitude = rest_stride.abs();
        if rest_shape == 1 {
            rest_stride = sign * ceil_div_int(magnitude, s);
            continue;
        }
        if magnitude >= s {
            if magnitude % s != 0 {
                return Err(failure(format!(
                    "stride divisibility: the stride left to divide, {magnitude}, is not a \
                     multiple of mode {s}:{mode_stride} of the coalesced left operand"
                )));
            }
            rest_stride = sign * (magnitude / s);
            continue;
        }
        let fits = ceil_div_int(s, magnitude);
        let taken = if rest_shape <= fits {
            rest_shape
        } else {
            if s % magnitude != 0 {
                return Err(failure(format!(
                    "stride divisibility: {magnitude} does not divide mode {s}:{mode_stride} of \
                     the coalesced left operand, and {rest_shape} steps of it run past that mode"
                )));
            }
            if rest_shape % fits != 0 {
                return Err(failure(format!(
                    "shape divisibility: the shape left to place, {rest_shape}, is not a multiple \
                     of {fits}, the steps that fit in mode {s}:{mode_stride} of the coalesced left \
                     operand"
                )));
            }
            fits
        };
        out.push((taken, mul(rest_stride, mode_stride, "composition stride")?));
        // Below `s`: `taken ≤ ⌈s / magnitude⌉`.
        let digit = (taken - 1) * magnitude;
        if sign > 0 {
            reach.positive[j] = reach.positive[j].saturating_add(digit);
            reach.positive_bounded = true;
        } else {
            reach.negative[j] = reach.negative[j].saturating_add(digit);
            reach.negative_bounded = true;
        }
        rest_shape /= taken;
        rest_stride = sign;
    }
    let last_stride = last.first().map_or(0, |&(_, stride)| stride);
    if out.is_empty() || rest_shape != 1 {
        let stride = match rest_stride.checked_mul(last_stride) {
            Some(stride) => stride,
            // A size-1 mode's stride is never used: any value is the same function.
            None if rest_shape == 1 => 0,
            None => {
                return Err(overflow(
                    "composition stride",
                    format_args!("{rest_stride} * {last_stride}"),
                ));
            }
        };
        out.push((rest_shape, stride));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(text: &str) -> Layout {
        text.parse().unwrap()
    }

    fn compose(a: &str, b: &str) -> String {
        composition(&layout(a), &layout(b)).unwrap().to_string()
    }

    #[test]
    fn coalesce_merges_and_drops() {
        assert_eq!(coalesce(&layout("(2,4):(1,2)")).to_string(), "8:1");
        assert_eq!(coalesce(&layout("(2,1,6):(1,7,2)")).to_string(), "12:1");
        assert_eq!(coalesce(&layout("(4,2):(2,1)")).to_string(), "(4,2):(2,1)");
        assert_eq!(coalesce(&layout("(1,1):(3,5)")).to_string(), "1:0");
        assert_eq!(coalesce(&layout("(2,2):(0,0)")).to_string(), "4:0");
        assert_eq!(coalesce(&Layout::empty()).to_string(), "1:0");
    }

    #[test]
    fn unbounded_coalesce_keeps_the_extension() {
        assert_eq!(coalesce_unbounded(&layout("(4,1):(1,0)")), [(4, 1), (2, 0)]);
        assert_eq!(coalesce_unbounded(&layout("(4,1):(1,4)")), [(8, 1)]);
        assert_eq!(coalesce_unbounded(&layout("8:3")), [(2, 3)]);
        assert_eq!(coalesce_unbounded(&Layout::empty()), [(2, 0)]);
    }

    #[test]
    fn cute_documentation_examples() {
        // The worked examples of CuTe's layout-algebra guide.
        assert_eq!(compose("20:2", "(5,4):(4,1)"), "(5,4):(8,2)");
        assert_eq!(
            compose("(10,2):(16,4)", "(5,4):(1,5)"),
            "(5,(2,2)):(16,(80,4))"
        );
        assert_eq!(compose("(6,2):(8,2)", "4:3"), "(2,2):(24,2)");
        assert_eq!(compose("(6,2):(8,2)", "3:1"), "3:8");
    }

    #[test]
    fn stride_zero_and_integral_left_operands() {
        assert_eq!(compose("(4,4):(1,10)", "5:0"), "5:0");
        assert_eq!(compose("8:3", "(2,4):(4,1)"), "(2,4):(12,3)");
        assert_eq!(compose("(4,4):(1,10)", "(1,2):(7,4)"), "(1,2):(20,10)");
    }

    #[test]
    fn divisibility_failures_are_errors() {
        for (a, b) in [
            ("(4,4):(1,10)", "2:6"),          // 6 is not a multiple of 4
            ("(4,4):(1,10)", "4:3"),          // 3 steps of 3 run past a mode of 4
            ("(4,4):(1,10)", "3:2"),          // 3 is not a multiple of the 2 steps that fit
            ("(3,4):(1,10)", "(2,2):(2,1)"),  // digits 2 + 1 carry in a mode of 3
            ("(4,4):(1,10)", "(2,2):(4,-1)"), // signs meet in the bounded mode
        ] {
            let result = composition(&layout(a), &layout(b));
            assert!(
                matches!(result, Err(LayoutError::Composition { .. })),
                "{a} o {b} gave {result:?}"
            );
        }
    }

    #[test]
    fn negative_strides_follow_truncating_extension() {
        let a = layout("(4,4):(1,10)");
        let b = layout("(2,2):(-4,-1)");
        let r = composition(&a, &b).unwrap();
        for i in 0..4 {
            let image = b.eval(i).unwrap();
            assert_eq!(r.eval(i).unwrap(), a.eval_unbounded(image).unwrap());
        }
    }
}
