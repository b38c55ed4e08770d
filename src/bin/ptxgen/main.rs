//! `ptxgen`: the batch compiler from `.gph` files to `.ptx` (parse → check →
//! lower → write), one file per input, in parallel.
//!
//! ```text
//! ptxgen [build] FILES… [-o DIR|FILE] [--arch sm_XX[a]] [-j N] [--emit ptx|ir|manifest]
//!        [--annotate] [--define NAME=VALUE]… [--message-format human|json]
//!        [--verify] [--color auto|always|never]
//! ```
//!
//! `build` is the default subcommand, so `ptxgen examples/*.gph -o out/`
//! works as written. Beside it (`run.rs`, docs/running.md) `run`, on the
//! CPU executor of the PTX or, with the `cuda` feature, the GPU, and
//! `bench`, GPU only:
//!
//! ```text
//! ptxgen run FILE [--backend cpu|gpu] [--kernel NAME] [--dim NAME=VALUE]… [--seed S]
//!        [--check] [--annotate]
//! ptxgen bench FILE [--kernel NAME] [--dim NAME=VALUE]… [--reps N] [--warmup N] [--json]
//! ptxgen tune FILE [--kernel NAME]… --dim NAME=VALUE… [--device NAME|FILE] [--top N]
//!        [--measure]
//! ```
//!
//! `tune` (`tune.rs`, docs/tuning.md) ranks a GEMM's tunable constants by
//! the tile model; `run --tune` and `bench --tune` compile with its pick.
//!
//! Exit status: 0 when every file compiled, 1 when some file failed, 2 for a
//! usage error (run: 1 when a kernel fails its check, 2 when the command
//! stopped).

mod build;
mod messages;
mod output;
mod run;
mod tune;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use graphene::compile;
use graphene::diag::ColorChoice;
use graphene::ptx::Arch;

/// The command line.
#[derive(Parser, Debug)]
#[command(
    name = "ptxgen",
    version,
    about = "Compile Graphene .gph kernels to PTX",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    build: BuildArgs,
}

/// The subcommands; `build` is also what no subcommand means.
#[derive(Subcommand, Debug)]
enum Command {
    /// Compile .gph files to .ptx (the default).
    Build(BuildArgs),
    /// Run each kernel of a .gph file once, on the GPU (feature `cuda`) or
    /// on the CPU executor of its PTX (`--backend cpu`, the default without
    /// `cuda`); with --check, compare its output with the CPU reference.
    Run(run::RunArgs),
    /// Time each kernel of a .gph file on the GPU (feature `cuda`): CUDA
    /// events over rotated input sets; TFLOP/s or GB/s.
    Bench(run::BenchArgs),
    /// Rank a GEMM's tunable constants (`const BN = 128 tune [64, 128]`) by
    /// the tile model at one shape; with --measure, time each on the GPU.
    Tune(tune::TuneArgs),
}

/// What to emit.
#[derive(Clone, Copy, PartialEq, Eq, Debug, ValueEnum)]
pub enum Emit {
    /// PTX text.
    Ptx,
    /// The checked IR, as text.
    Ir,
    /// The launch manifest (JSON): per kernel, parameters, grid, block,
    /// shared memory and requirements (docs/running.md, "Launch manifest").
    Manifest,
}

impl From<Emit> for compile::Emit {
    fn from(emit: Emit) -> compile::Emit {
        match emit {
            // The manifest is written from the lowered module's facts.
            Emit::Ptx | Emit::Manifest => compile::Emit::Ptx,
            Emit::Ir => compile::Emit::Ir,
        }
    }
}

/// How to print diagnostics and results.
#[derive(Clone, Copy, PartialEq, Eq, Debug, ValueEnum)]
pub enum MessageFormat {
    /// Rendered for people, on standard error.
    Human,
    /// One JSON object per line on standard output, for build systems.
    Json,
}

