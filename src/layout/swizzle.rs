//! Stage 0, the algebra: CuTe's `Swizzle<B,M,S>` bit permutation, and the
//! swizzled layout `Sw ∘ (offset + L)` that shared-memory tensors use to
//! avoid bank conflicts.

use super::error::{LayoutError, LayoutResult, add, overflow};
use super::int_tuple::IntTuple;
use super::layout_value::Layout;

/// The highest bit a swizzle may touch, plus one: offsets are `i64`, and
/// keeping clear of the sign bit makes `apply` total.
const MAX_SWIZZLE_BITS: i64 = 62;

/// CuTe's `Swizzle<B,M,S>`: with `mask = (1<<B) − 1`, the `B` bits starting
/// at bit `M + S` are XORed into the `B` bits starting at bit `M`
/// (`x ^ ((x & (mask << (M+S))) >> S)`); a negative `S` shifts the other way
/// (bits `[M, M+B)` are XORed into `[M+|S|, M+|S|+B)`).
///
/// Invariants: `B ≥ 0`, `M ≥ 0`, `|S| ≥ B` (the two bit groups do not
/// overlap, so the swizzle is an involution), and `B + M + |S| ≤ 62`.
/// `Sw<0,M,S>` is the identity.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Swizzle {
    bits: u32,
    base: u32,
    shift: i32,
}

impl Swizzle {
    /// `Swizzle<bits, base, shift>`, checked against CuTe's rules.
    ///
    /// ```
    /// use graphene::layout::Swizzle;
    /// assert!(Swizzle::new(3, 3, 3).is_ok());
    /// assert!(Swizzle::new(3, 3, 2).is_err()); // |S| < B: not an involution
    /// ```
    pub fn new(bits: i64, base: i64, shift: i64) -> LayoutResult<Swizzle> {
        let invalid = |condition| LayoutError::InvalidSwizzle {
            bits,
            base,
            shift,
            condition,
        };
        if bits < 0 || base < 0 {
            return Err(invalid("B and M must be at least 0"));
        }
        if shift.checked_abs().is_none_or(|s| s < bits) {
            return Err(invalid(
                "|S| must be at least B, so that the swizzle is an involution",
            ));
        }
        if bits.saturating_add(base).saturating_add(shift.abs()) > MAX_SWIZZLE_BITS {
            return Err(invalid("B + M + |S| must be at most 62 for 64-bit offsets"));
        }
        Ok(Swizzle {
            bits: bits as u32,
            base: base as u32,
            shift: shift as i32,
        })
    }

    /// The identity swizzle `Sw<0,0,0>`.
    ///
    /// ```
    /// use graphene::layout::Swizzle;
    /// assert!(Swizzle::identity().is_identity());
    /// assert_eq!(Swizzle::identity().apply(77), 77);
    /// ```
    pub fn identity() -> Swizzle {
        Swizzle {
            bits: 0,
            base: 0,
            shift: 0,
        }
    }

    /// `B`, the number of bits XORed.
    ///
    /// ```
    /// use graphene::layout::Swizzle;
    /// let sw = Swizzle::new(3, 3, 3).unwrap();
    /// assert_eq!((sw.bits(), sw.base(), sw.shift()), (3, 3, 3));
    /// ```
    pub fn bits(&self) -> i64 {
        i64::from(self.bits)
    }

    /// `M`, the number of low bits left alone.
    ///
    /// ```
    /// use graphene::layout::Swizzle;
    /// assert_eq!(Swizzle::new(2, 4, 3).unwrap().base(), 4);
    /// ```
    pub fn base(&self) -> i64 {
        i64::from(self.base)
    }

    /// `S`, the signed distance from the target bits up to the source bits.
    ///
    /// ```
    /// use graphene::layout::Swizzle;
    /// assert_eq!(Swizzle::new(2, 4, -3).unwrap().shift(), -3);
    /// ```
    pub fn shift(&self) -> i64 {
        i64::from(self.shift)
    }

    /// Whether this swizzle changes nothing (`B = 0`).
    ///
    /// ```
    /// use graphene::layout::Swizzle;
    /// assert!(Swizzle::new(0, 4, 3).unwrap().is_identity());
    /// assert!(!Swizzle::new(3, 3, 3).unwrap().is_identity());
    /// ```
    pub fn is_identity(&self) -> bool {
        self.bits == 0
    }

    /// The bits read (CuTe's `yyy_msk`).
    ///
    /// ```
    /// use graphene::layout::Swizzle;
    /// // Sw<3,3,3> reads bits 6..9 and writes bits 3..6.
    /// let sw = Swizzle::new(3, 3, 3).unwrap();
    /// assert_eq!(sw.source_mask(), 0b111_000_000);
    /// ```
    pub fn source_mask(&self) -> i64 {
        let mask = (1i64 << self.bits) - 1;
        mask << (self.base + self.shift.max(0) as u32)
    }

