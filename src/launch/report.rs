//! Launch stage: what `ptxgen run` and `ptxgen bench` print — one summary
//! line per kernel with its figures, bench statistics and rates, the
//! `--json` rows — and how many input sets a bench rotates. No GPU needed:
//! the device side fills these in.

use std::fmt::Write as _;

use super::plan::{LaunchPlan, Work};
use crate::reference::Comparison;

/// What `--check` found.
#[derive(Clone, PartialEq, Debug)]
pub enum CheckOutcome {
    /// Each output compared with the reference, in the outermost spec's
    /// order.
    Compared(Vec<Comparison>),
    /// The kernel has no contract the reference can evaluate (the reason).
    NoContract(String),
}

/// The result of running one kernel once.
///
/// Rule: without `check` the run passes if it launched and finished;
/// with it, only if the comparison passed.
#[derive(Clone, PartialEq, Debug)]
pub struct RunReport {
    /// The kernel.
    pub kernel: String,
    /// `M=4096 N=4096`, or empty.
    pub dims: String,
    /// `<<<grid, block, shared>>>`.
    pub config: String,
    /// Host wall time of the launch until the GPU finished, in ms.
    pub elapsed_ms: f64,
    /// The check, when asked for.
    pub check: Option<CheckOutcome>,
}

impl RunReport {
    /// An empty report for `plan`, to be filled by the device side.
    pub fn for_plan(plan: &LaunchPlan) -> RunReport {
        RunReport {
            kernel: plan.kernel.clone(),
            dims: plan.dims_text(),
            config: plan.config_text(),
            elapsed_ms: 0.0,
            check: None,
        }
    }

    /// Whether the run counts as a success.
    pub fn passed(&self) -> bool {
        match &self.check {
            None => true,
            Some(CheckOutcome::Compared(comparisons)) => comparisons.iter().all(Comparison::passed),
            Some(CheckOutcome::NoContract(_)) => false,
        }
    }

    /// `PASS`, `FAIL`, or `RAN` (not checked).
    pub fn verdict(&self) -> &'static str {
        match &self.check {
            None => "RAN",
            Some(_) if self.passed() => "PASS",
            Some(_) => "FAIL",
        }
    }

    /// The summary line: verdict, kernel and dims, launch, time, figures.
    pub fn line(&self) -> String {
        let mut line = format!("{:<4}  {}", self.verdict(), self.kernel);
        if !self.dims.is_empty() {
            let _ = write!(line, " {}", self.dims);
        }
        let _ = write!(line, "  {}  {:.3} ms  ", self.config, self.elapsed_ms);
        match &self.check {
            None => line.push_str("(not checked: add --check)"),
            // One output's figures as they are; several each after its name.
            Some(CheckOutcome::Compared(comparisons)) => match comparisons.as_slice() {
                [comparison] => {
                    let _ = write!(line, "{comparison}");
                }
                _ => {
                    let figures: Vec<String> = comparisons
                        .iter()
                        .map(|comparison| format!("{}: {comparison}", comparison.output))
                        .collect();
                    line.push_str(&figures.join("; "));
                }
            },
            Some(CheckOutcome::NoContract(reason)) => line.push_str(reason),
        }
        line
    }
}

/// Median, minimum and maximum of a bench's timed runs, in ms.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Stats {
    /// The middle time (the mean of the two middle ones for an even count).
    pub median_ms: f64,
    /// The fastest run.
    pub min_ms: f64,
    /// The slowest run.
    pub max_ms: f64,
    /// Timed runs.
    pub runs: usize,
}

impl Stats {
    /// The statistics of `times_ms`; `None` when there are none.
    pub fn of(times_ms: &[f32]) -> Option<Stats> {
        let mut sorted: Vec<f64> = times_ms.iter().map(|&t| f64::from(t)).collect();
        sorted.sort_by(f64::total_cmp);
        let runs = sorted.len();
        let median_ms = match runs {
            0 => return None,
            _ if runs % 2 == 1 => sorted[runs / 2],
            _ => (sorted[runs / 2 - 1] + sorted[runs / 2]) / 2.0,
        };
        Some(Stats {
            median_ms,
            min_ms: sorted[0],
            max_ms: sorted[runs - 1],
            runs,
        })
    }
}

/// A throughput.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Rate {
    /// 10^12 floating-point operations per second.
    Tflops(f64),
    /// 10^9 bytes per second.
    Gbps(f64),
}

impl Work {
    /// The rate of doing this work in `ms` milliseconds.
    pub fn rate(&self, ms: f64) -> Rate {
        let seconds = ms * 1e-3;
        match self {
            Work::MatMul(shape) => Rate::Tflops(shape.flops() as f64 / seconds / 1e12),
            Work::Bytes(bytes) => Rate::Gbps(*bytes as f64 / seconds / 1e9),
        }
    }
}