/// When to colour rendered diagnostics.
#[derive(Clone, Copy, PartialEq, Eq, Debug, ValueEnum)]
pub enum Color {
    /// On a terminal, unless `NO_COLOR` is set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

impl Color {
    /// The rendering's choice.
    pub fn choice(self) -> ColorChoice {
        match self {
            Color::Auto => ColorChoice::Auto,
            Color::Always => ColorChoice::Always,
            Color::Never => ColorChoice::Never,
        }
    }
}

/// The options of `ptxgen build`.
#[derive(Args, Debug, Clone)]
pub struct BuildArgs {
    /// The .gph files to compile.
    #[arg(required = true, value_name = "FILES")]
    pub files: Vec<PathBuf>,
    /// Output: a directory (created if needed; one NAME.ptx per input), a
    /// file (one input only), or `-` for standard output. Default: beside
    /// each input.
    #[arg(short, long, value_name = "DIR|FILE")]
    pub output: Option<PathBuf>,
    /// Target architecture: sm_70, sm_80, sm_86, sm_89, sm_90 or sm_90a
    /// (Hopper with wgmma; runs on compute capability 9.0 only). Default:
    /// the lowest that has every instruction used.
    #[arg(long, value_name = "sm_XX[a]", value_parser = parse_arch)]
    pub arch: Option<Arch>,
    /// Files compiled at once (default: the number of cores).
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// What to write.
    #[arg(long, value_enum, default_value = "ptx")]
    pub emit: Emit,
    /// Write each IR statement as a comment above the PTX it became.
    #[arg(long)]
    pub annotate: bool,
    /// Override a `const` of the source: NAME=VALUE (repeatable).
    #[arg(short = 'D', long = "define", value_name = "NAME=VALUE", value_parser = parse_define)]
    pub defines: Vec<(String, i64)>,
    /// Compile only this kernel or variant (repeatable; default: every
    /// kernel of the file). The others are not checked, so a define that
    /// one variant cannot take does not stop the rest.
    #[arg(long = "kernel", value_name = "NAME")]
    pub kernels: Vec<String>,
    /// How to report diagnostics and results.
    #[arg(long, value_enum, default_value = "human")]
    pub message_format: MessageFormat,
    /// Assemble the PTX with ptxas (when installed) and report registers,
    /// shared memory and spills per kernel.
    #[arg(long)]
    pub verify: bool,
    /// Colour of rendered diagnostics.
    #[arg(long, value_enum, default_value = "auto")]
    pub color: Color,
}

fn parse_arch(text: &str) -> Result<Arch, String> {
    text.parse::<Arch>().map_err(|error| error.to_string())
}

fn parse_define(text: &str) -> Result<(String, i64), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not NAME=VALUE"))?;
    let name = name.trim();
    let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!("`{name}` is not a constant's name"));
    }
    let value = value
        .trim()
        .parse::<i64>()
        .map_err(|_| format!("`{value}` is not an integer"))?;
    Ok((name.to_string(), value))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let args = match cli.command {
        Some(Command::Build(args)) => args,
        Some(Command::Run(args)) => return run::run(&args),
        Some(Command::Bench(args)) => return run::bench(&args),
        Some(Command::Tune(args)) => return tune::tune(&args),
        None => cli.build,
    };
    match build::run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(usage) => {
            eprintln!("error: {usage}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defines_parse_and_bad_ones_say_why() {
        assert_eq!(parse_define("BM=64"), Ok(("BM".into(), 64)));
        assert_eq!(parse_define(" K = -3 "), Ok(("K".into(), -3)));
        assert!(parse_define("BM").unwrap_err().contains("NAME=VALUE"));
        assert!(
            parse_define("1x=2")
                .unwrap_err()
                .contains("not a constant's name")
        );
        assert!(
            parse_define("BM=lots")
                .unwrap_err()
                .contains("not an integer")
        );
    }

    #[test]
    fn files_without_a_subcommand_mean_build() {
        let cli =
            Cli::try_parse_from(["ptxgen", "a.gph", "b.gph", "-o", "out/", "--arch", "sm_80"])
                .unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.build.files.len(), 2);
        assert_eq!(cli.build.arch, Some(Arch::Sm80));
        let cli = Cli::try_parse_from(["ptxgen", "build", "a.gph", "-j", "3"]).unwrap();
        let Some(Command::Build(args)) = cli.command else {
            panic!("build subcommand");
        };
        assert_eq!(args.jobs, Some(3));
        assert!(Cli::try_parse_from(["ptxgen"]).is_err());
        assert!(Cli::try_parse_from(["ptxgen", "a.gph", "--arch", "sm_75"]).is_err());
        let cli = Cli::try_parse_from(["ptxgen", "a.gph", "--arch", "sm_90a"]).unwrap();
        assert_eq!(cli.build.arch, Some(Arch::Sm90a));
    }

    #[test]
    fn run_and_bench_take_a_file_and_their_options() {
        let cli = Cli::try_parse_from([
            "ptxgen", "run", "gemm.gph", "--dim", "M=4096", "--dim", "N=512", "--check", "-D",
            "BM=64",
        ])
        .unwrap();
        let Some(Command::Run(run)) = cli.command else {
            panic!("run subcommand");
        };
        assert_eq!(run.options.dims.len(), 2);
        assert!(run.options.check);
        assert_eq!(run.compile.defines, [("BM".to_string(), 64)]);
        let cli =
            Cli::try_parse_from(["ptxgen", "bench", "gemm.gph", "--reps", "50", "--json"]).unwrap();
        let Some(Command::Bench(bench)) = cli.command else {
            panic!("bench subcommand");
        };
        assert_eq!((bench.options.reps, bench.options.json), (50, true));
        assert!(Cli::try_parse_from(["ptxgen", "bench", "g.gph", "--reps", "0"]).is_err());
        assert!(Cli::try_parse_from(["ptxgen", "run", "g.gph", "--dim", "M"]).is_err());
        let cli = Cli::try_parse_from(["ptxgen", "run", "g.gph", "--backend", "cpu", "--annotate"])
            .unwrap();
        let Some(Command::Run(run)) = cli.command else {
            panic!("run subcommand");
        };
        assert_eq!(run.options.backend, graphene::launch::Backend::Cpu);
        assert!(run.options.annotate);
        assert!(Cli::try_parse_from(["ptxgen", "run", "g.gph", "--backend", "tpu"]).is_err());
    }
}
