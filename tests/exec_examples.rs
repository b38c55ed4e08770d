//! Every example on the CPU executor of its PTX (`graphene::exec`), as
//! `ptxgen run --backend cpu --check FILE ARGS` runs it for each `// cpu:
//! ARGS` line of its header (the small size it names: `--kernel`, `--dim`,
//! `--define`, `--arch`, `--seed`): compiled, run once with the seeded fills
//! of `ptxgen run`, and checked against the reference of its contract —
//! with no finding (no out-of-bounds access, unwritten read, race or early
//! read). A Rust test rather than a loop over the binary in scripts/test.sh:
//! the harness counts and reports it, and the mutation tests below read the
//! findings as values. The same kernels also run with a `sync`, an
//! `async_wait` or an `mma_wait` removed, or an index shifted, and the
//! executor must then report the race, the early read or the wrong result.

use std::io::Write;
use std::path::PathBuf;

use graphene::compile::{self, Options};
use graphene::exec::FindingKind;
use graphene::launch::{CheckOutcome, CpuRun, DimArg, run_kernel_cpu, select};

fn say(line: &str) {
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

fn example(name: &str) -> String {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/examples")).join(name);
    std::fs::read_to_string(path).expect("readable example")
}

fn example_names() -> Vec<String> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/examples"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("examples/ exists")
        .map(|entry| {
            entry
                .expect("readable")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".gph"))
        .collect();
    names.sort();
    names
}

/// The arguments of one `// cpu:` line, as `ptxgen run` reads them.
#[derive(Debug, Default)]
struct CpuArgs {
    kernel: Option<String>,
    dims: Vec<DimArg>,
    options: Options,
    seed: u64,
}

impl CpuArgs {
    /// The run flags of a `// cpu:` or `// gpu:` line.
    fn parse(name: &str, line: &str) -> CpuArgs {
        let mut args = CpuArgs {
            seed: 1,
            ..CpuArgs::default()
        };
        let mut words = line.split_whitespace();
        while let Some(flag) = words.next() {
            let value = words
                .next()
                .unwrap_or_else(|| panic!("{name}: `// cpu: {line}`: {flag} has no value"));
            match flag {
                "--kernel" => args.kernel = Some(value.to_string()),
                "--dim" => args.dims.push(value.parse().expect("NAME=VALUE")),
                "--define" | "-D" => {
                    let (constant, number) = value.split_once('=').expect("NAME=VALUE");
                    let number = number.parse().expect("an integer");
                    args.options.defines.push((constant.to_string(), number));
                }
                "--arch" => args.options.arch = Some(value.parse().expect("an architecture")),
                "--seed" => args.seed = value.parse().expect("a seed"),
                other => panic!("{name}: `// cpu: {line}`: `{other}` is not a run flag"),
            }
        }
        args
    }
}

/// Each `// cpu:` line of the example's header (at least one).
fn cpu_lines(name: &str, text: &str) -> Vec<CpuArgs> {
    let lines: Vec<CpuArgs> = text
        .lines()
        .take_while(|line| line.starts_with("//") || line.trim().is_empty())
        .filter_map(|line| line.strip_prefix("// cpu:"))
        .map(|args| CpuArgs::parse(name, args))
        .collect();
    assert!(!lines.is_empty(), "{name}: no `// cpu:` line");
    assert!(
        !gpu_lines(name, text).is_empty(),
        "{name}: no `// gpu:` line (scripts/gpu-examples.sh)"
    );
    lines
}

/// Each `// gpu:` line of the example's header: the sizes
/// scripts/gpu-examples.sh checks on a GPU with fresh seeds.
fn gpu_lines(name: &str, text: &str) -> Vec<CpuArgs> {
    text.lines()
        .take_while(|line| line.starts_with("//") || line.trim().is_empty())
        .filter_map(|line| line.strip_prefix("// gpu:"))
        .map(|args| CpuArgs::parse(name, args))
        .collect()
}

