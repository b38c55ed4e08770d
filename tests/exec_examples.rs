//! Every example on the CPU executor of its PTX (`graphene::exec`): compiled
//! for its lowest target, run once with the seeded fills of `ptxgen run`, and
//! checked against the reference of its contract — with no finding (no
//! out-of-bounds access, unwritten read, race or early read). Symbolic dims
//! get the smallest of 256, 512, …, 4096 that satisfies the requirements.
//! The same kernels also run with a `sync` or an `async_wait` removed from
//! their source, and the executor must then report the race or early read.

use std::io::Write;
use std::path::PathBuf;

use graphene::compile::{self, Compiled, Options};
use graphene::exec::FindingKind;
use graphene::launch::{CpuRun, DimArg, run_kernel_cpu, select};

fn say(line: &str) {
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

fn example(name: &str) -> String {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/examples")).join(name);
    std::fs::read_to_string(path).expect("readable example")
}

fn example_names() -> Vec<String> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/examples"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("examples/ exists")
        .map(|entry| {
            entry
                .expect("readable")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".gph"))
        .collect();
    names.sort();
    names
}

fn dims_for(compiled: &Compiled) -> Option<Vec<DimArg>> {
    let mut names: Vec<String> = compiled
        .program
        .kernels
        .iter()
        .flat_map(|k| k.dims.iter().map(|d| d.name.clone()))
        .collect();
    names.sort();
    names.dedup();
    [256u32, 512, 1024, 2048, 4096]
        .into_iter()
        .find_map(|value| {
            let dims: Vec<DimArg> = names
                .iter()
                .map(|name| DimArg {
                    name: name.clone(),
                    value,
                })
                .collect();
            select(compiled, None, &dims).ok().map(|_| dims)
        })
}

/// Compiles `text` and runs every kernel on the CPU with `--check`.
fn run_all(name: &str, text: &str) -> Vec<(String, CpuRun)> {
    let compiled = compile::compile(name, text, &Options::default())
        .unwrap_or_else(|d| panic!("{name}: does not compile: {d:?}"));
    let dims = dims_for(&compiled).unwrap_or_else(|| panic!("{name}: no dims fit"));
    let selected = select(&compiled, None, &dims).expect("selects");
    selected
        .iter()
        .map(|s| {
            let run = run_kernel_cpu(&compiled.text, &s.plan, &s.contract, 1, true)
                .unwrap_or_else(|e| panic!("{name} {}: {e}", s.plan.kernel));
            (s.plan.kernel.clone(), run)
        })
        .collect()
}

/// Examples too large for a CI run on the executor: `simple_gemm` is the
/// paper's fixed 1024³ scalar GEMM, 170 million warp instructions (minutes).
const SLOW: [&str; 1] = ["simple_gemm.gph"];

#[test]
fn every_example_passes_its_check_on_the_cpu() {
    check_examples(
        example_names()
            .into_iter()
            .filter(|n| !SLOW.contains(&n.as_str())),
    );
}

#[test]
#[ignore = "minutes on the executor; run with --ignored"]
fn the_slow_examples_pass_their_check_on_the_cpu() {
    check_examples(SLOW.iter().map(|n| n.to_string()));
}

fn check_examples(names: impl Iterator<Item = String>) {
    let mut failures = Vec::new();
    for name in names {
        for (kernel, run) in run_all(&name, &example(&name)) {
            say(&format!(
                "example {name}: {} ({} warp instructions, {} findings)",
                run.report.line(),
                run.exec.warp_instructions,
                run.exec.finding_total
            ));
            for finding in &run.exec.findings {
                say(&format!("  {finding}"));
            }
            if !run.passed() {
                failures.push(format!("{name} {kernel}: {}", run.report.line()));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The source with the first line equal to `line` (trimmed) removed.
fn without(text: &str, line: &str) -> String {
    let mut removed = false;
    text.lines()
        .filter(|l| {
            let drop = !removed && l.trim() == line;
            removed |= drop;
            !drop
        })
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        .replace("\n\n\n", "\n\n")
}

fn findings(runs: &[(String, CpuRun)]) -> Vec<FindingKind> {
    runs.iter()
        .flat_map(|(_, r)| r.exec.findings.iter().map(|f| f.kind.clone()))
        .collect()
}

#[test]
fn removing_a_sync_is_reported_as_a_race() {
    let text = example("mma_ldmatrix_x2.gph");
    assert!(
        text.lines().any(|l| l.trim() == "sync"),
        "the example has a sync"
    );
    let runs = run_all("mma_ldmatrix_x2.gph", &without(&text, "sync"));
    let kinds = findings(&runs);
    assert!(
        kinds.iter().any(|k| matches!(k, FindingKind::Race { .. })),
        "{kinds:?}"
    );
}

#[test]
fn removing_an_async_wait_is_reported_as_an_early_read() {
    let text = example("async_swizzle_copy.gph");
    let runs = run_all("async_swizzle_copy.gph", &without(&text, "async_wait(0)"));
    let kinds = findings(&runs);
    assert!(
        kinds
            .iter()
            .any(|k| matches!(k, FindingKind::EarlyRead { .. })),
        "{kinds:?}"
    );
}
