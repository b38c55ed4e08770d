//! The one driver: the only place the stages are run in sequence — parse
//! (`syntax`) → check (`check`) → lower (`lower`) → write (`ptx`). `ptxgen
//! build`, `run` and `bench`, the REPL and the tests all come through here.
//!
//! - [`compile`]: a whole `.gph` file, as far as [`Options::emit`] asks —
//!   the PTX module and its text with each kernel's launch facts, or the
//!   checked IR as text.
//! - [`check()`]: the stage-limited entry, parse and check only, for callers
//!   that need the typed program but no PTX; [`compile_checked`] finishes
//!   what it began.
//! - [`check_line`]: the REPL's entry, one line parsed and checked in an
//!   incremental [`Session`].
//!
//! Each stage's diagnostics stop the pipeline: the first stage that fails
//! is the one whose diagnostics come back.

use std::sync::Arc;

use crate::check::{self, Session, Shown};
use crate::diag::{Diagnostic, Span};
use crate::ir::Program;
use crate::lower::{self, LowerError};
use crate::ptx::{Arch, Module};
use crate::syntax::{self, Line};

/// What to produce from a file.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Emit {
    /// Lower and write PTX (the default).
    #[default]
    Ptx,
    /// Stop after the checker and print the typed IR as text.
    Ir,
}

/// What the caller asks of the pipeline (`ptxgen`'s options, as plain values).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Options {
    /// `--arch`: the target; `None` is the lowest target that has every
    /// instruction used.
    pub arch: Option<Arch>,
    /// `--define NAME=VALUE`: overrides of the file's constants, in order
    /// (a later define of the same name wins).
    pub defines: Vec<(String, i64)>,
    /// `--annotate`: each IR statement as a comment above its instructions.
    pub annotate: bool,
    /// `--emit`: how far to go.
    pub emit: Emit,
    /// `--kernel NAME`: only these kernels are checked and compiled (a
    /// variant's base body is checked under the variant's constants);
    /// empty means every kernel of the file.
    pub kernels: Vec<String>,
}

/// A file parsed and checked, not lowered.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The checked program.
    pub program: Program,
    /// The checker's warnings (the file has no errors).
    pub warnings: Vec<Diagnostic>,
}

/// What a launcher must know about one kernel beyond its PTX.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct KernelFacts {
    /// The kernel's name, which is also its `.entry` name.
    pub name: String,
    /// Dynamic shared memory it must be launched with (0: static only).
    /// With [`Emit::Ir`] nothing is lowered, so a kernel whose shared
    /// memory cannot be planned reports 0 here; its lowering says why.
    pub dynamic_shared_bytes: u32,
}

/// A compiled file.
///
/// Rule: `kernels[i]` describes `program.kernels[i]`; `text` is what `emit`
/// names — PTX with one `.entry` per kernel, named after it, or the
/// checked IR; `module` is the PTX model `text` was written from, when this
/// driver lowered the file (never with [`Emit::Ir`]; the launcher's tests
/// pair a checked file with PTX written by hand and have none).
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The name reports use (the path as given).
    pub name: String,
    /// The source text, to locate diagnostics and launch requirements.
    pub source: String,
    /// The checked program.
    pub program: Program,
    /// What `text` holds.
    pub emit: Emit,
    /// The PTX module, when the file was lowered here.
    pub module: Option<Module>,
    /// What was asked for, as text: PTX, or the IR.
    pub text: String,
    /// Each kernel's launch facts, in program order.
    pub kernels: Vec<KernelFacts>,
    /// Warnings of every stage run (the file has no errors).
    pub warnings: Vec<Diagnostic>,
}

impl Compiled {
    /// The PTX text, when PTX was asked for.
    pub fn ptx(&self) -> Option<&str> {
        match self.emit {
            Emit::Ptx => Some(&self.text),
            Emit::Ir => None,
        }
    }
}