/// The result of timing one kernel.
#[derive(Clone, PartialEq, Debug)]
pub struct BenchReport {
    /// The kernel.
    pub kernel: String,
    /// Each dim's name and value.
    pub dims: Vec<(String, i64)>,
    /// `<<<grid, block, shared>>>`.
    pub config: String,
    /// The work of one launch.
    pub work: Work,
    /// The timed runs.
    pub stats: Stats,
    /// Input sets rotated.
    pub sets: usize,
    /// Untimed runs first.
    pub warmup: usize,
}

impl BenchReport {
    /// The rate at the median time.
    pub fn rate(&self) -> Rate {
        self.work.rate(self.stats.median_ms)
    }

    /// The summary line: kernel and dims, launch, times, rate.
    pub fn line(&self) -> String {
        let mut line = self.kernel.clone();
        for (name, value) in &self.dims {
            let _ = write!(line, " {name}={value}");
        }
        let stats = &self.stats;
        let rate = match self.rate() {
            Rate::Tflops(tflops) => format!("{tflops:.1} TFLOP/s"),
            Rate::Gbps(gbps) => format!("{gbps:.1} GB/s"),
        };
        let _ = write!(
            line,
            "  {}  median {:.4} ms  min {:.4}  max {:.4}  ({} runs, {} input sets)  {rate}",
            self.config, stats.median_ms, stats.min_ms, stats.max_ms, stats.runs, self.sets
        );
        line
    }

    /// One `--json` row; `m`, `n`, `k` and `tflops` for a `MatMul`, `null`
    /// sizes and `gbps` otherwise.
    pub fn json_row(&self) -> String {
        let mut row = format!("{{\"kernel\": {}, \"dims\": {{", json_string(&self.kernel));
        for (i, (name, value)) in self.dims.iter().enumerate() {
            let comma = if i > 0 { ", " } else { "" };
            let _ = write!(row, "{comma}{}: {value}", json_string(name));
        }
        row.push('}');
        match self.work {
            Work::MatMul(shape) => {
                let _ = write!(
                    row,
                    ", \"m\": {}, \"n\": {}, \"k\": {}",
                    shape.m, shape.n, shape.k
                );
            }
            Work::Bytes(_) => row.push_str(", \"m\": null, \"n\": null, \"k\": null"),
        }
        let stats = &self.stats;
        let _ = write!(
            row,
            ", \"median_ms\": {}, \"min_ms\": {}, \"max_ms\": {}",
            json_number(stats.median_ms),
            json_number(stats.min_ms),
            json_number(stats.max_ms)
        );
        let _ = match self.rate() {
            Rate::Tflops(tflops) => write!(row, ", \"tflops\": {}", json_number(tflops)),
            Rate::Gbps(gbps) => write!(row, ", \"gbps\": {}", json_number(gbps)),
        };
        let _ = write!(
            row,
            ", \"runs\": {}, \"input_sets\": {}}}",
            stats.runs, self.sets
        );
        row
    }
}

/// `--json` output: an array of rows, one per kernel, then a newline.
pub fn json_rows(reports: &[BenchReport]) -> String {
    let rows: Vec<String> = reports
        .iter()
        .map(|r| format!("  {}", r.json_row()))
        .collect();
    if rows.is_empty() {
        "[]\n".to_string()
    } else {
        format!("[\n{}\n]\n", rows.join(",\n"))
    }
}

fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A finite number as JSON writes it; `null` for NaN and infinities.
fn json_number(value: f64) -> String {
    if value.is_finite() {
        format!("{value}")
    } else {
        "null".to_string()
    }
}

/// Bytes a bench's rotated input sets should add up to: more than the L2
/// of any current GPU (50–60 MB on H100/H200), so no run finds its inputs
/// left in the cache by the previous one.
pub const ROTATION_BYTES: usize = 256 << 20;
/// Most input sets a bench allocates (small kernels stay cheap to set up).
pub const MAX_SETS: usize = 64;

