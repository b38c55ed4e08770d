//! Stage 2, check: levels whose extents and strides may be symbolic — their
//! conversion to and from the exact algebra's `Layout`, sizes and cosizes as
//! expressions, a canonical form that decides when two expressions are the
//! same, and `tile` of one mode, exact for constant modes and by the rule of
//! docs/language.md §3 ("Symbolic dimensions") for a flat symbolic mode.

use crate::expr::Expr;
use crate::ir::Level;
use crate::layout::{Layout, LayoutError, Tiler, Tuple, complement, tile};
use crate::syntax::ast::Tiling;

/// A mode: its shape and a congruent stride.
pub(crate) type Mode = (Tuple<Expr>, Tuple<Expr>);

/// The level of a constant layout; its shape and stride are always the
/// list of top-level modes (`[8]` is `Node([Leaf(8)])`).
pub(crate) fn level_of(layout: &Layout) -> Level {
    let wrap = |tuple: &Tuple<i64>| {
        let converted = tuple.map(&mut |&v| Expr::Const(v));
        match converted {
            Tuple::Leaf(_) => Tuple::Node(vec![converted]),
            Tuple::Node(_) => converted,
        }
    };
    Level {
        shape: wrap(layout.shape()),
        stride: wrap(layout.stride()),
    }
}

/// The exact layout of a level whose extents and strides are all
/// constants; `None` if any is symbolic (or the pair is not a layout).
///
/// ```
/// use graphene::check::constant_layout;
/// use graphene::expr::Expr;
/// use graphene::ir::Level;
/// use graphene::layout::Tuple;
/// let leaf = |v: i64| Tuple::Leaf(Expr::Const(v));
/// let level = Level {
///     shape: Tuple::Node(vec![leaf(2), leaf(2)]),
///     stride: Tuple::Node(vec![leaf(16), leaf(8)]),
/// };
/// assert_eq!(constant_layout(&level).unwrap().ir().to_string(), "[2,2 : 16,8]");
/// ```
pub fn constant_layout(level: &Level) -> Option<Layout> {
    let constant = |tuple: &Tuple<Expr>| tuple.try_map(&mut |e: &Expr| e.as_const().ok_or(()));
    let shape = constant(&level.shape).ok()?;
    let stride = constant(&level.stride).ok()?;
    Layout::new(shape, stride).ok()
}

/// The exact layout of several levels taken together (all their leaves as
/// one flat layout), `None` if any is symbolic. Its image is the set of
/// offsets (or ids) the levels reach.
pub(crate) fn constant_flat_layout(levels: &[Level]) -> Option<Layout> {
    let mut shape = Vec::new();
    let mut stride = Vec::new();
    for level in levels {
        for (s, d) in level.shape.leaves().into_iter().zip(level.stride.leaves()) {
            shape.push(Tuple::Leaf(s.as_const()?));
            stride.push(Tuple::Leaf(d.as_const()?));
        }
    }
    Layout::new(Tuple::Node(shape), Tuple::Node(stride)).ok()
}

/// The top-level modes of a level.
pub(crate) fn modes(level: &Level) -> Vec<Mode> {
    match (&level.shape, &level.stride) {
        (Tuple::Node(shapes), Tuple::Node(strides)) => shapes
            .iter()
            .cloned()
            .zip(strides.iter().cloned())
            .collect(),
        (shape, stride) => vec![(shape.clone(), stride.clone())],
    }
}

/// The level whose top-level modes are `modes`.
pub(crate) fn level_from_modes(modes: Vec<Mode>) -> Level {
    let (shape, stride): (Vec<_>, Vec<_>) = modes.into_iter().unzip();
    Level {
        shape: Tuple::Node(shape),
        stride: Tuple::Node(stride),
    }
}

/// The empty level `[]` of scalars and `.scalar()` groups.
pub(crate) fn empty_level() -> Level {
    level_from_modes(Vec::new())
}

