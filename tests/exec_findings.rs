//! What the CPU executor reports that a GPU cannot, on hand-written PTX
//! (the same text `tests/gpu/*.ptx` hands the driver, and small kernels
//! written to commit one fault each): every finding names its kind, its
//! thread and its instruction; with `--annotate` PTX, the `.gph` line.

use graphene::compile::{self, Options};
use graphene::exec::{self, Arg, ExecReport, Finding, FindingKind};
use graphene::launch::{DimArg, run_kernel_cpu, select};

const VECTOR_ADD: &str = include_str!("gpu/vector_add.ptx");
const REVERSE_THROUGH_SHARED: &str = include_str!("gpu/reverse_through_shared.ptx");

fn floats(values: impl Iterator<Item = f32>) -> Vec<u8> {
    values.flat_map(f32::to_le_bytes).collect()
}

fn as_floats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// The one finding of `kind`'s sort, or a panic listing what there was.
fn only(report: &ExecReport, is: impl Fn(&FindingKind) -> bool) -> &Finding {
    let found: Vec<&Finding> = report.findings.iter().filter(|f| is(&f.kind)).collect();
    assert_eq!(found.len(), 1, "{:#?}", report.findings);
    found[0]
}

/// The PTX line of `text` that holds `instruction` (1-based; the finding's
/// instruction text is the same without its `;`).
fn line_of(text: &str, instruction: &str) -> usize {
    1 + text
        .lines()
        .position(|l| l.trim() == instruction)
        .unwrap_or_else(|| panic!("no `{instruction}`"))
}

#[test]
fn the_hand_written_gpu_kernels_run_on_the_cpu() {
    let n = 300;
    let a = floats((0..n).map(|i| i as f32));
    let b = floats((0..n).map(|i| 0.5 * i as f32));
    let c = vec![0u8; 4 * n];
    let args = [
        Arg::Buffer(a),
        Arg::Buffer(b),
        Arg::Buffer(c),
        Arg::U32(n as u32),
    ];
    let run = exec::run_kernel(VECTOR_ADD, "vector_add", 2, 256, 0, &args).expect("runs");
    assert!(run.findings.is_empty(), "{:#?}", run.findings);
    let sums = as_floats(&run.outputs[2]);
    assert!(sums.iter().enumerate().all(|(i, &s)| s == 1.5 * i as f32));

    let count = 200;
    let src = floats((0..count).map(|i| i as f32));
    let args = [
        Arg::Buffer(src),
        Arg::Buffer(vec![0; 4 * count]),
        Arg::U32(count as u32),
    ];
    let run = exec::run_kernel(
        REVERSE_THROUGH_SHARED,
        "reverse_through_shared",
        1,
        256,
        4 * count as u32,
        &args,
    )
    .expect("runs");
    assert!(run.findings.is_empty(), "{:#?}", run.findings);
    let reversed = as_floats(&run.outputs[1]);
    assert!(
        reversed
            .iter()
            .enumerate()
            .all(|(i, &v)| v == (count - 1 - i) as f32)
    );
    // Both shared accesses are one word per lane, consecutive: no conflict.
    assert_eq!(run.banks.len(), 2);
    assert!(run.banks.iter().all(|b| b.worst == 1), "{:#?}", run.banks);
}

#[test]
fn a_store_past_its_buffer_is_a_global_out_of_bounds_finding() {
    // n = 256 but c holds 255 floats: thread 255 of block 0 writes past it.
    let args = [
        Arg::Buffer(vec![0; 4 * 256]),
        Arg::Buffer(vec![0; 4 * 256]),
        Arg::Buffer(vec![0; 4 * 255]),
        Arg::U32(256),
    ];
    let run = exec::run_kernel(VECTOR_ADD, "vector_add", 1, 256, 0, &args).expect("runs");
    let finding = only(&run, |k| matches!(k, FindingKind::GlobalOutOfBounds { .. }));
    assert_eq!((finding.block, finding.thread), (0, 255), "{finding}");
    assert_eq!(finding.instruction, "st.global.f32 [%rd10], %f3");
    assert_eq!(
        finding.line,
        line_of(VECTOR_ADD, "st.global.f32 [%rd10], %f3;")
    );
    assert_eq!(run.finding_total, 1);
}

