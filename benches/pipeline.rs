//! The whole compiler on the largest example: parse → check → lower → PTX
//! text, each stage alone and all together through `graphene::compile` —
//! what `ptxgen` pays per file.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use graphene::check::check_file;
use graphene::compile::{self, compile};
use graphene::lower::{Options, lower_program};
use graphene::syntax::parse_file;

/// The example with the most source text.
fn largest_example() -> (String, String) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
    let mut examples: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("examples/ exists")
        .map(|entry| entry.expect("readable").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "gph"))
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("readable example");
            (path.display().to_string(), text)
        })
        .collect();
    examples.sort_by_key(|(name, text)| (text.len(), name.clone()));
    examples.pop().expect("at least one example")
}

fn pipeline(c: &mut Criterion) {
    let (name, source) = largest_example();
    let options = Options::default();
    // Measure the success paths: every stage below must succeed.
    let ast = parse_file(&name, &source).expect("the example parses");
    let program = check_file(&ast, &[]).expect("the example checks");
    let module = lower_program(&program, &options).expect("the example lowers");
    module.to_ptx().expect("the module writes");

    c.bench_function("parse (largest example)", |b| {
        b.iter(|| parse_file(black_box(&name), black_box(&source)))
    });
    c.bench_function("check (largest example)", |b| {
        b.iter(|| check_file(black_box(&ast), &[]))
    });
    c.bench_function("lower (largest example)", |b| {
        b.iter(|| lower_program(black_box(&program), &options))
    });
    c.bench_function("emit PTX text (largest example)", |b| {
        b.iter(|| black_box(&module).to_ptx())
    });
    c.bench_function("parse + check + lower + emit (largest example)", |b| {
        b.iter(|| {
            compile(&name, black_box(&source), &compile::Options::default()).expect("compiles")
        })
    });
}

criterion_group!(benches, pipeline);
criterion_main!(benches);