/// The product of a shape's leaves.
pub(crate) fn size(shape: &Tuple<Expr>) -> Expr {
    shape
        .leaves()
        .into_iter()
        .fold(Expr::Const(1), |acc, leaf| Expr::mul(acc, leaf.clone()))
}

/// The number of elements (or threads) of all levels together.
pub(crate) fn levels_size(levels: &[Level]) -> Expr {
    levels.iter().fold(Expr::Const(1), |acc, level| {
        Expr::mul(acc, size(&level.shape))
    })
}

/// One past the largest offset the levels reach (strides are ≥ 0):
/// `1 + Σ (s−1)·d` over every leaf of every level.
pub(crate) fn cosize(levels: &[Level]) -> Expr {
    let reach = levels
        .iter()
        .flat_map(|level| level.shape.leaves().into_iter().zip(level.stride.leaves()))
        .fold(Expr::Const(0), |acc, (s, d)| {
            Expr::add(acc, Expr::mul(Expr::sub(s.clone(), 1.into()), d.clone()))
        });
    normalize(&Expr::add(reach, 1.into()))
}

/// Column-major strides for `shape` starting at `start`, and the stride
/// that would follow its last leaf.
pub(crate) fn col_major(shape: &Tuple<Expr>, start: Expr) -> (Tuple<Expr>, Expr) {
    let mut next = start;
    let stride = shape.map(&mut |extent: &Expr| {
        let here = next.clone();
        next = Expr::mul(next.clone(), extent.clone());
        here
    });
    (stride, next)
}

/// Whether an extent's positivity does not follow from its form (it
/// subtracts or takes a remainder), so a launch must check it.
pub(crate) fn needs_positive_check(extent: &Expr) -> bool {
    match extent {
        Expr::Const(_) | Expr::Var(_) => false,
        Expr::Sub(..) | Expr::Rem(..) | Expr::And(..) | Expr::Xor(..) | Expr::Shr(..) => true,
        Expr::Add(a, b) | Expr::Mul(a, b) | Expr::Div(a, b) | Expr::Shl(a, b) => {
            needs_positive_check(a) || needs_positive_check(b)
        }
    }
}

/// A canonical form for comparing expressions: sums and products are
/// flattened, like terms are combined and operands sorted, so `K*128` and
/// `128*K`, or `M - 1 + 1` and `M`, come out equal.
pub(crate) fn normalize(expr: &Expr) -> Expr {
    match expr {
        Expr::Const(_) | Expr::Var(_) => expr.clone(),
        Expr::Add(..) | Expr::Sub(..) | Expr::Mul(..) => {
            let mut terms = Vec::new();
            if collect_terms(expr, 1, &mut terms).is_none() {
                return expr.clone();
            }
            rebuild_sum(terms).unwrap_or_else(|| expr.clone())
        }
        Expr::Div(a, b) => Expr::div(normalize(a), normalize(b)),
        Expr::Rem(a, b) => Expr::rem(normalize(a), normalize(b)),
        Expr::And(a, b) => Expr::and(normalize(a), normalize(b)),
        Expr::Xor(a, b) => Expr::xor(normalize(a), normalize(b)),
        Expr::Shr(a, b) => Expr::shr(normalize(a), normalize(b)),
        Expr::Shl(a, b) => Expr::shl(normalize(a), normalize(b)),
    }
}

/// Whether `a` and `b` have the same canonical form.
pub(crate) fn same(a: &Expr, b: &Expr) -> bool {
    a == b || normalize(a) == normalize(b)
}

/// Whether two tuples have the same tree and the same leaves.
pub(crate) fn same_tuple(a: &Tuple<Expr>, b: &Tuple<Expr>) -> bool {
    a.is_congruent(b)
        && a.leaves()
            .into_iter()
            .zip(b.leaves())
            .all(|(x, y)| same(x, y))
}

