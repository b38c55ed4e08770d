//! Launch stage: the `run` and `bench` subcommands over a compiled file —
//! their options, the choice of kernels, every plan checked before the GPU
//! is touched, then one summary line per kernel (or `--json` rows).
//!
//! The command-line front end compiles the file into a [`CompiledFile`]
//! ([`CompiledFile::compile`]: parse, check, lower) and calls [`run_file`]
//! or [`bench_file`]; everything else happens here.

use std::io::Write;
use std::sync::Arc;

use super::PlanError;
use super::dims::{DimArg, DimValues};
use super::plan::{LaunchPlan, Source};
use crate::diag::{Diagnostic, Span};
use crate::ir::{Kernel, Program};
use crate::lower::{self, LowerError};
use crate::ptx::Arch;
use crate::reference::{Contract, ReferenceError};
use crate::{check, syntax};

/// A `.gph` file ready to run.
///
/// Rule: `ptx` holds one `.entry` per kernel of `program`, named after it;
/// `dynamic_shared_bytes[i]` is what kernel `i` must be launched with.
#[derive(Clone, Debug)]
pub struct CompiledFile {
    /// The name reports use (the path as given).
    pub name: String,
    /// The source text, to locate requirements.
    pub text: String,
    /// The checked program.
    pub program: Program,
    /// The PTX of all its kernels.
    pub ptx: String,
    /// Dynamic shared memory per kernel, in program order.
    pub dynamic_shared_bytes: Vec<u32>,
}

impl CompiledFile {
    /// Parses, checks and lowers `text` (reported as `name`), with
    /// `defines` overriding its constants, for `arch` (`None`: the lowest
    /// target that has every instruction used). The diagnostics of the
    /// first stage that fails, otherwise the file ready to run.
    pub fn compile(
        name: &str,
        text: &str,
        defines: &[(String, i64)],
        arch: Option<Arch>,
    ) -> Result<CompiledFile, Vec<Diagnostic>> {
        let ast = syntax::parse_file(name, text)?;
        let program = check::check_file(&ast, defines)?;
        let options = lower::Options {
            arch,
            annotate: false,
            source: Some(Arc::from(text)),
        };
        let module = lower::lower_program(&program, &options)?;
        let ptx = module.to_ptx().map_err(|error| {
            vec![
                LowerError::Ptx {
                    span: Span::DUMMY,
                    error,
                }
                .to_diagnostic(),
            ]
        })?;
        let dynamic_shared_bytes = program
            .kernels
            .iter()
            .map(lower::dynamic_shared_bytes)
            .collect::<Result<Vec<u32>, LowerError>>()
            .map_err(|error| vec![error.to_diagnostic()])?;
        Ok(CompiledFile {
            name: name.to_string(),
            text: text.to_string(),
            program,
            ptx,
            dynamic_shared_bytes,
        })
    }
}

/// The options of `ptxgen run`.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct RunOptions {
    /// Run only this kernel (default: every kernel of the file).
    #[arg(long, value_name = "NAME")]
    pub kernel: Option<String>,
    /// The value of a symbolic dimension, e.g. `--dim M=4096`; one per dim.
    #[arg(long = "dim", value_name = "NAME=VALUE")]
    pub dims: Vec<DimArg>,
    /// Seed of the random inputs (the same seed gives the same inputs).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Compare the output with the CPU reference of the kernel's contract;
    /// exit with 1 when any kernel fails.
    #[arg(long)]
    pub check: bool,
}

