//! `ptxgen run` and `ptxgen bench`: compile one file, then hand it to
//! `graphene::launch`, which plans, runs, checks and times its kernels
//! (docs/running.md). `run` runs on the GPU or on the CPU executor of the
//! PTX (`--backend`); `bench` times the GPU only.
//!
//! Exit status: 0 when every kernel ran (and, with `--check`, passed), 1 when
//! a kernel failed its check or the CPU executor found something, 2 for
//! anything that stopped the command: a file that does not compile, a bad
//! `--dim`, a violated requirement, no GPU, a JIT error, a launch failure,
//! an instruction the CPU executor does not know.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use graphene::compile::{self, Compiled, Options};
use graphene::diag::SourceMap;
use graphene::launch::{self, Backend, BenchOptions, DimArg, RunOptions};
use graphene::ptx::Arch;

use super::tune::{DeviceArg, tuned_defines};
use super::{Color, parse_arch, parse_define};

/// How the file is compiled before it runs.
#[derive(Args, Debug, Clone)]
pub struct CompileArgs {
    /// Target architecture (default: the lowest that has every instruction
    /// used; the driver compiles the PTX for the GPU at hand).
    #[arg(long, value_parser = parse_arch)]
    pub arch: Option<Arch>,
    /// Override a `const` of the source: NAME=VALUE (repeatable).
    #[arg(short = 'D', long = "define", value_name = "NAME=VALUE", value_parser = parse_define)]
    pub defines: Vec<(String, i64)>,
    /// Colour of rendered diagnostics.
    #[arg(long, value_enum, default_value = "auto")]
    pub color: Color,
}

/// `ptxgen run`'s default backend, as its help states it.
#[cfg(feature = "cuda")]
const DEFAULT_BACKEND: &str = "gpu";
#[cfg(not(feature = "cuda"))]
const DEFAULT_BACKEND: &str = "cpu";

fn parse_backend(text: &str) -> Result<Backend, String> {
    text.parse()
}

/// The options of `ptxgen run` beyond the file and its compilation.
#[derive(Args, Debug, Clone)]
pub struct RunFlags {
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
    /// Where to run: `gpu` (the CUDA driver; needs the `cuda` feature) or
    /// `cpu` (the executor of the PTX: no GPU needed, and it reports
    /// out-of-bounds accesses, unwritten reads, races, early reads and bank
    /// conflicts). Default: gpu in a build with the `cuda` feature, cpu
    /// without.
    #[arg(long, value_name = "cpu|gpu", default_value = DEFAULT_BACKEND, value_parser = parse_backend)]
    pub backend: Backend,
    /// Compile with each IR statement as a comment above its PTX, so the
    /// CPU executor's findings name the `.gph` line.
    #[arg(long)]
    pub annotate: bool,
    #[command(flatten)]
    pub tuning: TuneFlags,
}

/// `--tune [--device NAME|FILE]` of `run` and `bench`.
#[derive(Args, Debug, Clone, Default)]
pub struct TuneFlags {
    /// Set the `--kernel`'s tunable constants to the tile model's pick at
    /// the `--dim`s (docs/tuning.md); explicit defines stay fixed.
    #[arg(long)]
    pub tune: bool,
    #[command(flatten)]
    pub device: DeviceArg,
}

impl RunFlags {
    fn options(&self) -> RunOptions {
        RunOptions {
            kernel: self.kernel.clone(),
            dims: self.dims.clone(),
            seed: self.seed,
            check: self.check,
            backend: self.backend,
        }
    }
}

/// The options of `ptxgen bench` beyond the file and its compilation.
#[derive(Args, Debug, Clone)]
pub struct BenchFlags {
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
    #[command(flatten)]
    pub tuning: TuneFlags,
}

impl BenchFlags {
    fn options(&self) -> BenchOptions {
        BenchOptions {
            kernel: self.kernel.clone(),
            dims: self.dims.clone(),
            reps: self.reps,
            warmup: self.warmup,
            json: self.json,
            seed: self.seed,
        }
    }
}

/// The arguments of `ptxgen run`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// The .gph file whose kernels to run.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    #[command(flatten)]
    pub compile: CompileArgs,
    #[command(flatten)]
    pub options: RunFlags,
}

/// The arguments of `ptxgen bench`.
#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// The .gph file whose kernels to time.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    #[command(flatten)]
    pub compile: CompileArgs,
    #[command(flatten)]
    pub options: BenchFlags,
}

const STOPPED: u8 = 2;

/// The compiled file (with `annotate`, IR statements as PTX comments), or
/// the exit code after printing why not.
/// Only `kernel` is compiled where one is named: the others' constants may
/// not hold for it (a variant that needs BN to be a multiple of 64).
fn compile(
    file: &PathBuf,
    args: &CompileArgs,
    annotate: bool,
    kernel: &Option<String>,
    tuning: Option<(&TuneFlags, &[DimArg])>,
) -> Result<Compiled, ExitCode> {
    let mut args = args.clone();
    if let Some((flags, dims)) = tuning
        && flags.tune
    {
        args.defines = tuned_defines(file, &args, kernel, dims, &flags.device)?;
    }
    let args = &args;
    let name = file.display().to_string();
    let text = std::fs::read_to_string(file).map_err(|error| {
        eprintln!("error: {name}: cannot read it: {error}");
        ExitCode::from(STOPPED)
    })?;
    let options = Options {
        arch: args.arch,
        defines: args.defines.clone(),
        annotate,
        kernels: kernel.iter().cloned().collect(),
        ..Options::default()
    };
    compile::compile(&name, &text, &options).map_err(|diagnostics| {
        let color = args.color.choice();
        let mut files = SourceMap::new();
        let id = files.add(name.clone(), text.clone());
        let _ = files.emit_to_stderr(id, &diagnostics, color);
        ExitCode::from(STOPPED)
    })
}

fn stopped(error: launch::CommandError) -> ExitCode {
    let _ = std::io::stdout().flush();
    eprintln!("error: {error}");
    ExitCode::from(STOPPED)
}

/// `ptxgen run`.
pub fn run(args: &RunArgs) -> ExitCode {
    let compiled = match compile(
        &args.file,
        &args.compile,
        args.options.annotate,
        &args.options.kernel,
        Some((&args.options.tuning, &args.options.dims)),
    ) {
        Ok(compiled) => compiled,
        Err(code) => return code,
    };
    let mut stdout = std::io::stdout().lock();
    match launch::run_file(&compiled, &args.options.options(), &mut stdout) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => stopped(error),
    }
}

/// `ptxgen bench`.
pub fn bench(args: &BenchArgs) -> ExitCode {
    let tuning = Some((&args.options.tuning, args.options.dims.as_slice()));
    let compiled = match compile(
        &args.file,
        &args.compile,
        false,
        &args.options.kernel,
        tuning,
    ) {
        Ok(compiled) => compiled,
        Err(code) => return code,
    };
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr().lock();
    match launch::bench_file(&compiled, &args.options.options(), &mut stdout, &mut stderr) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            drop(stderr);
            stopped(error)
        }
    }
}