/// The sign of an expression over the dims, as far as its form decides it
/// for every value of its atoms (dims, quotients, remainders) that is ≥ 0.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Sign {
    /// ≥ 0 whatever the dims: every coefficient and the constant are ≥ 0.
    NonNegative,
    /// < 0 whatever the dims: no coefficient is positive and the constant
    /// is negative. Carries the constant, the largest value it takes.
    Negative(i64),
    /// Depends on the dims (or the form is not a sum of products).
    Unknown,
}

/// Decides the sign of `expr` from its normal form: a sum of
/// coefficient × product of atoms, every atom non-negative.
pub(crate) fn sign(expr: &Expr) -> Sign {
    let mut terms = Vec::new();
    if collect_terms(expr, 1, &mut terms).is_none() {
        return Sign::Unknown;
    }
    let mut constant: i64 = 0;
    let (mut any_positive, mut any_negative) = (false, false);
    let mut by_factors: Vec<Term> = Vec::new();
    for (coefficient, factors) in terms {
        if factors.is_empty() {
            constant = match constant.checked_add(coefficient) {
                Some(sum) => sum,
                None => return Sign::Unknown,
            };
            continue;
        }
        match by_factors.iter_mut().find(|term| term.1 == factors) {
            Some(term) => term.0 = term.0.saturating_add(coefficient),
            None => by_factors.push((coefficient, factors)),
        }
    }
    for (coefficient, _) in &by_factors {
        any_positive |= *coefficient > 0;
        any_negative |= *coefficient < 0;
    }
    match (any_positive, any_negative) {
        (_, false) if constant >= 0 => Sign::NonNegative,
        (false, _) if constant < 0 => Sign::Negative(constant),
        _ => Sign::Unknown,
    }
}

/// `n / d` when `n`'s normal form is a single product with `d` among its
/// factors (`(M/128)*(N/256)` over `M/128` is `N/256`).
pub(crate) fn exact_quotient(n: &Expr, d: &Expr) -> Option<Expr> {
    let mut terms = Vec::new();
    collect_terms(n, 1, &mut terms)?;
    let [(coefficient, factors)] = terms.as_slice() else {
        return None;
    };
    let divisor = normalize(d);
    let at = factors
        .iter()
        .position(|factor| normalize(factor) == divisor)?;
    let rest = factors
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != at)
        .fold(Expr::Const(*coefficient), |product, (_, factor)| {
            Expr::mul(product, factor.clone())
        });
    Some(rest)
}

/// A term: a coefficient times sorted factors.
type Term = (i64, Vec<Expr>);

fn collect_terms(expr: &Expr, sign: i64, out: &mut Vec<Term>) -> Option<()> {
    match expr {
        Expr::Add(a, b) => {
            collect_terms(a, sign, out)?;
            collect_terms(b, sign, out)
        }
        Expr::Sub(a, b) => {
            collect_terms(a, sign, out)?;
            collect_terms(b, -sign, out)
        }
        _ => {
            let (coefficient, factors) = term(expr)?;
            out.push((coefficient.checked_mul(sign)?, factors));
            Some(())
        }
    }
}

fn term(expr: &Expr) -> Option<Term> {
    match expr {
        Expr::Const(value) => Some((*value, Vec::new())),
        Expr::Mul(a, b) => {
            let (ca, mut fa) = term(a)?;
            let (cb, fb) = term(b)?;
            fa.extend(fb);
            fa.sort();
            Some((ca.checked_mul(cb)?, fa))
        }
        Expr::Var(_) => Some((1, vec![expr.clone()])),
        Expr::Add(..)
        | Expr::Sub(..)
        | Expr::Div(..)
        | Expr::Rem(..)
        | Expr::And(..)
        | Expr::Xor(..)
        | Expr::Shr(..)
        | Expr::Shl(..) => Some((1, vec![normalize(expr)])),
    }
}

