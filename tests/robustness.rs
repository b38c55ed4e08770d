//! Robustness of the whole compiler on generated inputs: no input makes the
//! front end (parse, then check) or the lowering panic or overflow the
//! stack, every rejected input gets at least one diagnostic whose spans lie
//! inside the input, every input the parser accepts prints to text that
//! parses back to the same tree, and every program the checker accepts is
//! lowered — for its default target and, when it is short, for sm_90 with
//! `--annotate` — and every third distinct entry of the PTX written is
//! assembled by ptxas: what the compiler accepts, ptxas must accept.
//!
//! Inputs (seeded, deterministic; about 400,000 per run): 45,000 random
//! byte strings, 45,000 random token soups over the grammar's vocabulary,
//! every truncation of the corpus (about 224,000), single-token mutations
//! of it (delete, duplicate, swap with the next, and a replacement by a
//! vocabulary token, two of the four per token, alternating: about
//! 85,000), and edge values for every integer of the checked programs
//! (about 1,600).
//! The corpus is the examples, the golden diagnostic cases and the programs
//! below, a unit per kernel ([`kernel_units`]: a mutant is its unit, not
//! its whole file, and a line a file's kernels repeat is mutated once).
//! Each test also tallies how far its inputs got — refused by the parser,
//! refused by the checker, accepted, lowered, assembled — and asserts the
//! stages the test is about were reached.
//!
//! Figures at the time of writing, with eight replacements per token and
//! every entry assembled (the test then took 15 minutes on 2 cores; with
//! three replacements and every other entry, 6.5): about 73,000 inputs are
//! accepted, 9,200 of them with a kernel (the rest, mostly truncations and
//! token soups, declare none and write no PTX); they give 8,900 lowerings
//! that write PTX and 1,100 refused with a diagnostic, and 2,200 distinct
//! entries, which ptxas assembles in about three and a half minutes on 2
//! cores (a GEMM's entry takes a third of a second, a small kernel's 25
//! ms). Inputs are checked, lowered and assembled on every core
//! (`std::thread::scope`).

use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Mutex;

mod support;

use support::parallel::in_parallel;

use graphene::compile::{Checked, Options, check, compile_checked};
use graphene::diag::Diagnostic;
use graphene::ptx::{Arch, TargetName, tools};
use graphene::syntax::{File, parse_file, print_file, strip_spans, tokenize};

/// What the front end made of one input.
enum Outcome {
    /// Rejected by the parser.
    Unparsed(Vec<Diagnostic>),
    /// Parsed; the checker's verdict (its diagnostics if it rejected it).
    Parsed(File, Result<Checked, Vec<Diagnostic>>),
}

/// The pipeline under test: parse, then check what parsed.
fn run_front_end(src: &str) -> Outcome {
    match parse_file("fuzz.gph", src) {
        Err(diagnostics) => Outcome::Unparsed(diagnostics),
        Ok(file) => {
            let checked = check("fuzz.gph", src, &Options::default());
            Outcome::Parsed(file, checked)
        }
    }
}

/// Whether the whole front end accepts `src`.
fn front_end(src: &str) -> Result<(), Vec<Diagnostic>> {
    match run_front_end(src) {
        Outcome::Unparsed(diagnostics) => Err(diagnostics),
        Outcome::Parsed(_, checked) => checked.map(|_| ()),
    }
}

/// Whether the parser accepts `src`.
fn parses(src: &str) -> bool {
    parse_file("fuzz.gph", src).is_ok()
}

