//! Stage 0, the algebra: hierarchical integer tuples, `Shape : Stride`
//! layouts, swizzles, and CuTe's operations on them. Depends on nothing else
//! in the crate.
//!
//! - [`Layout`] and its evaluation: `layout_value`; integer helpers: [`int_tuple`].
//! - The algebra, as free functions with CuTe's meaning: [`coalesce`],
//!   [`composition`], …
//! - [`Swizzle`] and [`SwizzledLayout`]: `swizzle`.
//! - The written forms: [`parse_layout`], `Display` (CuTe) and [`Layout::ir`].
//!
//! `docs/layout.md` states each operation's postcondition with an example.

mod composition;
mod error;
pub mod int_tuple;
mod layout_value;
mod notation;
mod swizzle;
pub mod text;
pub mod tuple;

pub use composition::{coalesce, composition};
pub use error::{LayoutError, LayoutResult};
pub use int_tuple::IntTuple;
pub use layout_value::{Layout, Offsets};
pub use notation::{IrLayout, IrSwizzledLayout, LayoutParseError, parse_layout, parse_swizzled_layout};
pub use swizzle::{Swizzle, SwizzledLayout};
pub use tuple::Tuple;
