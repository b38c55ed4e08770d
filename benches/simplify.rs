//! Compiler speed of index arithmetic: simplifying, analysing and
//! strength-reducing the index expressions of one 128×128×32 fp16 GEMM main
//! loop (256 threads, 8 warps of 64×32), as layout application writes them:
//! every coordinate `(tid / stride) % shape`, every offset a sum of
//! coordinates times strides, shared memory swizzled.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use graphene::expr::{Expr, Var};
use graphene::index::analysis::known_divisor;
use graphene::index::facts::Facts;
use graphene::index::simplify::simplify;
use graphene::index::strength::strength_reduce;

fn c(value: i64) -> Expr {
    Expr::Const(value)
}

fn v(var: Var) -> Expr {
    Expr::Var(var)
}

fn node(build: fn(Box<Expr>, Box<Expr>) -> Expr, a: Expr, b: Expr) -> Expr {
    build(Box::new(a), Box::new(b))
}

fn add(a: Expr, b: Expr) -> Expr {
    node(Expr::Add, a, b)
}

fn mul(a: Expr, b: Expr) -> Expr {
    node(Expr::Mul, a, b)
}

/// `(x / stride) % shape`: a coordinate of a thread group, unsimplified.
fn coordinate(x: Expr, stride: i64, shape: i64) -> Expr {
    node(Expr::Rem, node(Expr::Div, x, c(stride)), c(shape))
}

/// `Swizzle<2,3,3>` on a 32-wide fp16 row: `x ^ ((x & (3 << 6)) >> 3)`.
fn swizzle(x: Expr) -> Expr {
    let source = node(Expr::Shr, node(Expr::And, x.clone(), c(3 << 6)), c(3));
    node(Expr::Xor, x, source)
}

/// The index expressions of one main-loop iteration and the epilogue.
fn gemm_expressions() -> Vec<Expr> {
    let tid = || v(Var::ThreadId);
    let bid = || v(Var::BlockId);
    let (k, n_dim, k_dim) = (v(Var::Loop(0)), v(Var::Dim(1)), v(Var::Dim(2)));
    let (bid_m, bid_n) = (coordinate(bid(), 1, 32), coordinate(bid(), 32, 32));
    let (warp_m, warp_n) = (coordinate(tid(), 32, 2), coordinate(tid(), 64, 4));
    let lane = || coordinate(tid(), 1, 32);
    let mut out = Vec::new();
    // cp.async of A and B tiles: 16 bytes per thread, two steps each.
    for step in 0..2 {
        let row = add(coordinate(tid(), 4, 64), c(step * 64));
        let col = mul(coordinate(tid(), 1, 4), c(8));
        let global_a = add(
            add(
                mul(add(mul(bid_m.clone(), c(128)), row.clone()), k_dim.clone()),
                k.clone(),
            ),
            col.clone(),
        );
        let global_b = add(
            add(
                mul(add(mul(bid_n.clone(), c(128)), row.clone()), k_dim.clone()),
                k.clone(),
            ),
            col.clone(),
        );
        let shared = swizzle(add(mul(row, c(32)), col));
        out.extend([global_a, global_b, shared]);
    }
    // ldmatrix.x4 row addresses for A (4 m-steps) and B (4 n-steps), 2 k-steps.
    for ki in 0..2 {
        for mi in 0..4 {
            let row = add(
                add(mul(warp_m.clone(), c(64)), c(mi * 16)),
                coordinate(lane(), 1, 16),
            );
            let col = add(c(ki * 16), mul(coordinate(lane(), 16, 2), c(8)));
            out.push(swizzle(add(mul(row, c(32)), col)));
        }
        for ni in 0..4 {
            let row = add(
                add(mul(warp_n.clone(), c(32)), c(ni * 8)),
                coordinate(lane(), 1, 8),
            );
            let col = add(c(ki * 16), mul(coordinate(lane(), 8, 2), c(8)));
            out.push(swizzle(add(mul(row, c(32)), col)));
        }
    }
    // Epilogue: each thread stores pairs of C at (row, col) of its fragments.
    for mi in 0..4 {
        for ni in 0..4 {
            for half in 0..2 {
                let row = add(
                    add(
                        mul(bid_m.clone(), c(128)),
                        add(mul(warp_m.clone(), c(64)), c(mi * 16 + half * 8)),
                    ),
                    coordinate(lane(), 4, 8),
                );
                let col = add(
                    add(
                        mul(bid_n.clone(), c(128)),
                        add(mul(warp_n.clone(), c(32)), c(ni * 8)),
                    ),
                    mul(coordinate(lane(), 1, 4), c(2)),
                );
                out.push(add(mul(row, n_dim.clone()), col));
            }
        }
    }
    out
}

fn gemm_facts() -> Facts {
    Facts::builder()
        .threads(256)
        .blocks(1024)
        .counted_loop(0, 0, None, 32)
        .multiple_of(Var::Dim(1), 128)
        .multiple_of(Var::Dim(2), 32)
        .build()
        .expect("valid facts")
}

fn bench_simplify(c: &mut Criterion) {
    let expressions = gemm_expressions();
    let facts = gemm_facts();
    let simplified: Vec<Expr> = expressions.iter().map(|e| simplify(e, &facts)).collect();
    let before: usize = expressions.iter().map(Expr::node_count).sum();
    let after: usize = simplified.iter().map(Expr::node_count).sum();
    println!(
        "{} GEMM index expressions: {before} nodes, {after} after simplify",
        expressions.len()
    );

    let mut group = c.benchmark_group("gemm_128x128x32");
    group.throughput(Throughput::Elements(expressions.len() as u64));
    group.bench_function("simplify", |b| {
        b.iter(|| {
            for e in &expressions {
                black_box(simplify(black_box(e), &facts));
            }
        })
    });
    group.bench_function("known_divisor", |b| {
        b.iter(|| {
            for e in &simplified {
                black_box(known_divisor(black_box(e), &facts));
            }
        })
    });
    group.bench_function("strength_reduce", |b| {
        b.iter(|| {
            for e in &simplified {
                black_box(strength_reduce(black_box(e)));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench_simplify);
criterion_main!(benches);