fn rebuild_sum(mut terms: Vec<Term>) -> Option<Expr> {
    terms.sort_by(|a, b| a.1.cmp(&b.1));
    let mut combined: Vec<Term> = Vec::new();
    for (coefficient, factors) in terms {
        match combined.last_mut() {
            Some(last) if last.1 == factors => last.0 = last.0.checked_add(coefficient)?,
            _ => combined.push((coefficient, factors)),
        }
    }
    let product = |coefficient: i64, factors: Vec<Expr>| {
        factors
            .into_iter()
            .fold(Expr::Const(coefficient), Expr::mul)
    };
    let mut positive = Expr::Const(0);
    let mut negative = Expr::Const(0);
    // Constant terms sort first; put them last, as people write `M - 1`.
    let constant_first = usize::from(combined.first().is_some_and(|t| t.1.is_empty()));
    combined.rotate_left(constant_first);
    for (coefficient, factors) in combined {
        if coefficient > 0 {
            positive = Expr::add(positive, product(coefficient, factors));
        } else if coefficient < 0 {
            negative = Expr::add(negative, product(coefficient.checked_neg()?, factors));
        }
    }
    Some(Expr::sub(positive, negative))
}

/// A mode split by `tile`: the tile part, the rest, and the division a
/// launch must find exact (dividend, divisor) for a symbolic extent.
#[derive(Clone, PartialEq, Debug)]
pub(crate) struct TiledMode {
    /// The tile's part of the mode (joins the inner level).
    pub inner: Mode,
    /// The rest: which tile (joins the outer level).
    pub outer: Mode,
    /// `extent / step` must be exact.
    pub divisible: Option<(Expr, Expr)>,
}

/// Why a mode could not be tiled.
#[derive(Clone, PartialEq, Debug)]
pub(crate) enum TileFailure {
    /// The algebra refused (the message says why).
    Algebra(LayoutError),
    /// The tiles do not cover the mode exactly: `count` tiles of `tile`
    /// elements for a mode of `extent`.
    Partial {
        /// Size of one tile.
        tile: i64,
        /// Size of the mode.
        extent: i64,
    },
    /// The tiler cannot split a symbolic mode: it is not a set of
    /// non-overlapping strided runs (`what` says how).
    NotSplittable(String),
    /// The mode is hierarchical and has symbolic parts.
    SymbolicHierarchy,
}

fn constant_mode(mode: &Mode) -> Option<Layout> {
    let shape = mode
        .0
        .try_map(&mut |e: &Expr| e.as_const().ok_or(()))
        .ok()?;
    let stride = mode
        .1
        .try_map(&mut |e: &Expr| e.as_const().ok_or(()))
        .ok()?;
    Layout::new(Tuple::Node(vec![shape]), Tuple::Node(vec![stride])).ok()
}

fn only_mode(layout: &Layout) -> Mode {
    let level = level_of(layout);
    modes(&level)
        .into_iter()
        .next()
        .unwrap_or((Tuple::Leaf(Expr::Const(1)), Tuple::Leaf(Expr::Const(0))))
}

fn scaled(tuple: &Tuple<i64>, factor: &Expr) -> Tuple<Expr> {
    tuple.map(&mut |&v| Expr::mul(Expr::Const(v), factor.clone()))
}