/// Parses and checks `text` (reported as `name`) with `options.defines`,
/// the kernels `options.kernels` (every kernel if empty):
/// the typed program, or the diagnostics of the first stage that fails.
pub fn check(name: &str, text: &str, options: &Options) -> Result<Checked, Vec<Diagnostic>> {
    let ast = syntax::parse_file(name, text)?;
    // A file with no kernel is worth a warning, not an error; it comes
    // first, before the checker's warnings or errors.
    let no_kernel = syntax::no_kernel(&ast);
    match check::check_file_selected(&ast, &options.defines, &options.kernels) {
        Ok((program, mut warnings)) => {
            warnings.splice(0..0, no_kernel);
            Ok(Checked { program, warnings })
        }
        Err(mut errors) => {
            errors.splice(0..0, no_kernel);
            Err(errors)
        }
    }
}

/// The PTX header's account of where the text comes from: the source, the
/// compiler's version, the options that change the output, and why the
/// target is what it is.
fn provenance(name: &str, options: &Options, module: &crate::ptx::Module) -> Vec<String> {
    let mut flags: Vec<String> = Vec::new();
    if let Some(arch) = options.arch {
        flags.push(format!("--arch {}", arch.name()));
    }
    for (constant, value) in &options.defines {
        flags.push(format!("--define {constant}={value}"));
    }
    for kernel in &options.kernels {
        flags.push(format!("--kernel {kernel}"));
    }
    if options.annotate {
        flags.push("--annotate".to_string());
    }
    let flags = if flags.is_empty() {
        "none".to_string()
    } else {
        flags.join(" ")
    };
    let mut lines = vec![format!("source: {name}"), format!("options: {flags}")];
    if let (Ok(target), Ok(reason)) = (module.target(), module.target_reason()) {
        lines.push(format!("target {}: {reason}", target.name()));
    }
    lines
}

/// Compiles `text` (reported as `name`) as far as `options.emit` asks: the
/// compiled file, or the diagnostics of the first stage that fails.
///
/// ```
/// use graphene::compile::{Options, compile};
/// let src = "%a:[64].fp32.GL\n#b:[1].block\n#t:[64].thread\n\
///            %a <- Init<0.0><<<#b, #t>>>() {\n\
///                @i = #t.indices()\n\
///                %a[@i] <- Init<0.0><<<#b.scalar(), #t.scalar()>>>()\n\
///            }\n";
/// let compiled = compile("zero.gph", src, &Options::default()).unwrap();
/// assert!(compiled.ptx().unwrap().contains(".entry zero("));
/// assert_eq!(compiled.kernels[0].dynamic_shared_bytes, 0);
/// ```
pub fn compile(name: &str, text: &str, options: &Options) -> Result<Compiled, Vec<Diagnostic>> {
    let checked = check(name, text, options)?;
    compile_checked(name, text, checked, options)
}

/// [`compile`] from what [`check()`] made of `text` with the same
/// `options.defines`: for callers that check many files and lower the ones
/// that pass (the fuzz tests), so that no file is parsed and checked twice.
pub fn compile_checked(
    name: &str,
    text: &str,
    checked: Checked,
    options: &Options,
) -> Result<Compiled, Vec<Diagnostic>> {
    let Checked { program, warnings } = checked;
    let (module, output, kernels) = match options.emit {
        Emit::Ir => {
            let kernels = program
                .kernels
                .iter()
                .map(|kernel| KernelFacts {
                    name: kernel.name.clone(),
                    dynamic_shared_bytes: lower::dynamic_shared_bytes(kernel).unwrap_or(0),
                })
                .collect();
            (None, crate::ir::print::program_text(&program), kernels)
        }
        Emit::Ptx => {
            let lowering = lower::Options {
                arch: options.arch,
                annotate: options.annotate,
                source: Some(Arc::from(text)),
            };
            let mut module = lower::lower_program(&program, &lowering)?;
            module.provenance = provenance(name, options, &module);
            let ptx = module.to_ptx().map_err(|error| {
                vec![
                    LowerError::Ptx {
                        span: Span::DUMMY,
                        error,
                    }
                    .to_diagnostic(),
                ]
            })?;
            let kernels = program
                .kernels
                .iter()
                .map(|kernel| {
                    Ok(KernelFacts {
                        name: kernel.name.clone(),
                        dynamic_shared_bytes: lower::dynamic_shared_bytes(kernel)?,
                    })
                })
                .collect::<Result<Vec<KernelFacts>, LowerError>>()
                .map_err(|error| vec![error.to_diagnostic()])?;
            (Some(module), ptx, kernels)
        }
    };
    Ok(Compiled {
        name: name.to_string(),
        source: text.to_string(),
        program,
        emit: options.emit,
        module,
        text: output,
        kernels,
        warnings,
    })
}

