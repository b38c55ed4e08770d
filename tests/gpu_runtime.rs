//! GPU tests of the runtime (feature `cuda`): load hand-written PTX, launch,
//! check results. Without a driver or device each test writes
//! `skipped: no CUDA device (<reason>) [<test>]` to stderr (`support::skip`:
//! past the harness's output capture, so `scripts/test.sh` counts it) and returns: the harness
//! has no skip status, and a skip must never read as a silent pass.
#![cfg(feature = "cuda")]

mod support;

use std::io::Write;

use graphene::runtime::{
    self, ElementType, Gpu, KernelArg, LaunchConfig, RuntimeError, from_bytes, random_vec,
};

/// c[i] = a[i] + b[i] for i < n (f32), one thread per element.
const VECTOR_ADD: &str = include_str!("gpu/vector_add.ptx");
/// dst[i] = src[count-1-i] through `count` floats of dynamic shared memory.
const REVERSE_THROUGH_SHARED: &str = include_str!("gpu/reverse_through_shared.ptx");

/// The GPU, or `None` after writing the skip line when this machine has no
/// driver or no device. Any other failure is a test failure.
fn gpu_or_skip(test: &str) -> Option<Gpu> {
    match Gpu::new() {
        Ok(gpu) => Some(gpu),
        Err(error) if error.is_unavailable() => {
            support::skip::skip("no CUDA device", &error.to_string());
            None
        }
        Err(error) => panic!("{test}: {error}"),
    }
}

#[test]
fn probe_describes_the_device_or_says_why_not_in_one_line() {
    match runtime::probe() {
        Ok(info) => {
            assert!(!info.name.is_empty() && info.sm_count > 0, "{info}");
            assert!(info.compute_capability >= (5, 0), "{info}");
            assert!(info.max_shared_per_block_optin >= 48 * 1024, "{info}");
            let library = info
                .driver_library
                .as_deref()
                .expect("the driver is mapped");
            assert!(!runtime::is_project_stub(library), "{info}");
            let _ = writeln!(std::io::stderr(), "device: {info}");
        }
        Err(error) => {
            let text = error.to_string();
            assert!(
                error.is_unavailable(),
                "a machine without a GPU must say so: {text}"
            );
            assert!(!text.contains('\n'), "one line: {text}");
            if runtime::driver_library().is_some_and(|path| runtime::is_project_stub(&path)) {
                assert!(matches!(error, RuntimeError::NoDriver { .. }), "{text}");
                assert!(
                    text.starts_with(
                        "no CUDA driver: libcuda.so.1 resolved to this project's link stub"
                    ),
                    "{text}"
                );
            }
            gpu_or_skip("probe");
        }
    }
}

#[test]
fn vector_add_matches_the_host_sum_and_leaves_the_tail_unwritten() {
    let Some(gpu) = gpu_or_skip("vector_add") else {
        return;
    };
    let n = 1000; // not a multiple of the block: the bound check matters
    let tail = 24;
    let a = random_vec::<f32>(n, 1);
    let b = random_vec::<f32>(n, 2);
    let module = gpu.load_module(VECTOR_ADD).expect("vector add loads");
    let kernel = module.kernel("vector_add").expect("entry exists");
    let a_dev = gpu.upload_elements(&a).unwrap();
    let b_dev = gpu.upload_elements(&b).unwrap();
    let mut c_dev = gpu.alloc((n + tail) * 4).unwrap();
    c_dev.fill_poison(ElementType::F32).unwrap();
    let config = LaunchConfig::linear((n as u32).div_ceil(256), 256);
    let args = [
        a_dev.arg(),
        b_dev.arg(),
        c_dev.arg(),
        KernelArg::U32(n as u32),
    ];
    kernel
        .launch(&config, &args)
        .unwrap_or_else(|e| panic!("{e}"));

    let bytes = c_dev.to_host().unwrap();
    let (body, rest) = bytes.split_at(n * 4);
    assert_eq!(
        ElementType::F32.count_poison(body).unwrap(),
        0,
        "every output written"
    );
    assert_eq!(
        ElementType::F32.count_poison(rest).unwrap(),
        tail,
        "nothing past n written"
    );
    let c: Vec<f32> = from_bytes(body).unwrap();
    for i in 0..n {
        // Inputs on the 2^-23 grid add exactly in f32, on either side.
        assert_eq!(c[i].to_bits(), (a[i] + b[i]).to_bits(), "element {i}");
    }
}

#[test]
fn dynamic_shared_memory_above_48_kib_is_opted_into() {
    let Some(gpu) = gpu_or_skip("dynamic_shared") else {
        return;
    };
    let count = 20 * 1024; // 80 KiB of f32: above 48 KiB, within sm_70's 96 KiB
    let shared_bytes = (count * 4) as u32;
    let source = random_vec::<f32>(count, 3);
    let module = gpu
        .load_module(REVERSE_THROUGH_SHARED)
        .expect("module loads");
    let kernel = module.kernel("reverse_through_shared").unwrap();
    let src = gpu.upload_elements(&source).unwrap();
    let mut dst = gpu.alloc(count * 4).unwrap();
    dst.fill_poison(ElementType::F32).unwrap();
    let config = LaunchConfig::linear(1, 256).with_dynamic_shared(shared_bytes);
    let args = [src.arg(), dst.arg(), KernelArg::U32(count as u32)];
    kernel
        .launch(&config, &args)
        .unwrap_or_else(|e| panic!("{e}"));
    let reversed: Vec<f32> = dst.read().unwrap();
    let expected: Vec<f32> = source.iter().rev().copied().collect();
    assert_eq!(reversed, expected);
}