/// SplitMix64: a small, well-mixed, seeded generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const VOCABULARY: [&str; 78] = [
    "%1",
    "%acc",
    "#4",
    "#t",
    "@i",
    "@m",
    "k",
    "M",
    "BM",
    "0",
    "8",
    "128",
    "1.5",
    "-",
    "_",
    "fp16",
    "FP32",
    "SH",
    "GL",
    "RF",
    "sh",
    "thread",
    "block",
    "Move",
    "MatMul",
    "Spec",
    "Init",
    "Reduction",
    "Shfl",
    "BinaryPointwise",
    "UnaryPointwise",
    "add",
    "relu",
    "bfly",
    "async",
    "overwrite",
    "tile",
    "reshape",
    "indices",
    "scalar",
    "Allocate",
    "Swizzle",
    "for",
    "if",
    "else",
    "sync",
    "async_commit",
    "async_wait",
    "mma_commit",
    "mma_wait",
    "kernel",
    "const",
    "let",
    "inf",
    "<<<",
    ">>>",
    "<-",
    "<=",
    "==",
    "&&",
    "||",
    "+=",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "<",
    ">",
    ",",
    ".",
    ":",
    ";",
    "=",
    "\n",
    "// c\n",
    "$",
];

/// A kernel the checker accepts that uses every construct: constants,
/// symbolic dims, parameters, swizzled shared memory, registers, tiles,
/// reshapes, indices, loops (one unrolled), a `let`, conditions, barriers,
/// asynchronous copies, and specs of every built-in kind.
const CHECKED: &str = "const BM = 64
const BK = 32

kernel everything {
    %a:[M, K].fp16.GL
    %out:[M].fp32.GL
    #b:[M/BM].block
    #t:[128].thread
    %out <- Spec<<<#b, #t>>>(%a) {
        %s:[BM,BK : BK,1].fp16.SH.Swizzle<2,3,3> = Allocate()
        %acc:[4].fp32.RF = Allocate()
        %x:[4].fp16.RF = Allocate()
        @bm = #b.indices()
        #rows:[64].[2].thread = #t.tile(2)
        @row, @half = #rows.indices()
        #warps = #t.tile(32).reshape(0, [2,2])
        (@wm, @wn), @lane = #warps.indices()
        %acc <- Init<0.0><<<#b, #t.scalar()>>>()
        for (k = 0; k < K/BK; k += 1) {
            %g = %a.tile([BM, BK])[@bm, k]
            %gr:[1,16].fp16.GL = %g.tile([1, 16])[@row, @half]
            %sr = %s.tile([1, 16])[@row, @half]
            %sr <- Move<async><<<#b, #t.scalar()>>>(%gr)
            async_commit
            async_wait(0)
            sync
            for (i = 0; i < 4; i += 1) {
                let col = i + 4 * @half
                %xi = %x[i]
                %xi <- Move<<<#b, #t.scalar()>>>(%s[@row, col])
                %ai = %acc[i]
                %ai <- BinaryPointwise<add><<<#b, #t.scalar()>>>(%ai, %xi)
            }
            sync
        }
        %acc <- UnaryPointwise<relu><<<#b, #t.scalar()>>>(%acc)
        %sum:[1].fp32.RF = Allocate()
        %sum <- Reduction<add, [0]><<<#b, #t.scalar()>>>(%acc)
        %sum <- Shfl<bfly, 16><<<#b, #warps>>>(%sum)
        if (@lane == 0 && @half == 0 || @wm > 1) {
            %o = %out.tile(BM)[@bm, _]
            %mine = %o[@row]
            %mine <- Move<<<#b, #t.scalar()>>>(%sum)
        } else {
            async_commit
        }
    }
}
";

