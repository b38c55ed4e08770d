//! The `graphene` REPL as a library: everything but the terminal loop.
//! The binary (`src/main.rs`) and the golden tests drive the same
//! [`Session::eval_line`], so what the tests pin is what a user sees.
//!
//! - [`session`]: the evaluator — names, style, one input to one [`Output`].
//! - [`algebra`]: the layout language (literals, `let` names, swizzles, calls).
//! - [`command`]: parsing of the `:` commands.
//! - [`pictures`], [`threads`], [`tma`]: the drawings, from `graphene::viz`.
//! - [`help`]: `:help` texts; [`input`]: splitting a script into inputs;
//!   [`reader`]: completion, validation and history for the terminal;
//!   [`failure`]: the REPL's diagnostics (`E09xx`).

pub mod algebra;
pub mod command;
pub mod failure;
pub mod help;
pub mod input;
pub mod pictures;
pub mod reader;
pub mod session;
pub mod threads;
pub mod tma;

pub use session::{Origin, Output, Session};