#[test]
fn too_little_shared_memory_is_a_shared_out_of_bounds_finding() {
    // One float short: thread 0 stores src[0] at the last slot, past the end.
    let count = 64u32;
    let args = [
        Arg::Buffer(vec![0; 4 * count as usize]),
        Arg::Buffer(vec![0; 4 * count as usize]),
        Arg::U32(count),
    ];
    let shared = 4 * (count - 1);
    let run = exec::run_kernel(
        REVERSE_THROUGH_SHARED,
        "reverse_through_shared",
        1,
        64,
        shared,
        &args,
    )
    .expect("runs");
    // Thread 0 stores past the end; thread 63 later loads from there.
    let finding = run
        .findings
        .iter()
        .find(|f| f.instruction == "st.shared.f32 [%r8], %f1")
        .unwrap_or_else(|| panic!("no finding at the store: {:#?}", run.findings));
    assert_eq!(finding.thread, 0, "{finding}");
    assert_eq!(
        finding.line,
        line_of(REVERSE_THROUGH_SHARED, "st.shared.f32 [%r8], %f1;")
    );
    assert_eq!(
        finding.kind,
        FindingKind::SharedOutOfBounds {
            offset: u64::from(shared),
            bytes: 4,
            size: shared as usize,
        }
    );
}

/// A kernel of one block: `body` between the declarations and `ret`, with
/// `count` floats of dynamic shared memory at `%r4` and `%r2` the thread.
fn kernel(body: &str) -> String {
    format!(
        ".version 7.0\n.target sm_80\n.address_size 64\n\
         .extern .shared .align 16 .b8 staging[];\n\
         .visible .entry probe(\n    .param .u64 out\n)\n{{\n\
         .reg .pred %p<3>;\n.reg .b32 %r<10>;\n.reg .b64 %rd<4>;\n\
         ld.param.u64 %rd1, [out];\n\
         mov.u32 %r2, %tid.x;\n\
         mov.u32 %r4, staging;\n\
         {body}\n\
         ret;\n}}\n"
    )
}

