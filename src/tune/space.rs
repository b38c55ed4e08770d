//! The configurations a tuner chooses from: a kernel's tunable constants
//! (`const BN = 128 tune [64, 128, 256]`) that its code depends on, every
//! combination of their values, each compiled; what the compiler refuses is
//! set aside with its reason, and each kept one carries its resources as
//! `ptxas` reports them (registers, shared memory, spills) where `ptxas` is
//! found.

use std::collections::BTreeMap;

use rayon::prelude::*;

use crate::check;
use crate::compile::{self, Compiled, Options};
use crate::diag::Diagnostic;
use crate::ptx::Arch;
use crate::ptx::tools::{self, ToolError};
use crate::syntax::ast::Item;
use crate::syntax::parse_file;

/// A constant marked `tune [v, …]`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Tunable {
    /// Its name.
    pub name: String,
    /// The legal values, as listed.
    pub values: Vec<i64>,
}

/// One compiled configuration of one kernel.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The kernel.
    pub kernel: String,
    /// The tunable constants it sets, in source order.
    pub settings: Vec<(String, i64)>,
    /// Every constant of the file under these settings.
    pub constants: BTreeMap<String, i64>,
    /// The file compiled for this kernel alone.
    pub compiled: Compiled,
    /// What it takes of an SM.
    pub resources: Resources,
}

impl Candidate {
    /// `BM=128 BN=256 STAGES=4`, or `(defaults)` with nothing tunable.
    pub fn settings_text(&self) -> String {
        settings_text(&self.settings)
    }

    /// The value of constant `name`, if the file defines it.
    pub fn constant(&self, name: &str) -> Option<i64> {
        self.constants.get(name).copied()
    }
}

/// `NAME=VALUE` pairs, space-separated.
pub fn settings_text(settings: &[(String, i64)]) -> String {
    if settings.is_empty() {
        return "(defaults)".to_string();
    }
    settings
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Registers and shared memory per block, and where the figures came from.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Resources {
    /// Registers per thread.
    pub registers: u32,
    /// Shared memory per block, static and dynamic (bytes).
    pub shared_bytes: u32,
    /// Whether `ptxas` reported spills or a stack frame.
    pub spills: bool,
    /// `ptxas`, or why the kernel's own `max_registers` (or 255) stands in.
    pub source: String,
}

/// A configuration the compiler refused, and why (its first error).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Refused {
    /// The kernel.
    pub kernel: String,
    /// The settings.
    pub settings: Vec<(String, i64)>,
    /// The first error, one line.
    pub reason: String,
}

/// Every configuration of the kernels asked for.
#[derive(Clone, Debug, Default)]
pub struct Space {
    /// Per kernel, the tunables its code depends on.
    pub tunables: Vec<(String, Vec<Tunable>)>,
    /// The configurations that compiled.
    pub candidates: Vec<Candidate>,
    /// Those refused.
    pub refused: Vec<Refused>,
}

/// The tunable constants of the file, in source order.
pub fn tunables(name: &str, text: &str) -> Result<Vec<Tunable>, Vec<Diagnostic>> {
    let file = parse_file(name, text)?;
    Ok(file
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Const(def) => def.tune.as_ref().map(|tune| Tunable {
                name: def.name.text.clone(),
                values: tune.values.iter().map(|(v, _)| *v).collect(),
            }),
            Item::Kernel(_) | Item::Variant(_) => None,
        })
        .collect())
}

/// The configurations of `kernels` (of the file `name` with `text`): the
/// tunables not fixed by `defines` that change a kernel's checked IR, every
/// combination of their values compiled for `arch`, with resources from
/// `ptxas` when `assemble` is set and `ptxas` is found. Errors are the
/// file's own (it does not compile with its defaults).
pub fn enumerate(
    name: &str,
    text: &str,
    kernels: &[String],
    defines: &[(String, i64)],
    arch: Option<Arch>,
    assemble: bool,
) -> Result<Space, Vec<Diagnostic>> {
    let all = tunables(name, text)?;
    let open: Vec<&Tunable> = all
        .iter()
        .filter(|t| !defines.iter().any(|(name, _)| *name == t.name))
        .collect();
    let mut space = Space::default();
    let mut jobs = Vec::new();
    for kernel in kernels {
        let options = |settings: &[(String, i64)]| Options {
            arch,
            defines: defines.iter().chain(settings).cloned().collect(),
            kernels: vec![kernel.clone()],
            ..Options::default()
        };
        // The defaults must check: otherwise the file's own errors stand.
        let default = compile::check(name, text, &options(&[]))?;
        let relevant: Vec<Tunable> = open
            .iter()
            .filter(|tunable| {
                tunable.values.iter().any(|value| {
                    let setting = [(tunable.name.clone(), *value)];
                    compile::check(name, text, &options(&setting))
                        .map(|checked| checked.program != default.program)
                        .unwrap_or(true)
                })
            })
            .map(|tunable| (*tunable).clone())
            .collect();
        for settings in combinations(&relevant) {
            jobs.push((kernel.clone(), settings));
        }
        space.tunables.push((kernel.clone(), relevant));
    }
    let results: Vec<Result<Candidate, Refused>> = jobs
        .into_par_iter()
        .map(|(kernel, settings)| {
            compile_one(name, text, &kernel, defines, settings, arch, assemble)
        })
        .collect();
    for result in results {
        match result {
            Ok(candidate) => space.candidates.push(candidate),
            Err(refused) => space.refused.push(refused),
        }
    }
    Ok(space)
}

