//! Stage 0, the algebra: the one error type of the layout algebra. Every
//! operation that can fail on some input returns it instead of panicking;
//! each message names the violated condition and shows the operands in CuTe
//! notation so that a diagnostic can quote it as is.

use thiserror::Error;

/// Why a layout operation has no result.
///
/// Rule: operands are stored already rendered in CuTe notation (`(4,8):(1,4)`),
/// which keeps the error small and lets callers print it without the layout.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum LayoutError {
    /// A shape has a mode of size zero or less.
    #[error("shape {shape} has a mode of size {size}: every mode must have size at least 1")]
    NonPositiveSize {
        /// The offending shape.
        shape: String,
        /// The first size found below 1.
        size: i64,
    },

    /// Shape and stride do not have the same tree.
    #[error(
        "shape {shape} and stride {stride} are not congruent: they must have the same tree, leaf for leaf"
    )]
    Incongruent {
        /// The shape.
        shape: String,
        /// The stride.
        stride: String,
    },

    /// A result does not fit in a signed 64-bit integer.
    #[error("i64 overflow computing the {operation} of {operands}")]
    Overflow {
        /// What was being computed (`size`, `cosize`, `offset`, …).
        operation: &'static str,
        /// The operands in CuTe notation.
        operands: String,
    },

    /// A 1-D index outside `[0, size)`.
    #[error("index {index} is outside the domain [0, {size}) of {layout}")]
    IndexOutOfRange {
        /// The index given.
        index: i64,
        /// The size of the layout.
        size: i64,
        /// The layout in CuTe notation.
        layout: String,
    },

    /// A coordinate that does not fit the shape.
    #[error("coordinate {coord} does not fit shape {shape}: {reason}")]
    BadCoordinate {
        /// The coordinate in CuTe notation.
        coord: String,
        /// The shape in CuTe notation.
        shape: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A mode index beyond the rank.
    #[error("{layout} has rank {rank}, so it has no mode {index}")]
    ModeOutOfRange {
        /// The mode asked for.
        index: usize,
        /// The rank of the layout.
        rank: usize,
        /// The layout in CuTe notation.
        layout: String,
    },

    /// An integer division whose operands do not divide one another.
    #[error("{operation} of {lhs} by {rhs}: {condition}")]
    Divisibility {
        /// The operation (`shape_div`, `ceil_div`).
        operation: &'static str,
        /// The dividend.
        lhs: String,
        /// The divisor.
        rhs: String,
        /// The condition that failed.
        condition: String,
    },

    /// Composition `lhs ∘ rhs` cannot be expressed as a layout.
    #[error("composition {lhs} o {rhs}: {condition}")]
    Composition {
        /// The left operand (applied last).
        lhs: String,
        /// The right operand (applied first).
        rhs: String,
        /// The divisibility or no-carry condition that failed.
        condition: String,
    },

    /// The layout has no complement.
    #[error("complement of {layout} within {cotarget}: {condition}")]
    Complement {
        /// The layout.
        layout: String,
        /// The codomain bound.
        cotarget: String,
        /// The condition that failed.
        condition: String,
    },

    /// The layout has no left inverse.
    #[error("left inverse of {layout}: {condition}")]
    LeftInverse {
        /// The layout.
        layout: String,
        /// The condition that failed.
        condition: String,
    },

    /// An operation defined only for non-negative strides met a negative one.
    #[error("{operation} of {layout}: stride {stride} is negative; {operation} needs strides >= 0")]
    NegativeStride {
        /// The operation.
        operation: &'static str,
        /// The layout.
        layout: String,
        /// The negative stride.
        stride: i64,
    },

    /// A tiler has more (or, for `tile`, a different number of) modes than the layout.
    #[error("{operation} of {layout} (rank {rank}) by {tilers} tiler(s): {condition}")]
    TilerRank {
        /// The operation.
        operation: &'static str,
        /// The layout being divided or multiplied.
        layout: String,
        /// Its rank.
        rank: usize,
        /// The number of tilers given.
        tilers: usize,
        /// The rule that failed.
        condition: &'static str,
    },

    /// An operation that must keep the number of elements was given operands
    /// of different sizes.
    #[error(
        "{operation} of {layout} (size {size}) by {target} (size {target_size}): the sizes must be equal"
    )]
    SizeMismatch {
        /// The operation (`reshape`).
        operation: &'static str,
        /// The layout operated on.
        layout: String,
        /// Its size.
        size: i64,
        /// The other operand.
        target: String,
        /// Its size.
        target_size: i64,
    },

    /// Swizzle parameters outside CuTe's rules.
    #[error("Sw<{bits},{base},{shift}> is not a valid swizzle: {condition}")]
    InvalidSwizzle {
        /// B, the number of bits XORed.
        bits: i64,
        /// M, the number of low bits kept.
        base: i64,
        /// S, the distance between the two bit groups.
        shift: i64,
        /// The rule that failed.
        condition: &'static str,
    },

    /// `digit_coordinates` asked of a layout whose modes interleave or overlap.
    #[error("{layout} has no digit coordinates: {condition}")]
    NotDigitDecomposable {
        /// The layout.
        layout: String,
        /// Which mode broke the rule, and how.
        condition: String,
    },
}

/// Shorthand used across the algebra.
pub type LayoutResult<T> = Result<T, LayoutError>;

/// The overflow error for `operation`, with operands rendered lazily by the caller.
pub(crate) fn overflow(operation: &'static str, operands: impl std::fmt::Display) -> LayoutError {
    LayoutError::Overflow {
        operation,
        operands: operands.to_string(),
    }
}

/// `a * b`, or the overflow error naming `operation`.
pub(crate) fn mul(a: i64, b: i64, operation: &'static str) -> LayoutResult<i64> {
    a.checked_mul(b)
        .ok_or_else(|| overflow(operation, format_args!("{a} * {b}")))
}

/// `a + b`, or the overflow error naming `operation`.
pub(crate) fn add(a: i64, b: i64, operation: &'static str) -> LayoutResult<i64> {
    a.checked_add(b)
        .ok_or_else(|| overflow(operation, format_args!("{a} + {b}")))
}
