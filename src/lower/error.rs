//! Stage 3, lowering: what can go wrong while turning a checked program into
//! PTX, and the diagnostics (codes `E03xx`, listed in `docs/diagnostics.md`)
//! each failure becomes at the API boundary.

use crate::diag::{Diagnostic, Span};
use crate::ptx::PtxError;

/// Stable codes of the lowering's diagnostics.
pub mod codes {
    /// An atomic spec that no catalogue entry implements.
    pub const NO_INSTRUCTION: &str = "E0300";
    /// A construct the lowering cannot compile (e.g. a symbolic extent in a
    /// per-thread view).
    pub const UNSUPPORTED: &str = "E0301";
    /// Shared memory beyond what one block may use on the target.
    pub const SHARED_MEMORY: &str = "E0302";
    /// A kernel that unrolls to more instructions than the lowering emits.
    pub const TOO_LARGE: &str = "E0303";
    /// Occupancy attributes that leave fewer registers per thread than an
    /// instruction of the kernel needs.
    pub const REGISTERS: &str = "E0305";
    /// The PTX model refused something the lowering built: a compiler bug.
    pub const INTERNAL: &str = "E0304";
}

/// One candidate instruction that was tried for an atomic spec and why it
/// does not apply.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Candidate {
    /// The catalogue entry's name, e.g. `ld.global.v4.b32`.
    pub name: String,
    /// Why it does not match, e.g. `needs 16-byte alignment; …`.
    pub reason: String,
}

/// An operand of an atomic spec, described for a diagnostic.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct OperandNote {
    /// `output`, `input 1`, …
    pub role: String,
    /// Its full type, e.g. `[1,8 : 16,1].fp16.SH`.
    pub ty: String,
    /// Where it was written.
    pub span: Span,
}

/// An atomic spec that matched no catalogue entry.
///
/// Rule: `candidates` are ordered nearest first (same kind and memories,
/// then how far matching got).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct NoMatch {
    /// The spec statement.
    pub span: Span,
    /// The spec as written in words, e.g. `Move<async>`.
    pub spec: String,
    /// The executing thread group's type, e.g. `[32].thread`.
    pub group: String,
    /// Outputs, then inputs.
    pub operands: Vec<OperandNote>,
    /// The nearest entries and why each does not apply.
    pub candidates: Vec<Candidate>,
    /// A concrete fix, when the nearest candidate suggests one.
    pub help: Option<String>,
}

/// Why a program could not be lowered.
#[derive(Clone, PartialEq, Debug)]
pub enum LowerError {
    /// An atomic spec matched no instruction.
    NoMatch(Box<NoMatch>),
    /// A construct the lowering does not compile.
    Unsupported {
        /// Where.
        span: Span,
        /// What, in words.
        message: String,
        /// How to write it instead.
        help: String,
    },
    /// The shared allocations of a kernel exceed what a block may use.
    SharedMemory {
        /// The kernel.
        span: Span,
        /// Bytes asked for (after 128-byte alignment of every buffer), the
        /// true number however large.
        bytes: u128,
        /// The limit of the target.
        limit: u64,
        /// The target the limit is for.
        target: String,
    },
    /// Unrolling produced more statements than the lowering emits.
    TooLarge {
        /// The kernel.
        span: Span,
        /// The budget that was exceeded.
        limit: usize,
    },
    /// The occupancy attributes leave fewer registers per thread than an
    /// instruction needs (ptxas would refuse it).
    Registers {
        /// The kernel.
        span: Span,
        /// Registers per thread the attributes leave.
        budget: u32,
        /// Registers per thread the instruction needs at least.
        needed: u32,
        /// The instruction's catalogue name.
        instruction: String,
        /// The attributes as written, e.g. `min_blocks_per_sm = 2`.
        attributes: String,
    },
    /// The PTX model refused an instruction or declaration.
    Ptx {
        /// The statement being lowered.
        span: Span,
        /// What the model said.
        error: PtxError,
    },
}

impl LowerError {
    /// An unsupported construct at `span`.
    pub fn unsupported(span: Span, message: impl Into<String>, help: impl Into<String>) -> Self {
        LowerError::Unsupported {
            span,
            message: message.into(),
            help: help.into(),
        }
    }