const PROGRAMS: [&str; 4] = [
    "const BM = 128\nconst BK = BM/4\n\nkernel k {\n    %a:[M, K].fp16.GL\n    %s:[BM,BK : BK,1].fp16.SH.Swizzle<3,3,3> = Allocate()\n    #b:[M/BM].block\n    #t:[4,(2,4) : 8,(1,16)].thread\n    @w, (@x, _) = #t.indices()\n    for (k = 0; k < K/BK; k += 1) {\n        %s <- Move<async><<<#b, #t>>>(%a.tile([BM,BK])[@w, k])\n        async_commit\n        async_wait(0)\n        sync\n    }\n}\n",
    "%x:[8].fp32.RF\n#b:[1].block\n#t:[32].thread\n%x <- Init<-inf><<<#b, #t>>>()\n%y:[].fp32.RF\n%y <- Reduction<max, [0]><<<#b, #t.scalar()>>>(%x)\n%y <- Shfl<bfly, 16><<<#b, #t>>>(%y)\nif (@i < 4 && (k == 0 || M % 2 != 1)) {\n    %y <- UnaryPointwise<exp2><<<#b, #t>>>(%y)\n} else if (@i >= 8) {\n    sync\n} else {\n    %z = %x.reshape([2,4])[(0, _), -k+1]\n}\n",
    "%c, %d <- Spec<<<#g.tile(2), #t.reshape(0, [2,2 : 2,1])>>>(%a, %b) {\n    %c <- MatMul<overwrite><<<#g, #t>>>(%a, %b)\n    %d <- BinaryPointwise<min><<<#g, #t>>>(%c, %a)\n}\n",
    "#5:[4].[8].thread = #4.tile(8)\n#6:[2,2].[8].thread = #5.reshape(0, [2,2])\n%7:[2,2 : 1,8].[2,(2,2) : 2,(4,16)].fp32.GL = %1.tile([2:2], [2,2 : 1,4], _, 4)\n",
];

/// One text of the corpus to truncate and mutate.
struct Unit {
    text: String,
    /// Where the text starts to be its own (see [`kernel_units`]):
    /// truncations and mutations start there.
    from: usize,
    /// Which file (or program) it comes from.
    file: usize,
}

/// The corpus: the programs above, then the examples and the golden
/// diagnostic cases, a unit per kernel.
fn corpus() -> Vec<Unit> {
    let mut texts: Vec<String> = PROGRAMS.iter().map(|text| text.to_string()).collect();
    texts.push(CHECKED.to_string());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in [
        "examples",
        "tests/golden/diagnostics/syntax",
        "tests/golden/diagnostics/check",
    ] {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(dir))
            .expect("corpus folder")
            .map(|entry| entry.expect("entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "gph"))
            .collect();
        paths.sort();
        texts.extend(paths.iter().map(|path| {
            support::examples::without_variants(&String::from_utf8_lossy(
                &std::fs::read(path).expect("readable"),
            ))
        }));
    }
    texts
        .iter()
        .enumerate()
        .flat_map(|(file, text)| {
            kernel_units(text)
                .into_iter()
                .map(move |(text, from)| Unit { text, from, file })
        })
        .collect()
}

/// `text` cut into units of one kernel each: every line outside a kernel
/// (constants, comments, top-level statements) followed by one kernel's
/// lines, with the offset from which the unit is its own: the first unit
/// from 0, the others from their kernel (their shared lines are the first
/// unit's). Mutating a whole file costs in proportion to the square of its
/// length (a mutant is the file again, and an accepted one lowers every
/// kernel in it), so the examples with seven or eight kernels are mutated a
/// kernel at a time, and the lines the kernels share once; kernels do not
/// refer to each other, so each unit checks as its file does. A file with
/// no kernel is one unit.
fn kernel_units(text: &str) -> Vec<(String, usize)> {
    let mut shared = String::new();
    let mut kernels: Vec<String> = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if !inside && line.starts_with("kernel ") {
            inside = true;
            kernels.push(String::new());
        }
        match kernels.last_mut() {
            Some(kernel) if inside => {
                kernel.push_str(line);
                kernel.push('\n');
            }
            _ => {
                shared.push_str(line);
                shared.push('\n');
            }
        }
        if inside && line == "}" {
            inside = false;
        }
    }
    if kernels.is_empty() {
        return vec![(shared, 0)];
    }
    kernels
        .iter()
        .enumerate()
        .map(|(at, kernel)| {
            let from = if at == 0 { 0 } else { shared.len() };
            (format!("{shared}{kernel}"), from)
        })
        .collect()
}

