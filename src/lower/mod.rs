//! Stage 3, lowering: from the typed IR to the PTX model. So far it holds
//! the index arithmetic — what is known about a kernel's variables
//! ([`facts`]), the analyses of index expressions ([`analysis`] over the
//! [`interval`], [`congruence`] and [`bits`] domains), their simplification
//! ([`simplify`]) and the strength reduction applied before emission
//! ([`strength`]). `docs/index-arithmetic.md` states every rule and why it
//! is sound.

pub mod analysis;
pub mod bits;
mod bitwise;
pub mod congruence;
mod divmod;
pub mod facts;
pub mod interval;
mod linear;
pub mod simplify;
pub mod strength;