    /// The diagnostic shown to the user.
    pub fn to_diagnostic(&self) -> Diagnostic {
        match self {
            LowerError::NoMatch(no_match) => no_match_diagnostic(no_match),
            LowerError::Unsupported {
                span,
                message,
                help,
            } => Diagnostic::error(codes::UNSUPPORTED, message.clone(), *span)
                .with_label("cannot be compiled")
                .with_help(help.clone()),
            LowerError::SharedMemory {
                span,
                bytes,
                limit,
                target,
            } => Diagnostic::error(
                codes::SHARED_MEMORY,
                format!(
                    "this kernel needs {bytes} bytes of shared memory, more than the {limit} a \
                     block may use on {target}"
                ),
                *span,
            )
            .with_label("in this kernel")
            .with_note("every shared buffer is rounded up to a multiple of 128 bytes")
            .with_help("use smaller shared tiles, or fewer pipeline stages"),
            LowerError::TooLarge { span, limit } => Diagnostic::error(
                codes::TOO_LARGE,
                format!("this kernel unrolls to more than {limit} PTX statements"),
                *span,
            )
            .with_label("in this kernel")
            .with_note("loops whose bodies index register tensors are unrolled completely")
            .with_help("index register tensors with fewer loop iterations, or use larger tiles"),
            LowerError::Registers {
                span,
                budget,
                needed,
                instruction,
                attributes,
            } => Diagnostic::error(
                codes::REGISTERS,
                format!(
                    "`{attributes}` leaves {budget} registers per thread; `{instruction}` needs \
                     at least {needed}"
                ),
                *span,
            )
            .with_label("in this kernel")
            .with_note(
                "a block's registers per thread are 65536 / (blocks per SM × threads per block), \
                 rounded down to a multiple of 8, and at most `max_registers`",
            )
            .with_help(format!(
                "ask for fewer blocks per SM or more registers, so that {needed} registers fit"
            )),
            LowerError::Ptx { span, error } => Diagnostic::error(
                codes::INTERNAL,
                format!("internal error while writing PTX: {error}"),
                *span,
            )
            .with_label("while lowering this")
            .with_note("this is a bug in the compiler, not in the program; please report it"),
        }
    }
}

fn no_match_diagnostic(no_match: &NoMatch) -> Diagnostic {
    let mut diagnostic = Diagnostic::error(
        codes::NO_INSTRUCTION,
        format!(
            "no instruction matches this `{}` executed by `{}`",
            no_match.spec, no_match.group
        ),
        no_match.span,
    )
    .with_label("atomic spec (it has no body)");
    for operand in &no_match.operands {
        diagnostic =
            diagnostic.with_secondary(operand.span, format!("{}: {}", operand.role, operand.ty));
    }
    if no_match.candidates.is_empty() {
        diagnostic = diagnostic.with_note("the catalogue has no entry for this kind of spec");
    }
    for candidate in &no_match.candidates {
        diagnostic = diagnostic.with_note(format!("`{}`: {}", candidate.name, candidate.reason));
    }
    let help = no_match.help.clone().unwrap_or_else(|| {
        "give the spec a body that decomposes it into specs of the catalogue \
         (docs/lowering.md lists them)"
            .to_string()
    });
    diagnostic.with_help(help)
}

impl From<LowerError> for Vec<Diagnostic> {
    fn from(error: LowerError) -> Vec<Diagnostic> {
        vec![error.to_diagnostic()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_match_lists_operands_and_candidates_in_order() {
        let error = LowerError::NoMatch(Box::new(NoMatch {
            span: Span::new(10, 20),
            spec: "Move".into(),
            group: "[].thread".into(),
            operands: vec![OperandNote {
                role: "output".into(),
                ty: "[8].fp16.RF".into(),
                span: Span::new(10, 12),
            }],
            candidates: vec![
                Candidate {
                    name: "ld.global.v4.b32".into(),
                    reason: "needs 16-byte alignment".into(),
                },
                Candidate {
                    name: "ld.global.v2.b32".into(),
                    reason: "moves 8 bytes".into(),
                },
            ],
            help: None,
        }));
        let diagnostic = error.to_diagnostic();
        assert_eq!(diagnostic.code, codes::NO_INSTRUCTION);
        assert_eq!(
            diagnostic.message,
            "no instruction matches this `Move` executed by `[].thread`"
        );
        assert_eq!(diagnostic.secondary[0].message, "output: [8].fp16.RF");
        assert_eq!(
            diagnostic.notes,
            [
                "`ld.global.v4.b32`: needs 16-byte alignment",
                "`ld.global.v2.b32`: moves 8 bytes"
            ]
        );
        assert!(diagnostic.help.is_some());
    }
}