/// How far an input that kept the contract got through the front end.
enum Reached {
    /// The parser rejected it, with diagnostics inside the input.
    Parser,
    /// It parsed and printed back; the checker rejected it, with diagnostics.
    Checker,
    /// The whole front end accepted it, and it printed back.
    Accepted(Checked),
}

/// How many inputs ended at each stage: what the contract was checked on.
/// Lowerings count once per target asked for; `assembled` counts distinct
/// entries (see [`check_all`]).
#[derive(Debug, Default)]
struct Tally {
    parser: usize,
    checker: usize,
    accepted: usize,
    /// Accepted programs with at least one kernel (the others have no PTX).
    with_kernels: usize,
    /// Lowerings that wrote PTX.
    lowered: usize,
    /// Lowerings refused with diagnostics inside the input.
    refused_by_lowering: usize,
    /// Distinct entries (a target, the module's header and one `.entry`)
    /// among the PTX written.
    distinct_entries: usize,
    /// Those of them ptxas assembled (every [`ASSEMBLE_EVERY`]-th, when it is
    /// installed).
    assembled: usize,
}

/// Runs the front end on `src` and checks the contract; how far the input
/// got, or a description of the violation.
fn verdict(src: &str) -> Result<Reached, String> {
    let outcome = match catch_unwind(AssertUnwindSafe(|| run_front_end(src))) {
        Ok(outcome) => outcome,
        // The panic's own message went to this test's captured output.
        Err(_) => return Err("panicked".to_string()),
    };
    let rejected = |diagnostics: &[Diagnostic]| misplaced(src, diagnostics);
    let broken = |problem: Option<String>, reached| problem.map_or(Ok(reached), Err);
    match outcome {
        Outcome::Unparsed(diagnostics) => broken(rejected(&diagnostics), Reached::Parser),
        Outcome::Parsed(file, checked) => {
            let text = print_file(&file);
            let round_trip = match parse_file("fuzz.gph", &text) {
                Ok(again) if strip_spans(again.clone()) == strip_spans(file) => None,
                Ok(_) => Some(format!(
                    "accepted, but its printed form parses differently:\n{text}"
                )),
                Err(_) => Some(format!(
                    "accepted, but its printed form is rejected:\n{text}"
                )),
            };
            match checked {
                Ok(checked) => broken(round_trip, Reached::Accepted(checked)),
                Err(diagnostics) => broken(
                    round_trip.or_else(|| rejected(&diagnostics)),
                    Reached::Checker,
                ),
            }
        }
    }
}

/// What is wrong with the diagnostics `src` was refused with: none at all,
/// or a span outside the input.
fn misplaced(src: &str, diagnostics: &[Diagnostic]) -> Option<String> {
    if diagnostics.is_empty() {
        return Some("rejected without a diagnostic".to_string());
    }
    diagnostics
        .iter()
        .flat_map(Diagnostic::spans)
        .find_map(|span| {
            let inside = span.start <= span.end
                && (span.end as usize) <= src.len()
                && src.is_char_boundary(span.start as usize)
                && src.is_char_boundary(span.end as usize);
            (!inside).then(|| format!("span {span} outside the input of {} bytes", src.len()))
        })
}

/// The violation of the contract by `src`, if any.
fn violation(src: &str) -> Option<String> {
    verdict(src).err()
}

/// Programs at most this long are lowered a second time, for
/// [`SECOND_ARCH`] with `--annotate`: the corpus's large kernels (the
/// GEMMs, 10–16 KB) take tens of milliseconds a lowering, the rest a
/// fraction of one.
const SECOND_ARCH_MAX_BYTES: usize = 4096;

/// The second target: a requested architecture above the default one, on
/// the newest backend of ptxas (the default target is the lowest that has
/// every instruction used).
const SECOND_ARCH: Arch = Arch::Sm90;

