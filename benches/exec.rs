//! The CPU executor's speed on the example GEMMs at 256³ (docs/running.md,
//! "The CPU executor"): `gemm_f16` (sm_80: cp.async, ldmatrix, mma.sync)
//! and `gemm_f16_sm90` (wgmma), each executed on one thread, inputs filled
//! as `ptxgen run` fills them. A benchmark, not a timed test:
//! `cargo bench --bench exec` prints the median of a few runs.

use std::time::Instant;

use graphene::compile::{self, Options};
use graphene::launch::{DimArg, run_kernel_cpu, select};

const RUNS: usize = 3;

fn example(name: &str) -> String {
    let path = format!("{}/examples/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).expect("readable example")
}

fn time(file: &str, kernel: &str) -> f64 {
    let text = example(file);
    let compiled = compile::compile(file, &text, &Options::default())
        .unwrap_or_else(|d| panic!("{file}: {d:?}"));
    let dims: Vec<DimArg> = ["M=256", "N=256", "K=256"]
        .iter()
        .map(|d| d.parse().expect("NAME=VALUE"))
        .collect();
    let selected = select(&compiled, Some(kernel), &dims).expect("selects");
    let one = &selected[0];
    let mut seconds: Vec<f64> = (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            let run = run_kernel_cpu(&compiled.text, &one.plan, &one.contract, 1, false)
                .unwrap_or_else(|e| panic!("{kernel}: {e}"));
            let elapsed = started.elapsed().as_secs_f64();
            assert!(run.passed(), "{kernel}: {}", run.line());
            elapsed
        })
        .collect();
    seconds.sort_by(f64::total_cmp);
    seconds[RUNS / 2]
}

fn main() {
    // One thread: the figure docs/running.md states is per core.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool");
    pool.install(|| {
        for (file, kernel) in [
            ("gemm_f16.gph", "gemm_f16"),
            ("gemm_f16_sm90.gph", "gemm_f16_sm90"),
        ] {
            let median = time(file, kernel);
            println!("exec {kernel} M=N=K=256 on one thread: median {median:.3} s of {RUNS}");
        }
    });
}
