//! Tests of the executor's Hopper bulk tensor copies and mbarriers, on
//! hand-written kernels in the PTX forms the lowering of `Move<tma>` emits:
//! each copy checked element by element against the tensor and the
//! swizzle formula, a producer–consumer pipeline over full and empty
//! barriers, and each misuse (a read before the wait, a phase that never
//! completes, an mbarrier used against its rules, a bad register count)
//! reported where it happens.

use super::decode::{Op, decode};
use super::ops::tma::swizzled;
use super::parse::{Operand, parse_module};
use super::{Arg, ExecError, ExecReport, Finding, FindingKind, TensorMapArg, run_kernel};
use crate::layout::Swizzle;

/// A module of one kernel `k` with `params` (declarations) and `body`, its
/// dynamic shared memory `smem` 1024-byte aligned.
fn module(params: &[&str], body: &str) -> String {
    format!(
        ".version 8.0\n.target sm_90a\n.address_size 64\n\
         .extern .shared .align 1024 .b8 smem[];\n\
         .visible .entry k(\n    {}\n)\n{{\n\
         .reg .pred %p<16>;\n.reg .b32 %r<64>;\n.reg .f32 %f<16>;\n.reg .b64 %rd<32>;\n\
         {body}\n    ret;\n}}\n",
        params.join(",\n    ")
    )
}

/// The parameters of the copy kernels: the tensor, the dump of shared
/// memory, the tensor map.
const COPY_PARAMS: [&str; 3] = [
    ".param .u64 A",
    ".param .u64 out",
    ".param .align 64 .b8 tmap0_A[128]",
];

/// One warp: thread 0 initialises the mbarrier at `smem + dst + bytes`,
/// expects `bytes` and copies the box at `coords` to `smem + dst`; every thread
/// then waits for the phase (unless `wait` is false) and the warp dumps
/// `bytes` of shared memory from `smem` to `out`, 4 bytes a thread at a
/// time.
fn copy_kernel(coords: &[i32], bytes: u32, dst: u32, wait: bool) -> String {
    let dims = coords.len();
    let set: String = coords
        .iter()
        .enumerate()
        .map(|(i, c)| format!("    mov.u32 %r{}, {c};\n", 20 + i))
        .collect();
    let regs: Vec<String> = (0..dims).map(|i| format!("%r{}", 20 + i)).collect();
    let wait = if wait {
        "$L_wait:\n    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r3], %r4;\n    \
         @!%p2 bra $L_wait;\n"
    } else {
        ""
    };
    let body = format!(
        "    mov.u32 %r1, %tid.x;
    mov.u32 %r2, smem;
    add.u32 %r3, %r2, {barrier};
    add.u32 %r8, %r2, {dst};
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_init;
    mbarrier.init.shared::cta.b64 [%r3], 1;
    fence.mbarrier_init.release.cluster;
$L_init:
    bar.sync 0;
    @%p1 bra $L_issued;
    mov.b64 %rd1, tmap0_A;
    cvta.param.u64 %rd2, %rd1;
{set}    mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [%r3], {bytes};
    cp.async.bulk.tensor.{dims}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r8], [%rd2, {{{}}}], [%r3];
$L_issued:
    mov.u32 %r4, 0;
{wait}    ld.param.u64 %rd4, [out];
    shl.b32 %r5, %r1, 2;
$L_dump:
    add.u32 %r6, %r2, %r5;
    ld.shared.u32 %r7, [%r6];
    cvt.u64.u32 %rd5, %r5;
    add.u64 %rd6, %rd4, %rd5;
    st.global.u32 [%rd6], %r7;
    add.u32 %r5, %r5, 128;
    setp.lt.u32 %p3, %r5, {bytes};
    @%p3 bra $L_dump;",
        regs.join(", "),
        barrier = dst + bytes,
    );
    module(&COPY_PARAMS, &body)
}

