//! `ptxgen build`: every input through parse → check → lower → write (and
//! with `--verify`, ptxas), in parallel over files, reports printed in
//! input order so that the output does not depend on scheduling.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use graphene::diag::{ColorChoice, Severity};
use graphene::lower::{self, Options};
use graphene::ptx::TargetName;
use graphene::ptx::tools;
use graphene::{check, syntax};

use super::messages::{self, FileReport, KernelReport, Plain, Resources};
use super::output::{self, Destination};
use super::{BuildArgs, Color, Emit, MessageFormat};

/// Compiles every input; `Ok(true)` when all succeeded, `Err` for a usage
/// error (nothing compiled).
pub fn run(args: &BuildArgs) -> Result<bool, String> {
    let (destinations, directory) = output::plan(args)?;
    if let Some(directory) = directory {
        std::fs::create_dir_all(&directory)
            .map_err(|error| format!("cannot create `{}`: {error}", directory.display()))?;
    }
    let ptxas = if args.verify && args.emit == Emit::Ptx {
        match tools::ptxas_path() {
            Ok(path) => Some(path),
            Err(error) => {
                eprintln!("note: --verify skipped: {error}");
                None
            }
        }
    } else {
        None
    };
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |jobs| jobs as usize,
    );
    let reports = compile_all(args, &destinations, ptxas.as_deref(), jobs);
    let color = match args.color {
        Color::Auto => ColorChoice::Auto,
        Color::Always => ColorChoice::Always,
        Color::Never => ColorChoice::Never,
    };
    let mut all_ok = true;
    for report in &reports {
        all_ok &= report.succeeded();
        match args.message_format {
            MessageFormat::Human => messages::print_human(report, color),
            MessageFormat::Json => messages::print_json(report),
        }
    }
    Ok(all_ok)
}

/// Compiles the inputs on `jobs` threads; the reports come back in input
/// order.
fn compile_all(
    args: &BuildArgs,
    destinations: &[Destination],
    ptxas: Option<&Path>,
    jobs: usize,
) -> Vec<FileReport> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<FileReport>>> =
        args.files.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(args.files.len()).max(1) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(file) = args.files.get(index) else {
                        break;
                    };
                    let report = compile_one(file, &destinations[index], args, ptxas);
                    *slots[index].lock().unwrap_or_else(|e| e.into_inner()) = Some(report);
                }
            });
        }
    });
    slots
        .into_iter()
        .zip(&args.files)
        .map(|(slot, file)| {
            slot.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .unwrap_or_else(|| {
                    let mut report = FileReport::new(file.display().to_string());
                    report
                        .plain
                        .push(error("the compiler stopped before this file"));
                    report
                })
        })
        .collect()
}

fn error(text: impl Into<String>) -> Plain {
    Plain {
        severity: Severity::Error,
        text: text.into(),
    }
}

/// Compiles one input to `destination`.
pub fn compile_one(
    path: &PathBuf,
    destination: &Destination,
    args: &BuildArgs,
    ptxas: Option<&Path>,
) -> FileReport {
    let name = path.display().to_string();
    let mut report = FileReport::new(name.clone());
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(failure) => {
            report
                .plain
                .push(error(format!("cannot read it: {failure}")));
            return report;
        }
    };
    match syntax::decode(&bytes) {
        Ok(text) => report.source = text.to_string(),
        Err(undecodable) => {
            report.source = undecodable.text;
            report.diagnostics.push(undecodable.diagnostic);
            return report;
        }
    }
    let ast = match syntax::parse_file(&name, &report.source) {
        Ok(ast) => ast,
        Err(diagnostics) => {
            report.diagnostics = diagnostics;
            return report;
        }
    };
    report.diagnostics.extend(syntax::no_kernel(&ast));
    let program = match check::check_file(&ast, &args.defines) {
        Ok(program) => program,
        Err(diagnostics) => {
            report.diagnostics.extend(diagnostics);
            return report;
        }
    };
    let (text, module) = match args.emit {
        Emit::Ir => (lower::program_text(&program), None),
        Emit::Ptx => {
            let options = Options {
                arch: args.arch,
                annotate: args.annotate,
                source: Some(Arc::from(report.source.as_str())),
            };
            let module = match lower::lower_program(&program, &options) {
                Ok(module) => module,
                Err(diagnostics) => {
                    report.diagnostics.extend(diagnostics);
                    return report;
                }
            };
            match module.to_ptx() {
                Ok(text) => (text, Some(module)),
                Err(failure) => {
                    report.plain.push(error(format!("writing PTX: {failure}")));
                    return report;
                }
            }
        }
    };
    if let Err(failure) = output::write(destination, &text) {
        report.plain.push(error(format!(
            "cannot write `{}`: {failure}",
            destination.describe()
        )));
        return report;
    }
    report.output = Some(destination.describe());
    for kernel in &program.kernels {
        let dynamic_shared_bytes = lower::dynamic_shared_bytes(kernel).unwrap_or(0);
        report.kernels.push(KernelReport {
            name: kernel.name.clone(),
            dynamic_shared_bytes,
            resources: None,
        });
    }
    if let (Some(ptxas), Some(module)) = (ptxas, module) {
        verify(&mut report, ptxas, &text, &module);
    }
    report
}

/// Assembles the module and records each kernel's resources; spills are
/// warnings, a ptxas failure an error. ptxas is asked for the module's own
/// `.target` (which already includes `--arch`), so that `sm_90a` PTX is
/// assembled with `-arch=sm_90a`.
fn verify(report: &mut FileReport, ptxas: &Path, text: &str, module: &graphene::ptx::Module) {
    let arch: TargetName = match module.target() {
        Ok(target) => target.name(),
        Err(failure) => {
            report.plain.push(error(failure.to_string()));
            return;
        }
    };
    match tools::assemble_with(ptxas, text, arch) {
        Ok(assembly) => {
            for warning in &assembly.warnings {
                report.plain.push(Plain {
                    severity: Severity::Warning,
                    text: warning.clone(),
                });
            }
            for kernel in &mut report.kernels {
                let Some(entry) = assembly.entry(&kernel.name) else {
                    continue;
                };
                if entry.uses_local_memory() {
                    report.plain.push(Plain {
                        severity: Severity::Warning,
                        text: format!(
                            "kernel `{}` uses local memory on {arch}: {} bytes spilled, {} \
                             reloaded, {}-byte stack frame",
                            kernel.name,
                            entry.spill_store_bytes,
                            entry.spill_load_bytes,
                            entry.stack_frame_bytes
                        ),
                    });
                }
                kernel.resources = Some(Resources {
                    arch: arch.to_string(),
                    registers: entry.registers,
                    shared_bytes: entry.shared_bytes,
                    stack_bytes: entry.stack_frame_bytes,
                    spill_stores: entry.spill_store_bytes,
                    spill_loads: entry.spill_load_bytes,
                });
            }
        }
        Err(failure) => report
            .plain
            .push(error(format!("ptxas rejected the PTX: {failure}"))),
    }
}