fn probe(text: &str, threads: u32) -> ExecReport {
    exec::run_kernel(text, "probe", 1, threads, 256, &[Arg::Buffer(vec![0; 256])])
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn a_register_nothing_wrote_is_an_uninitialised_read() {
    let text = kernel("add.u32 %r6, %r5, 1;\nst.global.u32 [%rd1], %r6;");
    let run = probe(&text, 1);
    let finding = only(&run, |k| {
        matches!(k, FindingKind::UninitialisedRegister { .. })
    });
    assert_eq!(
        finding.kind,
        FindingKind::UninitialisedRegister {
            register: "%r5".to_string()
        }
    );
    assert_eq!(finding.instruction, "add.u32 %r6, %r5, 1");
    assert_eq!(finding.line, line_of(&text, "add.u32 %r6, %r5, 1;"));
}

#[test]
fn shared_memory_nothing_wrote_is_an_uninitialised_read() {
    // Thread t stores word t, then (after the barrier) reads word t + 1:
    // the last thread reads a word nobody stored.
    let text = kernel(
        "shl.b32 %r5, %r2, 2;\nadd.u32 %r6, %r4, %r5;\nst.shared.u32 [%r6], %r2;\n\
         bar.sync 0;\nld.shared.u32 %r7, [%r6+4];\nst.global.u32 [%rd1], %r7;",
    );
    let run = probe(&text, 32);
    let finding = only(&run, |k| {
        matches!(k, FindingKind::UninitialisedShared { .. })
    });
    assert_eq!(finding.thread, 31, "{finding}");
    assert_eq!(
        finding.kind,
        FindingKind::UninitialisedShared { offset: 128 }
    );
    assert_eq!(finding.instruction, "ld.shared.u32 %r7, [%r6+4]");
}

#[test]
fn two_threads_on_one_shared_word_without_a_barrier_race() {
    // The same reads without the barrier: thread t reads the word thread
    // t + 1 writes, in one epoch.
    let text = kernel(
        "shl.b32 %r5, %r2, 2;\nadd.u32 %r6, %r4, %r5;\nst.shared.u32 [%r6], %r2;\n\
         ld.shared.u32 %r7, [%r6+4];\nst.global.u32 [%rd1], %r7;",
    );
    let run = probe(&text, 64);
    let race = run
        .findings
        .iter()
        .find(|f| matches!(f.kind, FindingKind::Race { .. }))
        .unwrap_or_else(|| panic!("no race: {:#?}", run.findings));
    let FindingKind::Race { other_thread, .. } = &race.kind else {
        unreachable!("matched above");
    };
    // The neighbours touch one word: the pair is t and t + 1 (either way).
    assert_eq!(race.thread.abs_diff(*other_thread), 1, "{race}");
    assert!(race.instruction.starts_with("ld.shared") || race.instruction.starts_with("st.shared"));
}

/// A finding in annotated PTX names the `.gph` statement it came from: the
/// race of `mma_ldmatrix_x2` without its barrier (removed from the PTX, as
/// the checker refuses the source without its `sync`) points at the line of
/// the source whose text is the annotation's.
#[test]
fn with_annotate_a_finding_names_the_gph_line() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/mma_ldmatrix_x2.gph");
    let text = std::fs::read_to_string(path).expect("example");
    let options = Options {
        annotate: true,
        ..Options::default()
    };
    let compiled = compile::compile("mma_ldmatrix_x2.gph", &text, &options)
        .unwrap_or_else(|d| panic!("{d:?}"));
    let racy = compiled.text.replace("    bar.sync 0;\n", "");
    assert_ne!(racy.len(), compiled.text.len(), "the PTX has a barrier");
    let chosen = select(&compiled, Some("mma_b_col_major_x2"), &[]).expect("selects");
    let run = run_kernel_cpu(&racy, &chosen[0].plan, &chosen[0].contract, 1, true).expect("runs");
    let race = run
        .exec
        .findings
        .iter()
        .find(|f| matches!(f.kind, FindingKind::Race { .. }))
        .unwrap_or_else(|| panic!("no race: {:#?}", run.exec.findings));
    let source = race.source.as_deref().expect("an annotated finding");
    let (number, statement) = source
        .strip_prefix("line ")
        .and_then(|rest| rest.split_once(": "))
        .unwrap_or_else(|| panic!("`{source}` is `line N: statement`"));
    let number: usize = number.parse().expect("a line number");
    let gph_line = text.lines().nth(number - 1).expect("the line exists");
    assert_eq!(gph_line.trim(), statement.trim(), "{race}");
    assert!(run.line().starts_with("FAIL"), "{}", run.line());
    assert!(race.to_string().contains(&format!("(.gph line {number}:")));
}