/// Runs a copy kernel of a `bytes` box to `dst` over `tensor` with `map`
/// in one warp; the report.
fn run_copy(text: &str, tensor: Vec<u8>, bytes: u32, dst: u32, map: TensorMapArg) -> ExecReport {
    let args = [
        Arg::Buffer(tensor),
        Arg::Buffer(vec![0; bytes as usize]),
        Arg::TensorMap(map),
    ];
    let shared = dst + bytes + 8;
    run_kernel(text, "k", 1, 32, shared, &args).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// `count` little-endian u16s: element `i` is `i + 1` (0 is left for the
/// zeros of a box past the tensor).
fn halves(count: usize) -> Vec<u8> {
    (0..count)
        .flat_map(|i| (i as u16 + 1).to_le_bytes())
        .collect()
}

fn half_at(bytes: &[u8], element: u64) -> u16 {
    let at = element as usize * 2;
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

/// The 128-byte swizzle written out: the 16-byte chunk (bits 4–6) XOR the
/// row within 8 (bits 7–9).
fn swizzle_128(address: u64) -> u64 {
    address ^ (((address >> 7) & 7) << 4)
}

/// An fp16 tensor of 256 rows of 128 and its map with a 64×128 box (64
/// elements, 128 bytes, a row) under the 128-byte swizzle.
fn fp16_map() -> TensorMapArg {
    TensorMapArg {
        buffer: 0,
        element_bytes: 2,
        extents: vec![128, 256],
        strides_bytes: vec![256],
        boxes: vec![64, 128],
        swizzle_bytes: 128,
    }
}

/// Checks the dump of a 64×128 fp16 box at (`c0`, `c1`) of [`fp16_map`]'s
/// tensor against the tensor, element by element: zeros outside it.
fn check_fp16_box(report: &ExecReport, c0: i64, c1: i64) {
    let tensor = &report.outputs[0];
    let dump = &report.outputs[1];
    for row in 0..128i64 {
        for column in 0..64i64 {
            let (x, y) = (c0 + column, c1 + row);
            let expected = if (0..128).contains(&x) && (0..256).contains(&y) {
                half_at(tensor, (y * 128 + x) as u64)
            } else {
                0
            };
            let at = swizzle_128(((row * 64 + column) * 2) as u64);
            assert_eq!(
                half_at(dump, at / 2),
                expected,
                "box row {row}, column {column} (tensor ({x}, {y})) at shared byte {at}"
            );
        }
    }
}

#[test]
fn a_2d_copy_lands_under_the_128_byte_swizzle() {
    let text = copy_kernel(&[64, 32], 16384, 0, true);
    let run = run_copy(&text, halves(128 * 256), 16384, 0, fp16_map());
    assert!(run.findings.is_empty(), "{:#?}", run.findings);
    check_fp16_box(&run, 64, 32);
    // Swizzled indeed: box row 1 starts with its second 16-byte chunk.
    assert_eq!(
        half_at(&run.outputs[1], 64),
        half_at(&run.outputs[0], 33 * 128 + 64 + 8)
    );
}

#[test]
fn a_box_past_the_tensors_edges_reads_zeros() {
    // Columns 100..164 of 128, rows -3..125 of 256.
    let text = copy_kernel(&[100, -3], 16384, 0, true);
    let run = run_copy(&text, halves(128 * 256), 16384, 0, fp16_map());
    assert!(run.findings.is_empty(), "{:#?}", run.findings);
    check_fp16_box(&run, 100, -3);
    let zeros = run.outputs[1].chunks(2).filter(|h| h == &[0, 0]).count();
    // Outside: 3 whole rows, and 36 columns of the other 125.
    assert_eq!(zeros, 3 * 64 + 125 * 36);
}

#[test]
fn a_3d_copy_follows_the_strides_and_the_64_byte_swizzle() {
    // fp32, extents 40 × 10 × 5 with padded strides (44 elements a row,
    // 1792 bytes a plane); a 16 × 4 × 3 box at (8, 5, 1): 768 bytes.
    let map = TensorMapArg {
        buffer: 0,
        element_bytes: 4,
        extents: vec![40, 10, 5],
        strides_bytes: vec![176, 1792],
        boxes: vec![16, 4, 3],
        swizzle_bytes: 64,
    };
    let tensor: Vec<u8> = (0..1792 * 5 / 4)
        .flat_map(|i: u32| (i + 1).to_le_bytes())
        .collect();
    let text = copy_kernel(&[8, 5, 1], 768, 0, true);
    let run = run_copy(&text, tensor.clone(), 768, 0, map);
    assert!(run.findings.is_empty(), "{:#?}", run.findings);
    let word = |bytes: &[u8], at: u64| {
        let at = at as usize;
        u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
    };
    for plane in 0..3u64 {
        for row in 0..4u64 {
            for column in 0..16u64 {
                let source = (plane + 1) * 1792 + (row + 5) * 176 + (column + 8) * 4;
                let a = ((plane * 4 + row) * 16 + column) * 4;
                let at = a ^ (((a >> 7) & 3) << 4);
                assert_eq!(
                    word(&run.outputs[1], at),
                    word(&tensor, source),
                    "box ({column}, {row}, {plane})"
                );
            }
        }
    }
}

#[test]
fn the_swizzles_are_cutes_on_byte_addresses() {
    for (span, bits) in [(128, 3), (64, 2), (32, 1)] {
        let cute = Swizzle::new(bits, 4, 3).expect("a swizzle");
        for address in 0..4096u64 {
            assert_eq!(swizzled(address, span), cute.apply(address as i64) as u64);
        }
    }
    assert_eq!(swizzled(0x3F0, 0), 0x3F0);
    assert_eq!(swizzled(0x80, 128), 0x90);
    assert_eq!(swizzled(0x380, 128), 0x3F0);
}

#[test]
fn a_consumer_reading_before_its_wait_reads_early() {
    let text = copy_kernel(&[0, 0], 16384, 0, false);
    let run = run_copy(&text, halves(128 * 256), 16384, 0, fp16_map());
    let early: Vec<&Finding> = run
        .findings
        .iter()
        .filter(|f| matches!(f.kind, FindingKind::EarlyRead { .. }))
        .collect();
    assert_eq!(early.len(), 1, "{:#?}", run.findings);
    assert_eq!(early[0].instruction, "ld.shared.u32 %r7, [%r6]");
    assert_eq!(early[0].thread, 0);
    assert_eq!(early[0].line, line_of(&text, "ld.shared.u32 %r7, [%r6];"));
    let copy_line = line_of_prefix(&text, "cp.async.bulk.tensor");
    assert!(
        early[0]
            .to_string()
            .contains(&format!("cp.async.bulk.tensor at line {copy_line}")),
        "{}",
        early[0]
    );
    // Every thread read early, 128 reads each.
    assert_eq!(run.finding_total, 32 * 128);
}

/// A 1-D map of 32 fp32: one 128-byte box.
fn row_map() -> TensorMapArg {
    TensorMapArg {
        buffer: 0,
        element_bytes: 4,
        extents: vec![32],
        strides_bytes: vec![],
        boxes: vec![32],
        swizzle_bytes: 0,
    }
}

#[test]
fn a_wait_on_the_wrong_parity_does_not_make_a_copy_visible() {
    // Warp 0 waits for parity 1 of the fresh full barrier (done at once:
    // it is the phase "before" phase 0), then for the producer's `go`, and
    // reads the tile: the phase the copy completes, 0, it has never seen.
    let body = "    mov.u32 %r1, %tid.x;
    mov.u32 %r2, smem;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_init;
    mbarrier.init.shared::cta.b64 [%r2+128], 1;
    mbarrier.init.shared::cta.b64 [%r2+136], 1;
$L_init:
    bar.sync 0;
    setp.ge.u32 %p2, %r1, 32;
    @%p2 bra $L_producer;
$L_wait_full:
    mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r2+128], 1;
    @!%p3 bra $L_wait_full;
$L_wait_go:
    mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r2+136], 0;
    @!%p4 bra $L_wait_go;
    shl.b32 %r5, %r1, 2;
    add.u32 %r6, %r2, %r5;
    ld.shared.u32 %r7, [%r6];
    bra $L_end;
$L_producer:
    setp.ne.u32 %p5, %r1, 32;
    @%p5 bra $L_end;
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [%r2+128], 128;
    mov.b64 %rd1, tmap0_A;
    cvta.param.u64 %rd2, %rd1;
    mov.u32 %r3, 0;
    add.u32 %r4, %r2, 128;
    cp.async.bulk.tensor.1d.shared::cta.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd2, {%r3}], [%r4];
    mbarrier.arrive.shared::cta.b64 %rd4, [%r2+136];