    /// The bits written (CuTe's `zzz_msk`).
    ///
    /// ```
    /// use graphene::layout::Swizzle;
    /// assert_eq!(Swizzle::new(3, 3, 3).unwrap().target_mask(), 0b111_000);
    /// ```
    pub fn target_mask(&self) -> i64 {
        let mask = (1i64 << self.bits) - 1;
        mask << (self.base + self.shift.min(0).unsigned_abs())
    }

    /// The swizzled offset. Total on `i64`; bits outside the two masks pass
    /// through unchanged.
    ///
    /// ```
    /// use graphene::layout::Swizzle;
    /// let sw = Swizzle::new(3, 3, 3).unwrap();
    /// // Row 1 of an (8,64) fp16 tile: its 16-byte chunk 0 moves to chunk 1.
    /// assert_eq!(sw.apply(64), 64 + 8);
    /// assert_eq!(sw.apply(sw.apply(77)), 77);
    /// ```
    pub fn apply(&self, offset: i64) -> i64 {
        let moved = offset & self.source_mask();
        let shifted = if self.shift >= 0 {
            moved >> self.shift
        } else {
            moved << self.shift.unsigned_abs()
        };
        offset ^ shifted
    }

    /// The smallest power of two on whose blocks the swizzle is a
    /// permutation: `2^(B+M+|S|)`. Every block `[k·p, (k+1)·p)` maps onto
    /// itself.
    ///
    /// ```
    /// use graphene::layout::Swizzle;
    /// assert_eq!(Swizzle::new(3, 3, 3).unwrap().period(), 512);
    /// ```
    pub fn period(&self) -> i64 {
        1i64 << (self.bits + self.base + self.shift.unsigned_abs())
    }
}

/// A swizzled layout, CuTe's `ComposedLayout(Swizzle, offset, Layout)`:
/// `c ↦ Sw(offset + L(c))`.
///
/// Rule: the domain (shape, size, coordinates) is `L`'s; the offset is added
/// before the swizzle, so a view into a swizzled tensor keeps the swizzle of
/// the whole allocation (the swizzle is applied last, to the whole offset).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct SwizzledLayout {
    swizzle: Swizzle,
    offset: i64,
    layout: Layout,
}

impl SwizzledLayout {
    /// `Sw ∘ (offset + L)`.
    ///
    /// ```
    /// use graphene::layout::{Layout, Swizzle, SwizzledLayout};
    /// let l: Layout = "(8,64):(64,1)".parse().unwrap();
    /// let s = SwizzledLayout::new(Swizzle::new(3, 3, 3).unwrap(), 0, l);
    /// assert_eq!(s.to_string(), "Sw<3,3,3> o (8,64):(64,1)");
    /// ```
    pub fn new(swizzle: Swizzle, offset: i64, layout: Layout) -> SwizzledLayout {
        SwizzledLayout {
            swizzle,
            offset,
            layout,
        }
    }

    /// The swizzle functor.
    ///
    /// ```
    /// use graphene::layout::{Layout, Swizzle, SwizzledLayout};
    /// let sw = Swizzle::new(3, 3, 3).unwrap();
    /// let s = SwizzledLayout::new(sw, 32, "(8,64):(64,1)".parse::<Layout>().unwrap());
    /// assert_eq!((s.swizzle(), s.offset(), s.size()), (sw, 32, 512));
    /// assert_eq!(s.layout().to_string(), "(8,64):(64,1)");
    /// ```
    pub fn swizzle(&self) -> Swizzle {
        self.swizzle
    }

    /// The offset added before swizzling.
    ///
    /// ```
    /// use graphene::layout::{Layout, Swizzle, SwizzledLayout};
    /// let s = SwizzledLayout::new(Swizzle::identity(), 5, "4:1".parse::<Layout>().unwrap());
    /// assert_eq!(s.offset(), 5);
    /// assert_eq!(s.eval(1).unwrap(), 6);
    /// ```
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// The inner layout `L`.
    ///
    /// ```
    /// use graphene::layout::{Layout, Swizzle, SwizzledLayout};
    /// let l: Layout = "(8,8):(8,1)".parse().unwrap();
    /// let s = SwizzledLayout::new(Swizzle::new(3, 0, 3).unwrap(), 0, l.clone());
    /// assert_eq!(s.layout(), &l);
    /// ```
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The number of coordinates (that of `L`).
    ///
    /// ```
    /// use graphene::layout::{Layout, Swizzle, SwizzledLayout};
    /// let l: Layout = "(8,8):(8,1)".parse().unwrap();
    /// assert_eq!(SwizzledLayout::new(Swizzle::new(3, 0, 3).unwrap(), 0, l).size(), 64);
    /// ```
    pub fn size(&self) -> i64 {
        self.layout.size()
    }