/// `tile` of one mode by one tiler (`Tiler::Layout` or `Tiler::Keep`):
/// `logical_divide(mode, T)` split into the tile part and the rest.
///
/// - `_` keeps the whole mode as one tile; the rest is `1:0`.
/// - A constant mode goes through the exact algebra; partial tiles fail.
/// - A flat mode `S:D` with constant `S` and symbolic `D` is the constant
///   mode `S:1` tiled, with every stride multiplied by `D`.
/// - A flat mode with symbolic `S`: the tile is `T` with strides times `D`;
///   the rest is `complement(T, step)` (constant) followed by `S/step`,
///   stride `step·D`, where `step` is the end of `T`'s last run; `S/step`
///   must be exact.
pub(crate) fn tile_mode(mode: &Mode, tiler: &Tiler) -> Result<TiledMode, TileFailure> {
    let tiler_layout = match tiler {
        Tiler::Keep => {
            return Ok(TiledMode {
                inner: mode.clone(),
                outer: (Tuple::Leaf(Expr::Const(1)), Tuple::Leaf(Expr::Const(0))),
                divisible: None,
            });
        }
        Tiler::Layout(layout) => layout,
        Tiler::ByMode(_) => {
            return Err(TileFailure::NotSplittable(
                "a by-mode tiler cannot tile a single mode".to_string(),
            ));
        }
    };
    // A flat mode `S:D` with a constant extent is `S:1` tiled, its strides
    // times `D`: for a flat mode that is what the algebra gives, and the
    // shapes then depend on the extent alone, so that the coordinate views
    // of a partial tile (`Bound`, strides 0 and 1) tile exactly like it.
    if let (Tuple::Leaf(extent), Tuple::Leaf(stride)) = mode
        && let Some(s) = extent.as_const()
    {
        let unit = Layout::leaf(s, 1).map_err(TileFailure::Algebra)?;
        return tile_constant(&unit, tiler_layout, stride);
    }
    if let Some(exact) = constant_mode(mode) {
        return tile_constant(&exact, tiler_layout, &Expr::Const(1));
    }
    let (Tuple::Leaf(extent), Tuple::Leaf(stride)) = mode else {
        return Err(TileFailure::SymbolicHierarchy);
    };
    tile_symbolic(extent, stride, tiler_layout, Tiling::Exact)
}

/// `tile_partial` of one mode: like [`tile_mode`], except that a flat mode
/// the tile does not divide (a symbolic extent, or a constant one with a
/// remainder) gets `ceil_div(S, step)` tiles, the last one reaching past
/// the end, and no launch requirement. The second value is the extent the
/// tiles may pass, for a mode that may be passed.
pub(crate) fn tile_mode_partial(
    mode: &Mode,
    tiler: &Tiler,
) -> Result<(TiledMode, Option<Expr>), TileFailure> {
    let Tiler::Layout(tiler_layout) = tiler else {
        return tile_mode(mode, tiler).map(|tiled| (tiled, None));
    };
    let (Tuple::Leaf(extent), Tuple::Leaf(stride)) = mode else {
        return Err(TileFailure::SymbolicHierarchy);
    };
    if extent.as_const().is_some()
        && let Ok(tiled) = tile_mode(mode, tiler)
    {
        return Ok((tiled, None));
    }
    let tiled = tile_symbolic(extent, stride, tiler_layout, Tiling::Partial)?;
    Ok((tiled, Some(extent.clone())))
}

fn tile_constant(mode: &Layout, tiler: &Layout, factor: &Expr) -> Result<TiledMode, TileFailure> {
    let tiled = tile(mode, &[Tiler::Layout(tiler.clone())]).map_err(TileFailure::Algebra)?;
    if !tiled.is_exact(mode) {
        return Err(TileFailure::Partial {
            tile: tiled.inner.size(),
            extent: mode.size(),
        });
    }
    let scale = |(shape, stride): Mode| {
        (
            shape,
            stride.map(&mut |d| Expr::mul(d.clone(), factor.clone())),
        )
    };
    Ok(TiledMode {
        inner: scale(only_mode(&tiled.inner)),
        outer: scale(only_mode(&tiled.outer)),
        divisible: None,
    })
}

