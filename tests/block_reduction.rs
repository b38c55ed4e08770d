//! Block reductions end to end: row reductions whose rows are spread over
//! several warps, compiled from `.gph` text for several shapes (whole
//! blocks and half blocks, powers of two and not, 2 to 32 warps), run on
//! the CPU executor of their PTX with random rows, and compared with values
//! computed here — with no finding (race, unwritten read, out-of-bounds).
//! Also: the exact instruction sequence of a 256-thread row, ptxas on the
//! generated kernels, a block reduction in a run-time loop, and the race
//! the executor reports when the barrier that frees the scratch is removed
//! (between two block reductions, and between two iterations of one).

mod support;

use graphene::compile::{self, Options};
use graphene::data::Pcg32;
use graphene::exec::{self, Arg, ExecReport, FindingKind};
use graphene::ptx::Arch;
use graphene::ptx::tools::{self, ToolError};
use support::skip::skip_without_tools;

/// The element types the reductions are run on.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ty {
    F32,
    I32,
    U32,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::F32 => "fp32",
            Ty::I32 => "i32",
            Ty::U32 => "u32",
        }
    }
}

/// One case: `rows_per_block` rows of `threads` threads each, every thread
/// reducing `per_thread` elements of its row first.
#[derive(Clone, Copy, Debug)]
struct Shape {
    threads: usize,
    rows_per_block: usize,
    per_thread: usize,
}

impl Shape {
    fn columns(self) -> usize {
        self.threads * self.per_thread
    }
}

const ROWS: usize = 8;

/// A kernel reducing each row of `%X` into `%Y` with `op`: thread `i` of a
/// row reads columns `i + threads · j`, folds them, and the row's threads
/// reduce together; thread 0 of the row writes the result.
fn kernel_text(name: &str, op: &str, ty: Ty, shape: Shape) -> String {
    let Shape {
        threads,
        rows_per_block,
        per_thread,
    } = shape;
    let columns = shape.columns();
    let block = threads * rows_per_block;
    let t = ty.name();
    format!(
        "kernel {name} {{
    %X:[{ROWS}, {columns} : {columns}, 1].{t}.GL
    %Y:[{ROWS}].{t}.GL
    #groups:[{groups}].block
    #threads:[{block}].thread
    %Y <- Reduction<{op}, [1]><<<#groups, #threads>>>(%X) {{
        #one:[].block = #groups.scalar()
        #me:[].thread = #threads.scalar()
        @g = #groups.indices()
        #rows:[{rows_per_block}].[{threads}].thread = #threads.tile({threads})
        @r, @i = #rows.indices()
        %v:[{per_thread}].{t}.RF
        for (j = 0; j < {per_thread}; j += 1) {{
            %v[j] <- Move<<<#one, #me>>>(%X[{rows_per_block} * @g + @r, @i + {threads} * j])
        }}
        %acc:[].{t}.RF
        %acc <- Reduction<{op}, [0]><<<#one, #rows>>>(%v)
        if (@i == 0) {{
            %Y[{rows_per_block} * @g + @r] <- Move<<<#one, #me>>>(%acc)
        }}
    }}
}}
",
        groups = ROWS / rows_per_block,
    )
}

fn compile_ptx(name: &str, text: &str) -> String {
    let compiled = compile::compile(name, text, &Options::default())
        .unwrap_or_else(|d| panic!("{name} does not compile: {d:#?}\n{text}"));
    compiled.text
}

