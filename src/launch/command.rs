//! Launch stage: the `run` and `bench` subcommands over a compiled file —
//! their options, the choice of kernels, every plan checked before the GPU
//! is touched, then one summary line per kernel (or `--json` rows).
//!
//! The command-line front end compiles the file with [`crate::compile`]
//! (to PTX) and calls [`run_file`] or [`bench_file`]; everything else
//! happens here.

use std::io::Write;

use super::PlanError;
use super::dims::{DimArg, DimValues};
use super::plan::{LaunchPlan, Source};
use crate::compile::Compiled;
use crate::ir::Kernel;
use crate::reference::{Contract, ReferenceError};

/// The options of `ptxgen run`.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// `--kernel`: run only this kernel (`None`: every kernel of the file).
    pub kernel: Option<String>,
    /// `--dim NAME=VALUE`: the value of each symbolic dimension.
    pub dims: Vec<DimArg>,
    /// `--seed`: seed of the random inputs (the same seed gives the same
    /// inputs).
    pub seed: u64,
    /// `--check`: compare the output with the CPU reference of the kernel's
    /// contract.
    pub check: bool,
    /// `--backend`: where the kernels run.
    pub backend: Backend,
}

/// Where `ptxgen run` runs the kernels.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Backend {
    /// The CPU executor of the PTX ([`crate::exec`]): no driver needed, and
    /// it reports what a GPU cannot (out-of-bounds accesses, unwritten
    /// reads, races, early reads, bank conflicts).
    Cpu,
    /// The GPU, through the CUDA driver (feature `cuda`).
    Gpu,
}

impl Default for Backend {
    /// The GPU where this build can reach one (feature `cuda`), else the CPU.
    fn default() -> Backend {
        if cfg!(feature = "cuda") {
            Backend::Gpu
        } else {
            Backend::Cpu
        }
    }
}

impl std::str::FromStr for Backend {
    type Err = String;

    fn from_str(text: &str) -> Result<Backend, String> {
        match text {
            "cpu" => Ok(Backend::Cpu),
            "gpu" => Ok(Backend::Gpu),
            other => Err(format!("`{other}` is not a backend: cpu or gpu")),
        }
    }
}

/// The options of `ptxgen bench`.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// `--kernel`: time only this kernel (`None`: every kernel of the file).
    pub kernel: Option<String>,
    /// `--dim NAME=VALUE`: the value of each symbolic dimension.
    pub dims: Vec<DimArg>,
    /// `--reps`: timed launches (at least 1).
    pub reps: u32,
    /// `--warmup`: untimed launches first.
    pub warmup: u32,
    /// `--json`: a JSON array of rows (kernel, dims, m, n, k, median_ms,
    /// min_ms, max_ms, tflops or gbps) instead of summary lines.
    pub json: bool,
    /// `--seed`: seed of the random inputs.
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
    /// dynamic shared size, a file compiled to IR rather than PTX).
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
    /// The CPU executor could not run the PTX: an instruction it does not
    /// know, operands it cannot take, a loop past its step limit.
    #[error("{0}")]
    Executor(String),
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
    compiled: &'p Compiled,
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
        text: &compiled.source,
    };
    kernels
        .into_iter()
        .map(|(index, kernel)| {
            let shared = compiled
                .kernels
                .get(index)
                .map(|facts| facts.dynamic_shared_bytes)
                .ok_or_else(|| {
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

/// `ptxgen run`: runs the selected kernels once each on `options.backend`
/// and writes one line per kernel to `out` (after a line naming the
/// device; on the CPU, each followed by the executor's findings and bank
/// conflicts). `Ok(true)` when every kernel passed (or ran, without
/// `--check`) and the executor found nothing.
pub fn run_file(
    compiled: &Compiled,
    options: &RunOptions,
    out: &mut dyn Write,
) -> Result<bool, CommandError> {
    let selected = select(compiled, options.kernel.as_deref(), &options.dims)?;
    match options.backend {
        Backend::Cpu => super::cpu::run_on_cpu(compiled, &selected, options, out),
        Backend::Gpu => run_on_device(compiled, &selected, options, out),
    }
}

/// `ptxgen bench`: times the selected kernels and writes one line each to
/// `out`, or a JSON array with `--json` (the device line then goes to
/// `log`).
pub fn bench_file(
    compiled: &Compiled,
    options: &BenchOptions,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> Result<(), CommandError> {
    let selected = select(compiled, options.kernel.as_deref(), &options.dims)?;
    bench_on_device(compiled, &selected, options, out, log)
}

#[cfg(not(feature = "cuda"))]
fn run_on_device(
    _: &Compiled,
    _: &[Selected],
    _: &RunOptions,
    _: &mut dyn Write,
) -> Result<bool, CommandError> {
    Err(CommandError::NoCudaFeature)
}

#[cfg(not(feature = "cuda"))]
fn bench_on_device(
    _: &Compiled,
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
    compiled: &Compiled,
) -> Result<crate::runtime::Module<'g>, CommandError> {
    let ptx = compiled.ptx().ok_or_else(|| {
        CommandError::Inconsistent(format!("{} was not compiled to PTX", compiled.name))
    })?;
    gpu.load_module(ptx)
        .map_err(|error| CommandError::Device(format!("{}: {error}", compiled.name)))
}

#[cfg(feature = "cuda")]
fn run_on_device(
    compiled: &Compiled,
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
    compiled: &Compiled,
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
    use crate::compile::{Emit, Options, compile};
    use crate::diag::Diagnostic;

    const FILE: &str = "kernel scale {\n%x:[N].fp32.GL\n%y:[N].fp32.GL\n#g:[N/64].block\n#t:[64].thread\n\
                        %y <- UnaryPointwise<neg><<<#g, #t>>>(%x)\n}\n\
                        kernel fused {\n%x:[64].fp32.GL\n#g:[1].block\n#t:[64].thread\n\
                        %x <- Spec<<<#g, #t>>>(%x) {}\n}\n";

    /// The file checked, not lowered: planning needs no PTX.
    fn compiled() -> Compiled {
        let options = Options {
            emit: Emit::Ir,
            ..Options::default()
        };
        compile("two.gph", FILE, &options).unwrap_or_else(|d| panic!("{d:#?}"))
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
        let compiled = compile("vector_copy.gph", &text, &Options::default())
            .unwrap_or_else(|d| panic!("{d:#?}"));
        let ptx = compiled.ptx().expect("compiled to PTX");
        assert!(ptx.contains(".entry vector_copy("), "{ptx}");
        assert_eq!(compiled.kernels[0].dynamic_shared_bytes, 0);
        let selected = select(&compiled, None, &dims(&["B=64"])).unwrap();
        assert_eq!((selected[0].plan.grid, selected[0].plan.block), (64, 256));

        let errors = compile(
            "bad.gph",
            "%a:[4].fp32.GL\n%a <- Nope()\n",
            &Options::default(),
        )
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
                backend: Backend::Gpu,
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
