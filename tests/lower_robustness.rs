//! Robustness of the lowering: mutated versions of the examples and of the
//! lowering's diagnostic cases (every token deleted in turn, every number
//! replaced by other sizes) that still parse and check are lowered for
//! several targets. The lowering must never panic; a rejection has at least
//! one diagnostic whose spans lie inside the input; an accepted program
//! writes as PTX, and a sample of the accepted ones (every
//! [`ASSEMBLE_EVERY`]-th) is assembled by ptxas for the module's own target:
//! what the compiler accepts, ptxas must accept.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

mod support;

use support::parallel::in_parallel;

use graphene::compile::{Options, check, compile, compile_checked};
use graphene::ptx::{Arch, tools};
use graphene::syntax::tokenize;

/// Sizes that make shapes odd, tiny, huge, misaligned or exact.
const SIZES: [&str; 10] = ["0", "1", "2", "3", "7", "8", "16", "64", "4096", "1000000"];

fn corpus() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut texts = Vec::new();
    for dir in ["examples", "tests/golden/lower_diagnostics"] {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|entry| entry.unwrap().path())
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
}

/// At most this many mutants of one file: a large kernel (the GEMM has ~3,000
/// tokens) would otherwise dominate the run; an even spread of positions keeps
/// every part of the file covered. (800 took this test to eight minutes of the
/// suite's thirty once the examples passed twenty files.)
const MUTANTS_PER_FILE: usize = 250;

/// Every `stride`-th mutant, so that at most [`MUTANTS_PER_FILE`] remain.
fn spread(mutants: Vec<String>) -> Vec<String> {
    let stride = mutants.len().div_ceil(MUTANTS_PER_FILE).max(1);
    mutants.into_iter().step_by(stride).collect()
}

fn mutations(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for token in tokenize(text) {
        let range = token.span.range();
        let splice = |replacement: &str| {
            format!(
                "{}{replacement}{}",
                &text[..range.start],
                &text[range.end..]
            )
        };
        out.push(splice(""));
        if text[range.clone()].bytes().all(|b| b.is_ascii_digit()) {
            out.extend(SIZES.iter().map(|size| splice(size)));
        }
    }
    out
}

/// Every this-many-th accepted mutant is assembled by ptxas (a few hundred
/// per run: ptxas takes tens of milliseconds a module).
const ASSEMBLE_EVERY: usize = 16;

/// Assembles the PTX of an accepted mutant for the target its module
/// names; a refusal is a compiler bug (it accepted what ptxas refuses).
fn assembles(src: &str, arch: Option<Arch>) {
    let options = Options {
        arch,
        annotate: true,
        ..Options::default()
    };
    let compiled = compile("mutant.gph", src, &options).expect("accepted before");
    let module = compiled.module.as_ref().expect("a lowered module");
    let target = module.target().expect("a target").name();
    let ptx = compiled.ptx().expect("PTX");
    if let Err(error) = tools::assemble(ptx, target) {
        panic!("ptxas refused an accepted program ({arch:?}, {target}): {error}\n{src}");
    }
}

/// Lowers `src` if it checks; `Some(accepted)` then, `None` if the front
/// end rejects it.
fn lower(src: &str, arch: Option<Arch>) -> Option<bool> {
    let options = Options {
        arch,
        annotate: true,
        ..Options::default()
    };
    let checked = check("mutant.gph", src, &options).ok()?;
    match compile_checked("mutant.gph", src, checked, &options) {
        Ok(compiled) => {
            assert!(
                compiled.ptx().is_some(),
                "an accepted program has no PTX:\n{src}"
            );
            Some(true)
        }
        Err(diagnostics) => {
            assert!(
                !diagnostics.is_empty(),
                "rejected without a diagnostic:\n{src}"
            );
            for diagnostic in &diagnostics {
                for span in diagnostic.spans() {
                    assert!(
                        span.end as usize <= src.len(),
                        "span {span} outside the input: {diagnostic}\n{src}"
                    );
                }
            }
            Some(false)
        }
    }
}

#[test]
fn mutated_programs_never_make_the_lowering_panic_and_assemble() {
    let ptxas = tools::ptxas_path().is_ok();
    if !ptxas {
        support::skip::skip_without_tools(
            "ptxas is not installed: accepted mutants are not assembled",
        );
    }
    let mutants: Vec<String> = corpus()
        .iter()
        .flat_map(|text| spread(mutations(text)))
        .collect();
    let inputs = mutants.len();
    // Each mutant's outcome per target, on every core, in mutant order.
    let outcomes = in_parallel(inputs, |index| {
        let mutant = &mutants[index];
        let mut outcome = Vec::new();
        for arch in [None, Some(Arch::Sm70)] {
            match catch_unwind(AssertUnwindSafe(|| lower(mutant, arch))) {
                Ok(Some(accepted)) => outcome.push((arch, accepted)),
                Ok(None) => break,
                Err(_) => return Err(format!("the lowering panicked ({arch:?}) on:\n{mutant}")),
            }
        }
        Ok(outcome)
    });
    let (mut lowered, mut rejected) = (0, 0);
    let mut to_assemble = Vec::new();
    for (index, outcome) in outcomes.into_iter().enumerate() {
        for (arch, accepted) in outcome.unwrap_or_else(|problem| panic!("{problem}")) {
            if !accepted {
                rejected += 1;
                continue;
            }
            lowered += 1;
            if ptxas && lowered % ASSEMBLE_EVERY == 0 {
                to_assemble.push((index, arch));
            }
        }
    }
    let assembled = in_parallel(to_assemble.len(), |at| {
        let (index, arch) = to_assemble[at];
        assembles(&mutants[index], arch);
    })
    .len();
    println!(
        "{inputs} mutants: {lowered} lowerings accepted ({assembled} assembled by ptxas), {rejected} rejected"
    );
    assert!(lowered > 100 && rejected > 100, "{lowered} / {rejected}");
    assert!(
        !ptxas || assembled * ASSEMBLE_EVERY >= lowered - ASSEMBLE_EVERY,
        "{assembled} of {lowered}"
    );
}