/// One line of the REPL: parsed, shown to `admit` (which may refuse it,
/// e.g. a constant named like one of the REPL's own bindings), then checked
/// in `session`. The line and what it showed, or why not.
pub fn check_line<E: From<Vec<Diagnostic>>>(
    session: &mut Session,
    input: &str,
    admit: impl FnOnce(&Line) -> Result<(), E>,
) -> Result<(Line, Shown), E> {
    let line = syntax::parse_line(input)?;
    admit(&line)?;
    let shown = session.line(&line)?;
    Ok((line, shown))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCALE: &str = "const BM = 64\nkernel scale {\n%x:[BM].fp32.GL\n#g:[1].block\n\
                         #t:[BM].thread\n%x <- UnaryPointwise<neg><<<#g, #t>>>(%x) {\n@i = #t.indices()\n\
                         %x[@i] <- UnaryPointwise<neg><<<#g.scalar(), #t.scalar()>>>(%x[@i])\n}\n}\n";

    #[test]
    fn ptx_comes_with_one_entry_and_facts_per_kernel() {
        let compiled =
            compile("scale.gph", SCALE, &Options::default()).unwrap_or_else(|d| panic!("{d:#?}"));
        let ptx = compiled.ptx().expect("PTX was asked for");
        assert!(ptx.contains(".entry scale("), "{ptx}");
        assert_eq!(
            compiled.kernels,
            [KernelFacts {
                name: "scale".into(),
                dynamic_shared_bytes: 0
            }]
        );
        assert!(compiled.warnings.is_empty());
    }

    #[test]
    fn defines_reach_the_checker_and_ir_stops_before_lowering() {
        let options = Options {
            defines: vec![("BM".into(), 32)],
            emit: Emit::Ir,
            ..Options::default()
        };
        let compiled = compile("scale.gph", SCALE, &options).unwrap_or_else(|d| panic!("{d:#?}"));
        assert!(compiled.module.is_none() && compiled.ptx().is_none());
        assert!(compiled.text.contains("kernel scale"), "{}", compiled.text);
        assert!(compiled.text.contains("%x:[32 : 1]"), "{}", compiled.text);
        let unknown = Options {
            defines: vec![("BN".into(), 8)],
            ..Options::default()
        };
        let errors = check("scale.gph", SCALE, &unknown).unwrap_err();
        assert!(errors[0].message.contains("`--define BN=8`"), "{errors:#?}");
    }

    #[test]
    fn the_first_failing_stage_reports() {
        let errors = compile(
            "bad.gph",
            "%a:[4].fp32.GL\n%a <- Nope()\n",
            &Options::default(),
        )
        .unwrap_err();
        assert!(errors.iter().any(Diagnostic::is_error));
        let errors = compile("bad.gph", "kernel k {\n", &Options::default()).unwrap_err();
        assert!(errors.iter().any(Diagnostic::is_error));
    }

    #[test]
    fn a_refused_line_is_not_checked() {
        let mut session = Session::new();
        let refused: Result<_, Vec<Diagnostic>> = check_line(&mut session, "const N = 4", |_| {
            Err(vec![Diagnostic::error("E0000", "no", Span::DUMMY)])
        });
        assert!(refused.is_err());
        assert_eq!(session.const_value("N"), None);
        let (_, shown) =
            check_line::<Vec<Diagnostic>>(&mut session, "const N = 4", |_| Ok(())).unwrap();
        assert!(matches!(shown, Shown::Const { value: 4, .. }), "{shown:?}");
    }
}