/// The options of `ptxgen bench`.
#[derive(Clone, Debug, clap::Args)]
pub struct BenchOptions {
    /// Time only this kernel (default: every kernel of the file).
    #[arg(long, value_name = "NAME")]
    pub kernel: Option<String>,
    /// The value of a symbolic dimension, e.g. `--dim M=4096`; one per dim.
    #[arg(long = "dim", value_name = "NAME=VALUE")]
    pub dims: Vec<DimArg>,
    /// Timed launches.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: u32,
    /// Untimed launches first.
    #[arg(long, default_value_t = 10)]
    pub warmup: u32,
    /// Print a JSON array of rows (kernel, dims, m, n, k, median_ms,
    /// min_ms, max_ms, tflops or gbps) instead of summary lines.
    #[arg(long)]
    pub json: bool,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Why a command could not run its kernels (a kernel that runs and fails
/// its check is not an error: it is a `FAIL` line).
#[derive(Clone, PartialEq, Debug, thiserror::Error)]
pub enum CommandError {
    /// A launch that cannot be planned: dims, requirements, sizes.
    #[error("{0}")]
    Plan(#[from] PlanError),
    /// `--kernel` names no kernel of the file.
    #[error("`--kernel {kernel}`: {file} has no such kernel (its kernels: {})", available.join(", "))]
    NoSuchKernel {
        /// The name given.
        kernel: String,
        /// The file.
        file: String,
        /// Its kernels.
        available: Vec<String>,
    },
    /// The front end's output does not fit together (a kernel without its
    /// dynamic shared size).
    #[error("{0}")]
    Inconsistent(String),
    /// This binary cannot run kernels.
    #[error(
        "this ptxgen was built without the `cuda` feature, so it cannot run kernels: rebuild with \
         `cargo build --release --features cuda`"
    )]
    NoCudaFeature,
    /// The GPU side failed: no driver or device, the JIT, a launch, a fault.
    #[error("{0}")]
    Device(String),
    /// Writing the report failed.
    #[error("writing the report: {0}")]
    Output(String),
}

impl From<std::io::Error> for CommandError {
    fn from(error: std::io::Error) -> CommandError {
        CommandError::Output(error.to_string())
    }
}

/// One kernel to launch, with its plan and its contract (or why it has none).
#[derive(Clone, Debug)]
pub struct Selected<'p> {
    /// The checked kernel.
    pub kernel: &'p Kernel,
    /// Its launch, checked on the host.
    pub plan: LaunchPlan,
    /// What `--check` compares with.
    pub contract: Result<Contract, ReferenceError>,
}

/// The kernels `--kernel` selects, each with its plan: every dim bound and
/// every requirement checked before anything runs.
pub fn select<'p>(
    compiled: &'p CompiledFile,
    kernel: Option<&str>,
    dims: &[DimArg],
) -> Result<Vec<Selected<'p>>, CommandError> {
    let kernels: Vec<(usize, &Kernel)> = compiled
        .program
        .kernels
        .iter()
        .enumerate()
        .filter(|(_, k)| kernel.is_none_or(|name| k.name == name))
        .collect();
    if let Some(name) = kernel
        && kernels.is_empty()
    {
        return Err(CommandError::NoSuchKernel {
            kernel: name.to_string(),
            file: compiled.name.clone(),
            available: compiled
                .program
                .kernels
                .iter()
                .map(|k| k.name.clone())
                .collect(),
        });
    }
    let values = DimValues::new(dims.to_vec())?;
    let chosen: Vec<&Kernel> = kernels.iter().map(|(_, k)| *k).collect();
    values.check_known(&chosen)?;
    let source = Source {
        name: &compiled.name,
        text: &compiled.text,
    };
    kernels
        .into_iter()
        .map(|(index, kernel)| {
            let shared = *compiled.dynamic_shared_bytes.get(index).ok_or_else(|| {
                CommandError::Inconsistent(format!(
                    "no dynamic shared memory size for kernel `{}`",
                    kernel.name
                ))
            })?;
            let dims = values.bind(kernel)?;
            let plan = LaunchPlan::new(kernel, &dims, shared, Some(source))?;
            Ok(Selected {
                kernel,
                contract: Contract::of(kernel, &dims),
                plan,
            })
        })
        .collect()
}

