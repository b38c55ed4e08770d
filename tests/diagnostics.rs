//! Golden diagnostics: every `tests/golden/diagnostics/**/NAME.gph` is run
//! through the front end and its diagnostics, rendered without colour, must
//! equal `NAME.stderr` beside it. `BLESS=1 cargo test --test diagnostics`
//! rewrites the expected files. Subfolders group the cases by stage (`syntax/`,
//! `check/`); all are picked up.

mod support;

use std::path::{Path, PathBuf};

use graphene::check;
use graphene::compile::{self, Options};
use graphene::diag::{ColorChoice, Diagnostic, SourceMap};
use graphene::syntax::{codes, decode};
use support::golden::{self, Outcome};

/// The front end: the text to render against and the diagnostics of one
/// file, decoded, then parsed and checked by the driver.
fn front_end(name: &str, bytes: &[u8]) -> (String, Vec<Diagnostic>) {
    let src = match decode(bytes) {
        Ok(src) => src,
        Err(undecodable) => return (undecodable.text, vec![undecodable.diagnostic]),
    };
    let diagnostics = match compile::check(name, src, &Options::default()) {
        Ok(checked) => checked.warnings,
        Err(diagnostics) => diagnostics,
    };
    (src.to_string(), diagnostics)
}

fn root() -> PathBuf {
    support::golden::dir("diagnostics")
}

fn cases(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.expect("readable entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            cases(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "gph") {
            out.push(path);
        }
    }
}

/// The case's name as shown in its diagnostics: its path under
/// `tests/golden/diagnostics`, with `/` separators on every platform.
fn display_name(path: &Path) -> String {
    let relative = path.strip_prefix(root()).expect("case under the root");
    relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[test]
fn rendered_diagnostics_match_the_expected_files() {
    let mut paths = Vec::new();
    cases(&root(), &mut paths);
    assert!(paths.len() >= 40, "only {} cases found", paths.len());
    let mut mismatches = Vec::new();
    for path in &paths {
        let bytes = std::fs::read(path).expect("readable case");
        let name = display_name(path);
        let (src, diagnostics) = front_end(&name, &bytes);
        let mut files = SourceMap::new();
        let id = files.add(name.clone(), src.clone());
        let rendered = files.render(id, &diagnostics, ColorChoice::Never);
        let expected_path = path.with_extension("stderr");
        if let Outcome::Differs { expected } = golden::compare(&expected_path, &rendered) {
            mismatches.push((name, expected, rendered));
        }
    }
    if let Some((name, expected, rendered)) = mismatches.first() {
        let names: Vec<&str> = mismatches
            .iter()
            .map(|(name, _, _)| name.as_str())
            .collect();
        eprintln!("mismatched cases (rerun with BLESS=1 to accept): {names:?}");
        pretty_assertions::assert_eq!(expected, rendered, "{name}");
    }
}

/// Each bad program is rejected, and each of its messages is complete:
/// a location, the source line with an underline, and a concrete help.
#[test]
fn every_case_is_rejected_with_located_helpful_messages() {
    let mut paths = Vec::new();
    cases(&root(), &mut paths);
    for path in &paths {
        let bytes = std::fs::read(path).expect("readable case");
        let name = display_name(path);
        let (src, diagnostics) = front_end(&name, &bytes);
        assert!(
            !diagnostics.is_empty(),
            "{name}: accepted, but it is a bad program"
        );
        let mut files = SourceMap::new();
        let id = files.add(name.clone(), src.clone());
        for diagnostic in &diagnostics {
            let text = files.render(id, std::slice::from_ref(diagnostic), ColorChoice::Never);
            let (line, column) = files
                .line_column(id, diagnostic.primary.span.start)
                .expect("file");
            assert!(
                text.contains(&format!("--> {name}:{line}:{column}")),
                "{name}: no location in\n{text}"
            );
            assert!(text.contains(" | "), "{name}: no source line in\n{text}");
            assert!(text.contains('^'), "{name}: no underline in\n{text}");
            assert!(text.contains("= help: "), "{name}: no help in\n{text}");
        }
    }
}

/// Every syntax code is documented, has a case, and the syntax cases
/// produce syntax codes only.
#[test]
fn every_syntax_code_is_documented() {
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/diagnostics.md"))
            .expect("docs/diagnostics.md");
    for code in codes::ALL {
        assert!(
            docs.contains(&format!("`{code}`")),
            "{code} is not in docs/diagnostics.md"
        );
    }
    let mut paths = Vec::new();
    cases(&root().join("syntax"), &mut paths);
    let mut seen = std::collections::BTreeSet::new();
    for path in &paths {
        let bytes = std::fs::read(path).expect("readable case");
        for diagnostic in front_end("case.gph", &bytes).1 {
            assert!(
                codes::ALL.contains(&diagnostic.code),
                "unknown code {}",
                diagnostic.code
            );
            seen.insert(diagnostic.code);
        }
    }
    let unexercised: Vec<_> = codes::ALL
        .iter()
        .filter(|code| !seen.contains(*code))
        .collect();
    // Only the 4 GiB limit cannot be shown by a file in the repository.
    assert_eq!(
        unexercised,
        [&codes::TOO_LARGE],
        "codes without a golden case"
    );
}

/// Every checker code is documented and has a case under `check/` that
/// produces it (all but the `--define` error, which no file can show, and
/// the coverage note, which accompanies only files that check), and
/// the checker's cases produce checker codes only.
#[test]
fn every_checker_code_is_documented_and_exercised() {
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/diagnostics.md"))
            .expect("docs/diagnostics.md");
    for code in check::codes::ALL {
        assert!(
            docs.contains(&format!("| `{code}` |")),
            "{code} is not in the table of docs/diagnostics.md"
        );
    }
    let mut paths = Vec::new();
    cases(&root().join("check"), &mut paths);
    let mut seen = std::collections::BTreeSet::new();
    for path in &paths {
        let bytes = std::fs::read(path).expect("readable case");
        for diagnostic in front_end("case.gph", &bytes).1 {
            assert!(
                check::codes::ALL.contains(&diagnostic.code),
                "{}: {} is not a checker code",
                path.display(),
                diagnostic.code
            );
            seen.insert(diagnostic.code);
        }
    }
    let unexercised: Vec<_> = check::codes::ALL
        .iter()
        .filter(|code| !seen.contains(*code))
        .collect();
    // A note accompanies a file that checks, and the cases show the
    // diagnostics of files that fail: the coverage note has a unit test.
    assert_eq!(
        unexercised,
        [&check::codes::COVERAGE_NOT_PROVED],
        "codes without a golden case"
    );
}

/// Each checker case is named after the error it shows: its first
/// diagnostic is the one the case is about, and a case shows one error
/// unless it is about several.
#[test]
fn checker_cases_show_one_error_each() {
    let mut paths = Vec::new();
    cases(&root().join("check"), &mut paths);
    assert!(paths.len() >= 38, "only {} checker cases", paths.len());
    for path in &paths {
        let bytes = std::fs::read(path).expect("readable case");
        let (_, diagnostics) = front_end("case.gph", &bytes);
        let several = path
            .file_stem()
            .is_some_and(|stem| stem == "several_errors");
        assert!(
            several || diagnostics.len() == 1,
            "{}: {} diagnostics: {diagnostics:#?}",
            path.display(),
            diagnostics.len()
        );
    }
}
