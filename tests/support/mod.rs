//! Support code shared by every test crate of the workspace: the one
//! golden-file harness, the one way to skip a test visibly, the list of
//! example kernels, and work spread over the cores.
//!
//! Integration tests include it with `mod support;`; the REPL crate's tests
//! and the library's unit tests include the same files by `#[path]`, so that
//! the rules (which `BLESS` blesses, what a skip line says) live once and the
//! shipped library carries no test scaffolding.

#![allow(dead_code)] // each test crate uses a different part

pub mod examples;
pub mod golden;
pub mod parallel;
pub mod skip;