/// Input sets to rotate for sets of `set_bytes`: enough to fill
/// [`ROTATION_BYTES`], at least 2 and at most [`MAX_SETS`], and never more
/// than three quarters of `device_bytes` hold (down to 1 set).
pub fn rotation_sets(set_bytes: usize, device_bytes: u64) -> usize {
    let set = set_bytes.max(1);
    let wanted = (ROTATION_BYTES / set).clamp(2, MAX_SETS);
    let fit = usize::try_from(device_bytes / 4 * 3 / set as u64).unwrap_or(usize::MAX);
    wanted.min(fit).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{MatMulShape, Tolerance};

    fn bench(work: Work) -> BenchReport {
        BenchReport {
            kernel: "gemm".into(),
            dims: vec![("M".into(), 4096), ("N".into(), 4096), ("K".into(), 4096)],
            config: "<<<1024, 256, 96 KiB>>>".into(),
            work,
            stats: Stats::of(&[0.25, 0.2, 0.5, 0.2]).unwrap(),
            sets: 2,
            warmup: 10,
        }
    }

    const GEMM: Work = Work::MatMul(MatMulShape {
        m: 4096,
        n: 4096,
        k: 4096,
        batch: 1,
        accumulate: true,
    });

    #[test]
    fn stats_take_the_middle_and_the_extremes() {
        let stats = Stats::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!(
            (stats.median_ms, stats.min_ms, stats.max_ms),
            (2.0, 1.0, 3.0)
        );
        assert_eq!(Stats::of(&[4.0, 1.0, 2.0, 3.0]).unwrap().median_ms, 2.5);
        assert_eq!(Stats::of(&[]), None);
    }

    #[test]
    fn rates_are_tflops_for_matmul_and_gb_per_second_otherwise() {
        // 2·4096³ = 137.4 GFLOP in 0.2 ms.
        let Rate::Tflops(tflops) = GEMM.rate(0.2) else {
            panic!("a MatMul")
        };
        assert!((tflops - 687.19476736).abs() < 1e-6, "{tflops}");
        assert_eq!(Work::Bytes(3_000_000).rate(1.0), Rate::Gbps(3.0));
    }

    #[test]
    fn a_bench_line_has_times_sets_and_rate() {
        assert_eq!(
            bench(GEMM).line(),
            "gemm M=4096 N=4096 K=4096  <<<1024, 256, 96 KiB>>>  median 0.2250 ms  min 0.2000  \
             max 0.5000  (4 runs, 2 input sets)  610.8 TFLOP/s"
        );
    }

    #[test]
    fn json_rows_keep_the_keys_the_cublas_script_reads() {
        let text = json_rows(&[bench(GEMM), bench(Work::Bytes(1 << 30))]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "[");
        assert_eq!(
            lines[1],
            "  {\"kernel\": \"gemm\", \"dims\": {\"M\": 4096, \"N\": 4096, \"K\": 4096}, \
             \"m\": 4096, \"n\": 4096, \"k\": 4096, \"median_ms\": 0.22500000149011612, \
             \"min_ms\": 0.20000000298023224, \"max_ms\": 0.5, \"tflops\": 610.8397891634568, \
             \"runs\": 4, \"input_sets\": 2},"
        );
        assert!(
            lines[2].contains("\"m\": null") && lines[2].contains("\"gbps\": "),
            "{}",
            lines[2]
        );
        assert_eq!(lines[3], "]");
        assert_eq!(json_rows(&[]), "[]\n");
        assert_eq!(json_string("a\"b\\\n"), "\"a\\\"b\\\\\\u000a\"");
        assert_eq!(json_number(f64::INFINITY), "null");
    }

    #[test]
    fn rotation_fills_256_mib_within_bounds_and_memory() {
        let gib = 1u64 << 30;
        assert_eq!(rotation_sets(96 << 20, 80 * gib), 2);
        assert_eq!(rotation_sets(16 << 20, 80 * gib), 16);
        assert_eq!(rotation_sets(4096, 80 * gib), MAX_SETS);
        assert_eq!(rotation_sets(40 * gib as usize, 80 * gib), 1);
        assert_eq!(rotation_sets(0, 80 * gib), MAX_SETS);
    }

    #[test]
    fn run_lines_say_pass_fail_or_ran() {
        let mut report = RunReport {
            kernel: "copy".into(),
            dims: "B=4".into(),
            config: "<<<4, 256, 0 B>>>".into(),
            elapsed_ms: 0.0421,
            check: None,
        };
        assert_eq!(
            report.line(),
            "RAN   copy B=4  <<<4, 256, 0 B>>>  0.042 ms  (not checked: add --check)"
        );
        assert!(report.passed());
        report.check = Some(CheckOutcome::NoContract("no contract".into()));
        assert_eq!(report.verdict(), "FAIL");
        assert!(report.line().ends_with("0.042 ms  no contract"));
    }

    fn comparison(output: &str, relative_error: f64) -> Comparison {
        Comparison {
            output: output.into(),
            elements: 4,
            max_abs_error: relative_error,
            relative_error,
            unwritten: 0,
            non_finite: 0,
            tolerance: Tolerance {
                relative: 1e-2,
                reason: "fp16 operands".into(),
            },
            worst: None,
            first_unwritten: None,
        }
    }

    #[test]
    fn every_output_must_pass_and_each_is_named_when_there_are_several() {
        let mut report = RunReport {
            kernel: "lstm".into(),
            dims: "B=4".into(),
            config: "<<<1, 128, 0 B>>>".into(),
            elapsed_ms: 1.0,
            check: Some(CheckOutcome::Compared(vec![comparison("%Hn", 0.0)])),
        };
        assert!(report.passed());
        assert!(
            report.line().ends_with(
                "1.000 ms  rel err 0.000e0 (tol 1e-2: fp16 operands), \
                max abs err 0.000e0, unwritten 0/4, NaN/inf 0"
            ),
            "{}",
            report.line()
        );
        report.check = Some(CheckOutcome::Compared(vec![
            comparison("%Hn", 0.0),
            comparison("%Cn", 0.5),
        ]));
        assert_eq!(report.verdict(), "FAIL");
        let line = report.line();
        let hn = line
            .find("%Hn: rel err 0.000e0")
            .expect("the first output, named");
        let cn = line
            .find("; %Cn: rel err 5.000e-1")
            .expect("the second, after it");
        assert!(hn < cn, "{line}");
    }
}