$L_end:";
    let text = module(&COPY_PARAMS, body);
    let args = [
        Arg::Buffer(vec![1; 128]),
        Arg::Buffer(vec![0; 4]),
        Arg::TensorMap(row_map()),
    ];
    let run = run_kernel(&text, "k", 1, 64, 144, &args).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(run.findings.len(), 1, "{:#?}", run.findings);
    let finding = &run.findings[0];
    assert!(
        matches!(finding.kind, FindingKind::EarlyRead { .. }),
        "{finding}"
    );
    assert_eq!(finding.line, line_of(&text, "ld.shared.u32 %r7, [%r6];"));
    assert!(finding.to_string().contains("in its phase 0"), "{finding}");
    assert_eq!(run.finding_total, 32);
}

#[test]
fn a_misaligned_destination_and_a_box_past_the_buffer_are_findings() {
    // 64 bytes into shared memory: not 128-byte aligned.
    let text = copy_kernel(&[0, 0], 16384, 64, true);
    let run = run_copy(&text, halves(128 * 256), 16384, 64, fp16_map());
    let misaligned = run
        .findings
        .iter()
        .find(|f| matches!(f.kind, FindingKind::Misaligned { .. }))
        .unwrap_or_else(|| panic!("{:#?}", run.findings));
    assert_eq!(
        misaligned.kind,
        FindingKind::Misaligned {
            what: "a tensor copy's destination",
            offset: 64,
            alignment: 128
        }
    );
    // Rows 512 bytes apart in a tensor of 256-byte rows: rows past 127
    // are inside the extents but past the buffer's end.
    let mut map = fp16_map();
    map.strides_bytes = vec![512];
    let text = copy_kernel(&[0, 64], 16384, 0, true);
    let run = run_copy(&text, halves(128 * 256), 16384, 0, map);
    let outside: Vec<&Finding> = run
        .findings
        .iter()
        .filter(|f| matches!(f.kind, FindingKind::GlobalOutOfBounds { .. }))
        .collect();
    assert_eq!(outside.len(), 1, "{:#?}", run.findings);
    assert!(
        outside[0]
            .instruction
            .starts_with("cp.async.bulk.tensor.2d")
    );
    assert!(
        outside[0].to_string().contains("box element"),
        "{}",
        outside[0]
    );
    // Never read: what lands there is zeros.
    assert!(run.outputs[1][16384 / 2..].iter().all(|&b| b == 0));
}

