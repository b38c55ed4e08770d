//! `ptxgen tune`: rank a GEMM's tunable constants by the tile model at one
//! shape and print the top configurations with the model's terms; with
//! `--measure` (feature `cuda`), time every configuration on the GPU beside
//! its prediction. Also the `--tune` of `run` and `bench`: the pick's
//! settings as defines (docs/tuning.md).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use graphene::diag::SourceMap;
use graphene::launch::DimArg;
use graphene::tune::{self, Device, Ranked, Ranking, Space};

use super::run::CompileArgs;

/// The arguments of `ptxgen tune`.
#[derive(Args, Debug, Clone)]
pub struct TuneArgs {
    /// The .gph file whose kernel to tune.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    #[command(flatten)]
    pub compile: CompileArgs,
    /// The kernel to tune (repeatable: the model ranks them together, e.g.
    /// a GEMM and its split-K variant). Default: every kernel of the file.
    #[arg(long = "kernel", value_name = "NAME")]
    pub kernels: Vec<String>,
    /// The value of a symbolic dimension, e.g. `--dim M=4096`; one per dim.
    #[arg(long = "dim", value_name = "NAME=VALUE")]
    pub dims: Vec<DimArg>,
    #[command(flatten)]
    pub device: DeviceArg,
    /// Configurations to print (all of them with --measure).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub top: u32,
    /// Time every configuration on the GPU (feature `cuda`) beside its
    /// prediction; report the pick against the best measured and the rank
    /// correlation.
    #[arg(long)]
    pub measure: bool,
    /// Timed launches per configuration with --measure.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: u32,
    /// Untimed launches first.
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
}

/// `--device NAME|FILE`, shared by `tune`, `run --tune` and `bench --tune`.
#[derive(Args, Debug, Clone, Default)]
pub struct DeviceArg {
    /// The GPU to model: a built-in name (H100, H200, A100, RTX 4090) or a
    /// JSON file of the same form. Default: the GPU the driver reports
    /// (feature `cuda`), else the H100.
    #[arg(long, value_name = "NAME|FILE")]
    pub device: Option<String>,
}

impl DeviceArg {
    /// The description asked for, or the one of the GPU at hand.
    pub fn resolve(&self) -> Result<Device, String> {
        if let Some(name) = &self.device {
            return Device::find(name).map_err(|e| e.to_string());
        }
        #[cfg(feature = "cuda")]
        if let Ok(info) = graphene::runtime::probe()
            && let Some(device) = tune::devices::from_driver(&info)
        {
            return Ok(device);
        }
        let mut device = Device::find("H100").map_err(|e| e.to_string())?;
        device.source = "built-in; no GPU found: --device chooses another".to_string();
        Ok(device)
    }
}

const STOPPED: u8 = 2;

/// Reads the file and enumerates its configurations; prints why not.
fn space(
    file: &PathBuf,
    compile: &CompileArgs,
    kernels: &[String],
    assemble: bool,
) -> Result<(String, Space), ExitCode> {
    let name = file.display().to_string();
    let text = std::fs::read_to_string(file).map_err(|error| {
        eprintln!("error: {name}: cannot read it: {error}");
        ExitCode::from(STOPPED)
    })?;
    let kernels = if kernels.is_empty() {
        let program = graphene::compile::check(&name, &text, &Default::default())
            .map_err(|diagnostics| render(&name, &text, compile, &diagnostics))?;
        program
            .program
            .kernels
            .iter()
            .map(|k| k.name.clone())
            .collect()
    } else {
        kernels.to_vec()
    };
    let space = tune::enumerate(
        &name,
        &text,
        &kernels,
        &compile.defines,
        compile.arch,
        assemble,
    )
    .map_err(|diagnostics| render(&name, &text, compile, &diagnostics))?;
    Ok((name, space))
}

fn render(
    name: &str,
    text: &str,
    compile: &CompileArgs,
    diagnostics: &[graphene::diag::Diagnostic],
) -> ExitCode {
    let mut files = SourceMap::new();
    let id = files.add(name.to_string(), text.to_string());
    let _ = files.emit_to_stderr(id, diagnostics, compile.color.choice());
    ExitCode::from(STOPPED)
}

/// `ptxgen tune`.
pub fn tune(args: &TuneArgs) -> ExitCode {
    if args.measure && !cfg!(feature = "cuda") {
        return measure(args, &Ranking::default());
    }
    let device = match args.device.resolve() {
        Ok(device) => device,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(STOPPED);
        }
    };
    let (name, space) = match space(&args.file, &args.compile, &args.kernels, true) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let ranking = tune::rank(&space, &device, &args.dims);
    let mut out = String::new();
    let _ = header(&mut out, &name, &space, &ranking, &device, &args.dims);
    let Some(pick) = ranking.ranked.first() else {
        print!("{out}");
        eprintln!(
            "error: no configuration can run this shape on {}",
            device.name
        );
        return ExitCode::from(STOPPED);
    };
    if args.measure {
        print!("{out}");
        return measure(args, &ranking);
    }
    let shown = ranking.ranked.len().min(args.top as usize);
    let _ = table(&mut out, &ranking.ranked[..shown], None);
    let _ = writeln!(out, "pick: {}", pick_line(pick));
    print!("{out}");
    ExitCode::SUCCESS
}