/// The distinct entries of the PTX written so far, each with the index of
/// the first input (in input order) that produced it.
type Entries = Mutex<HashMap<(TargetName, String), usize>>;

/// Each `.entry` of `ptx` as a module of its own: the header (`.version`,
/// `.target`, every module-scope declaration) followed by that entry. Most
/// mutants change one kernel of a file, so its other kernels are assembled
/// once for all of them.
fn entries_of(ptx: &str) -> Vec<String> {
    const START: &str = "\n.visible .entry ";
    let mut parts = ptx.split(START);
    let header = parts.next().unwrap_or_default();
    parts
        .map(|entry| format!("{header}{START}{entry}"))
        .collect()
}

/// Lowers an accepted program for its default target and, when it is short,
/// for [`SECOND_ARCH`]; records the distinct entries of the PTX written.
/// A panic or a refusal without a diagnostic inside the input is a
/// violation.
fn lower_all(
    src: &str,
    index: usize,
    checked: Checked,
    entries: &Entries,
    tally: &mut Tally,
) -> Result<(), String> {
    let mut requests = vec![Options::default()];
    if src.len() <= SECOND_ARCH_MAX_BYTES {
        requests.push(Options {
            arch: Some(SECOND_ARCH),
            annotate: true,
            ..Options::default()
        });
    }
    for options in requests {
        let arch = options.arch;
        let lowered = catch_unwind(AssertUnwindSafe(|| {
            compile_checked("fuzz.gph", src, checked.clone(), &options)
        }))
        .map_err(|_| format!("the lowering panicked ({arch:?})"))?;
        let compiled = match lowered {
            Ok(compiled) => compiled,
            Err(diagnostics) => match misplaced(src, &diagnostics) {
                Some(problem) => return Err(format!("lowering ({arch:?}): {problem}")),
                None => {
                    tally.refused_by_lowering += 1;
                    continue;
                }
            },
        };
        let target = match compiled.module.as_ref().map(|module| module.target()) {
            Some(Ok(target)) => target.name(),
            _ => return Err(format!("accepted ({arch:?}) without a module and target")),
        };
        let ptx = compiled.ptx().ok_or("accepted without PTX")?;
        tally.lowered += 1;
        let mut entries = entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for entry in entries_of(ptx) {
            let first = entries.entry((target, entry)).or_insert(index);
            *first = (*first).min(index);
        }
    }
    Ok(())
}

