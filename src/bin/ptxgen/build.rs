//! `ptxgen build`: every input through `graphene::compile` and written (and
//! with `--verify`, ptxas), in parallel over files, reports printed in
//! input order so that the output does not depend on scheduling.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use graphene::diag::Severity;
use graphene::launch::{self, Source};
use graphene::ptx::TargetName;
use graphene::ptx::tools;
use graphene::{compile, syntax};

use super::messages::{self, FileReport, KernelReport, Plain, Resources};
use super::output::{self, Destination};
use super::{BuildArgs, Emit, MessageFormat};

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
    let color = args.color.choice();
    let mut failed = 0;
    for report in &reports {
        failed += usize::from(!report.succeeded());
        match args.message_format {
            MessageFormat::Human => messages::print_human(report, color),
            MessageFormat::Json => messages::print_json(report),
        }
    }
    // A failed run closes with one line that counts the failures, after
    // each file's own messages (the JSON stream has one `result` per file).
    if args.message_format == MessageFormat::Human && failed > 0 {
        eprintln!("{}", summary(reports.len(), failed));
    }
    Ok(failed == 0)
}

/// The closing line of a failed run: `ptxgen: 2 of 12 files failed`.
fn summary(files: usize, failed: usize) -> String {
    let noun = if files == 1 { "file" } else { "files" };
    format!("ptxgen: {failed} of {files} {noun} failed")
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
    let options = compile::Options {
        arch: args.arch,
        defines: args.defines.clone(),
        annotate: args.annotate,
        emit: args.emit.into(),
        kernels: args.kernels.clone(),
    };
    let compiled = match compile::compile(&name, &report.source, &options) {
        Ok(compiled) => compiled,
        Err(diagnostics) => {
            report.diagnostics = diagnostics;
            return report;
        }
    };
    report.diagnostics = compiled.warnings.clone();
    let manifest;
    let text = match (args.emit, &compiled.module) {
        (Emit::Manifest, Some(module)) => match manifest_text(&compiled, module) {
            Ok(json) => {
                manifest = json;
                &manifest
            }
            Err(failure) => {
                report
                    .plain
                    .push(error(format!("writing the manifest: {failure}")));
                return report;
            }
        },
        (Emit::Manifest | Emit::Ptx | Emit::Ir, _) => &compiled.text,
    };
    if let Err(failure) = output::write(destination, text) {
        report.plain.push(error(format!(
            "cannot write `{}`: {failure}",
            destination.describe()
        )));
        return report;
    }
    report.output = Some(destination.describe());
    for kernel in &compiled.kernels {
        report.kernels.push(KernelReport {
            name: kernel.name.clone(),
            dynamic_shared_bytes: kernel.dynamic_shared_bytes,
            resources: None,
        });
    }
    if let (Some(ptxas), Some(module), Emit::Ptx) = (ptxas, &compiled.module, args.emit) {
        verify(&mut report, ptxas, text, module);
    }
    report
}

/// The launch manifest of a lowered program, as pretty-printed JSON.
fn manifest_text(
    compiled: &compile::Compiled,
    module: &graphene::ptx::Module,
) -> Result<String, graphene::ptx::PtxError> {
    let target = module.target()?.name();
    let shared: Vec<u32> = compiled
        .kernels
        .iter()
        .map(|kernel| kernel.dynamic_shared_bytes)
        .collect();
    let source = Source {
        name: &compiled.name,
        text: &compiled.source,
    };
    let value = launch::manifest(&compiled.program, source, &target.to_string(), &shared);
    let mut text = serde_json::to_string_pretty(&value).expect("a JSON value serialises");
    text.push('\n');
    Ok(text)
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
