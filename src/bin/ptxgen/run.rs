//! `ptxgen run` and `ptxgen bench`: compile one file, then hand it to
//! `graphene::launch`, which plans, runs, checks and times its kernels
//! (docs/running.md).
//!
//! Exit status: 0 when every kernel ran (and, with `--check`, passed), 1 when
//! a kernel failed its check, 2 for anything that stopped the command: a
//! file that does not compile, a bad `--dim`, a violated requirement, no
//! GPU, a JIT error, a launch failure.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use graphene::diag::{ColorChoice, SourceMap};
use graphene::launch::{self, BenchOptions, CompiledFile, RunOptions};
use graphene::ptx::Arch;

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

/// The arguments of `ptxgen run`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// The .gph file whose kernels to run.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    #[command(flatten)]
    pub compile: CompileArgs,
    #[command(flatten)]
    pub options: RunOptions,
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
    pub options: BenchOptions,
}

const STOPPED: u8 = 2;

/// The compiled file, or the exit code after printing why not.
fn compile(file: &PathBuf, args: &CompileArgs) -> Result<CompiledFile, ExitCode> {
    let name = file.display().to_string();
    let text = std::fs::read_to_string(file).map_err(|error| {
        eprintln!("error: {name}: cannot read it: {error}");
        ExitCode::from(STOPPED)
    })?;
    CompiledFile::compile(&name, &text, &args.defines, args.arch).map_err(|diagnostics| {
        let color = match args.color {
            Color::Auto => ColorChoice::Auto,
            Color::Always => ColorChoice::Always,
            Color::Never => ColorChoice::Never,
        };
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
    let compiled = match compile(&args.file, &args.compile) {
        Ok(compiled) => compiled,
        Err(code) => return code,
    };
    let mut stdout = std::io::stdout().lock();
    match launch::run_file(&compiled, &args.options, &mut stdout) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => stopped(error),
    }
}

/// `ptxgen bench`.
pub fn bench(args: &BenchArgs) -> ExitCode {
    let compiled = match compile(&args.file, &args.compile) {
        Ok(compiled) => compiled,
        Err(code) => return code,
    };
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr().lock();
    match launch::bench_file(&compiled, &args.options, &mut stdout, &mut stderr) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            drop(stderr);
            stopped(error)
        }
    }
}