/// A `// gpu:` line names sizes the GPU runs and the CPU does not: each
/// must compile and satisfy every launch requirement of the kernels it
/// selects, so that the GPU check never stops on a stale line.
#[test]
fn every_gpu_line_compiles_and_plans() {
    let mut lines = 0;
    for name in example_names() {
        let text = example(&name);
        for args in gpu_lines(&name, &text) {
            let compiled = compile::compile(&name, &text, &args.options)
                .unwrap_or_else(|d| panic!("{name}: does not compile: {d:?}"));
            let selected = select(&compiled, args.kernel.as_deref(), &args.dims)
                .unwrap_or_else(|e| panic!("{name} {args:?}: {e}"));
            assert!(!selected.is_empty(), "{name} {args:?}: no kernel");
            for one in &selected {
                assert!(
                    one.contract.is_ok(),
                    "{name} {}: no contract",
                    one.plan.kernel
                );
            }
            lines += 1;
        }
    }
    assert!(lines >= 10, "only {lines} `// gpu:` lines");
}

/// Compiles `text` and runs the kernels `args` selects on the CPU with
/// `--check`.
fn run_line(name: &str, text: &str, args: &CpuArgs) -> Vec<(String, CpuRun)> {
    let compiled = compile::compile(name, text, &args.options)
        .unwrap_or_else(|d| panic!("{name}: does not compile: {d:?}"));
    let selected = select(&compiled, args.kernel.as_deref(), &args.dims)
        .unwrap_or_else(|e| panic!("{name} {args:?}: {e}"));
    selected
        .iter()
        .map(|s| {
            let run = run_kernel_cpu(&compiled.text, &s.plan, &s.contract, args.seed, true)
                .unwrap_or_else(|e| panic!("{name} {}: {e}", s.plan.kernel));
            (s.plan.kernel.clone(), run)
        })
        .collect()
}

/// Every `// cpu:` line of the example `name`, run on `text` (the example
/// or a mutant of it).
fn run_all(name: &str, text: &str) -> Vec<(String, CpuRun)> {
    cpu_lines(name, &example(name))
        .iter()
        .flat_map(|args| run_line(name, text, args))
        .collect()
}