/// A grid barrier runs with every block in flight at once: each block's
/// writes before `grid_sync` are read by another block after it. The same
/// PTX with the arrival (`atom`) removed leaves every block polling a
/// counter no block changes: the executor reports the deadlock instead of
/// spinning forever.
#[test]
fn a_grid_barrier_runs_every_block_and_a_missing_arrival_is_a_deadlock() {
    let source = "kernel shift {
        %x:[64, 4].fp32.GL
        %t:[64, 4].fp32.GL
        %y:[64, 4].fp32.GL
        #b:[4].block
        #t:[64].thread
        %y <- Spec<<<#b, #t>>>(%x) {
            @g = #b.indices()
            @i = #t.indices()
            #one:[].block = #b.scalar()
            #me:[].thread = #t.scalar()
            %v:[1].fp32.RF
            %v <- Move<<<#one, #me>>>(%x[@i, @g])
            %t[@i, @g] <- Move<<<#one, #me>>>(%v)
            grid_sync
            %w:[1].fp32.RF
            %w <- Move<<<#one, #me>>>(%t[@i, (@g + 1) % 4])
            %y[@i, @g] <- Move<<<#one, #me>>>(%w)
        }
    }";
    let compiled = compile::compile("shift.gph", source, &Options::default())
        .unwrap_or_else(|d| panic!("{d:?}"));
    assert!(
        compiled
            .text
            .contains(".global .align 4 .b8 shift_grid_barrier[4];")
    );
    let x: Vec<f32> = (0..256).map(|i| i as f32).collect();
    let args = || {
        [
            Arg::Buffer(floats(x.iter().copied())),
            Arg::Buffer(vec![0; 1024]),
            Arg::Buffer(vec![0; 1024]),
        ]
    };
    let run = exec::run_kernel(&compiled.text, "shift", 4, 64, 0, &args()).expect("runs");
    assert!(run.findings.is_empty(), "{:#?}", run.findings);
    let y = as_floats(&run.outputs[2]);
    for g in 0..4 {
        for i in 0..64 {
            assert_eq!(
                y[g * 64 + i],
                x[(g + 1) % 4 * 64 + i],
                "block {g}, thread {i}"
            );
        }
    }
    assert_eq!(run.outputs.len(), 3, "the counter is no output");

    let without_arrival: String = compiled
        .text
        .lines()
        .filter(|line| !line.trim_start().starts_with("atom."))
        .map(|line| format!("{line}\n"))
        .collect();
    let error = exec::run_kernel(&without_arrival, "shift", 4, 64, 0, &args())
        .expect_err("a barrier nobody arrives at never opens");
    assert!(matches!(error, exec::ExecError::Deadlock { .. }), "{error}");
    assert!(error.to_string().contains("blocks 0, 1, 2, 3"), "{error}");
}

/// `tests/kernels/gemm_f16_tma_sm90_pingpong.gph` at a size whose tiles
/// have more k-tiles than the ring has stages: with its `order` barriers
/// the two consumers take turns and C is right; without them the second
/// consumer's parity wait passes a phase early, and the executor reports
/// the deadlock its extra arrivals cause, naming the waiting barrier.
#[test]
fn consumers_that_do_not_take_turns_pass_a_parity_wait_early() {
    let name = "gemm_f16_tma_sm90_pingpong.gph";
    let text = include_str!("kernels/gemm_f16_tma_sm90_pingpong.gph");
    let dims: Vec<DimArg> = [("M", 256), ("N", 24), ("K", 256)]
        .into_iter()
        .map(|(name, value)| DimArg {
            name: name.into(),
            value,
        })
        .collect();
    let run = |ordered: i64| {
        let options = Options {
            defines: [("WM", 64), ("BN", 8), ("STAGES", 2), ("GRID", 1)]
                .into_iter()
                .map(|(name, value)| (name.to_string(), value))
                .chain([("ORDERED".to_string(), ordered)])
                .collect(),
            ..Options::default()
        };
        let compiled = compile::compile(name, text, &options).unwrap_or_else(|d| panic!("{d:?}"));
        let selected = select(&compiled, None, &dims).expect("selects");
        run_kernel_cpu(
            &compiled.text,
            &selected[0].plan,
            &selected[0].contract,
            1,
            true,
        )
    };
    let ordered = run(1).unwrap_or_else(|e| panic!("{e}"));
    assert!(ordered.passed(), "{}", ordered.line());
    let error = run(0)
        .expect_err("the unordered consumers deadlock")
        .to_string();
    assert!(error.contains("deadlocks"), "{error}");
    assert!(error.contains("mbarrier.try_wait.parity"), "{error}");
}