/// Checks every input, failing with the first few violations; how far the
/// inputs got, so that each test can show its inputs reach the stages it
/// is about (a fuzzer whose inputs all stop at the first token checks
/// little).
///
/// Every input the front end accepts is lowered too ([`lower_all`]), and
/// every [`ASSEMBLE_EVERY`]-th distinct entry of the PTX written is
/// assembled by ptxas for the module's target: what the compiler accepts,
/// ptxas must accept. Many mutants lower to the same PTX (a changed name, a
/// kernel the mutation did not touch), so each distinct text counts once,
/// on behalf of the first input that wrote it.
fn check_all(inputs: impl IntoIterator<Item = String>) -> Tally {
    let inputs: Vec<String> = inputs.into_iter().collect();
    let entries = Entries::default();
    let verdicts = in_parallel(inputs.len(), |index| {
        let src = &inputs[index];
        let mut tally = Tally::default();
        match verdict(src)? {
            Reached::Parser => tally.parser += 1,
            Reached::Checker => tally.checker += 1,
            Reached::Accepted(checked) => {
                tally.accepted += 1;
                if !checked.program.kernels.is_empty() {
                    tally.with_kernels += 1;
                    lower_all(src, index, checked, &entries, &mut tally)?;
                }
            }
        }
        Ok::<Tally, String>(tally)
    });
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    for (input, verdict) in inputs.iter().zip(verdicts) {
        match verdict {
            Ok(one) => {
                tally.parser += one.parser;
                tally.checker += one.checker;
                tally.accepted += one.accepted;
                tally.with_kernels += one.with_kernels;
                tally.lowered += one.lowered;
                tally.refused_by_lowering += one.refused_by_lowering;
            }
            Err(problem) if failures.len() < 5 => {
                failures.push(format!("{problem}\ninput: {input:?}"));
            }
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    let mut entries: Vec<((TargetName, String), usize)> = entries
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .into_iter()
        .collect();
    entries.sort_by(|a, b| (a.1, &a.0.1).cmp(&(b.1, &b.0.1)));
    tally.distinct_entries = entries.len();
    let started = std::time::Instant::now();
    tally.assembled = assemble_all(&inputs, &entries);
    println!("{tally:?} (ptxas: {:.1?})", started.elapsed());
    tally
}

/// Every this-many-th distinct entry (in the order of the inputs that first
/// wrote them) is assembled: ptxas was this test's largest part, about 2,200
/// entries at a third of a second for a GEMM's.
const ASSEMBLE_EVERY: usize = 3;

/// Assembles every [`ASSEMBLE_EVERY`]-th entry with ptxas, failing with the
/// first few refusals (each with the input that wrote it); how many were
/// assembled (none when ptxas is not installed, which is a visible skip).
fn assemble_all(inputs: &[String], entries: &[((TargetName, String), usize)]) -> usize {
    if entries.is_empty() {
        return 0;
    }
    let ptxas = match tools::ptxas_path() {
        Ok(ptxas) => ptxas,
        Err(error) => {
            support::skip::skip_without_tools(&format!(
                "accepted programs are lowered but not assembled: {error}"
            ));
            return 0;
        }
    };
    let sample: Vec<_> = entries.iter().step_by(ASSEMBLE_EVERY).collect();
    let refusals: Vec<String> = in_parallel(sample.len(), |index| {
        let ((target, ptx), input) = sample[index];
        tools::assemble_with(&ptxas, ptx, *target)
            .err()
            .map(|error| {
                format!(
                    "ptxas refused what the compiler accepted ({target}): {error}\ninput: {:?}",
                    inputs[*input]
                )
            })
    })
    .into_iter()
    .flatten()
    .take(5)
    .collect();
    assert!(refusals.is_empty(), "{}", refusals.join("\n\n"));
    sample.len()
}

#[test]
fn random_bytes() {
    let mut rng = Rng(0x5EED_0001);
    let inputs = (0..45_000).map(move |_| {
        let len = rng.below(48);
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                // Mostly printable ASCII, sometimes anything.
                if rng.below(8) == 0 {
                    rng.next() as u8
                } else {
                    b' ' + rng.below(95) as u8
                }
            })
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    });
    let tally = check_all(inputs);
    // Almost all are refused by the parser, which is the contract's point here.
    assert!(tally.parser > 0, "{tally:?}");
}

#[test]
fn token_soups() {
    let mut rng = Rng(0x5EED_0002);
    let inputs = (0..45_000).map(move |_| {
        let len = rng.below(24);
        (0..len)
            .map(|_| VOCABULARY[rng.below(VOCABULARY.len())])
            .collect::<Vec<_>>()
            .join(" ")
    });
    let tally = check_all(inputs);
    // Soups over the grammar's words get past the parser to the checker too.
    assert!(
        tally.parser > 0 && tally.checker > 0 && tally.accepted > 0,
        "{tally:?}"
    );
}