fn tile_symbolic(
    extent: &Expr,
    stride: &Expr,
    tiler: &Layout,
    tiling: Tiling,
) -> Result<TiledMode, TileFailure> {
    let runs: Vec<(i64, i64)> = tiler.leaves().into_iter().filter(|&(s, _)| s > 1).collect();
    if let Some(&(s, d)) = runs.iter().find(|&&(_, d)| d < 1) {
        return Err(TileFailure::NotSplittable(format!(
            "its mode {s}:{d} does not step forward"
        )));
    }
    let step = runs
        .iter()
        .map(|&(s, d)| s.checked_mul(d))
        .try_fold(1i64, |acc, end| end.map(|end| acc.max(end)))
        .ok_or_else(|| TileFailure::NotSplittable("its extent overflows".to_string()))?;
    let inner = (
        tiler.shape().map(&mut |&v| Expr::Const(v)),
        scaled(tiler.stride(), stride),
    );
    let count = match tiling {
        Tiling::Exact => Expr::div(extent.clone(), step.into()),
        Tiling::Partial => Expr::div(Expr::add(extent.clone(), (step - 1).into()), step.into()),
    };
    let rest = (count, Expr::mul(step.into(), stride.clone()));
    let holes = complement(tiler, step).map_err(TileFailure::Algebra)?;
    if holes.size().checked_mul(tiler.size()) != Some(step) {
        return Err(TileFailure::NotSplittable(format!(
            "its {} elements and the gaps between them do not cover 0..{step} once each",
            tiler.size()
        )));
    }
    let outer = if holes.size() == 1 {
        (Tuple::Leaf(rest.0), Tuple::Leaf(rest.1))
    } else {
        let mut shape: Vec<Tuple<Expr>> = Vec::new();
        let mut strides: Vec<Tuple<Expr>> = Vec::new();
        for (s, d) in holes.leaves() {
            shape.push(Tuple::Leaf(Expr::Const(s)));
            strides.push(Tuple::Leaf(Expr::mul(Expr::Const(d), stride.clone())));
        }
        shape.push(Tuple::Leaf(rest.0));
        strides.push(Tuple::Leaf(rest.1));
        (Tuple::Node(shape), Tuple::Node(strides))
    };
    let divisible = match tiling {
        Tiling::Exact => Some((extent.clone(), Expr::Const(step))),
        Tiling::Partial => None,
    };
    Ok(TiledMode {
        inner,
        outer,
        divisible,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Var;

    fn layout(text: &str) -> Layout {
        text.parse().unwrap()
    }

    fn dim(i: u32) -> Expr {
        Expr::var(Var::Dim(i))
    }

    #[test]
    fn levels_and_layouts_round_trip() {
        for text in [
            "[8 : 1]",
            "[2,2 : 16,8]",
            "[(4,2) : (1,16)]",
            "[]",
            "[4,(2,4) : 2,(1,8)]",
        ] {
            let l = layout(text);
            let level = level_of(&l);
            assert!(matches!(level.shape, Tuple::Node(_)), "{text}");
            assert_eq!(constant_layout(&level), Some(l), "{text}");
        }
        assert_eq!(modes(&level_of(&layout("[8 : 1]"))).len(), 1);
        assert_eq!(modes(&level_of(&layout("[(4,2) : (1,16)]"))).len(), 1);
    }

    #[test]
    fn normal_forms() {
        let k = dim(0);
        assert!(same(
            &Expr::mul(k.clone(), 128.into()),
            &Expr::mul(128.into(), k.clone())
        ));
        let back = Expr::add(Expr::sub(k.clone(), 1.into()), 1.into());
        assert_eq!(normalize(&back), k);
        let twice = Expr::add(
            Expr::mul(k.clone(), 2.into()),
            Expr::mul(2.into(), k.clone()),
        );
        assert_eq!(normalize(&twice), Expr::mul(4.into(), k.clone()));
        assert!(!same(&k, &dim(1)));
        let m_minus_one = normalize(&Expr::add(Expr::Const(-1), dim(0)));
        assert_eq!(m_minus_one, Expr::sub(dim(0), 1.into()));
    }

    #[test]
    fn cosize_of_levels() {
        let levels = [
            level_of(&layout("[2,2 : 1,8]")),
            level_of(&layout("[2,(2,2) : 2,(4,16)]")),
        ];
        assert_eq!(cosize(&levels), Expr::Const(32));
        let symbolic = Level {
            shape: Tuple::Node(vec![Tuple::Leaf(dim(0)), Tuple::Leaf(8.into())]),
            stride: Tuple::Node(vec![Tuple::Leaf(1.into()), Tuple::Leaf(dim(0))]),
        };
        // 1 + (M−1)·1 + 7·M = 8·M.
        assert!(same(&cosize(&[symbolic]), &Expr::mul(8.into(), dim(0))));
    }

    #[test]
    fn constant_modes_tile_exactly_or_fail() {
        let mode = (Tuple::Leaf(Expr::Const(16)), Tuple::Leaf(Expr::Const(16)));
        let t = tile_mode(&mode, &Tiler::Layout(layout("8:1"))).unwrap();
        assert_eq!(t.inner, (Tuple::Leaf(8.into()), Tuple::Leaf(16.into())));
        assert_eq!(t.outer, (Tuple::Leaf(2.into()), Tuple::Leaf(128.into())));
        assert_eq!(
            tile_mode(&mode, &Tiler::Layout(layout("3:1"))),
            Err(TileFailure::Partial {
                tile: 3,
                extent: 16
            })
        );
    }

    #[test]
    fn symbolic_extent_by_a_compact_tile() {
        let mode = (Tuple::Leaf(dim(0)), Tuple::Leaf(1.into()));
        let t = tile_mode(&mode, &Tiler::Layout(layout("128:1"))).unwrap();
        assert_eq!(t.inner, (Tuple::Leaf(128.into()), Tuple::Leaf(1.into())));
        assert_eq!(t.outer.0, Tuple::Leaf(Expr::div(dim(0), 128.into())));
        assert_eq!(t.outer.1, Tuple::Leaf(128.into()));
        assert_eq!(t.divisible, Some((dim(0), Expr::Const(128))));
    }

    #[test]
    fn symbolic_stride_scales_the_constant_tiling() {
        // [128 : K] by 32: tile 32:K, rest 4:32K.
        let mode = (Tuple::Leaf(128.into()), Tuple::Leaf(dim(1)));
        let t = tile_mode(&mode, &Tiler::Layout(layout("32:1"))).unwrap();
        assert_eq!(t.inner.1, Tuple::Leaf(dim(1)));
        assert!(same_tuple(
            &t.outer.1,
            &Tuple::Leaf(Expr::mul(32.into(), dim(1)))
        ));
        assert_eq!(t.divisible, None);
    }

    #[test]
    fn symbolic_extent_by_a_strided_tile_matches_the_algebra() {
        // S:D by 2:2 — rest (2, S/4):(D, 4D); for S = 8, D = 1 the algebra
        // gives the same: complement(2:2, 8) = (2,2):(1,4).
        let mode = (Tuple::Leaf(dim(0)), Tuple::Leaf(dim(1)));
        let t = tile_mode(&mode, &Tiler::Layout(layout("2:2"))).unwrap();
        let substitute = |e: &Expr| {
            e.substitute(&|v| match v {
                Var::Dim(0) => Some(Expr::Const(8)),
                Var::Dim(1) => Some(Expr::Const(1)),
                Var::ThreadId | Var::BlockId | Var::Dim(_) | Var::Loop(_) => None,
            })
        };
        let outer = (
            t.outer.0.map(&mut |e| substitute(e)),
            t.outer.1.map(&mut |e| substitute(e)),
        );
        let exact = tile_mode(
            &(Tuple::Leaf(8.into()), Tuple::Leaf(1.into())),
            &Tiler::Layout(layout("2:2")),
        )
        .unwrap();
        assert_eq!(outer, exact.outer);
        assert_eq!(t.divisible, Some((dim(0), Expr::Const(4))));
    }

    #[test]
    fn symbolic_hierarchies_are_refused() {
        let mode = (
            Tuple::Node(vec![Tuple::Leaf(dim(0)), Tuple::Leaf(2.into())]),
            Tuple::Node(vec![Tuple::Leaf(1.into()), Tuple::Leaf(dim(0))]),
        );
        assert_eq!(
            tile_mode(&mode, &Tiler::Layout(layout("2:1"))),
            Err(TileFailure::SymbolicHierarchy)
        );
        assert!(tile_mode(&mode, &Tiler::Keep).is_ok());
    }
}