/// Runs kernel `name` of `ptx` on `input` (`ROWS` rows); the findings and
/// the output words.
fn run(ptx: &str, name: &str, shape: Shape, input: &[u32]) -> (ExecReport, Vec<u32>) {
    let bytes: Vec<u8> = input.iter().flat_map(|w| w.to_le_bytes()).collect();
    let args = [Arg::Buffer(bytes), Arg::Buffer(vec![0; 4 * ROWS])];
    let grid = (ROWS / shape.rows_per_block) as u32;
    let block = (shape.threads * shape.rows_per_block) as u32;
    let report = exec::run_kernel(ptx, name, grid, block, 0, &args).expect("runs");
    let out = report.outputs[1]
        .chunks(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    (report, out)
}

/// Random words of `ty`: fp32 in [-100, 100) with a fraction, integers of
/// both signs (i32) or large (u32, where a sum wraps).
fn random_words(ty: Ty, count: usize, seed: u64) -> Vec<u32> {
    let mut rng = Pcg32::new(seed, 7);
    (0..count)
        .map(|_| {
            let raw = rng.next_u32();
            match ty {
                Ty::F32 => ((raw % 20_000) as f32 / 100.0 - 100.0).to_bits(),
                Ty::I32 => ((raw % 2_000_001) as i32 - 1_000_000) as u32,
                Ty::U32 => raw,
            }
        })
        .collect()
}

/// The row's reduction, computed here: fp32 sums in f64 (compared with a
/// tolerance), everything else exactly.
fn expected(op: &str, ty: Ty, row: &[u32]) -> f64 {
    match (op, ty) {
        ("add", Ty::F32) => row.iter().map(|w| f64::from(f32::from_bits(*w))).sum(),
        ("max", Ty::F32) => row
            .iter()
            .map(|w| f32::from_bits(*w))
            .fold(f32::NAN, f32::max)
            .into(),
        ("add", Ty::I32) => f64::from(row.iter().fold(0i32, |a, w| a.wrapping_add(*w as i32))),
        ("max", Ty::I32) => f64::from(row.iter().map(|w| *w as i32).max().unwrap()),
        ("add", Ty::U32) => f64::from(row.iter().fold(0u32, |a, w| a.wrapping_add(*w))),
        ("max", Ty::U32) => f64::from(*row.iter().max().unwrap()),
        other => panic!("no case {other:?}"),
    }
}

fn value(ty: Ty, word: u32) -> f64 {
    match ty {
        Ty::F32 => f64::from(f32::from_bits(word)),
        Ty::I32 => f64::from(word as i32),
        Ty::U32 => f64::from(word),
    }
}

/// Runs one case on random rows and compares every row's result.
fn check_case(op: &str, ty: Ty, shape: Shape, seed: u64) {
    let name = "reduce_rows";
    let text = kernel_text(name, op, ty, shape);
    let ptx = compile_ptx(name, &text);
    let columns = shape.columns();
    let input = random_words(ty, ROWS * columns, seed);
    let (report, out) = run(&ptx, name, shape, &input);
    assert!(
        report.findings.is_empty(),
        "{op} {ty:?} {shape:?}: {:#?}",
        report.findings
    );
    for (row, got) in out.iter().enumerate() {
        let want = expected(op, ty, &input[row * columns..(row + 1) * columns]);
        let got = value(ty, *got);
        let tolerance = match (op, ty) {
            // fp32 sums of `columns` values below 100 in magnitude.
            ("add", Ty::F32) => 1e-6 * 100.0 * columns as f64,
            _ => 0.0,
        };
        assert!(
            (got - want).abs() <= tolerance,
            "{op} {ty:?} {shape:?} row {row}: {got} instead of {want}"
        );
    }
}

const SHAPES: [Shape; 7] = [
    // Two warps, the whole block.
    Shape {
        threads: 64,
        rows_per_block: 1,
        per_thread: 4,
    },
    // Three warps, two rows per block: the partials are not a power of two,
    // so lanes past them take the identity.
    Shape {
        threads: 96,
        rows_per_block: 2,
        per_thread: 3,
    },
    // Four warps, half a block each.
    Shape {
        threads: 128,
        rows_per_block: 2,
        per_thread: 8,
    },
    // Five warps.
    Shape {
        threads: 160,
        rows_per_block: 1,
        per_thread: 2,
    },
    // Eight warps, the 4096-column row.
    Shape {
        threads: 256,
        rows_per_block: 1,
        per_thread: 16,
    },
    // Eight warps, four rows of a 1024-thread block.
    Shape {
        threads: 256,
        rows_per_block: 4,
        per_thread: 1,
    },
    // Thirty-two warps: the largest block.
    Shape {
        threads: 1024,
        rows_per_block: 1,
        per_thread: 2,
    },
];

#[test]
fn fp32_sums_and_maxima_over_several_warps_match() {
    for (seed, shape) in SHAPES.iter().enumerate() {
        check_case("add", Ty::F32, *shape, seed as u64);
        check_case("max", Ty::F32, *shape, 100 + seed as u64);
    }
}

#[test]
fn integer_sums_and_maxima_over_several_warps_are_exact() {
    for (seed, shape) in [SHAPES[1], SHAPES[2], SHAPES[4]].iter().enumerate() {
        for ty in [Ty::I32, Ty::U32] {
            check_case("add", ty, *shape, 200 + seed as u64);
            check_case("max", ty, *shape, 300 + seed as u64);
        }
    }
}

#[test]
fn maxima_of_negative_rows_are_not_the_identity() {
    // Every value negative: an identity of 0 (or a lane reading a slot no
    // warp wrote) would show.
    for shape in [SHAPES[1], SHAPES[3], SHAPES[4]] {
        let name = "reduce_rows";
        let ptx = compile_ptx(name, &kernel_text(name, "max", Ty::F32, shape));
        let columns = shape.columns();
        let input: Vec<u32> = random_words(Ty::F32, ROWS * columns, 9)
            .into_iter()
            .map(|w| (-f32::from_bits(w).abs() - 1.0).to_bits())
            .collect();
        let (report, out) = run(&ptx, name, shape, &input);
        assert!(report.findings.is_empty(), "{:#?}", report.findings);
        for (row, got) in out.iter().enumerate() {
            let want = expected("max", Ty::F32, &input[row * columns..(row + 1) * columns]);
            assert_eq!(f64::from(f32::from_bits(*got)), want, "{shape:?} row {row}");
            assert!(want < 0.0);
        }
    }
}

#[test]
fn nan_and_signed_zeros_behave_as_in_a_warp() {
    // Three warps (the identity is used) and four (it is not).
    for shape in [SHAPES[1], SHAPES[2]] {
        let columns = shape.columns();
        let name = "reduce_rows";
        // max: row 0 all NaN gives NaN; row 1 NaN but for one value gives it.
        let ptx = compile_ptx(name, &kernel_text(name, "max", Ty::F32, shape));
        let mut input = vec![(-5.0f32).to_bits(); ROWS * columns];
        input[..columns].fill(f32::NAN.to_bits());
        input[columns..2 * columns].fill(f32::NAN.to_bits());
        input[columns + columns / 2] = (-3.0f32).to_bits();
        let (report, out) = run(&ptx, name, shape, &input);
        assert!(report.findings.is_empty(), "{:#?}", report.findings);
        assert!(
            f32::from_bits(out[0]).is_nan(),
            "{shape:?}: {}",
            f32::from_bits(out[0])
        );
        assert_eq!(f32::from_bits(out[1]), -3.0, "{shape:?}");
        assert_eq!(f32::from_bits(out[2]), -5.0, "{shape:?}");
        // add: a row of negative zeros sums to a negative zero.
        let ptx = compile_ptx(name, &kernel_text(name, "add", Ty::F32, shape));
        let input = vec![(-0.0f32).to_bits(); ROWS * columns];
        let (report, out) = run(&ptx, name, shape, &input);
        assert!(report.findings.is_empty(), "{:#?}", report.findings);
        assert!(
            out.iter().all(|w| *w == (-0.0f32).to_bits()),
            "{shape:?}: {out:x?}"
        );
    }
}

/// The instructions of `ptx` from the first `shfl` to the second
/// `bar.sync`, without register numbers: the block reduction's sequence.
fn exchange(ptx: &str) -> Vec<String> {
    let lines: Vec<&str> = ptx.lines().map(str::trim).collect();
    let first = lines
        .iter()
        .position(|l| l.starts_with("shfl"))
        .expect("a shuffle");
    let bars: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("bar.sync"))
        .map(|(i, _)| i)
        .collect();
    lines[first..=bars[1]]
        .iter()
        .map(|l| {
            l.split([' ', ',', ';'])
                .filter(|w| !w.is_empty() && !w.starts_with('%') && !w.starts_with("[%"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn a_256_thread_row_is_shuffles_store_barrier_load_shuffles_barrier() {
    let name = "reduce_rows";
    let ptx = compile_ptx(name, &kernel_text(name, "add", Ty::F32, SHAPES[4]));
    let butterfly = |masks: &[u32]| -> Vec<String> {
        masks
            .iter()
            .flat_map(|m| {
                [
                    format!("shfl.sync.bfly.b32 {m} 31 -1"),
                    "add.f32".to_string(),
                ]
            })
            .collect()
    };
    let mut want = butterfly(&[16, 8, 4, 2, 1]);
    want.extend(
        [
            "and.b32 31",
            "setp.eq.u32 0",
            "mov.u32 reduce_rows_reduction_scratch",
            "shr.u32 5",
            "mad.lo.u32 4",
            "@ st.shared.f32",
            "bar.sync 0",
            "and.b32 7",
            "mad.lo.u32 4",
            "ld.shared.f32",
        ]
        .map(String::from),
    );
    want.extend(butterfly(&[4, 2, 1]));
    want.push("bar.sync 0".into());
    let got: Vec<String> = exchange(&ptx)
        .into_iter()
        .map(|l| l.replace("@%p1 ", "@ ").replace("@%p1", "@"))
        .collect();
    assert_eq!(got, want, "{ptx}");
    assert!(ptx.contains(".shared .align 128 .b8 reduce_rows_reduction_scratch[32];"));
}

#[test]
fn the_generated_kernels_assemble_without_spills() {
    for (op, shape) in [("add", SHAPES[1]), ("max", SHAPES[4]), ("add", SHAPES[6])] {
        let name = "reduce_rows";
        let ptx = compile_ptx(name, &kernel_text(name, op, Ty::F32, shape));
        for arch in [Arch::Sm70, Arch::Sm90] {
            let assembly = match tools::assemble(&ptx, arch) {
                Ok(assembly) => assembly,
                Err(error @ ToolError::NotFound { .. }) => {
                    skip_without_tools(&error.to_string());
                    return;
                }
                Err(error) => panic!("{op} {shape:?} {arch}: {error}\n{ptx}"),
            };
            assert!(assembly.warnings.is_empty(), "{:?}", assembly.warnings);
            for report in &assembly.entries {
                assert!(
                    !report.uses_local_memory(),
                    "{op} {shape:?} {arch}: {report:?}"
                );
            }
        }
    }
}

/// Mean then maximum of the same row, as a normalisation does: two block
/// reductions in a row.
fn two_reductions() -> String {
    "kernel two {
    %X:[8, 512 : 512, 1].fp32.GL
    %Y:[8].fp32.GL
    #rows:[8].block
    #threads:[256].thread
    %Y <- Reduction<add, [1]><<<#rows, #threads>>>(%X) {
        #one:[].block = #rows.scalar()
        #me:[].thread = #threads.scalar()
        @r = #rows.indices()
        @t = #threads.indices()
        %v:[2].fp32.RF
        for (j = 0; j < 2; j += 1) {
            %v[j] <- Move<<<#one, #me>>>(%X[@r, @t + 256 * j])
        }
        %sum:[].fp32.RF
        %sum <- Reduction<add, [0]><<<#one, #threads>>>(%v)
        %top:[].fp32.RF
        %top <- Reduction<max, [0]><<<#one, #threads>>>(%v)
        %both:[].fp32.RF
        %both <- BinaryPointwise<add><<<#one, #me>>>(%sum, %top)
        if (@t == 0) {
            %Y[@r] <- Move<<<#one, #me>>>(%both)
        }
    }
}
"
    .to_string()
}

#[test]
fn back_to_back_reductions_need_the_barrier_that_frees_the_scratch() {
    let ptx = compile_ptx("two", &two_reductions());
    let shape = Shape {
        threads: 256,
        rows_per_block: 1,
        per_thread: 2,
    };
    let input = random_words(Ty::F32, ROWS * 512, 5);
    let (report, out) = run(&ptx, "two", shape, &input);
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    for (row, got) in out.iter().enumerate() {
        let values = &input[row * 512..(row + 1) * 512];
        let want = expected("add", Ty::F32, values) + expected("max", Ty::F32, values);
        assert!(
            (f64::from(f32::from_bits(*got)) - want).abs() < 1e-2,
            "row {row}"
        );
    }
    // Without the first reduction's second barrier, the second reduction's
    // stores meet the first one's loads in one barrier interval.
    let (report, _) = run(&without_second_barrier(&ptx), "two", shape, &input);
    assert!(races(&report), "{:#?}", report.findings);
}

/// `ptx` without its second `bar.sync`: the first block reduction's last.
fn without_second_barrier(ptx: &str) -> String {
    let barrier = "bar.sync 0;";
    let (at, _) = ptx.match_indices(barrier).nth(1).expect("a second barrier");
    format!("{}{}", &ptx[..at], &ptx[at + barrier.len()..])
}

fn races(report: &ExecReport) -> bool {
    report
        .findings
        .iter()
        .any(|f| matches!(f.kind, FindingKind::Race { .. }))
}

#[test]
fn a_block_reduction_in_a_run_time_loop_meets_itself_without_a_race() {
    // Sixteen iterations (a run-time loop): each reduces one column block
    // of the row and adds the result to a running sum.
    let text = "kernel looped {
    %X:[8, 4096 : 4096, 1].fp32.GL
    %Y:[8].fp32.GL
    #rows:[8].block
    #threads:[256].thread
    %Y <- Reduction<add, [1]><<<#rows, #threads>>>(%X) {
        #one:[].block = #rows.scalar()
        #me:[].thread = #threads.scalar()
        @r = #rows.indices()
        @t = #threads.indices()
        %total:[].fp32.RF
        %total <- Init<0.0><<<#one, #me>>>()
        for (k = 0; k < 16; k += 1) {
            %v:[].fp32.RF
            %v <- Move<<<#one, #me>>>(%X[@r, @t + 256 * k])
            %part:[].fp32.RF
            %part <- Reduction<add, []><<<#one, #threads>>>(%v)
            %total <- BinaryPointwise<add><<<#one, #me>>>(%total, %part)
        }
        if (@t == 0) {
            %Y[@r] <- Move<<<#one, #me>>>(%total)
        }
    }
}
";
    let ptx = compile_ptx("looped", text);
    assert!(ptx.contains("$L"), "a run-time loop: {ptx}");
    let shape = Shape {
        threads: 256,
        rows_per_block: 1,
        per_thread: 16,
    };
    let input = random_words(Ty::F32, ROWS * 4096, 13);
    let (report, out) = run(&ptx, "looped", shape, &input);
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    for (row, got) in out.iter().enumerate() {
        let want = expected("add", Ty::F32, &input[row * 4096..(row + 1) * 4096]);
        let got = f64::from(f32::from_bits(*got));
        assert!(
            (got - want).abs() < 1e-6 * 100.0 * 4096.0,
            "row {row}: {got} {want}"
        );
    }
    // One reduction in the loop's body: without its second barrier, the
    // next iteration's stores meet this one's loads.
    let (report, _) = run(&without_second_barrier(&ptx), "looped", shape, &input);
    assert!(races(&report), "{:#?}", report.findings);
}