#[test]
fn every_truncation_of_the_corpus() {
    let inputs: Vec<String> = corpus()
        .iter()
        .flat_map(|unit| {
            let text = &unit.text;
            text.char_indices()
                .filter(|&(at, _)| at >= unit.from)
                .map(|(at, _)| text[..at].to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    let tally = check_all(inputs);
    assert!(
        tally.parser > 0 && tally.checker > 0 && tally.accepted > 0,
        "{tally:?}"
    );
    // Accepted programs reach the lowering, and it both writes and refuses.
    assert!(
        tally.lowered > 0 && tally.refused_by_lowering > 0,
        "{tally:?}"
    );
}

#[test]
fn single_token_mutations_of_the_corpus() {
    let mut rng = Rng(0x5EED_0003);
    let mut inputs = Vec::new();
    // Lines of three tokens or more already mutated in an earlier kernel of
    // the same file: a file's kernels are variants of one another (split-K,
    // batched, bf16 …) and repeat most of their lines, so each line is
    // mutated once per file; short lines (`}`, `sync`, `} else {`) are
    // mutated wherever they stand.
    let mut seen: HashSet<(usize, String)> = HashSet::new();
    for Unit { text, from, file } in corpus() {
        let own = &text[from..];
        let fresh: HashSet<&str> = own
            .lines()
            .map(str::trim)
            .filter(|line| tokenize(line).len() < 3 || !seen.contains(&(file, line.to_string())))
            .collect();
        seen.extend(own.lines().map(|line| (file, line.trim().to_string())));
        let tokens = tokenize(&text);
        for (index, token) in tokens.iter().enumerate() {
            let range = token.span.range();
            let line_start = text[..range.start].rfind('\n').map_or(0, |at| at + 1);
            let line_end = text[range.start..]
                .find('\n')
                .map_or(text.len(), |at| range.start + at);
            if range.start < from || !fresh.contains(text[line_start..line_end].trim()) {
                continue;
            }
            let splice = |replacement: &str| {
                format!(
                    "{}{replacement}{}",
                    &text[..range.start],
                    &text[range.end..]
                )
            };
            // Each token gets two of the four kinds of mutation, the pair
            // alternating from one token to the next (deleted and swapped
            // with its neighbour, or doubled and replaced by a random
            // token): every kind meets every line of three tokens or more,
            // at two inputs a token where all four, with two random
            // replacements, made five.
            if index % 2 == 0 {
                inputs.push(splice(""));
                if let Some(next) = tokens.get(index + 1) {
                    let next_range = next.span.range();
                    inputs.push(format!(
                        "{}{}{}{}{}",
                        &text[..range.start],
                        &text[next_range.clone()],
                        &text[range.end..next_range.start],
                        &text[range.clone()],
                        &text[next_range.end..]
                    ));
                }
            } else {
                inputs.push(splice(&format!("{0} {0}", &text[range.clone()])));
                inputs.push(splice(VOCABULARY[rng.below(VOCABULARY.len())]));
            }
        }
    }
    let tally = check_all(inputs);
    assert!(
        tally.parser > 0 && tally.checker > 0 && tally.accepted > 0,
        "{tally:?}"
    );
    // Accepted programs reach the lowering, and it both writes and refuses.
    assert!(
        tally.lowered > 0 && tally.refused_by_lowering > 0,
        "{tally:?}"
    );
}

/// Inputs far deeper than any program: refused with a diagnostic, not a
/// crash, on a test thread's ordinary stack.
#[test]
fn deep_nesting_is_refused_not_a_stack_overflow() {
    let deep = [
        "(".repeat(10_000),
        format!("%1:[{}1{}].fp32.GL", "(".repeat(10_000), ")".repeat(10_000)),
        format!("%1 = %2[{}]", "[".repeat(10_000)),
        "kernel k { ".to_string() + &"if (k < 1) { ".repeat(10_000),
        format!("const X = {}1", "-".repeat(10_000)),
        format!("const X = 1{}", "+1".repeat(10_000)),
        format!("%1 = %2{}", ".scalar()".repeat(10_000)),
        format!("if (k < 1) {{}}{}", " else if (k < 1) {}".repeat(10_000)),
        format!("if ({}k < 1) {{}}", "k < 1 && ".repeat(10_000)),
    ];
    for src in &deep {
        assert!(
            violation(src).is_none(),
            "{}",
            violation(src).unwrap_or_default()
        );
    }
    // A long `else if` chain is flat, so it is parsed.
    assert!(parses(&deep[7]));
    // The limits themselves are reachable on an ordinary stack.
    let at_limit = format!(
        "{}%1:[{}1{}].fp32.GL{}",
        "if (k < 1) {".repeat(8),
        "(".repeat(graphene::syntax::MAX_NESTING - 10),
        ")".repeat(graphene::syntax::MAX_NESTING - 10),
        "}".repeat(8)
    );
    assert!(parses(&at_limit), "{:?}", front_end(&at_limit).err());
    let long_sum = format!(
        "const X = 1{}",
        "+1".repeat(graphene::syntax::MAX_EXPR_DEPTH as usize - 1)
    );
    assert!(front_end(&long_sum).is_ok());
}

/// The examples and a kernel over every construct pass the whole front end;
/// the mutations above start from programs the checker accepts.
#[test]
fn the_corpus_programs_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for example in ["ldmatrix_move.gph", "simple_gemm.gph"] {
        let text = std::fs::read_to_string(root.join("examples").join(example)).expect("example");
        assert!(
            front_end(&text).is_ok(),
            "{example}: {:?}",
            front_end(&text).err()
        );
    }
    assert!(front_end(CHECKED).is_ok(), "{:?}", front_end(CHECKED).err());
}

/// Every integer literal of the checked programs replaced by values at the
/// edges (zero, negative, past 32 and 64 bits): errors, never panics.
#[test]
fn extreme_integers_in_checked_programs() {
    const EXTREMES: [&str; 9] = [
        "0",
        "1",
        "-1",
        "3",
        "1025",
        "4294967296",
        "9223372036854775807",
        "(0-9223372036854775807-1)",
        "M",
    ];
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = vec![CHECKED.to_string()];
    for example in ["ldmatrix_move.gph", "simple_gemm.gph"] {
        sources
            .push(std::fs::read_to_string(root.join("examples").join(example)).expect("example"));
    }
    let mut inputs = Vec::new();
    for text in &sources {
        for token in tokenize(text) {
            let range = token.span.range();
            if !text[range.clone()].bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            for value in EXTREMES {
                inputs.push(format!(
                    "{}{value}{}",
                    &text[..range.start],
                    &text[range.end..]
                ));
            }
        }
    }
    let tally = check_all(inputs);
    // Each edge value parses; the checker refuses some and accepts others,
    // and the lowering of those writes PTX for some and refuses others.
    assert!(tally.checker > 0 && tally.accepted > 0, "{tally:?}");
    assert!(
        tally.lowered > 0 && tally.refused_by_lowering > 0,
        "{tally:?}"
    );
}

/// Loops nested as deep as the parser allows, each bounded by the one
/// outside it: checked in time linear in the depth.
#[test]
fn deep_loop_nests_check_quickly() {
    let depth = graphene::syntax::MAX_NESTING - 4;
    let mut src =
        String::from("%r:[8].fp32.RF\n#b:[1].block\n#t:[32].thread\n%r <- Spec<<<#b, #t>>>() {\n");
    for level in 0..depth {
        let outer = if level == 0 {
            "0".to_string()
        } else {
            format!("v{}", level - 1)
        };
        src.push_str(&format!(
            "for (v{level} = {outer}; v{level} < {outer} + 2; v{level} += 1) {{\n"
        ));
    }
    src.push_str(&format!("%e = %r[v{} % 8]\n", depth - 1));
    src.push_str(&"}\n".repeat(depth + 1));
    let started = std::time::Instant::now();
    assert!(violation(&src).is_none(), "{:?}", violation(&src));
    assert!(
        started.elapsed().as_secs() < 5,
        "took {:?}",
        started.elapsed()
    );
}
