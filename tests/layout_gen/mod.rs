//! Generators of small layouts and brute-force references, shared by the
//! `layout_*` contract tests: shapes up to rank 3 and depth 2, size ≤ 256,
//! with compact, permuted, gapped, arbitrary and zero strides.

#![allow(dead_code)]

use graphene::layout::{IntTuple, Layout, Tuple};
use proptest::prelude::*;

/// How the strides of a generated layout are chosen.
#[derive(Clone, Debug)]
pub enum StrideKind {
    /// Compact, first leaf fastest.
    ColMajor,
    /// Compact, last leaf fastest.
    RowMajor,
    /// Compact in the leaf order given by a permutation.
    Permuted(Vec<usize>),
    /// Like `Permuted`, with a hole factor (1..=3) after each leaf.
    Gapped(Vec<usize>, Vec<i64>),
    /// Any small non-negative strides (may repeat, overlap or be zero).
    Arbitrary(Vec<i64>),
    /// `Permuted`, with the strides of the marked leaves set to zero.
    WithZeros(Vec<usize>, Vec<bool>),
}

/// The strides of `shapes` under `kind`, one per leaf.
pub fn strides_for(shapes: &[i64], kind: &StrideKind) -> Vec<i64> {
    let ordered = |order: &[usize], gaps: &[i64]| {
        let mut strides = vec![0; shapes.len()];
        let mut running = 1i64;
        for (k, &leaf) in order.iter().enumerate() {
            strides[leaf] = running;
            running *= shapes[leaf] * gaps.get(k).copied().unwrap_or(1);
        }
        strides
    };
    match kind {
        StrideKind::ColMajor => ordered(&(0..shapes.len()).collect::<Vec<_>>(), &[]),
        StrideKind::RowMajor => ordered(&(0..shapes.len()).rev().collect::<Vec<_>>(), &[]),
        StrideKind::Permuted(order) => ordered(order, &[]),
        StrideKind::Gapped(order, gaps) => ordered(order, gaps),
        StrideKind::Arbitrary(strides) => strides.clone(),
        StrideKind::WithZeros(order, zero) => ordered(order, &[])
            .into_iter()
            .zip(zero)
            .map(|(d, &z)| if z { 0 } else { d })
            .collect(),
    }
}

/// Builds a layout from flat leaves, grouped into top-level modes of the
/// given sizes (a group of one leaf is a plain leaf unless `wrap` says to
/// make it a one-leaf tuple).
pub fn build(shapes: &[i64], strides: &[i64], groups: &[usize], wrap: &[bool]) -> Layout {
    let mut shape_modes = Vec::new();
    let mut stride_modes = Vec::new();
    let mut at = 0;
    for (g, &len) in groups.iter().enumerate() {
        let s: Vec<IntTuple> = shapes[at..at + len]
            .iter()
            .map(|&v| Tuple::Leaf(v))
            .collect();
        let d: Vec<IntTuple> = strides[at..at + len]
            .iter()
            .map(|&v| Tuple::Leaf(v))
            .collect();
        at += len;
        if len == 1 && !wrap.get(g).copied().unwrap_or(false) {
            shape_modes.push(s[0].clone());
            stride_modes.push(d[0].clone());
        } else {
            shape_modes.push(Tuple::Node(s));
            stride_modes.push(Tuple::Node(d));
        }
    }
    if groups.len() == 1 && groups[0] == 1 && !wrap.first().copied().unwrap_or(false) {
        return Layout::leaf(shapes[0], strides[0]).expect("small leaf");
    }
    Layout::new(Tuple::Node(shape_modes), Tuple::Node(stride_modes)).expect("small layout")
}

/// Leaf sizes 1..=8, at most 6 leaves, product ≤ `max_size`.
fn arb_leaf_shapes(max_size: i64) -> impl Strategy<Value = Vec<i64>> {
    prop::collection::vec(1i64..=8, 1..=6).prop_map(move |leaves| {
        let mut kept = Vec::new();
        let mut size = 1;
        for s in leaves {
            if size * s <= max_size {
                size *= s;
                kept.push(s);
            }
        }
        kept
    })
}

fn arb_kind(n: usize) -> impl Strategy<Value = StrideKind> {
    let perm = Just((0..n).collect::<Vec<_>>()).prop_shuffle();
    prop_oneof![
        Just(StrideKind::ColMajor),
        Just(StrideKind::RowMajor),
        perm.clone().prop_map(StrideKind::Permuted),
        (perm.clone(), prop::collection::vec(1i64..=3, n))
            .prop_map(|(p, g)| StrideKind::Gapped(p, g)),
        prop::collection::vec(0i64..=12, n).prop_map(StrideKind::Arbitrary),
        (perm, prop::collection::vec(prop::bool::weighted(0.3), n))
            .prop_map(|(p, z)| StrideKind::WithZeros(p, z)),
    ]
}

