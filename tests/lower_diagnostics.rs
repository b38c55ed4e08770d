//! Golden diagnostics of the lowering: every
//! `tests/golden/lower_diagnostics/NAME.gph` parses and checks clean, then fails to lower; its diagnostics, rendered
//! without colour, must equal `NAME.stderr` beside it (`BLESS=1` rewrites
//! them). A first line `// arch: sm_XX` compiles for that target.
//! Among them: deliberately unsupported specs, which must give the "no
//! instruction matches" diagnostic (E0300) with its candidates.

mod support;

use std::path::PathBuf;

use graphene::compile::{Options, check, compile};
use graphene::diag::{ColorChoice, Diagnostic, SourceMap};
use graphene::lower::codes;
use pretty_assertions::assert_eq;

fn root() -> PathBuf {
    support::golden::dir("lower_diagnostics")
}

fn cases() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root())
        .expect("tests/golden/lower_diagnostics exists")
        .map(|entry| entry.expect("readable").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "gph"))
        .collect();
    paths.sort();
    paths
}

fn diagnostics(name: &str, src: &str) -> Vec<Diagnostic> {
    let arch = src
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("// arch:"))
        .map(|arch| arch.trim().parse().expect("a valid arch line"));
    let options = Options {
        arch,
        ..Options::default()
    };
    if let Err(d) = check(name, src, &options) {
        panic!("{name} does not check: {d:#?}");
    }
    match compile(name, src, &options) {
        Ok(_) => panic!("{name} lowers, but its case expects diagnostics"),
        Err(diagnostics) => diagnostics,
    }
}

#[test]
fn lowering_diagnostics_match_the_expected_files() {
    let paths = cases();
    assert!(paths.len() >= 5, "only {} cases", paths.len());
    for path in paths {
        let src = std::fs::read_to_string(&path).expect("readable case");
        // The name the pinned renderings show: where the cases lived when
        // they were written, kept so that the expected files stay as they are.
        let name = format!(
            "tests/lower_diagnostics/{}",
            path.file_name().unwrap().to_string_lossy()
        );
        let found = diagnostics(&name, &src);
        let mut files = SourceMap::new();
        let id = files.add(name.clone(), src.clone());
        let rendered = files.render(id, &found, ColorChoice::Never);
        support::golden::check(&path.with_extension("stderr"), &rendered);
    }
}

#[test]
fn unsupported_specs_name_the_nearest_instructions_and_why() {
    let path = root().join("ldmatrix_column_major.gph");
    let src = std::fs::read_to_string(&path).unwrap();
    let found = diagnostics("ldmatrix_column_major.gph", &src);
    assert_eq!(found.len(), 1);
    let diagnostic = &found[0];
    assert_eq!(diagnostic.code, codes::NO_INSTRUCTION);
    assert!(
        diagnostic.message.contains("`Move`"),
        "{}",
        diagnostic.message
    );
    assert!(
        diagnostic.message.contains("[32 : 1].thread"),
        "{}",
        diagnostic.message
    );
    let first = &diagnostic.notes[0];
    assert!(
        first.starts_with("`ldmatrix.sync.aligned.m8n8.x4"),
        "{first}"
    );
    assert!(first.contains("element 1 is at offset +16"), "{first}");
    // Both operands are labelled with their full types.
    let labels: Vec<&str> = diagnostic
        .secondary
        .iter()
        .map(|l| l.message.as_str())
        .collect();
    assert!(
        labels
            .iter()
            .any(|l| l.starts_with("output: [2,2 : 4,2].[1,2 : 4,1].fp16.RF")),
        "{labels:?}"
    );
    assert!(
        labels
            .iter()
            .any(|l| l.starts_with("input: [1,8 : 1,16].fp16.SH")),
        "{labels:?}"
    );
}

#[test]
fn every_failing_spec_of_a_kernel_is_reported() {
    let src = std::fs::read_to_string(root().join("two_failures.gph")).unwrap();
    let found = diagnostics("two_failures.gph", &src);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found.iter().all(|d| d.code == codes::NO_INSTRUCTION));
    assert!(found[0].primary.span.start < found[1].primary.span.start);
}
