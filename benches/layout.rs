//! Benchmarks of the layout algebra on GEMM-sized layouts: what the checker
//! and the lowering pay per tile, per reshape and per swizzled offset.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use graphene::layout::{
    Layout, SwizzledLayout, Tiler, composition, logical_divide, parse_swizzled_layout, tile,
    zipped_divide,
};

fn layout(text: &str) -> Layout {
    text.parse().expect("benchmark layouts are valid")
}

fn algebra(c: &mut Criterion) {
    let matrix = layout("[4096,4096]");
    let tiler = Tiler::shape(&[128, 32]).expect("valid tiler");
    // Measure the success paths: every operation below must have a result.
    zipped_divide(&matrix, &tiler).expect("128x32 divides 4096x4096");

    c.bench_function("logical_divide 4096x4096 by 128x32", |b| {
        b.iter(|| logical_divide(black_box(&matrix), black_box(&tiler)))
    });
    c.bench_function("zipped_divide 4096x4096 by 128x32", |b| {
        b.iter(|| zipped_divide(black_box(&matrix), black_box(&tiler)))
    });
    c.bench_function("tile 4096x4096 by [128,32]", |b| {
        b.iter(|| tile(black_box(&matrix), black_box(std::slice::from_ref(&tiler))))
    });

    // A hierarchical shared-memory tile read through an mma-style thread map.
    let smem = layout("((8,16),(32,4)):((32,256),(1,4096))");
    let thread_map = layout("((4,8),(2,2,4)):((32,1),(16,128,512))");
    composition(&smem, &thread_map).expect("the thread map composes with the tile");
    c.bench_function("composition smem tile o thread map", |b| {
        b.iter(|| composition(black_box(&smem), black_box(&thread_map)))
    });
}

fn swizzled_offsets(c: &mut Criterion) {
    let smem: SwizzledLayout =
        parse_swizzled_layout("Sw<3,3,3> o (128,64):(64,1)").expect("valid swizzled layout");
    let size = smem.size();
    c.bench_function("swizzled offsets of a 128x64 fp16 tile", |b| {
        b.iter(|| {
            let mut checksum = 0i64;
            for i in 0..size {
                checksum ^= smem.eval(black_box(i)).unwrap_or(0);
            }
            checksum
        })
    });
}

criterion_group!(benches, algebra, swizzled_offsets);
criterion_main!(benches);