/// `ptxgen run`: runs the selected kernels once each and writes one line
/// per kernel to `out` (after a line naming the device). `Ok(true)` when
/// every kernel passed (or ran, without `--check`).
pub fn run_file(
    compiled: &CompiledFile,
    options: &RunOptions,
    out: &mut dyn Write,
) -> Result<bool, CommandError> {
    let selected = select(compiled, options.kernel.as_deref(), &options.dims)?;
    run_on_device(compiled, &selected, options, out)
}

/// `ptxgen bench`: times the selected kernels and writes one line each to
/// `out`, or a JSON array with `--json` (the device line then goes to
/// `log`).
pub fn bench_file(
    compiled: &CompiledFile,
    options: &BenchOptions,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> Result<(), CommandError> {
    let selected = select(compiled, options.kernel.as_deref(), &options.dims)?;
    bench_on_device(compiled, &selected, options, out, log)
}

#[cfg(not(feature = "cuda"))]
fn run_on_device(
    _: &CompiledFile,
    _: &[Selected],
    _: &RunOptions,
    _: &mut dyn Write,
) -> Result<bool, CommandError> {
    Err(CommandError::NoCudaFeature)
}

#[cfg(not(feature = "cuda"))]
fn bench_on_device(
    _: &CompiledFile,
    _: &[Selected],
    _: &BenchOptions,
    _: &mut dyn Write,
    _: &mut dyn Write,
) -> Result<(), CommandError> {
    Err(CommandError::NoCudaFeature)
}

#[cfg(feature = "cuda")]
fn open_gpu() -> Result<crate::runtime::Gpu, CommandError> {
    crate::runtime::Gpu::new().map_err(|error| CommandError::Device(error.to_string()))
}

#[cfg(feature = "cuda")]
fn load<'g>(
    gpu: &'g crate::runtime::Gpu,
    compiled: &CompiledFile,
) -> Result<crate::runtime::Module<'g>, CommandError> {
    gpu.load_module(&compiled.ptx)
        .map_err(|error| CommandError::Device(format!("{}: {error}", compiled.name)))
}

#[cfg(feature = "cuda")]
fn run_on_device(
    compiled: &CompiledFile,
    selected: &[Selected],
    options: &RunOptions,
    out: &mut dyn Write,
) -> Result<bool, CommandError> {
    let gpu = open_gpu()?;
    writeln!(out, "# device: {}", gpu.info())?;
    let module = load(&gpu, compiled)?;
    let mut all_passed = true;
    for one in selected {
        let report = super::device::run_kernel(
            &gpu,
            &module,
            &one.plan,
            &one.contract,
            options.seed,
            options.check,
        )
        .map_err(|error| CommandError::Device(error.to_string()))?;
        writeln!(out, "{}", report.line())?;
        all_passed &= report.passed();
    }
    Ok(all_passed)
}

