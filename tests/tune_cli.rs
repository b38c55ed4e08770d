//! `ptxgen tune` on the CPU: the tunable constants a kernel depends on are
//! enumerated, compiled and ranked by the tile model for a named device;
//! the pick is what `run --tune` compiles with; bad requests say why with
//! status 2. (`--measure` needs a GPU: docs/tuning.md has its figures.)

use std::process::{Command, Output};

const TMA_GEMM: &str = "examples/gemm_f16_tma_sm90.gph";

fn ptxgen(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptxgen"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .output()
        .expect("ptxgen runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The ranked rows: (kernel, settings, predicted µs).
fn rows(stdout: &str) -> Vec<(String, String, f64)> {
    stdout
        .lines()
        .filter(|line| line.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let micros = fields.iter().position(|f| *f == "µs").expect("a time") - 1;
            (
                fields[1].to_string(),
                fields[2..micros].join(" "),
                fields[micros].parse().expect("a number"),
            )
        })
        .collect()
}

/// Tunes BN (the others fixed by defines, to keep the space small) of the
/// plain and the split-K kernel at one shape.
fn tune(shape: [&str; 3], extra: &[&str]) -> Output {
    let mut args = vec![
        "tune",
        TMA_GEMM,
        "--kernel",
        "gemm_f16_tma_sm90",
        "--kernel",
        "gemm_f16_tma_sm90_splitk",
        "-D",
        "BM=128",
        "-D",
        "STAGES=4",
        "-D",
        "OUT_16=0",
        "--dim",
        shape[0],
        "--dim",
        shape[1],
        "--dim",
        shape[2],
    ];
    args.extend_from_slice(extra);
    ptxgen(&args)
}

#[test]
fn the_ranking_is_ordered_names_the_tunables_and_prints_the_pick() {
    let output = tune(
        ["M=4096", "N=4096", "K=4096"],
        &["--device", "H100", "--top", "50"],
    );
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        stdout.starts_with(
            "# tune examples/gemm_f16_tma_sm90.gph at M=4096 N=4096 K=4096 on H100 SXM"
        ),
        "{stdout}"
    );
    // BN is open; SPLITS only matters to the split-K kernel.
    assert!(
        stdout.contains("# gemm_f16_tma_sm90: BN [64, 128, 160, 192, 256];"),
        "{stdout}"
    );
    assert!(
        stdout.contains("# gemm_f16_tma_sm90_splitk: BN [64, 128, 160, 192, 256], SPLITS ["),
        "{stdout}"
    );
    let rows = rows(&stdout);
    assert!(rows.len() > 5, "{stdout}");
    assert!(
        rows.windows(2).all(|pair| pair[0].2 <= pair[1].2),
        "not ordered: {rows:?}"
    );
    // A square problem that fills the chip: no split, the widest tile.
    assert_eq!(
        (rows[0].0.as_str(), rows[0].1.as_str()),
        ("gemm_f16_tma_sm90", "BN=256")
    );
    assert!(
        stdout.ends_with("pick: --kernel gemm_f16_tma_sm90 -D BN=256\n"),
        "{stdout}"
    );
}

#[test]
fn few_tiles_over_a_long_k_pick_the_split_kernel() {
    let output = tune(["M=256", "N=256", "K=65536"], &["--device", "H100"]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let rows = rows(&stdout);
    assert_eq!(rows.len(), 5, "--top defaults to 5: {stdout}");
    assert_eq!(rows[0].0, "gemm_f16_tma_sm90_splitk", "{stdout}");
    assert!(rows[0].1.contains("SPLITS="), "{stdout}");
}

#[test]
fn a_device_without_the_kernels_instructions_runs_none_of_them() {
    let output = tune(
        ["M=1024", "N=1024", "K=1024"],
        &["--device", "A100", "-D", "SPLITS=4"],
    );
    assert_eq!(output.status.code(), Some(2));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("cannot run this shape on this device"),
        "{stdout}"
    );
    assert!(
        stdout.contains("A100 SXM4 has no tensor-core rate for `wgmma.f16`"),
        "{stdout}"
    );
    assert_eq!(
        text(&output.stderr),
        "error: no configuration can run this shape on A100 SXM4\n"
    );
}

#[test]
fn bad_requests_say_why() {
    let output = tune(["M=64", "N=64", "K=64"], &["--device", "V100"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).starts_with("error: no device `V100`: the built-in ones are H100 SXM, H200, A100 SXM4, GeForce RTX 4090"),
        "{}",
        text(&output.stderr)
    );
    // A shape the kernel refuses is reported per configuration.
    let output = tune(
        ["M=64", "N=64", "K=60"],
        &["--device", "H100", "-D", "SPLITS=4"],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stdout).contains("K = 60 is not a multiple of 8"),
        "{}",
        text(&output.stdout)
    );
    // Not a GEMM: the model says it describes GEMMs.
    let output = ptxgen(&[
        "tune",
        "examples/softmax.gph",
        "--dim",
        "R=64",
        "--device",
        "H100",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stdout).contains("the tile model describes GEMMs"),
        "{}",
        text(&output.stdout)
    );
}

#[cfg(not(feature = "cuda"))]
#[test]
fn measuring_needs_the_cuda_feature() {
    let output = tune(
        ["M=64", "N=64", "K=64"],
        &["--device", "H100", "--measure", "-D", "SPLITS=4"],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("built without the `cuda` feature"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn run_tune_compiles_with_the_pick_and_passes_its_check() {
    let output = ptxgen(&[
        "run",
        TMA_GEMM,
        "--kernel",
        "gemm_f16_tma_sm90",
        "--backend",
        "cpu",
        "--tune",
        "--device",
        "H100",
        "-D",
        "BM=128",
        "-D",
        "STAGES=4",
        "--dim",
        "M=64",
        "--dim",
        "N=72",
        "--dim",
        "K=64",
        "--check",
    ]);
    let stderr = text(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stderr}\n{}",
        text(&output.stdout)
    );
    assert!(stderr.starts_with("# tuned for H100 SXM: BN="), "{stderr}");
    assert!(
        text(&output.stdout).contains("PASS"),
        "{}",
        text(&output.stdout)
    );
    // --tune needs the kernel named.
    let output = ptxgen(&[
        "run",
        TMA_GEMM,
        "--backend",
        "cpu",
        "--tune",
        "--dim",
        "M=64",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("name it with --kernel"));
}
