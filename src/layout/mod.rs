//! Stage 0, the algebra: hierarchical integer tuples, `Shape : Stride`
//! layouts, swizzles, and CuTe's operations on them. Depends on nothing else
//! in the crate.

pub mod text;
pub mod tuple;

pub use tuple::Tuple;