#[test]
fn shared_memory_beyond_the_device_is_refused_before_launch() {
    let Some(gpu) = gpu_or_skip("shared_too_large") else {
        return;
    };
    let module = gpu.load_module(REVERSE_THROUGH_SHARED).unwrap();
    let kernel = module.kernel("reverse_through_shared").unwrap();
    let too_much = gpu.info().max_shared_per_block_optin + 1024;
    let config = LaunchConfig::linear(1, 256).with_dynamic_shared(too_much);
    let error = kernel
        .launch(
            &config,
            &[
                KernelArg::Pointer(0),
                KernelArg::Pointer(0),
                KernelArg::U32(0),
            ],
        )
        .unwrap_err();
    assert!(matches!(error, RuntimeError::Config { .. }), "{error}");
    assert!(
        error.to_string().contains("of shared memory per block"),
        "{error}"
    );
}

#[test]
fn malformed_ptx_fails_with_the_jit_error_log() {
    let Some(gpu) = gpu_or_skip("malformed_ptx") else {
        return;
    };
    // An undeclared register: the JIT's ptxas reports it with a line number.
    let broken = VECTOR_ADD.replace("add.rn.f32 %f3, %f1, %f2;", "add.rn.f32 %f3, %f1, %f9;");
    assert_ne!(broken, VECTOR_ADD, "the edit must apply");
    let error = gpu.load_module(&broken).unwrap_err();
    let RuntimeError::Jit {
        code, error_log, ..
    } = &error
    else {
        panic!("expected a JIT error, got: {error}");
    };
    assert_eq!(code.name, "CUDA_ERROR_INVALID_PTX", "{error}");
    assert!(
        error_log.contains("%f9"),
        "the log names the culprit: {error}"
    );
    assert!(
        error
            .to_string()
            .contains(error_log.lines().next().unwrap()),
        "{error}"
    );
}

#[test]
fn unknown_kernels_and_wrong_arguments_are_named() {
    let Some(gpu) = gpu_or_skip("names") else {
        return;
    };
    let module = gpu.load_module(VECTOR_ADD).unwrap();
    let error = module
        .launch("vector_sub", &LaunchConfig::linear(1, 32), &[])
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "kernel `vector_sub` is not in the module (its entries: vector_add)"
    );
    let kernel = module.kernel("vector_add").unwrap();
    let error = kernel
        .launch(
            &LaunchConfig::linear(1, 32),
            &[KernelArg::Pointer(0), KernelArg::U32(1)],
        )
        .unwrap_err();
    assert!(matches!(error, RuntimeError::Arguments { .. }), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("kernel `vector_add`: takes 4 parameters"),
        "{error}"
    );
}

#[test]
fn timing_gives_one_positive_time_per_repetition() {
    let Some(gpu) = gpu_or_skip("timing") else {
        return;
    };
    let n = 1 << 20;
    let module = gpu.load_module(VECTOR_ADD).unwrap();
    let kernel = module.kernel("vector_add").unwrap();
    let a = gpu.upload(&ElementType::F32.random_bytes(n, 4)).unwrap();
    let b = gpu.upload(&ElementType::F32.random_bytes(n, 5)).unwrap();
    let c = gpu.alloc(n * 4).unwrap();
    let config = LaunchConfig::linear((n as u32).div_ceil(256), 256);
    let args = [a.arg(), b.arg(), c.arg(), KernelArg::U32(n as u32)];
    let times = gpu
        .time_launches(2, 5, || kernel.launch_async(&config, &args))
        .unwrap();
    assert_eq!(times.len(), 5);
    assert!(times.iter().all(|&ms| ms > 0.0 && ms < 1000.0), "{times:?}");
}

/// Set in the child process that provokes a fault: a sticky error ruins the
/// context for every test sharing the process.
const FAULT_CHILD: &str = "GRAPHENE_GPU_FAULT_CHILD";

#[test]
fn illegal_address_is_reported_against_the_kernel() {
    if std::env::var_os(FAULT_CHILD).is_some() {
        provoke_illegal_address();
        return;
    }
    if gpu_or_skip("illegal_address").is_none() {
        return;
    }
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "illegal_address_is_reported_against_the_kernel",
            "--nocapture",
        ])
        .env(FAULT_CHILD, "1")
        .output()
        .expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report = stdout
        .lines()
        .find(|l| l.starts_with("fault: "))
        .unwrap_or_else(|| {
            panic!(
                "child printed no fault line:\n{stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    // The driver's description sits between the name and the sticky note.
    let expected_start = "fault: kernel `vector_add` <<<grid (1,1,1), block (32,1,1), dynamic \
                          shared 0 B>>>: cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)";
    assert!(report.starts_with(expected_start), "{report}");
    assert!(
        report.ends_with("[sticky: the context is unusable from here on]"),
        "{report}"
    );
}

fn provoke_illegal_address() {
    let gpu = Gpu::new().expect("the parent saw a GPU");
    let module = gpu.load_module(VECTOR_ADD).unwrap();
    let kernel = module.kernel("vector_add").unwrap();
    let nowhere = KernelArg::Pointer(0x10);
    let error = kernel
        .launch(
            &LaunchConfig::linear(1, 32),
            &[nowhere, nowhere, nowhere, KernelArg::U32(32)],
        )
        .unwrap_err();
    println!("fault: {error}");
}