/// `--kernel K -D A=1 -D B=2`: the pick as `run`/`bench` options.
fn pick_line(pick: &Ranked) -> String {
    let mut line = format!("--kernel {}", pick.candidate.kernel);
    for (name, value) in &pick.candidate.settings {
        let _ = write!(line, " -D {name}={value}");
    }
    line
}

fn header(
    out: &mut String,
    name: &str,
    space: &Space,
    ranking: &Ranking,
    device: &Device,
    dims: &[DimArg],
) -> std::fmt::Result {
    let dims: Vec<String> = dims
        .iter()
        .map(|d| format!("{}={}", d.name, d.value))
        .collect();
    writeln!(
        out,
        "# tune {name} at {} on {} ({})",
        dims.join(" "),
        device.name,
        device.source
    )?;
    for (kernel, tunables) in &space.tunables {
        let listed: Vec<String> = tunables
            .iter()
            .map(|t| {
                let values: Vec<String> = t.values.iter().map(i64::to_string).collect();
                format!("{} [{}]", t.name, values.join(", "))
            })
            .collect();
        let count = |k: &str| space.candidates.iter().filter(|c| c.kernel == k).count();
        let refused = space.refused.iter().filter(|r| r.kernel == *kernel).count();
        writeln!(
            out,
            "# {kernel}: {}; {} compiled, {refused} refused by the compiler",
            if listed.is_empty() {
                "nothing tunable".to_string()
            } else {
                listed.join(", ")
            },
            count(kernel)
        )?;
    }
    for refused in space.refused.iter().take(3) {
        writeln!(
            out,
            "#   refused {} {}: {}",
            refused.kernel,
            tune::settings_text(&refused.settings),
            refused.reason
        )?;
    }
    if space.refused.len() > 3 {
        writeln!(out, "#   … and {} more refused", space.refused.len() - 3)?;
    }
    if !ranking.unfit.is_empty() {
        writeln!(
            out,
            "# {} configurations cannot run this shape on this device, e.g. {} {}: {}",
            ranking.unfit.len(),
            ranking.unfit[0].0.kernel,
            ranking.unfit[0].0.settings_text(),
            ranking.unfit[0].1
        )?;
    }
    let sources: Vec<&str> = space
        .candidates
        .iter()
        .map(|c| c.resources.source.as_str())
        .collect();
    if let Some(first) = sources.first()
        && *first != "ptxas"
    {
        writeln!(out, "# registers and shared memory: {first}")?;
    }
    Ok(())
}

/// The ranked rows, with measured times (µs) where given.
fn table(out: &mut String, rows: &[Ranked], measured: Option<&[Option<f64>]>) -> std::fmt::Result {
    let width = rows
        .iter()
        .map(|r| r.candidate.kernel.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let settings = rows
        .iter()
        .map(|r| r.candidate.settings_text().len())
        .max()
        .unwrap_or(8)
        .max(8);
    write!(
        out,
        "{:>4}  {:<width$}  {:<settings$}  {:>10}",
        "rank", "kernel", "settings", "predicted"
    )?;
    if measured.is_some() {
        write!(out, "  {:>10}", "measured")?;
    }
    writeln!(
        out,
        "  {:>7}  {:>6}  {:>14}  {:>4}  {:>7}  {:>8}  {:>8}  {:>8}  {:>7}  {:>7}  bound",
        "TFLOP/s",
        "waves",
        "blocks/SM",
        "regs",
        "smem",
        "L2 µs",
        "shared",
        "tensor",
        "edges",
        "DRAM"
    )?;
    for (index, row) in rows.iter().enumerate() {
        let p = &row.prediction;
        let flops = match row.plan.work {
            graphene::launch::Work::MatMul(shape) => shape.flops() as f64,
            graphene::launch::Work::Bytes(_) => 0.0,
        };
        let time = measured.and_then(|m| m[index]).unwrap_or(p.micros);
        write!(
            out,
            "{:>4}  {:<width$}  {:<settings$}  {:>7.1} µs",
            index + 1,
            row.candidate.kernel,
            row.candidate.settings_text(),
            p.micros
        )?;
        if let Some(measured) = measured {
            match measured[index] {
                Some(us) => write!(out, "  {us:>7.1} µs")?,
                None => write!(out, "  {:>10}", "failed")?,
            }
        }
        writeln!(
            out,
            "  {:>7.1}  {:>6.2}  {:>14}  {:>4}  {:>7}  {:>8.1}  {:>8.1}  {:>8.1}  {:>7.1}  {:>7.1}  {}",
            flops / time / 1e6,
            p.waves,
            format!("{} ({})", p.occupancy, p.limit.name()),
            row.candidate.resources.registers,
            row.candidate.resources.shared_bytes,
            p.global_us,
            p.shared_us,
            p.compute_us,
            p.edges_us,
            p.dram_us,
            p.bound.name()
        )?;
    }
    Ok(())
}

#[cfg(not(feature = "cuda"))]
fn measure(_: &TuneArgs, _: &Ranking) -> ExitCode {
    eprintln!(
        "error: --measure times kernels on a GPU: this ptxgen was built without the `cuda` feature"
    );
    ExitCode::from(STOPPED)
}

#[cfg(feature = "cuda")]
fn measure(args: &TuneArgs, ranking: &Ranking) -> ExitCode {
    use graphene::launch::{PlannedKernel, bench_plans};
    use graphene::runtime::Gpu;
    let gpu = match Gpu::new() {
        Ok(gpu) => gpu,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(STOPPED);
        }
    };
    println!("# measured on {}", gpu.info());
    let mut modules = Vec::with_capacity(ranking.ranked.len());
    for row in &ranking.ranked {
        let ptx = row.candidate.compiled.ptx().unwrap_or("");
        match gpu.load_module(ptx) {
            Ok(module) => modules.push(module),
            Err(error) => {
                eprintln!(
                    "error: {} {}: {error}",
                    row.candidate.kernel,
                    row.candidate.settings_text()
                );
                return ExitCode::from(STOPPED);
            }
        }
    }
    let planned: Vec<PlannedKernel> = ranking
        .ranked
        .iter()
        .zip(&modules)
        .map(|(row, module)| PlannedKernel {
            module,
            plan: &row.plan,
        })
        .collect();
    let results = match bench_plans(
        &gpu,
        &planned,
        None,
        1,
        args.reps as usize,
        args.warmup as usize,
    ) {
        Ok(results) => results,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(STOPPED);
        }
    };
    let measured: Vec<Option<f64>> = results
        .iter()
        .map(|r| r.as_ref().ok().map(|stats| stats.median_ms * 1e3))
        .collect();
    for (row, result) in ranking.ranked.iter().zip(&results) {
        if let Err(error) = result {
            eprintln!(
                "warning: {} {}: {error}",
                row.candidate.kernel,
                row.candidate.settings_text()
            );
        }
    }
    let mut out = String::new();
    let _ = table(&mut out, &ranking.ranked, Some(&measured));
    let _ = summary(&mut out, ranking, &measured);
    print!("{out}");
    ExitCode::SUCCESS
}

