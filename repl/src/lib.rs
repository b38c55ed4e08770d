//! The `graphene` REPL as a library: everything but the terminal. The
//! binary (`src/main.rs`) and the golden tests drive the same
//! [`Session::eval_line`], so what the tests pin is what a user sees.
//!
//! - `algebra`: the layout language (literals, `let` names, swizzles, calls).
//! - `failure`: the REPL's diagnostics (`E09xx`).

pub mod algebra;
pub mod failure;
