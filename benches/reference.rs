//! Benchmarks of the CPU reference behind `ptxgen run --check`: the dense
//! f64 GEMM, a whole `MatMul` contract (gathers, GEMM, rounding), a
//! transposing `Move`, and the comparison. Sizes are moderate so that a run
//! takes seconds; the GEMM scales as m·n·k from here (docs/running.md gives
//! the time of a 4096³ check).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use graphene::compile::{Options, check};
use graphene::ir::Kernel;
use graphene::reference::{Contract, compare, gemm_accumulate};

fn kernel(source: &str) -> Kernel {
    let checked = check("bench.gph", source, &Options::default()).expect("benchmark kernels check");
    checked
        .program
        .kernels
        .into_iter()
        .next()
        .expect("one kernel")
}

/// Deterministic values in [-1, 1) with a short period.
fn values(len: usize, seed: usize) -> Vec<f64> {
    (0..len)
        .map(|i| ((i * 7919 + seed * 104_729) % 2048) as f64 / 1024.0 - 1.0)
        .collect()
}

fn reference(c: &mut Criterion) {
    let mut group = c.benchmark_group("reference");
    group.sample_size(10);

    let n = 512;
    let a = values(n * n, 1);
    let b = values(n * n, 2);
    let mut out = values(n * n, 3);
    group.bench_function("gemm_accumulate 512^3 f64", |bench| {
        bench.iter(|| {
            gemm_accumulate(n, n, n, black_box(&a), black_box(&b), &mut out)
                .expect("consistent sizes")
        })
    });

    let gemm = kernel(
        "%a:[M, K : K, 1].fp16.GL\n%b:[K, N : 1, K].fp16.GL\n%c:[M, N : N, 1].fp32.GL\n\
         #g:[M/128, N/128].block\n#t:[256].thread\n%c <- MatMul<<<#g, #t>>>(%a, %b)\n",
    );
    let contract = Contract::of(&gemm, &[512, 512, 512]).expect("the GEMM has a contract");
    let params = [values(n * n, 4), values(n * n, 5), values(n * n, 6)];
    let slices: Vec<&[f64]> = params.iter().map(Vec::as_slice).collect();
    contract.evaluate(&slices).expect("the GEMM evaluates");
    group.bench_function("MatMul contract 512^3 (gather, gemm, round)", |bench| {
        bench.iter(|| contract.evaluate(black_box(&slices)))
    });

    let side = 2048;
    let transpose = kernel(
        "%x:[S, S : S, 1].fp16.GL\n%y:[S, S : 1, S].fp32.GL\n#g:[S].block\n#t:[256].thread\n\
         %y <- Move<<<#g, #t>>>(%x)\n",
    );
    let contract = Contract::of(&transpose, &[side as i64]).expect("the move has a contract");
    let params = [values(side * side, 7), vec![0.0; side * side]];
    let slices: Vec<&[f64]> = params.iter().map(Vec::as_slice).collect();
    let expected = contract.evaluate(&slices).expect("the move evaluates");
    group.bench_function("transposing Move 2048^2 (gather, round)", |bench| {
        bench.iter(|| contract.evaluate(black_box(&slices)))
    });

    let mut actual = vec![0.0; side * side];
    for (i, offset) in expected.index.offsets(0..expected.values.len()).enumerate() {
        actual[offset as usize] = expected.values[i];
    }
    let unwritten = vec![false; side * side];
    group.bench_function("compare 2048^2", |bench| {
        bench.iter(|| compare(black_box(&expected), black_box(&actual), &unwritten))
    });
    group.finish();
}

criterion_group!(benches, reference);
criterion_main!(benches);