/// Every thread of every block adds 1 + its thread id into element
/// `tid % 4` of a 4-element buffer: `red.global.add.f32` by thread 0 and a
/// `red.global.add.v2.f32` by the others (element pair `tid % 2`), and one
/// thread reaches past the end (`bad`), which is reported and not written.
const RED: &str = ".version 8.1\n.target sm_90\n.address_size 64\n\
.visible .entry red(.param .u64 out, .param .u32 bad)\n{\n\
    .reg .pred %p<3>;\n    .reg .b32 %r<4>;\n    .reg .f32 %f<3>;\n    .reg .b64 %rd<4>;\n\
    ld.param.u64 %rd1, [out];\n    cvta.to.global.u64 %rd1, %rd1;\n\
    ld.param.u32 %r3, [bad];\n\
    mov.u32 %r1, %tid.x;\n    cvt.rn.f32.u32 %f1, %r1;\n    add.f32 %f1, %f1, 0f3F800000;\n\
    mov.f32 %f2, 0f3F800000;\n\
    setp.eq.u32 %p1, %r1, 0;\n\
    @%p1 red.global.add.f32 [%rd1], %f1;\n\
    and.b32 %r2, %r1, 1;\n    mul.wide.u32 %rd2, %r2, 8;\n    add.s64 %rd3, %rd1, %rd2;\n\
    @!%p1 red.global.add.v2.f32 [%rd3], {%f1, %f2};\n\
    setp.eq.u32 %p2, %r1, %r3;\n\
    @%p2 red.global.add.f32 [%rd1+16], %f1;\n\
    ret;\n}\n";

#[test]
fn accumulating_stores_add_from_every_block_and_stay_in_bounds() {
    let start = floats([10.0, 20.0, 30.0, 40.0].into_iter());
    let args = [Arg::Buffer(start), Arg::U32(5)];
    let report = exec::run_kernel(RED, "red", 2, 8, 0, &args).expect("runs");
    let sums = as_floats(&report.outputs[0]);
    // Per block: thread 0 adds 1 to element 0; odd threads (2, 4, 6, 8)
    // add into elements 2 and 3, even ones (3, 5, 7) into 0 and 1.
    let per_block = [1.0 + 15.0, 3.0, 20.0, 4.0];
    let expected: Vec<f32> = [10.0, 20.0, 30.0, 40.0]
        .iter()
        .zip(per_block)
        .map(|(start, add)| start + 2.0 * add)
        .collect();
    assert_eq!(sums, expected);
    let past = only(&report, |kind| {
        matches!(kind, FindingKind::GlobalOutOfBounds { .. })
    });
    assert_eq!(past.instruction, "@%p2 red.global.add.f32 [%rd1+16], %f1");
}

/// `bra.uni` promises that every lane of the warp agrees on the guard; a
/// guard that differs between lanes (here: the thread's parity) is an
/// error at the branch, and the same branch without `.uni` runs.
#[test]
fn a_uniform_branch_whose_lanes_disagree_is_divergent() {
    let body = |branch: &str| {
        format!(
            "and.b32 %r3, %r2, 1;\n\
             setp.eq.u32 %p1, %r3, 0;\n\
             @%p1 {branch} $L_skip;\n\
             st.global.u32 [%rd1], %r2;\n\
             $L_skip:"
        )
    };
    let uniform = kernel(&body("bra.uni"));
    match exec::run_kernel(&uniform, "probe", 1, 32, 256, &[Arg::Buffer(vec![0; 256])]) {
        Err(exec::ExecError::Divergent { line, message, .. }) => {
            assert_eq!(line, line_of(&uniform, "@%p1 bra.uni $L_skip;"));
            assert!(message.contains("16 of the 32 lanes"), "{message}");
        }
        other => panic!("expected a divergent bra.uni, got {other:?}"),
    }
    probe(&kernel(&body("bra")), 32);
    // Agreeing lanes: every thread's guard is the same.
    probe(
        &kernel(&body("bra.uni").replace("and.b32 %r3, %r2, 1", "and.b32 %r3, %r2, 0")),
        32,
    );
}
