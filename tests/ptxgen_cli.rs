//! `ptxgen` as a build system calls it: files in, one `.ptx` per file out,
//! exit status 0 / 1 / 2, JSON lines on request, the same bytes whatever the
//! number of parallel jobs.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ptxgen(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptxgen"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .output()
        .expect("ptxgen runs")
}

fn examples() -> Vec<String> {
    support::examples::paths()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn path_arg(path: &Path) -> String {
    format!("{}/", path.display())
}

#[test]
fn every_example_compiles_to_one_ptx_file() {
    let out = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = examples();
    args.extend(["-o".into(), path_arg(out.path())]);
    let output = ptxgen(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    for example in examples() {
        let stem = Path::new(&example).file_stem().unwrap().to_owned();
        let ptx = out.path().join(PathBuf::from(stem).with_extension("ptx"));
        let text = std::fs::read_to_string(&ptx).unwrap_or_else(|_| panic!("no {ptx:?}"));
        assert!(text.contains(".visible .entry"), "{ptx:?}");
    }
}

#[test]
fn parallel_and_serial_runs_write_the_same_bytes() {
    let (one, many) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (dir, jobs) in [(&one, "1"), (&many, "4")] {
        let mut args: Vec<String> = examples();
        args.extend(["-j".into(), jobs.into(), "-o".into(), path_arg(dir.path())]);
        let output = ptxgen(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    for example in examples() {
        let name = Path::new(&example).with_extension("ptx");
        let name = name.file_name().unwrap();
        let a = std::fs::read(one.path().join(name)).unwrap();
        let b = std::fs::read(many.path().join(name)).unwrap();
        assert!(a == b, "{name:?} differs between -j 1 and -j 4");
    }
}

#[test]
fn a_failing_file_gives_status_1_and_the_others_still_compile() {
    let out = tempfile::tempdir().unwrap();
    let bad = "tests/golden/lower_diagnostics/ldmatrix_column_major.gph";
    let output = ptxgen(&[bad, "examples/vector_copy.gph", "-o", &path_arg(out.path())]);
    assert_eq!(output.status.code(), Some(1));
    let errors = stderr(&output);
    assert!(errors.contains("error[E0300]"), "{errors}");
    assert!(
        errors.contains("ldmatrix_column_major.gph:18:9"),
        "{errors}"
    );
    assert!(out.path().join("vector_copy.ptx").exists());
    assert!(!out.path().join("ldmatrix_column_major.ptx").exists());
    // The run closes with one line that counts the failures.
    let last = errors.trim_end().lines().last().unwrap_or_default();
    assert_eq!(last, "ptxgen: 1 of 2 files failed", "{errors}");
}

#[test]
fn an_output_file_name_with_several_inputs_is_refused_not_made_a_folder() {
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("x.ptx");
    let output = ptxgen(&[
        "examples/vector_copy.gph",
        "examples/bias_rows.gph",
        "-o",
        &file.display().to_string(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("names one .ptx file, but 2 inputs"),
        "{}",
        stderr(&output)
    );
    assert!(!file.exists(), "no folder named x.ptx");
}

#[test]
fn the_ptx_header_says_where_it_comes_from_and_why_its_target() {
    let output = ptxgen(&["examples/gemm_f16.gph", "-o", "-", "--define", "STAGES=2"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let header: Vec<&str> = text
        .lines()
        .take_while(|line| line.starts_with("//"))
        .collect();
    assert!(
        header.contains(&"// source: examples/gemm_f16.gph"),
        "{header:?}"
    );
    assert!(
        header.contains(&"// options: --define STAGES=2"),
        "{header:?}"
    );
    assert!(
        header
            .iter()
            .any(|line| line.starts_with("// target sm_80: ")),
        "{header:?}"
    );
    let output = ptxgen(&["examples/vector_copy.gph", "-o", "-", "--arch", "sm_86"]);
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        text.contains("// target sm_86: requested with --arch sm_86"),
        "{text}"
    );
}

#[test]
fn usage_errors_give_status_2() {
    assert_eq!(ptxgen(&[]).status.code(), Some(2));
    assert_eq!(ptxgen(&["a.gph", "--arch", "sm_75"]).status.code(), Some(2));
    let clash = ptxgen(&[
        "examples/vector_copy.gph",
        "tests/vector_copy.gph",
        "-o",
        "x/",
    ]);
    assert_eq!(clash.status.code(), Some(2));
    assert!(stderr(&clash).contains("would both be written"));
}

#[test]
fn json_messages_are_one_object_per_line() {
    let out = tempfile::tempdir().unwrap();
    let bad = "tests/golden/lower_diagnostics/move_too_long.gph";
    let output = ptxgen(&[
        bad,
        "examples/warp_row_sum.gph",
        "-o",
        &path_arg(out.path()),
        "--message-format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect();
    let of_type = |kind: &str| {
        lines
            .iter()
            .filter(|l| l["type"] == kind)
            .collect::<Vec<_>>()
    };
    let results = of_type("result");
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["success"], false);
    assert_eq!(results[1]["success"], true);
    let diagnostics = of_type("diagnostic");
    assert_eq!(diagnostics.len(), 2);
    assert!(diagnostics.iter().all(|d| d["code"] == "E0300"));
    assert_eq!(diagnostics[0]["start"]["line"], 12);
    let kernels = of_type("kernel");
    assert_eq!(kernels.len(), 1);
    assert_eq!(kernels[0]["name"], "warp_row_sum");
}

#[test]
fn ir_and_defines() {
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("row_sum.ir");
    let output = ptxgen(&[
        "examples/warp_row_sum.gph",
        "--emit",
        "ir",
        "--define",
        "ROWS=512",
        "-o",
        target.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let ir = std::fs::read_to_string(&target).unwrap();
    assert!(ir.starts_with("kernel warp_row_sum {"), "{ir}");
    assert!(ir.contains("%X:[512,128 : 128,1].fp32.GL"), "{ir}");
    let unknown = ptxgen(&["examples/warp_row_sum.gph", "--define", "COLS=4", "-o", "-"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(stderr(&unknown).contains("E0204"), "{}", stderr(&unknown));
}

#[test]
fn standard_output_takes_one_file_and_annotations() {
    let output = ptxgen(&[
        "examples/vector_copy.gph",
        "-o",
        "-",
        "--annotate",
        "--arch",
        "sm_90",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains(".target sm_90"));
    assert!(text.contains("// line "), "{text}");
}

#[test]
fn sm_90a_is_written_and_verified_by_ptxas_at_sm_90a() {
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("vector_copy.ptx");
    let target_arg = target.display().to_string();
    let args = [
        "examples/vector_copy.gph",
        "-o",
        &target_arg,
        "--arch",
        "sm_90a",
        "--verify",
    ];
    let output = ptxgen(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = std::fs::read_to_string(&target).unwrap();
    assert!(text.contains("\n.version 8.0\n.target sm_90a\n"), "{text}");
    let errors = stderr(&output);
    if let Some((_, why)) = errors.split_once("--verify skipped: ") {
        support::skip::skip_without_tools(why.lines().next().unwrap_or_default());
        return;
    }
    // ptxas ran with -arch=sm_90a (it refuses sm_90a PTX at sm_90).
    let report = String::from_utf8(output.stdout).unwrap();
    assert!(
        report.contains("kernel `vector_copy` on sm_90a: "),
        "{report}"
    );
}

/// A folder holding a copy of the vector-copy example as `name`.
fn folder_with_example(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join(name);
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/vector_copy.gph"),
        &source,
    )
    .unwrap();
    (dir, source)
}

fn text_of(path: &Path) -> String {
    path.to_str().unwrap().to_string()
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let (dir, source) = folder_with_example("a.gph");
    let before = std::fs::read(&source).unwrap();
    let link = dir.path().join("link.gph");
    std::os::unix::fs::symlink(&source, &link).unwrap();
    let roundabout = dir.path().join(".").join("a.gph");
    for output in [&source, &link, &roundabout] {
        let run = ptxgen(&[&text_of(&source), "-o", &text_of(output)]);
        assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
        let errors = stderr(&run);
        assert!(errors.contains("is the input"), "{errors}");
        assert!(errors.contains(&text_of(&source)), "{errors}");
        assert_eq!(std::fs::read(&source).unwrap(), before, "-o {output:?}");
    }
    let ptx = dir.path().join("k.ptx");
    std::fs::write(&ptx, ".version 6.0\n").unwrap();
    let run = ptxgen(&[&text_of(&ptx)]);
    assert_eq!(run.status.code(), Some(2));
    assert!(stderr(&run).contains(".gph"), "{}", stderr(&run));
    assert_eq!(std::fs::read_to_string(&ptx).unwrap(), ".version 6.0\n");
}

#[test]
fn two_inputs_with_one_output_beside_them_write_nothing() {
    let (dir, source) = folder_with_example("x.gph");
    let twin = dir.path().join("x.txt");
    std::fs::copy(&source, &twin).unwrap();
    let run = ptxgen(&[&text_of(&source), &text_of(&twin), "-j", "2"]);
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(stderr(&run).contains("would both be written"));
    assert!(!dir.path().join("x.ptx").exists());
}

#[test]
fn outputs_replace_the_old_file_whole_and_leave_nothing_behind() {
    let (dir, source) = folder_with_example("a.gph");
    let output = dir.path().join("a.ptx");
    std::fs::write(&output, "old").unwrap();
    // A hard link keeps the old file: a rename replaces the name, while
    // writing in place would change the old file under every name.
    let old = dir.path().join("old.ptx");
    std::fs::hard_link(&output, &old).unwrap();
    let run = ptxgen(&[&text_of(&source)]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert!(std::fs::read_to_string(&output).unwrap().contains(".entry"));
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "old");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.gph", "a.ptx", "old.ptx"]);
}

#[test]
fn standard_output_that_cannot_be_written_fails_the_run() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    // Read-only descriptor 1: what a closed stdout looks like to `write`.
    let read_only = std::fs::File::open("/dev/null").unwrap();
    for (stdout, why) in [(full, "No space"), (read_only, "Bad file descriptor")] {
        let run = Command::new(env!("CARGO_BIN_EXE_ptxgen"))
            .args(["examples/vector_copy.gph", "-o", "-"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(std::process::Stdio::from(stdout))
            .output()
            .expect("ptxgen runs");
        assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
        assert!(stderr(&run).contains("cannot write `<stdout>`"));
        assert!(stderr(&run).contains(why), "{}", stderr(&run));
    }
}

#[test]
fn input_text_is_read_as_bytes_with_any_line_ending() {
    let dir = tempfile::tempdir().unwrap();
    let latin1 = dir.path().join("latin1.gph");
    std::fs::write(&latin1, b"kernel k {\n  // 8 \xd7 fp32\n}\n").unwrap();
    let run = ptxgen(&[&text_of(&latin1), "-o", "-"]);
    assert_eq!(run.status.code(), Some(1));
    assert!(stderr(&run).contains("error[E0124]"), "{}", stderr(&run));
    assert!(stderr(&run).contains("latin1.gph:2:8"), "{}", stderr(&run));
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/vector_copy.gph"),
    )
    .unwrap();
    let cr_only = dir.path().join("cr.gph");
    std::fs::write(&cr_only, source.replace('\n', "\r")).unwrap();
    let run = ptxgen(&[&text_of(&cr_only), "-o", "-"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert!(String::from_utf8_lossy(&run.stdout).contains(".entry vector_copy"));
    let empty = dir.path().join("consts.gph");
    std::fs::write(&empty, "const A = 1\n").unwrap();
    let run = ptxgen(&[&text_of(&empty), "-o", "-"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert!(stderr(&run).contains("warning[W0125]"), "{}", stderr(&run));
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `ptxgen run --backend cpu`: the GPU run's lines from the executor, with
/// its findings under each kernel and the exit status of a failed check.
#[test]
fn run_on_the_cpu_reports_like_the_gpu_and_adds_findings() {
    let run = ptxgen(&[
        "run",
        "--backend",
        "cpu",
        "--check",
        "examples/mma_m16n8k16.gph",
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let text = stdout(&run);
    assert!(text.starts_with("# device: CPU executor"), "{text}");
    assert!(
        text.contains("\nPASS  mma_m16n8k16  <<<1, 32, 0 B>>>"),
        "{text}"
    );
    assert!(text.contains("  banks    "), "{text}");

    // Without its sync the kernel races, which the checker sees: refused
    // before it runs (E0285), exit 2 (the file does not compile).
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mma_m16n8k16.gph"),
    )
    .unwrap();
    let racy: String = source
        .lines()
        .filter(|line| line.trim() != "sync")
        .map(|line| format!("{line}\n"))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("racy.gph");
    std::fs::write(&file, racy).unwrap();
    let file = file.display().to_string();
    let run = ptxgen(&["run", "--backend", "cpu", "--check", &file]);
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(stderr(&run).contains("error[E0285]"), "{}", stderr(&run));

    // A read of shared elements no thread wrote: where the checker's walk
    // sees it, it refuses the file (E0298, exit 2).
    let unwritten = |index: &str| {
        format!(
            "kernel unwritten {{
    %src:[64].fp32.GL
    %dst:[64].fp32.GL
    %scale:[S].fp32.GL
    #b:[1].block
    #t:[64].thread
    %dst <- Move<<<#b, #t>>>(%src) {{
        @i = #t.indices()
        #one:[].block = #b.scalar()
        #me:[].thread = #t.scalar()
        %tile:[128].fp32.SH
        %tile[@i] <- Move<<<#one, #me>>>(%src[@i])
        sync
        %dst[@i] <- Move<<<#one, #me>>>(%tile[{index}])
    }}
}}
"
        )
    };
    let file = dir.path().join("unwritten.gph");
    std::fs::write(&file, unwritten("@i + 64")).unwrap();
    let file = file.display().to_string();
    let run = ptxgen(&["run", "--backend", "cpu", "--check", "--dim", "S=1", &file]);
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(stderr(&run).contains("error[E0298]"), "{}", stderr(&run));
    // Where the read leaves the written half only at dims past the walk's
    // samples (S ≥ 1000), only the run sees it: FAIL, exit 1, each finding
    // with its thread, instruction and (annotated) .gph line.
    std::fs::write(&file, unwritten("@i + 64 * (S / 1000 % 2)")).unwrap();
    let run = ptxgen(&[
        "run",
        "--backend",
        "cpu",
        "--check",
        "--annotate",
        "--dim",
        "S=1000",
        &file,
    ]);
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    let text = stdout(&run);
    assert!(text.contains("\nFAIL  unwritten"), "{text}");
    let finding = text
        .lines()
        .find(|line| line.starts_with("  finding  block 0 thread "))
        .unwrap_or_else(|| panic!("no finding line: {text}"));
    assert!(finding.contains("(.gph line 14:"), "{finding}");
    assert!(finding.contains("which nothing wrote"), "{finding}");

    // Without the `cuda` feature the CPU is the default, and the GPU says
    // how to get it (exit 2).
    if !cfg!(feature = "cuda") {
        let run = ptxgen(&["run", "--check", "examples/mma_m16n8k16.gph"]);
        assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
        assert!(stdout(&run).starts_with("# device: CPU executor"));
        let run = ptxgen(&["run", "--backend", "gpu", "examples/mma_m16n8k16.gph"]);
        assert_eq!(run.status.code(), Some(2));
        assert!(stderr(&run).contains("--features cuda"), "{}", stderr(&run));
    }
}

#[test]
fn manifests_go_where_ptx_would_with_the_json_extension() {
    let out = tempfile::tempdir().unwrap();
    let output = ptxgen(&[
        "examples/vector_copy.gph",
        "examples/gemm_f16_sm90.gph",
        "--emit",
        "manifest",
        "-o",
        &path_arg(out.path()),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    for (stem, kernel, target) in [
        ("vector_copy", "vector_copy", "sm_70"),
        ("gemm_f16_sm90", "gemm_f16_sm90", "sm_90a"),
    ] {
        let path = out.path().join(format!("{stem}.json"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("no {path:?}"));
        let manifest: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(manifest["manifest"], 1);
        assert_eq!(manifest["target"], target, "{stem}");
        assert_eq!(manifest["kernels"][0]["name"], kernel);
        assert!(!out.path().join(format!("{stem}.ptx")).exists());
    }
}

#[test]
fn a_manifest_follows_arch_and_defines_and_goes_to_standard_output() {
    let output = ptxgen(&[
        "examples/warp_row_sum.gph",
        "--emit",
        "manifest",
        "--define",
        "ROWS=512",
        "--arch",
        "sm_90",
        "-o",
        "-",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let manifest: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(manifest["target"], "sm_90");
    assert_eq!(manifest["source"], "examples/warp_row_sum.gph");
    let kernel = &manifest["kernels"][0];
    assert_eq!(kernel["params"][0]["name"], "%X");
    assert_eq!(kernel["params"][0]["elements"], "65536", "{kernel}");
}

#[test]
fn a_file_that_fails_writes_no_manifest() {
    let out = tempfile::tempdir().unwrap();
    let bad = "tests/golden/lower_diagnostics/ldmatrix_column_major.gph";
    let output = ptxgen(&[bad, "--emit", "manifest", "-o", &path_arg(out.path())]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("error[E0300]"),
        "{}",
        stderr(&output)
    );
    assert!(!out.path().join("ldmatrix_column_major.json").exists());
}
