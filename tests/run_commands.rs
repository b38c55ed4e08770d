//! `run` and `bench` up to the GPU, on any machine: every host-side check
//! (kernel choice, `--dim` values, launch requirements) happens before the
//! device is touched and fails with one line; past them, a build without
//! the `cuda` feature, or a machine without a GPU, says so in one line.

use graphene::compile::{Compiled, Emit, Options, compile};
use graphene::launch::{
    Backend, BenchOptions, CommandError, Role, RunOptions, Work, bench_file, run_file, select,
};

const GEMM: &str = "const BM = 128\n\
kernel gemm {\n\
    %a:[M, K : K, 1].fp16.GL\n\
    %b:[K, N : 1, K].fp16.GL\n\
    %c:[M, N : N, 1].fp32.GL\n\
    #blocks:[M/BM, N/BM].block\n\
    #threads:[256].thread\n\
    %c <- MatMul<<<#blocks, #threads>>>(%a, %b)\n\
}\n\
kernel zero {\n\
    %z:[M].fp32.GL\n\
    #blocks:[M/256].block\n\
    #threads:[256].thread\n\
    %z <- Init<0.0><<<#blocks, #threads>>>()\n\
}\n";

/// The file checked, not lowered (its MatMul has no body to lower), with
/// the GEMM's dynamic shared memory given by hand.
fn compiled() -> Compiled {
    let checked = Options {
        emit: Emit::Ir,
        ..Options::default()
    };
    let mut compiled = compile("gemm.gph", GEMM, &checked).unwrap_or_else(|d| panic!("{d:#?}"));
    compiled.kernels[0].dynamic_shared_bytes = 98304;
    compiled
}

fn run(dims: &[&str], kernel: Option<&str>) -> Result<bool, CommandError> {
    let options = RunOptions {
        kernel: kernel.map(str::to_string),
        dims: dims.iter().map(|d| d.parse().unwrap()).collect(),
        seed: 1,
        check: true,
        backend: Backend::Gpu,
    };
    let mut out = Vec::new();
    let result = run_file(&compiled(), &options, &mut out);
    if result.is_err() {
        assert!(out.is_empty(), "nothing printed before a failure");
    }
    result
}

#[test]
fn plans_of_a_file_cover_every_kernel() {
    let file = compiled();
    let dims: Vec<_> = ["M=4096", "N=2048", "K=512"]
        .iter()
        .map(|d| d.parse().unwrap())
        .collect();
    let selected = select(&file, None, &dims).unwrap();
    let gemm = &selected[0].plan;
    assert_eq!(
        (gemm.grid, gemm.block, gemm.dynamic_shared_bytes),
        (512, 256, 98304)
    );
    assert_eq!(gemm.config_text(), "<<<512, 256, 96 KiB>>>");
    assert_eq!(gemm.dims_text(), "M=4096 K=512 N=2048");
    let roles: Vec<Role> = gemm.params.iter().map(|p| p.role).collect();
    assert_eq!(roles, [Role::Input, Role::Input, Role::InOut]);
    assert!(matches!(gemm.work, Work::MatMul(s) if (s.m, s.n, s.k) == (4096, 2048, 512)));
    let zero = &selected[1].plan;
    assert_eq!((zero.grid, zero.work), (16, Work::Bytes(4096 * 4)));
}

#[test]
fn host_side_errors_come_first_and_in_one_line() {
    let cases: [(&[&str], Option<&str>, &str); 4] = [
        (
            &["M=4096", "N=2048"],
            None,
            "kernel `gemm` needs `--dim` values for K (its symbolic dimensions: M, K, N)",
        ),
        (
            &["M=1000", "N=2048", "K=64"],
            None,
            "kernel `gemm`: M = 1000 is not a multiple of 128 (required by `M/BM` at gemm.gph:6:10)",
        ),
        (
            &["M=256", "N=256", "K=64"],
            Some("zero"),
            "`--dim N` names no symbolic dimension of the kernels run (`zero` has M)",
        ),
        (
            &["M=256"],
            Some("gem"),
            "`--kernel gem`: gemm.gph has no such kernel (its kernels: gemm, zero)",
        ),
    ];
    for (dims, kernel, message) in cases {
        let error = run(dims, kernel).unwrap_err();
        assert_eq!(error.to_string(), message);
    }
}