/// The 1-based line of `text` whose trimmed text is `line`.
fn line_of(text: &str, line: &str) -> usize {
    1 + text
        .lines()
        .position(|l| l.trim() == line)
        .unwrap_or_else(|| panic!("no `{line}` in\n{text}"))
}

/// The 1-based line of `text` that starts with `prefix`.
fn line_of_prefix(text: &str, prefix: &str) -> usize {
    1 + text
        .lines()
        .position(|l| l.trim().starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}…` in\n{text}"))
}

/// Two warps over two stages: thread 0 produces `tiles` 32×4 fp32 tiles
/// (waiting on each stage's empty barrier, then expecting and copying into
/// it on its full barrier), warp 1 consumes them (waiting on full, summing
/// its column of the 4 rows into `out[k][j]`, arriving on empty).
fn pipeline_kernel(tiles: u32) -> String {
    let body = format!(
        "    mov.u32 %r1, %tid.x;
    mov.u32 %r2, smem;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_init;
    mbarrier.init.shared::cta.b64 [%r2+1024], 1;
    mbarrier.init.shared::cta.b64 [%r2+1032], 1;
    mbarrier.init.shared::cta.b64 [%r2+1040], 32;
    mbarrier.init.shared::cta.b64 [%r2+1048], 32;
    fence.mbarrier_init.release.cluster;
$L_init:
    bar.sync 0;
    @%p1 bra $L_consumer;
    mov.b64 %rd1, tmap0_A;
    cvta.param.u64 %rd2, %rd1;
    mov.u32 %r10, 0;
$L_produce:
    and.b32 %r11, %r10, 1;
    shr.u32 %r12, %r10, 1;
    and.b32 %r12, %r12, 1;
    xor.b32 %r13, %r12, 1;
    shl.b32 %r14, %r11, 3;
    add.u32 %r15, %r2, 1024;
    add.u32 %r15, %r15, %r14;
    add.u32 %r16, %r15, 16;
$L_wait_empty:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r16], %r13;
    @!%p2 bra $L_wait_empty;
    mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 %rd3, [%r15], 512;
    shl.b32 %r17, %r11, 9;
    add.u32 %r17, %r2, %r17;
    mov.u32 %r18, 0;
    shl.b32 %r19, %r10, 2;
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r17], [%rd2, {{%r18, %r19}}], [%r15];
    add.u32 %r10, %r10, 1;
    setp.lt.u32 %p3, %r10, {tiles};
    @%p3 bra $L_produce;
    bra $L_end;
$L_consumer:
    setp.lt.u32 %p4, %r1, 32;
    @%p4 bra $L_end;
    sub.u32 %r30, %r1, 32;
    ld.param.u64 %rd4, [out];
    mov.u32 %r10, 0;
$L_consume:
    and.b32 %r11, %r10, 1;
    shr.u32 %r12, %r10, 1;
    and.b32 %r12, %r12, 1;
    shl.b32 %r14, %r11, 3;
    add.u32 %r15, %r2, 1024;
    add.u32 %r15, %r15, %r14;
    add.u32 %r16, %r15, 16;
    shl.b32 %r17, %r11, 9;
    add.u32 %r17, %r2, %r17;
$L_wait_full:
    mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p5, [%r15], %r12;
    @!%p5 bra $L_wait_full;
    shl.b32 %r31, %r30, 2;
    add.u32 %r32, %r17, %r31;
    ld.shared.f32 %f1, [%r32];
    ld.shared.f32 %f2, [%r32+128];
    ld.shared.f32 %f3, [%r32+256];
    ld.shared.f32 %f4, [%r32+384];
    add.f32 %f5, %f1, %f2;
    add.f32 %f5, %f5, %f3;
    add.f32 %f5, %f5, %f4;
    mbarrier.arrive.shared::cta.b64 %rd5, [%r16];
    shl.b32 %r33, %r10, 5;
    add.u32 %r33, %r33, %r30;
    mul.wide.u32 %rd6, %r33, 4;
    add.u64 %rd7, %rd4, %rd6;
    st.global.f32 [%rd7], %f5;
    add.u32 %r10, %r10, 1;
    setp.lt.u32 %p6, %r10, {tiles};
    @%p6 bra $L_consume;
$L_end:"
    );
    module(&COPY_PARAMS, &body)
}

/// The pipeline's tensor: `tiles` tiles of 4 rows of 32 fp32, and its map.
fn pipeline_args(tiles: u32) -> (Vec<f32>, [Arg; 3]) {
    let values: Vec<f32> = (0..tiles * 128).map(|i| (i % 97) as f32 * 0.25).collect();
    let map = TensorMapArg {
        buffer: 0,
        element_bytes: 4,
        extents: vec![32, u64::from(tiles) * 4],
        strides_bytes: vec![128],
        boxes: vec![32, 4],
        swizzle_bytes: 0,
    };
    let args = [
        Arg::Buffer(values.iter().flat_map(|v| v.to_le_bytes()).collect()),
        Arg::Buffer(vec![0; tiles as usize * 128]),
        Arg::TensorMap(map),
    ];
    (values, args)
}

#[test]
fn a_producer_and_a_consumer_warp_pipeline_over_full_and_empty_barriers() {
    let tiles = 7;
    let text = pipeline_kernel(tiles);
    let (values, args) = pipeline_args(tiles);
    let run = run_kernel(&text, "k", 1, 64, 1056, &args).unwrap_or_else(|e| panic!("{e}"));
    assert!(run.findings.is_empty(), "{:#?}", run.findings);
    let out: Vec<f32> = run.outputs[1]
        .chunks(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    for k in 0..tiles as usize {
        for j in 0..32 {
            let column = |r: usize| values[(4 * k + r) * 32 + j];
            let expected = column(0) + column(1) + column(2) + column(3);
            assert_eq!(out[k * 32 + j], expected, "tile {k}, column {j}");
        }
    }
}

#[test]
fn a_producer_that_skips_the_empty_wait_leaves_its_consumer_waiting_forever() {
    // Without its wait on the empty barriers the producer refills each
    // stage before the consumer has read it: every full barrier completes
    // two phases, its parity is back where it started, and the consumer's
    // wait for the first one never ends (as on the GPU, where the parity
    // cannot tell phase 0 from phase 2).
    let text = pipeline_kernel(4)
        .replace(
            "    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r16], %r13;\n",
            "",
        )
        .replace("    @!%p2 bra $L_wait_empty;\n", "");
    let (_, args) = pipeline_args(4);
    let error = run_kernel(&text, "k", 1, 64, 1056, &args).expect_err("a consumer left behind");
    let ExecError::Deadlock { waiting, .. } = &error else {
        panic!("{error}");
    };
    let line = line_of_prefix(&text, "mbarrier.try_wait.parity.acquire.cta");
    assert!(
        waiting.contains(&format!("thread 32 at line {line}")),
        "{error}"
    );
    assert!(waiting.contains("in its phase 2 (parity 0)"), "{error}");
}

#[test]
fn a_wait_on_a_phase_that_never_completes_is_a_deadlock() {
    // The barrier counts two arrivals; only thread 0 arrives.
    let body = "    mov.u32 %r1, %tid.x;
    mov.u32 %r2, smem;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_init;
    mbarrier.init.shared::cta.b64 [%r2], 2;
$L_init:
    bar.sync 0;
    @%p1 bra $L_wait;
    mbarrier.arrive.shared::cta.b64 %rd1, [%r2];
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], 0;
    @!%p2 bra $L_wait;";
    let text = module(&[".param .u64 out"], body);
    let error = run_kernel(&text, "k", 1, 64, 8, &[Arg::Buffer(vec![0; 4])])
        .expect_err("a phase one arrival short never completes");
    let ExecError::Deadlock {
        blocks, waiting, ..
    } = &error
    else {
        panic!("{error}");
    };
    assert_eq!(blocks, "0");
    let line = line_of(
        &text,
        "mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], 0;",
    );
    assert!(
        waiting.contains(&format!("thread 0 at line {line}")),
        "{error}"
    );
    assert!(waiting.contains("1 of 2 arrivals"), "{error}");
    assert!(waiting.contains("64 threads spin"), "{error}");
}

#[test]
fn mbarriers_used_against_their_rules_are_findings() {
    // Thread 0 expects 64 bytes but copies a 128-byte box, arrives twice
    // on a count of one; thread 32 arrives on a barrier thread 0 has just
    // initialised, with no bar.sync between; everyone waits on a barrier
    // nobody initialised.
    let body = "    mov.u32 %r1, %tid.x;
    mov.u32 %r2, smem;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_other;
    mbarrier.init.shared::cta.b64 [%r2+128], 1;
    mbarrier.init.shared::cta.b64 [%r2+136], 1;
    bar.sync 0;
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [%r2+128], 64;
    mbarrier.arrive.shared::cta.b64 %rd4, [%r2+128];
    mov.b64 %rd1, tmap0_A;
    cvta.param.u64 %rd2, %rd1;
    mov.u32 %r3, 0;
    add.u32 %r4, %r2, 128;
    cp.async.bulk.tensor.1d.shared::cta.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd2, {%r3}], [%r4];
    bra $L_end;
$L_other:
    setp.ne.u32 %p2, %r1, 32;
    @%p2 bra $L_sync;
    mbarrier.arrive.shared::cta.b64 _, [%r2+136];
$L_sync:
    bar.sync 0;
    mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r2+144], 0;
$L_end:";
    let text = module(&COPY_PARAMS, body);
    let args = [
        Arg::Buffer(vec![0; 128]),
        Arg::Buffer(vec![0; 4]),
        Arg::TensorMap(row_map()),
    ];
    let run = run_kernel(&text, "k", 1, 64, 152, &args).unwrap_or_else(|e| panic!("{e}"));
    let detail_at = |line: &str| -> String {
        let line = line_of(&text, line);
        let found: Vec<&Finding> = run.findings.iter().filter(|f| f.line == line).collect();
        assert_eq!(found.len(), 1, "line {line}: {:#?}", run.findings);
        let FindingKind::Mbarrier { detail, .. } = &found[0].kind else {
            panic!("{}", found[0]);
        };
        detail.clone()
    };
    let beyond = detail_at("mbarrier.arrive.shared::cta.b64 %rd4, [%r2+128];");
    assert!(beyond.contains("beyond its count of 1"), "{beyond}");
    let copy = line_of_prefix(&text, "cp.async.bulk.tensor.1d");
    let too_many = run
        .findings
        .iter()
        .find(|f| f.line == copy)
        .expect("a finding");
    assert_eq!(
        too_many.kind,
        FindingKind::Mbarrier {
            offset: 128,
            detail: "a tensor copy of 128 bytes completes 64 bytes more than its phase 0 \
                     expects (arrive.expect_tx must come first, with the box's bytes)"
                .to_string()
        }
    );
    let unsynced = detail_at("mbarrier.arrive.shared::cta.b64 _, [%r2+136];");
    assert!(
        unsynced.contains("initialised by thread 0 at line"),
        "{unsynced}"
    );
    let never = detail_at("mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r2+144], 0;");
    assert_eq!(never, "used before any mbarrier.init");
}

#[test]
fn setmaxnreg_takes_24_to_256_registers_in_eights() {
    let fine = module(
        &[],
        "    setmaxnreg.dec.sync.aligned.u32 40;\n    setmaxnreg.inc.sync.aligned.u32 232;",
    );
    let run = run_kernel(&fine, "k", 1, 64, 0, &[]).expect("runs");
    assert!(run.findings.is_empty(), "{:#?}", run.findings);
    for count in [20, 260, 100] {
        let text = module(
            &[],
            &format!("    setmaxnreg.inc.sync.aligned.u32 {count};"),
        );
        let error = run_kernel(&text, "k", 1, 32, 0, &[]).expect_err("a bad register count");
        let line = line_of(&text, &format!("setmaxnreg.inc.sync.aligned.u32 {count};"));
        assert!(
            matches!(&error, ExecError::Operands { line: l, .. } if *l == line),
            "{error}"
        );
        assert!(
            error.to_string().contains(&format!("{count} given")),
            "{error}"
        );
    }
}

#[test]
fn the_lowerings_forms_decode_and_others_do_not() {
    let text = module(
        &COPY_PARAMS,
        "    mov.b64 %rd5, tmap0_A;
    cvta.param.u64 %rd6, %rd5;
    mbarrier.init.shared::cta.b64 [%r10+128], 2;
    mbarrier.init.shared::cta.b64 [%r10+128], %r9;
    fence.mbarrier_init.release.cluster;
    fence.proxy.async.shared::cta;
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd7, [%r10+128], 32768;
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd7, [%r10+128], %r9;
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r11], [%rd6, {%r12, %r13}], [%r14];
    cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r11], [%rd6, {%r12, %r13, %r15, %r16, %r17}], [%r14];
    mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r14], %r15;
    mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p3, [%r14], 1;
    mbarrier.arrive.shared::cta.b64 %rd8, [%r14];
    mbarrier.arrive.release.cta.shared::cta.b64 %rd8, [%r14];
    setmaxnreg.inc.sync.aligned.u32 232;
    setmaxnreg.dec.sync.aligned.u32 40;",
    );
    assert_eq!(super::unknown_instructions(&text).expect("parses"), vec![]);
    let entry = &parse_module(&text).expect("parses")[0];
    assert_eq!(entry.params[2].bytes, 128);
    let ops: Vec<Op> = entry
        .body
        .iter()
        .map(|i| decode(i).expect("decodes"))
        .collect();
    assert!(matches!(ops[8], Op::TensorCopy { dims: 2 }));
    assert!(matches!(ops[9], Op::TensorCopy { dims: 5 }));
    assert!(matches!(ops[6], Op::MbarrierArrive { expect_tx: true }));
    assert!(matches!(ops[12], Op::MbarrierArrive { expect_tx: false }));
    let Operand::TensorCoords { map, coords } = &entry.body[8].operands[1] else {
        panic!("{:?}", entry.body[8].operands[1]);
    };
    assert!(matches!(**map, Operand::Reg(_)));
    assert_eq!(coords.len(), 2);

    let others = module(
        &[],
        "    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r1], [%rd1, {%r2, %r3}], [%r4], %rs5;
    cp.async.bulk.tensor.6d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4];
    mbarrier.try_wait.shared::cta.b64 %p1, [%r1], %rd2;
    mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r1];
    setmaxnreg.inc.u32 232;",
    );
    let unknown = super::unknown_instructions(&others).expect("parses");
    assert_eq!(unknown.len(), 5, "{unknown:#?}");
}

#[test]
fn tensor_maps_bind_to_128_byte_parameters_only_and_are_checked() {
    let text = copy_kernel(&[0, 0], 16384, 0, true);
    let buffers = || [Arg::Buffer(vec![0; 4]), Arg::Buffer(vec![0; 4])];
    let [a, out] = buffers();
    let misplaced = [Arg::TensorMap(fp16_map()), a, out];
    let error = run_kernel(&text, "k", 1, 32, 16392, &misplaced).expect_err("a map in a u64");
    assert!(
        error.to_string().contains("parameter `A` is 8 bytes wide"),
        "{error}"
    );
    let mut wide = fp16_map();
    wide.boxes = vec![128, 64];
    let [a, out] = buffers();
    let error = run_kernel(&text, "k", 1, 32, 16392, &[a, out, Arg::TensorMap(wide)])
        .expect_err("a box row wider than the swizzle");
    assert!(
        error
            .to_string()
            .contains("`tmap0_A` has a box row of 256 bytes, wider than its 128-byte swizzle"),
        "{error}"
    );
    let mut elsewhere = fp16_map();
    elsewhere.buffer = 2;
    let [a, out] = buffers();
    let error = run_kernel(
        &text,
        "k",
        1,
        32,
        16392,
        &[a, out, Arg::TensorMap(elsewhere)],
    )
    .expect_err("no third buffer");
    assert!(error.to_string().contains("names buffer 2 of 2"), "{error}");
}

#[test]
fn a_tensor_map_is_found_by_its_generic_address_or_its_name_only() {
    let args = || {
        [
            Arg::Buffer(halves(128 * 256)),
            Arg::Buffer(vec![0; 16384]),
            Arg::TensorMap(fp16_map()),
        ]
    };
    let text = copy_kernel(&[0, 0], 16384, 0, true);
    let by_name = text.replace("[%rd2, {", "[tmap0_A, {");
    assert_ne!(by_name, text);
    let run = run_kernel(&by_name, "k", 1, 32, 16392, &args()).expect("runs");
    assert!(run.findings.is_empty(), "{:#?}", run.findings);
    check_fp16_box(&run, 0, 0);
    // The param-space address, without cvta.param: no tensor map there.
    let param_space = text.replace("cvta.param.u64 %rd2, %rd1", "mov.b64 %rd2, %rd1");
    assert_ne!(param_space, text);
    let error = run_kernel(&param_space, "k", 1, 32, 16392, &args()).expect_err("no map");
    assert!(error.to_string().contains("cvta.param.u64"), "{error}");
}