/// Every combination of the tunables' values, the last varying fastest.
fn combinations(tunables: &[Tunable]) -> Vec<Vec<(String, i64)>> {
    let mut all = vec![Vec::new()];
    for tunable in tunables {
        all = all
            .into_iter()
            .flat_map(|prefix: Vec<(String, i64)>| {
                tunable.values.iter().map(move |value| {
                    let mut next = prefix.clone();
                    next.push((tunable.name.clone(), *value));
                    next
                })
            })
            .collect();
    }
    all
}

fn compile_one(
    name: &str,
    text: &str,
    kernel: &str,
    defines: &[(String, i64)],
    settings: Vec<(String, i64)>,
    arch: Option<Arch>,
    assemble: bool,
) -> Result<Candidate, Refused> {
    let refuse = |reason: String| Refused {
        kernel: kernel.to_string(),
        settings: settings.clone(),
        reason,
    };
    let all_defines: Vec<(String, i64)> = defines.iter().chain(&settings).cloned().collect();
    let options = Options {
        arch,
        defines: all_defines.clone(),
        kernels: vec![kernel.to_string()],
        ..Options::default()
    };
    let compiled = compile::compile(name, text, &options).map_err(|diagnostics| {
        let first = diagnostics
            .iter()
            .find(|d| d.is_error())
            .map(|d| format!("{}: {}", d.code, d.message))
            .unwrap_or_else(|| "refused".to_string());
        refuse(first)
    })?;
    let constants = parse_file(name, text)
        .ok()
        .map(|file| check::constant_values(&file, &all_defines))
        .unwrap_or_default();
    let resources = resources(&compiled, kernel, assemble).map_err(refuse)?;
    Ok(Candidate {
        kernel: kernel.to_string(),
        settings,
        constants,
        compiled,
        resources,
    })
}

/// Registers and shared memory of `kernel`: from `ptxas` if asked and found
/// (a spill refuses the configuration: the examples promise none), else
/// from the kernel's `max_registers`.
fn resources(compiled: &Compiled, kernel: &str, assemble: bool) -> Result<Resources, String> {
    let index = compiled
        .program
        .kernels
        .iter()
        .position(|k| k.name == kernel)
        .ok_or_else(|| format!("no kernel `{kernel}` after compiling"))?;
    let dynamic = compiled.kernels[index].dynamic_shared_bytes;
    let declared = compiled.program.kernels[index]
        .occupancy
        .max_registers
        .unwrap_or(255);
    let fallback = |why: String| Resources {
        registers: declared,
        shared_bytes: dynamic,
        spills: false,
        source: why,
    };
    if !assemble {
        return Ok(fallback("max_registers (not assembled)".to_string()));
    }
    let (Some(module), Some(ptx)) = (&compiled.module, compiled.ptx()) else {
        return Ok(fallback("max_registers (no PTX)".to_string()));
    };
    let target = module.target().map_err(|e| e.to_string())?;
    match tools::assemble(ptx, target.name()) {
        Ok(assembly) => {
            let entry = assembly
                .entry(kernel)
                .ok_or_else(|| format!("ptxas reported no entry `{kernel}`"))?;
            if entry.uses_local_memory() {
                return Err(format!(
                    "ptxas: {} bytes of spill stores, {} of stack: it would spill",
                    entry.spill_store_bytes, entry.stack_frame_bytes
                ));
            }
            Ok(Resources {
                registers: entry.registers,
                shared_bytes: dynamic + u32::try_from(entry.shared_bytes).unwrap_or(u32::MAX),
                spills: false,
                source: "ptxas".to_string(),
            })
        }
        Err(ToolError::NotFound { .. }) => Ok(fallback("max_registers (no ptxas)".to_string())),
        Err(error) => Err(format!("ptxas: {error}")),
    }
}