#[test]
fn past_the_host_checks_a_machine_without_a_gpu_says_why() {
    let error = run(&["M=256"], Some("zero")).unwrap_err();
    let text = error.to_string();
    assert!(!text.contains('\n'), "one line: {text}");
    if cfg!(feature = "cuda") {
        // A GPU machine runs the (empty) PTX and fails to find the entry.
        assert!(matches!(error, CommandError::Device(_)), "{text}");
    } else {
        assert_eq!(error, CommandError::NoCudaFeature);
        assert!(text.contains("--features cuda"), "{text}");
    }
    let options = BenchOptions {
        kernel: Some("zero".into()),
        dims: vec!["M=256".parse().unwrap()],
        reps: 10,
        warmup: 1,
        json: true,
        seed: 1,
    };
    let error = bench_file(&compiled(), &options, &mut Vec::new(), &mut Vec::new()).unwrap_err();
    assert!(
        matches!(error, CommandError::Device(_) | CommandError::NoCudaFeature),
        "{error}"
    );
}

#[test]
fn every_example_compiles_plans_and_has_a_contract() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "gph"))
        .collect();
    paths.sort();
    for path in paths {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let compiled =
            compile(&name, &text, &Options::default()).unwrap_or_else(|d| panic!("{name}: {d:#?}"));
        // The values tests/gpu_examples.rs gives: 256 suits every example. Kernels
        // of one file may share dim names (the GEMM's two kernels both have M, N, K).
        let mut names: Vec<_> = compiled
            .program
            .kernels
            .iter()
            .flat_map(|k| k.dims.iter().map(|d| d.name.clone()))
            .collect();
        names.sort();
        names.dedup();
        let dims: Vec<_> = names
            .iter()
            .map(|name| format!("{name}=256").parse().unwrap())
            .collect();
        let selected = select(&compiled, None, &dims).unwrap_or_else(|e| panic!("{name}: {e}"));
        for one in &selected {
            let contract = one
                .contract
                .as_ref()
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(contract.outputs.iter().all(|output| output.elements() > 0));
            assert!(
                compiled
                    .text
                    .contains(&format!(".entry {}(", one.plan.kernel)),
                "{name}"
            );
        }
    }
}

/// A leading dimension shorter than the row it leads would let two rows
/// share elements: the launch is refused with the declaration's place
/// (docs/language.md, "Types").
#[test]
fn a_leading_dimension_shorter_than_its_row_is_refused_before_launching() {
    let source = "kernel pad {\n    %s:[R, N : N, 1].fp16.GL\n    %d:[R, N : LD, 1].fp16.GL\n    #blocks:[R].block\n    #threads:[32].thread\n    %d <- Move<<<#blocks, #threads>>>(%s)\n}\n";
    let checked = Options {
        emit: Emit::Ir,
        ..Options::default()
    };
    let compiled = compile("pad.gph", source, &checked).unwrap_or_else(|d| panic!("{d:#?}"));
    let options = |ld: &str| RunOptions {
        kernel: None,
        dims: ["R=5", "N=300", ld]
            .iter()
            .map(|d| d.parse().unwrap())
            .collect(),
        seed: 1,
        check: true,
        backend: Backend::Gpu,
    };
    let error = run_file(&compiled, &options("LD=296"), &mut Vec::new()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "kernel `pad`: LD + 1 - N = -3 is not at least 1 (required by `[R, N : LD, 1]` at pad.gph:3:8)"
    );
    // A row stride that is at least the row's length passes the host checks.
    let passed = run_file(&compiled, &options("LD=304"), &mut Vec::new());
    assert!(
        !matches!(&passed, Err(e) if e.to_string().contains("not at least 1")),
        "{passed:?}"
    );
}