/// Splits `n` leaves into 1..=3 consecutive non-empty groups.
fn arb_groups(n: usize) -> impl Strategy<Value = Vec<usize>> {
    let max_rank = n.min(3);
    (1..=max_rank).prop_flat_map(move |rank| {
        prop::collection::vec(any::<prop::sample::Index>(), rank - 1).prop_map(move |cuts| {
            let mut points: Vec<usize> = cuts.iter().map(|c| 1 + c.index(n - 1)).collect();
            points.sort_unstable();
            points.dedup();
            let mut groups = Vec::new();
            let mut last = 0;
            for p in points.into_iter().chain([n]) {
                groups.push(p - last);
                last = p;
            }
            groups
        })
    })
}

/// Any small layout with strides of the given kinds: rank ≤ 3, depth ≤ 2,
/// size ≤ `max_size`.
pub fn arb_layout_sized(
    max_size: i64,
    kind: Option<fn(usize) -> BoxedStrategy<StrideKind>>,
) -> impl Strategy<Value = Layout> {
    arb_leaf_shapes(max_size).prop_flat_map(move |shapes| {
        let n = shapes.len();
        let kinds = match kind {
            Some(make) => make(n),
            None => arb_kind(n).boxed(),
        };
        (
            Just(shapes),
            kinds,
            arb_groups(n),
            prop::collection::vec(prop::bool::weighted(0.2), 3),
        )
            .prop_map(|(shapes, kind, groups, wrap)| {
                let strides = strides_for(&shapes, &kind);
                build(&shapes, &strides, &groups, &wrap)
            })
    })
}

/// Any small layout (size ≤ 256), every stride kind.
pub fn arb_layout() -> impl Strategy<Value = Layout> {
    arb_layout_sized(256, None)
}

/// Small layouts whose strides are compact or gapped (so injective, and
/// complementable).
pub fn arb_injective_layout(max_size: i64) -> impl Strategy<Value = Layout> {
    fn kinds(n: usize) -> BoxedStrategy<StrideKind> {
        let perm = Just((0..n).collect::<Vec<_>>()).prop_shuffle();
        prop_oneof![
            perm.clone().prop_map(StrideKind::Permuted),
            (perm, prop::collection::vec(1i64..=3, n)).prop_map(|(p, g)| StrideKind::Gapped(p, g)),
        ]
        .boxed()
    }
    arb_layout_sized(max_size, Some(kinds))
}

/// Compact layouts (permuted leaf order): bijections onto `[0, size)`.
pub fn arb_compact_layout(max_size: i64) -> impl Strategy<Value = Layout> {
    fn kinds(n: usize) -> BoxedStrategy<StrideKind> {
        Just((0..n).collect::<Vec<_>>())
            .prop_shuffle()
            .prop_map(StrideKind::Permuted)
            .boxed()
    }
    arb_layout_sized(max_size, Some(kinds))
}

/// Every flat layout of rank ≤ 2 over the given leaf shapes and strides.
pub fn all_flat_layouts(shapes: &[i64], strides: &[i64]) -> Vec<Layout> {
    let mut out = Vec::new();
    for &s in shapes {
        for &d in strides {
            out.push(Layout::leaf(s, d).unwrap());
        }
    }
    for &s0 in shapes {
        for &s1 in shapes {
            for &d0 in strides {
                for &d1 in strides {
                    out.push(build(&[s0, s1], &[d0, d1], &[1, 1], &[]));
                }
            }
        }
    }
    out
}

/// All offsets in index order.
pub fn offsets(layout: &Layout) -> Vec<i64> {
    (0..layout.size())
        .map(|i| layout.eval(i).unwrap())
        .collect()
}

/// Whether no two indices share an offset.
pub fn is_injective(layout: &Layout) -> bool {
    let mut seen = offsets(layout);
    seen.sort_unstable();
    seen.windows(2).all(|w| w[0] != w[1])
}

/// The sorted offsets (the image as a multiset).
pub fn sorted_offsets(layout: &Layout) -> Vec<i64> {
    let mut v = offsets(layout);
    v.sort_unstable();
    v
}

/// Parses a layout in either notation (test shorthand).
pub fn layout(text: &str) -> Layout {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}
