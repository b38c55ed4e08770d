//! Index arithmetic: what is known about a kernel's integer variables
//! ([`facts`]), the abstract domains of index expressions ([`interval`],
//! [`congruence`], [`bits`]) and the analyses over them ([`analysis`]), their
//! simplification ([`simplify`], with `linear` forms, division and
//! remainder rules and bitwise rules), strength reduction ([`strength`]) and
//! the [`prove`]r through which the lowering asks every question about an
//! index. It depends on the expression type (`expr`) and the typed IR only;
//! the checker's integer bounds and the lowering both stand on it.
//! `docs/index-arithmetic.md` states every rule.

pub mod analysis;
pub mod bits;
mod bitwise;
pub mod chain;
pub mod congruence;
mod divmod;
pub mod facts;
pub mod interval;
mod linear;
pub mod prove;
pub mod simplify;
pub mod strength;