#[test]
fn every_example_passes_its_check_on_the_cpu() {
    let mut failures = Vec::new();
    for name in example_names() {
        for (kernel, run) in run_all(&name, &example(&name)) {
            say(&format!(
                "example {name}: {} ({} warp instructions)",
                run.line(),
                run.exec.warp_instructions,
            ));
            for line in run.detail_lines() {
                say(&line);
            }
            if !run.passed() {
                failures.push(format!("{name} {kernel}: {}", run.line()));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The GEMMs whose 16-bit C leaves through a padded shared tile
/// (docs/performance.md, "The epilogue through shared memory") keep every
/// shared-memory instruction free of bank conflicts — the fragment stores
/// into the tile and the row-wise copies out of it, beside the ring's
/// traffic — and still compute the product, at a size with partial tiles.
#[test]
fn the_staged_gemm_epilogues_are_free_of_bank_conflicts() {
    let cases = [
        ("gemm_f16_tma_sm90.gph", "gemm_f16_tma_sm90"),
        ("gemm_f16_sm90.gph", "gemm_f16_sm90_f16out"),
        ("gemm_bias_relu_tma_sm90.gph", "gemm_bias_relu_tma_sm90"),
        ("gemm_bias_relu_sm90.gph", "gemm_bias_relu_sm90"),
    ];
    for (name, kernel) in cases {
        let args = CpuArgs::parse(
            name,
            &format!("--kernel {kernel} --dim M=130 --dim N=260 --dim K=72"),
        );
        for (kernel, run) in run_line(name, &example(name), &args) {
            assert!(run.passed(), "{name} {kernel}: {}", run.line());
            let banks = &run.exec.banks;
            let staged = |op: &str| banks.iter().any(|b| b.instruction.starts_with(op));
            assert!(
                staged("st.shared.b32") && staged("ld.shared.v4"),
                "{name} {kernel}: no staged epilogue in {banks:#?}"
            );
            let conflicted: Vec<_> = banks.iter().filter(|b| b.worst > 1).collect();
            assert!(conflicted.is_empty(), "{name} {kernel}: {conflicted:#?}");
        }
    }
}

/// The paper's GEMM at its full 1024³ (170 million warp instructions).
#[test]
#[ignore = "minutes on the executor; run with --ignored"]
fn simple_gemm_at_its_full_size_passes_on_the_cpu() {
    let args = CpuArgs {
        seed: 1,
        ..CpuArgs::default()
    };
    for (kernel, run) in run_line("simple_gemm.gph", &example("simple_gemm.gph"), &args) {
        assert!(run.passed(), "{kernel}: {}", run.line());
    }
}

/// The source with the first line equal to `line` (trimmed) removed.
fn without(text: &str, line: &str) -> String {
    let mut removed = false;
    text.lines()
        .filter(|l| {
            let drop = !removed && l.trim() == line;
            removed |= drop;
            !drop
        })
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        .replace("\n\n\n", "\n\n")
}

/// The checker refuses a `.gph` whose `sync` is gone (E0285), so the
/// barrier is removed from the PTX: each kernel's `bar.sync` between the
/// staging stores and the `ldmatrix`.
#[test]
fn removing_a_sync_is_reported_as_a_race() {
    let name = "mma_ldmatrix_x2.gph";
    let text = example(name);
    let compiled = compile::compile(name, &text, &Options::default())
        .unwrap_or_else(|d| panic!("{name}: does not compile: {d:?}"));
    let ptx = compiled.text.replace("    bar.sync 0;\n", "");
    assert_ne!(ptx.len(), compiled.text.len(), "the PTX has a barrier");
    let mut kinds = Vec::new();
    for chosen in select(&compiled, None, &[]).expect("selects") {
        let run = run_kernel_cpu(&ptx, &chosen.plan, &chosen.contract, 1, true)
            .unwrap_or_else(|e| panic!("{e}"));
        kinds.extend(run.exec.findings.iter().map(|f| f.kind.clone()));
    }
    assert!(
        kinds.iter().any(|k| matches!(k, FindingKind::Race { .. })),
        "{kinds:?}"
    );
}

/// The checker refuses a `.gph` whose `async_wait(0)` is gone (E0286), so
/// the wait is removed from the PTX.
#[test]
fn removing_an_async_wait_is_reported_as_an_early_read() {
    let name = "async_swizzle_copy.gph";
    let compiled = compile::compile(name, &example(name), &Options::default())
        .unwrap_or_else(|d| panic!("{name}: does not compile: {d:?}"));
    let ptx = compiled.text.replace("    cp.async.wait_group 0;\n", "");
    assert_ne!(ptx.len(), compiled.text.len(), "the PTX waits");
    let chosen = select(&compiled, None, &[]).expect("selects");
    let run = run_kernel_cpu(&ptx, &chosen[0].plan, &chosen[0].contract, 1, true)
        .unwrap_or_else(|e| panic!("{e}"));
    let kinds: Vec<_> = run.exec.findings.iter().map(|f| f.kind.clone()).collect();
    assert!(
        kinds
            .iter()
            .any(|k| matches!(k, FindingKind::EarlyRead { .. })),
        "{kinds:?}"
    );
}

/// The checker refuses a `.gph` whose `mma_wait(0)` is gone (E0262), so
/// the wait is removed from the PTX: the first `wgmma.wait_group 0`, the
/// one before `gemm_f16_sm90`'s epilogue.
#[test]
fn removing_an_mma_wait_is_reported_as_an_early_read_of_the_accumulators() {
    let name = "gemm_f16_sm90.gph";
    let text = example(name);
    let args = &cpu_lines(name, &text)[0];
    let compiled = compile::compile(name, &text, &args.options)
        .unwrap_or_else(|d| panic!("{name}: does not compile: {d:?}"));
    let ptx = without(&compiled.text, "wgmma.wait_group.sync.aligned 0;");
    assert_ne!(ptx.len(), compiled.text.len(), "the PTX has the wait");
    // The line's batch size (L) is the batched kernel's, not this one's.
    let dims: Vec<DimArg> = args
        .dims
        .iter()
        .filter(|dim| dim.name != "L")
        .cloned()
        .collect();
    let selected = select(&compiled, Some("gemm_f16_sm90"), &dims).expect("selects");
    let run = run_kernel_cpu(&ptx, &selected[0].plan, &selected[0].contract, 1, true)
        .unwrap_or_else(|e| panic!("{e}"));
    let early = run
        .exec
        .findings
        .iter()
        .find(|f| matches!(f.kind, FindingKind::EarlyRead { .. }))
        .unwrap_or_else(|| panic!("no early read: {:#?}", run.exec.findings));
    // The epilogue reads an accumulator the wgmma may still be writing.
    assert!(early.kind.to_string().contains("wgmma"), "{early}");
    assert!(!run.passed());
    assert!(run.line().starts_with("FAIL"), "{}", run.line());
}

/// `text` with its one occurrence of `from` replaced by `to`.
fn replaced(text: &str, from: &str, to: &str) -> String {
    assert_eq!(text.matches(from).count(), 1, "`{from}` occurs once");
    text.replace(from, to)
}

/// The row each warp loads, one further on (wrapping at the end, so every
/// access stays in bounds): only the comparison can tell.
#[test]
fn shifting_a_load_index_is_a_wrong_result() {
    let text = example("warp_row_sum.gph");
    let shifted = replaced(
        &text,
        "[4 * @b + @w, @lane])",
        "[(4 * @b + @w + 1) % ROWS, @lane])",
    );
    let runs = run_all("warp_row_sum.gph", &shifted);
    let run = &runs[0].1;
    assert!(run.exec.findings.is_empty(), "{:?}", run.exec.findings);
    assert!(!run.report.passed(), "{}", run.line());
    assert!(run.line().starts_with("FAIL"), "{}", run.line());
}

/// Without its `grid_sync`, the MLP's blocks read activations that other
/// blocks have not written yet (the executor runs the blocks one after
/// another, as a GPU may): the output is wrong.
#[test]
fn removing_the_grid_sync_is_a_wrong_result() {
    let text = example("mlp.gph");
    let runs = run_all("mlp.gph", &without(&text, "grid_sync"));
    assert!(runs.iter().all(|(_, run)| !run.report.passed()));
    assert!(runs[0].1.line().starts_with("FAIL"), "{}", runs[0].1.line());
}

/// Every output of a kernel is compared, not only the first: the LSTM
/// cell storing tanh(C')·o (H', right) into C' fails on C' alone.
#[test]
fn a_wrong_second_output_is_a_wrong_result() {
    let text = example("lstm.gph");
    let wrong = replaced(
        &text,
        "%cnl[h, 0] <- Move<masked><<<#one, #me>>>(%c[h, 0])",
        "%cnl[h, 0] <- Move<masked><<<#one, #me>>>(%th[h, 0])",
    );
    let runs = run_all("lstm.gph", &wrong);
    let run = &runs[0].1;
    assert!(run.exec.findings.is_empty(), "{:?}", run.exec.findings);
    assert!(!run.report.passed(), "{}", run.line());
    let Some(CheckOutcome::Compared(comparisons)) = &run.report.check else {
        panic!("{}", run.line())
    };
    let verdicts: Vec<(&str, bool)> = comparisons
        .iter()
        .map(|c| (c.output.as_str(), c.passed()))
        .collect();
    assert_eq!(verdicts, [("%Hn", true), ("%Cn", false)], "{}", run.line());
}
