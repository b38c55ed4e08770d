//! Which names the writer may emit as PTX identifiers (entries, parameters,
//! shared arrays): the identifier syntax we write, less the names `ptxas`
//! refuses, kept in one table.
//!
//! PTX identifiers are `[A-Za-z][A-Za-z0-9_$]*` or `[_$%][A-Za-z0-9_$]+`; we
//! write only `[A-Za-z_][A-Za-z0-9_]*`. PTX's reserved words are `.`-prefixed
//! (directives, types, state spaces) or `%`-prefixed (special registers), so
//! none of them can collide with such a name, and opcodes are no keywords.
//! The exception is the predefined identifier `WARP_SZ` (PTX ISA, "Predefined
//! identifiers"), which stands for the warp size wherever a name may appear.

use super::error::PtxError;

/// Names of the identifier syntax we write that `ptxas` refuses as an
/// `.entry`, `.param` or `.shared` name.
///
/// Found by assembling, with ptxas 12.9 for sm_70 (PTX 6.0) and sm_90a
/// (PTX 8.0), a module naming an entry, a parameter and a shared array after
/// every PTX opcode (`add`, `ld`, `mma`, `wgmma`, `ret`, `bra`, …), every
/// directive without its dot (`entry`, `param`, `reg`, `shared`, `target`,
/// `maxnreg`, …), every type name (`u32`, `b64`, `f16x2`, `pred`, …), every
/// special register without its `%` (`tid`, `laneid`, `clock`, …) and
/// `true`, `false`, `inf`, `nan`: only these are refused ("syntax error").
/// `_` alone, which is not an identifier at all, is refused by
/// [`check_identifier`]'s syntax rule.
pub const RESERVED: [&str; 1] = ["WARP_SZ"];

/// Whether `name` is one of the [`RESERVED`] names.
pub fn is_reserved(name: &str) -> bool {
    RESERVED.contains(&name)
}

/// Whether `name` is written `[A-Za-z_][A-Za-z0-9_]*` and is not `_` alone.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name != "_"
}

/// Checks that `name` is an identifier the writer may emit as is: one of
/// our syntax ([`is_identifier`]) that `ptxas` accepts (not [`RESERVED`]).
pub fn check_identifier(what: &'static str, name: &str) -> Result<(), PtxError> {
    if !is_identifier(name) {
        return Err(PtxError::BadName {
            what,
            name: name.to_string(),
        });
    }
    if is_reserved(name) {
        return Err(PtxError::ReservedName {
            what,
            name: name.to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_our_syntax_are_identifiers_except_an_underscore_alone() {
        for name in ["k", "_k", "__", "gemm_f16_sm90", "a1", "add", "tid", "u32"] {
            assert!(check_identifier("entry", name).is_ok(), "{name}");
        }
        for name in ["", "_", "1k", "a-b", "a.b", "%tid", "é", "a$b"] {
            assert!(
                matches!(
                    check_identifier("entry", name),
                    Err(PtxError::BadName { .. })
                ),
                "{name}"
            );
        }
    }

    #[test]
    fn reserved_names_are_refused_with_their_own_error() {
        let error = check_identifier("parameter", "WARP_SZ").unwrap_err();
        assert!(matches!(error, PtxError::ReservedName { .. }));
        assert!(error.to_string().contains("WARP_SZ"), "{error}");
        // Case matters in PTX: only the exact spelling is predefined.
        assert!(check_identifier("parameter", "warp_sz").is_ok());
    }
}
