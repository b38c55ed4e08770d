//! `run` and `bench` end to end on a GPU (feature `cuda`), with checked
//! kernels whose PTX is written by hand (`tests/gpu/*.ptx`), so that the
//! host side — plans, fills, poison, reference, comparison, timing — is
//! tested apart from the lowering. Without a driver or a device each test
//! writes `skipped: no CUDA device (<reason>)` to stderr and returns, after
//! checking that the commands fail with that reason in one line.
#![cfg(feature = "cuda")]

mod support;

use graphene::compile::{Compiled, Emit, Options, compile};
use graphene::launch::{Backend, BenchOptions, CommandError, RunOptions, bench_file, run_file};
use graphene::runtime::Gpu;

/// c[i] = a[i] + b[i] for i < n (f32), one thread per element.
const VECTOR_ADD: &str = include_str!("gpu/vector_add.ptx");
/// dst[i] = src[count-1-i] through `count` floats of dynamic shared memory.
const REVERSE_THROUGH_SHARED: &str = include_str!("gpu/reverse_through_shared.ptx");

/// The contract the hand-written vector add implements: the same ABI
/// (three pointers, then `N`), 256 threads per block.
const VECTOR_ADD_GPH: &str = "kernel vector_add {\n\
    %a:[N].fp32.GL\n\
    %b:[N].fp32.GL\n\
    %c:[N].fp32.GL\n\
    #blocks:[N/256].block\n\
    #threads:[256].thread\n\
    %c <- BinaryPointwise<add><<<#blocks, #threads>>>(%a, %b)\n\
    }\n";

/// The reversal has no built-in contract: a generic `Spec`, run unchecked.
const REVERSE_GPH: &str = "kernel reverse_through_shared {\n\
    %src:[COUNT].fp32.GL\n\
    %dst:[COUNT].fp32.GL\n\
    #one:[1].block\n\
    #threads:[256].thread\n\
    %dst <- Spec<<<#one, #threads>>>(%src) {}\n\
    }\n";

/// `gph` checked, paired with the hand-written `ptx` and its one kernel's
/// dynamic shared memory.
fn compiled(name: &str, gph: &str, ptx: &str, dynamic_shared_bytes: u32) -> Compiled {
    let checked = Options {
        emit: Emit::Ir,
        ..Options::default()
    };
    let mut compiled = compile(name, gph, &checked).unwrap_or_else(|d| panic!("{d:#?}"));
    compiled.emit = Emit::Ptx;
    compiled.text = ptx.to_string();
    compiled.kernels[0].dynamic_shared_bytes = dynamic_shared_bytes;
    compiled
}

fn run_options(dims: &[&str], check: bool) -> RunOptions {
    RunOptions {
        kernel: None,
        dims: dims.iter().map(|d| d.parse().unwrap()).collect(),
        seed: 7,
        check,
        backend: Backend::Gpu,
    }
}

/// True when this machine can run kernels; otherwise checks that `run`
/// says why in one line, writes the skip line and returns false.
fn device_or_skip(test: &str) -> bool {
    let error = match Gpu::new() {
        Ok(_) => return true,
        Err(error) if error.is_unavailable() => error,
        Err(error) => panic!("{test}: {error}"),
    };
    let file = compiled("add.gph", VECTOR_ADD_GPH, VECTOR_ADD, 0);
    let mut out = Vec::new();
    let refused = run_file(&file, &run_options(&["N=1024"], true), &mut out).unwrap_err();
    assert!(matches!(refused, CommandError::Device(_)), "{refused}");
    let text = refused.to_string();
    assert!(text.starts_with("no CUDA"), "{text}");
    assert!(!text.contains('\n'), "one line: {text}");
    assert!(out.is_empty(), "nothing printed before the failure");
    support::skip::skip("no CUDA device", &error.to_string());
    false
}

fn run_text(file: &Compiled, options: &RunOptions) -> (bool, String) {
    let mut out = Vec::new();
    let passed = run_file(file, options, &mut out).unwrap_or_else(|e| panic!("{e}"));
    (passed, String::from_utf8(out).unwrap())
}

#[test]
fn a_correct_kernel_passes_its_check_with_figures() {
    if !device_or_skip("run_pass") {
        return;
    }
    let file = compiled("add.gph", VECTOR_ADD_GPH, VECTOR_ADD, 0);
    let (passed, text) = run_text(&file, &run_options(&["N=65536"], true));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("# device: "), "{text}");
    assert!(passed, "{text}");
    assert!(
        lines[1].starts_with("PASS  vector_add N=65536  <<<256, 256, 0 B>>>  "),
        "{text}"
    );
    // fp32 adds of values on the 2^-23 grid are exact: no error at all.
    assert!(
        lines[1].contains("rel err 0.000e0 (tol 1e-5: fp32 arithmetic)"),
        "{text}"
    );
    assert!(lines[1].contains("unwritten 0/65536, NaN/inf 0"), "{text}");
}