#[cfg(feature = "cuda")]
fn bench_on_device(
    compiled: &CompiledFile,
    selected: &[Selected],
    options: &BenchOptions,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> Result<(), CommandError> {
    let gpu = open_gpu()?;
    let device_line = format!("# device: {}", gpu.info());
    if options.json {
        writeln!(log, "{device_line}")?;
    } else {
        writeln!(out, "{device_line}")?;
    }
    let module = load(&gpu, compiled)?;
    let mut reports = Vec::with_capacity(selected.len());
    for one in selected {
        let report = super::device::bench_kernel(
            &gpu,
            &module,
            &one.plan,
            one.contract.as_ref().ok(),
            options.seed,
            options.reps as usize,
            options.warmup as usize,
        )
        .map_err(|error| CommandError::Device(error.to_string()))?;
        if !options.json {
            writeln!(out, "{}", report.line())?;
        }
        reports.push(report);
    }
    if options.json {
        write!(out, "{}", super::report::json_rows(&reports))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check_file;
    use crate::syntax::parse_file;

    const FILE: &str = "kernel scale {\n%x:[N].fp32.GL\n%y:[N].fp32.GL\n#g:[N/64].block\n#t:[64].thread\n\
                        %y <- UnaryPointwise<neg><<<#g, #t>>>(%x) {}\n}\n\
                        kernel fused {\n%x:[64].fp32.GL\n#g:[1].block\n#t:[64].thread\n\
                        %x <- Spec<<<#g, #t>>>(%x) {}\n}\n";

    fn compiled() -> CompiledFile {
        let file = parse_file("two.gph", FILE).unwrap_or_else(|d| panic!("{d:#?}"));
        CompiledFile {
            name: "two.gph".into(),
            text: FILE.into(),
            program: check_file(&file, &[]).unwrap_or_else(|d| panic!("{d:#?}")),
            ptx: String::new(),
            dynamic_shared_bytes: vec![0, 0],
        }
    }

    fn dims(args: &[&str]) -> Vec<DimArg> {
        args.iter().map(|a| a.parse().unwrap()).collect()
    }

    #[test]
    fn every_kernel_is_planned_and_the_generic_one_has_no_contract() {
        let compiled = compiled();
        let selected = select(&compiled, None, &dims(&["N=256"])).unwrap();
        let names: Vec<&str> = selected.iter().map(|s| s.kernel.name.as_str()).collect();
        assert_eq!(names, ["scale", "fused"]);
        assert_eq!(selected[0].plan.grid, 4);
        assert!(selected[0].contract.is_ok());
        assert!(matches!(
            selected[1].contract,
            Err(ReferenceError::NoContract { .. })
        ));
    }

    #[test]
    fn selection_errors_are_one_line_and_name_the_fix() {
        let compiled = compiled();
        let error = select(&compiled, Some("gemm"), &[]).err().unwrap();
        assert_eq!(
            error.to_string(),
            "`--kernel gemm`: two.gph has no such kernel (its kernels: scale, fused)"
        );
        let error = select(&compiled, Some("scale"), &dims(&["N=100"]))
            .err()
            .unwrap();
        assert_eq!(
            error.to_string(),
            "kernel `scale`: N = 100 is not a multiple of 64 (required by `N/64` at two.gph:4:5)"
        );
        let error = select(&compiled, Some("fused"), &dims(&["N=64"]))
            .err()
            .unwrap();
        assert_eq!(
            error.to_string(),
            "`--dim N` names no symbolic dimension of the kernels run (`fused` has none)"
        );
        let error = select(&compiled, None, &[]).err().unwrap();
        assert!(
            error
                .to_string()
                .starts_with("kernel `scale` needs `--dim` values for N")
        );
    }

    #[test]
    fn compiling_gives_the_ptx_and_each_kernels_shared_memory() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/vector_copy.gph");
        let text = std::fs::read_to_string(path).unwrap();
        let compiled = CompiledFile::compile("vector_copy.gph", &text, &[], None)
            .unwrap_or_else(|d| panic!("{d:#?}"));
        assert!(
            compiled.ptx.contains(".entry vector_copy("),
            "{}",
            compiled.ptx
        );
        assert_eq!(compiled.dynamic_shared_bytes, [0]);
        let selected = select(&compiled, None, &dims(&["B=64"])).unwrap();
        assert_eq!((selected[0].plan.grid, selected[0].plan.block), (64, 256));

        let errors = CompiledFile::compile("bad.gph", "%a:[4].fp32.GL\n%a <- Nope()\n", &[], None)
            .unwrap_err();
        assert!(errors.iter().any(Diagnostic::is_error));
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn without_the_feature_run_says_how_to_get_it() {
        let mut out = Vec::new();
        let error = run_file(
            &compiled(),
            &RunOptions {
                dims: dims(&["N=64"]),
                ..RunOptions::default()
            },
            &mut out,
        )
        .unwrap_err();
        assert!(error.to_string().contains("--features cuda"), "{error}");
        assert!(!error.to_string().contains('\n'));
        assert!(out.is_empty());
    }
}