    /// `Sw(offset + L(index))`.
    ///
    /// ```
    /// use graphene::layout::{Layout, Swizzle, SwizzledLayout};
    /// let l: Layout = "(8,64):(64,1)".parse().unwrap();
    /// let s = SwizzledLayout::new(Swizzle::new(3, 3, 3).unwrap(), 0, l);
    /// assert_eq!(s.eval(1).unwrap(), 64 + 8); // coordinate (1,0)
    /// ```
    pub fn eval(&self, index: i64) -> LayoutResult<i64> {
        let inner = self.layout.eval(index)?;
        Ok(self
            .swizzle
            .apply(add(self.offset, inner, "swizzled offset")?))
    }

    /// `Sw(offset + L(coord))` for a (possibly partly flat) coordinate.
    ///
    /// ```
    /// use graphene::layout::{SwizzledLayout, int_tuple::flat};
    /// let s: SwizzledLayout = "Sw<3,3,3> o (8,64):(64,1)".parse().unwrap();
    /// assert_eq!(s.eval_coord(&flat(&[1, 0])).unwrap(), 72);
    /// ```
    pub fn eval_coord(&self, coord: &IntTuple) -> LayoutResult<i64> {
        let inner = self.layout.eval_coord(coord)?;
        Ok(self
            .swizzle
            .apply(add(self.offset, inner, "swizzled offset")?))
    }

    /// `(Sw ∘ (O + L)) ∘ B = Sw ∘ (O + (L ∘ B))`: composition with a layout on
    /// the right, which is how tiles and reshapes of a swizzled tensor are
    /// formed.
    ///
    /// Postcondition: `result(c) == self(B(c))` for every coordinate `c` of `B`
    /// whose image `B(c)` lies in the domain of `L`.
    ///
    /// ```
    /// use graphene::layout::{Layout, Swizzle, SwizzledLayout};
    /// let s = SwizzledLayout::new(Swizzle::new(3, 3, 3).unwrap(), 0,
    ///     "(8,64):(64,1)".parse().unwrap());
    /// let column: Layout = "8:1".parse().unwrap();
    /// assert_eq!(s.compose(&column).unwrap().to_string(), "Sw<3,3,3> o 8:64");
    /// ```
    pub fn compose(&self, rhs: &Layout) -> LayoutResult<SwizzledLayout> {
        Ok(SwizzledLayout {
            swizzle: self.swizzle,
            offset: self.offset,
            layout: super::composition(&self.layout, rhs)?,
        })
    }

    /// The same swizzled layout with `delta` added to its offset: the view
    /// that starts `delta` elements further into the unswizzled storage.
    ///
    /// ```
    /// use graphene::layout::SwizzledLayout;
    /// let s: SwizzledLayout = "Sw<3,3,3> o (8,64):(64,1)".parse().unwrap();
    /// let row1 = s.shifted(64).unwrap();
    /// assert_eq!(row1.eval(0).unwrap(), s.eval(1).unwrap());
    /// ```
    pub fn shifted(&self, delta: i64) -> LayoutResult<SwizzledLayout> {
        let offset = self
            .offset
            .checked_add(delta)
            .ok_or_else(|| overflow("offset", format_args!("{} + {delta}", self.offset)))?;
        Ok(SwizzledLayout {
            offset,
            ..self.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_follow_cute_rules() {
        assert!(Swizzle::new(-1, 0, 0).is_err());
        assert!(Swizzle::new(0, -1, 0).is_err());
        assert!(Swizzle::new(2, 0, -1).is_err());
        assert!(Swizzle::new(2, 4, -2).is_ok());
        assert!(Swizzle::new(20, 20, 23).is_err());
        assert!(Swizzle::new(1, 1, i64::MIN).is_err());
        assert!(Swizzle::new(i64::MAX, i64::MAX, i64::MAX).is_err());
        assert!(Swizzle::identity().is_identity());
    }

    #[test]
    fn masks_match_the_definition() {
        let sw = Swizzle::new(3, 4, 3).unwrap();
        assert_eq!(sw.source_mask(), 0b111 << 7);
        assert_eq!(sw.target_mask(), 0b111 << 4);
        let back = Swizzle::new(2, 1, -5).unwrap();
        assert_eq!(back.source_mask(), 0b11 << 1);
        assert_eq!(back.target_mask(), 0b11 << 6);
        assert_eq!(back.apply(0b10), 0b10 | (0b1 << 6));
    }

    #[test]
    fn negative_offsets_and_extremes_do_not_panic() {
        let sw = Swizzle::new(20, 22, 20).unwrap();
        for x in [i64::MIN, -1, 0, 1, i64::MAX] {
            assert_eq!(sw.apply(sw.apply(x)), x);
        }
        let s = SwizzledLayout::new(sw, i64::MAX, Layout::leaf(2, 1).unwrap());
        assert!(s.eval(1).is_err());
        assert!(s.shifted(1).is_err());
    }
}