#[test]
fn unwritten_and_wrong_outputs_fail_the_check() {
    if !device_or_skip("run_fail") {
        return;
    }
    // Only the first half of the elements is written.
    let half = VECTOR_ADD.replace(
        "ld.param.u32 %r1, [n];",
        "ld.param.u32 %r1, [n];\n    shr.u32 %r1, %r1, 1;",
    );
    assert_ne!(half, VECTOR_ADD);
    let file = compiled("add.gph", VECTOR_ADD_GPH, &half, 0);
    let (passed, text) = run_text(&file, &run_options(&["N=1024"], true));
    assert!(!passed, "{text}");
    let line = text.lines().nth(1).unwrap();
    assert!(line.starts_with("FAIL  vector_add N=1024"), "{line}");
    assert!(line.contains("unwritten 512/1024"), "{line}");
    assert!(
        line.contains("first unwritten: element 512 (%c[512])"),
        "{line}"
    );

    // Subtracting instead of adding writes everything, wrongly.
    let sub = VECTOR_ADD.replace("add.rn.f32 %f3, %f1, %f2;", "sub.rn.f32 %f3, %f1, %f2;");
    assert_ne!(sub, VECTOR_ADD);
    let file = compiled("add.gph", VECTOR_ADD_GPH, &sub, 0);
    let (passed, text) = run_text(&file, &run_options(&["N=1024"], true));
    assert!(!passed, "{text}");
    assert!(text.contains("unwritten 0/1024"), "{text}");
    assert!(text.contains("; worst: element "), "{text}");

    // Without --check the same kernel only runs.
    let (passed, text) = run_text(&file, &run_options(&["N=1024"], false));
    assert!(passed, "{text}");
    assert!(text.contains("RAN   vector_add"), "{text}");
}

#[test]
fn dynamic_shared_memory_reaches_the_launch_and_unchecked_kinds_say_so() {
    if !device_or_skip("run_shared") {
        return;
    }
    let count = 20 * 1024; // 80 KiB of f32, above the 48 KiB default
    let file = compiled("rev.gph", REVERSE_GPH, REVERSE_THROUGH_SHARED, count * 4);
    let dim = format!("COUNT={count}");
    let (passed, text) = run_text(&file, &run_options(&[&dim], false));
    assert!(passed, "{text}");
    assert!(text.contains("<<<1, 256, 80 KiB>>>"), "{text}");
    let (passed, text) = run_text(&file, &run_options(&[&dim], true));
    assert!(!passed, "a generic Spec cannot pass a check: {text}");
    assert!(text.contains("has no contract to check"), "{text}");
}

#[test]
fn bench_prints_stable_figures_and_json_rows() {
    if !device_or_skip("bench") {
        return;
    }
    let file = compiled("add.gph", VECTOR_ADD_GPH, VECTOR_ADD, 0);
    let options = |json: bool| BenchOptions {
        kernel: None,
        dims: vec!["N=4194304".parse().unwrap()],
        reps: 50,
        warmup: 5,
        json,
        seed: 1,
    };
    let mut out = Vec::new();
    let mut log = Vec::new();
    bench_file(&file, &options(false), &mut out, &mut log).unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8(out).unwrap();
    let line = text.lines().nth(1).unwrap_or_default();
    assert!(
        line.starts_with("vector_add N=4194304  <<<16384, 256, 0 B>>>  median "),
        "{text}"
    );
    // 48 MiB a set: 5 sets make the rotation exceed 256 MiB.
    assert!(
        line.contains("(50 runs, 5 input sets)") && line.ends_with(" GB/s"),
        "{text}"
    );

    let mut out = Vec::new();
    bench_file(&file, &options(true), &mut out, &mut log).unwrap_or_else(|e| panic!("{e}"));
    let json = String::from_utf8(out).unwrap();
    assert!(
        json.starts_with(
            "[\n  {\"kernel\": \"vector_add\", \"dims\": {\"N\": 4194304}, \"m\": null"
        ),
        "{json}"
    );
    assert!(json.contains("\"gbps\": "), "{json}");
    assert!(String::from_utf8(log).unwrap().starts_with("# device: "));
}

#[test]
fn host_side_errors_come_before_the_launch() {
    if !device_or_skip("run_errors") {
        return;
    }
    let file = compiled("add.gph", VECTOR_ADD_GPH, VECTOR_ADD, 0);
    let mut out = Vec::new();
    let error = run_file(&file, &run_options(&["N=1000"], true), &mut out).unwrap_err();
    assert_eq!(
        error.to_string(),
        "kernel `vector_add`: N = 1000 is not a multiple of 256 (required by `N/256` at add.gph:5:10)"
    );
    assert!(out.is_empty(), "no device line before a host-side error");
    let broken = VECTOR_ADD.replace("add.rn.f32 %f3, %f1, %f2;", "add.rn.f32 %f3, %f1, %f9;");
    let file = compiled("add.gph", VECTOR_ADD_GPH, &broken, 0);
    let error = run_file(&file, &run_options(&["N=1024"], true), &mut out).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("add.gph: PTX JIT compilation failed: CUDA_ERROR_INVALID_PTX"),
        "{error}"
    );
}

/// Set in the child process that provokes a fault: a sticky error ruins the
/// context for every test sharing the process.
const FAULT_CHILD: &str = "GRAPHENE_RUN_FAULT_CHILD";

#[test]
fn a_faulting_kernel_is_named_with_its_launch() {
    if std::env::var_os(FAULT_CHILD).is_some() {
        // Stores to address 16: an illegal address.
        let wild = VECTOR_ADD.replace("cvta.to.global.u64 %rd6, %rd3;", "mov.u64 %rd6, 16;");
        let file = compiled("add.gph", VECTOR_ADD_GPH, &wild, 0);
        let error = run_file(&file, &run_options(&["N=1024"], true), &mut Vec::new()).unwrap_err();
        println!("fault: {error}");
        return;
    }
    if !device_or_skip("run_fault") {
        return;
    }
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_faulting_kernel_is_named_with_its_launch",
            "--nocapture",
        ])
        .env(FAULT_CHILD, "1")
        .output()
        .expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report = stdout
        .lines()
        .find(|l| l.starts_with("fault: "))
        .unwrap_or_else(|| panic!("no fault line:\n{stdout}"));
    assert!(
        report.starts_with(
            "fault: kernel `vector_add` <<<grid (4,1,1), block (256,1,1), dynamic shared 0 B>>>: "
        ),
        "{report}"
    );
    assert!(report.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{report}");
}
