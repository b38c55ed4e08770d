//! Every example on a GPU (feature `cuda`): compiled, run once with random
//! inputs, and checked against the CPU reference of its contract — what
//! `ptxgen run --check` does. Examples whose `// targets:` line claims sm_80
//! or sm_90 must pass, and so must those claiming sm_90a when the device is
//! compute capability 9.0 (the only one sm_90a code runs on); the others are
//! listed as not run. Each example
//! prints one summary line (to stderr, past the harness's capture):
//!
//! ```text
//! example simple_gemm.gph: PASS  simple_gemm  <<<64, 256, 0 B>>>  2.1 ms  rel err …
//! ```
//!
//! Without a driver or device the test writes `skipped: no CUDA device
//! (<reason>)` and returns. Symbolic dims get the smallest of 256, 512, …,
//! 4096 that satisfies the kernel's requirements.
#![cfg(feature = "cuda")]

mod support;

use std::io::Write;
use std::path::PathBuf;

use graphene::compile::{Compiled, Options, compile};
use graphene::launch::{Backend, DimArg, RunOptions, run_file, select};
use graphene::ptx::{Sm, TargetName};
use graphene::runtime::Gpu;

/// Straight to the process's stderr: `eprintln!` would be captured.
fn say(line: &str) {
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

fn examples() -> Vec<(PathBuf, String)> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/examples"));
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("examples/ exists")
        .map(|entry| entry.expect("readable").path())
        .filter(|path| path.extension().is_some_and(|e| e == "gph"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("readable example");
            (path, text)
        })
        .collect()
}

/// The architectures of the example's `// targets:` line.
fn targets(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("// targets:"))
        .flat_map(|list| list.split_whitespace().map(str::to_string))
        .collect()
}

/// One value for every dim of the file: the smallest candidate with which
/// every kernel's requirements hold.
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

#[test]
fn every_sm80_and_sm90_example_passes_its_check() {
    let capability = match Gpu::new() {
        Ok(gpu) => {
            let (major, minor) = gpu.info().compute_capability;
            Sm(10 * major + minor)
        }
        Err(error) => {
            assert!(error.is_unavailable(), "{error}");
            support::skip::skip("no CUDA device", &error.to_string());
            return;
        }
    };
    // sm_80 and sm_90 code runs on every device this test is meant for; an
    // arch-specific target (sm_90a) only on its own capability.
    let runs_here = |claim: &String| {
        claim == "sm_80"
            || claim == "sm_90"
            || claim
                .parse::<TargetName>()
                .is_ok_and(|name| name.arch_specific && name.runs_on(capability))
    };
    let mut failures = Vec::new();
    let mut checked = 0;
    for (path, text) in examples() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let claims = targets(&text);
        if !claims.iter().any(runs_here) {
            say(&format!(
                "example {name}: not run (targets {})",
                claims.join(" ")
            ));
            continue;
        }
        let compiled = match compile(&name, &text, &Options::default()) {
            Ok(compiled) => compiled,
            Err(diagnostics) => {
                failures.push(format!("{name}: does not compile: {diagnostics:?}"));
                continue;
            }
        };
        let Some(dims) = dims_for(&compiled) else {
            failures.push(format!(
                "{name}: no dims from 256 to 4096 satisfy its requirements"
            ));
            continue;
        };
        let options = RunOptions {
            kernel: None,
            dims,
            seed: 1,
            check: true,
            backend: Backend::Gpu,
        };
        let mut out = Vec::new();
        let result = run_file(&compiled, &options, &mut out);
        let text = String::from_utf8_lossy(&out).into_owned();
        for line in text.lines().filter(|l| !l.starts_with("# device")) {
            say(&format!("example {name}: {line}"));
        }
        checked += 1;
        match result {
            Ok(true) => {}
            Ok(false) => failures.push(format!("{name}: failed its check")),
            Err(error) => {
                say(&format!("example {name}: ERROR {error}"));
                failures.push(format!("{name}: {error}"));
            }
        }
    }
    assert!(checked > 0, "no example targets sm_80 or sm_90");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