/// The pick against the best measured, and the rank correlation.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
fn summary(out: &mut String, ranking: &Ranking, measured: &[Option<f64>]) -> std::fmt::Result {
    let timed: Vec<(usize, f64)> = measured
        .iter()
        .enumerate()
        .filter_map(|(i, m)| m.map(|m| (i, m)))
        .collect();
    let Some(&(best, best_us)) = timed.iter().min_by(|a, b| a.1.total_cmp(&b.1)) else {
        return writeln!(out, "no configuration was timed");
    };
    let predicted: Vec<f64> = timed
        .iter()
        .map(|(i, _)| ranking.ranked[*i].prediction.micros)
        .collect();
    let times: Vec<f64> = timed.iter().map(|(_, m)| *m).collect();
    let rho = tune::rank_correlation(&predicted, &times);
    let pick = &ranking.ranked[0];
    match measured[0] {
        Some(pick_us) => writeln!(
            out,
            "pick {} {}: {pick_us:.1} µs; best measured {} {}: {best_us:.1} µs; pick/best {:.3}",
            pick.candidate.kernel,
            pick.candidate.settings_text(),
            ranking.ranked[best].candidate.kernel,
            ranking.ranked[best].candidate.settings_text(),
            pick_us / best_us
        )?,
        None => writeln!(
            out,
            "pick {}: its timing failed",
            pick.candidate.settings_text()
        )?,
    }
    match rho {
        Some(rho) => writeln!(
            out,
            "rank correlation (Spearman) of predicted and measured: {rho:.3} over {} configurations",
            timed.len()
        ),
        None => writeln!(out, "rank correlation: too few configurations"),
    }
}

/// `run --tune` / `bench --tune`: the defines of the model's pick for
/// `kernel` at `dims`, after printing it on standard error.
pub fn tuned_defines(
    file: &PathBuf,
    compile: &CompileArgs,
    kernel: &Option<String>,
    dims: &[DimArg],
    device: &DeviceArg,
) -> Result<Vec<(String, i64)>, ExitCode> {
    let Some(kernel) = kernel else {
        eprintln!("error: --tune chooses one kernel's constants: name it with --kernel");
        return Err(ExitCode::from(STOPPED));
    };
    let device = device.resolve().map_err(|error| {
        eprintln!("error: {error}");
        ExitCode::from(STOPPED)
    })?;
    let (_, space) = space(file, compile, std::slice::from_ref(kernel), true)?;
    let ranking = tune::rank(&space, &device, dims);
    let Some(pick) = ranking.ranked.first() else {
        eprintln!(
            "error: --tune: no configuration of `{kernel}` can run this shape on {}",
            device.name
        );
        return Err(ExitCode::from(STOPPED));
    };
    eprintln!(
        "# tuned for {}: {} (predicted {:.1} µs)",
        device.name,
        pick.candidate.settings_text(),
        pick.prediction.micros
    );
    let mut defines = compile.defines.clone();
    defines.extend(pick.candidate.settings.iter().cloned());
    Ok(defines)
}
