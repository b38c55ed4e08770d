//! Stage 0, the algebra: hierarchical integer tuples, `Shape : Stride`
//! layouts, swizzles, and CuTe's operations on them. Depends on nothing else
//! in the crate.
//!
//! - [`Layout`] and its evaluation: `layout_value`; integer helpers: [`int_tuple`].
//! - The algebra, as free functions with CuTe's meaning: [`coalesce`],
//!   [`composition`], [`complement`], [`right_inverse`], [`left_inverse`],
//!   the divides ([`logical_divide`], [`zipped_divide`], [`tiled_divide`]) and
//!   products ([`logical_product`], [`blocked_product`], [`raked_product`]).
//! - Graphene's operations on top: [`tile`], [`reshape`], [`digit_coordinates`].
//! - [`Swizzle`] and [`SwizzledLayout`]: `swizzle`.
//! - The written forms: [`parse_layout`], `Display` (CuTe) and [`Layout::ir`].
//!
//! `docs/layout.md` states each operation's postcondition with an example.

mod complement;
mod composition;
mod error;
pub mod int_tuple;
mod layout_value;
mod notation;
mod swizzle;
pub mod text;
mod tile;
mod tiler;
pub mod tuple;

pub use complement::{complement, filter, left_inverse, right_inverse};
pub use composition::{coalesce, composition};
pub use error::{LayoutError, LayoutResult};
pub use int_tuple::IntTuple;
pub use layout_value::{Layout, Offsets};
pub use notation::{
    IrLayout, IrSwizzledLayout, LayoutParseError, parse_layout, parse_swizzled_layout,
};
pub use swizzle::{Swizzle, SwizzledLayout};
pub use tile::{Tiled, digit_coordinates, digit_decomposable, reshape, tile};
pub use tiler::{Tiler, composition_by_mode, logical_divide, tiled_divide, zipped_divide};
pub use tiler::{blocked_product, logical_product, raked_product};
pub use tuple::Tuple;
