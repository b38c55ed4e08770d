//! The layout algebra's documentation promise: every public function of
//! `src/layout` shows itself at work in a doc example (which `cargo test
//! --doc` then runs). Reads the sources, so a new function without an
//! example fails here, naming it.

use std::fs;
use std::path::Path;

/// The public functions of one source file whose doc comment has no code
/// block, as `file:line name`.
fn functions_without_examples(path: &Path) -> Vec<String> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let lines: Vec<&str> = text.lines().collect();
    let mut missing = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix("pub fn ") else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let doc = lines[..index]
            .iter()
            .rev()
            .map(|l| l.trim_start())
            .take_while(|l| l.starts_with("///") || l.starts_with("#["));
        let has_example = doc.into_iter().any(|l| l.starts_with("/// ```"));
        if !has_example {
            missing.push(format!("{}:{} {name}", path.display(), index + 1));
        }
    }
    missing
}

#[test]
fn every_public_algebra_function_has_a_doc_example() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/layout");
    let mut files: Vec<_> = fs::read_dir(&folder)
        .expect("src/layout is readable")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "the layout module's files: {files:?}");
    let missing: Vec<String> = files
        .iter()
        .flat_map(|path| functions_without_examples(path))
        .collect();
    assert!(
        missing.is_empty(),
        "public algebra functions without a doc example:\n{}",
        missing.join("\n")
    );
}

#[test]
fn a_function_without_an_example_is_reported() {
    let dir = std::env::temp_dir().join(format!("graphene-doc-examples-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sample.rs");
    fs::write(
        &file,
        "/// Shown.\n///\n/// ```\n/// assert!(true);\n/// ```\npub fn shown() {}\n\n/// Only words.\n#[must_use]\npub fn bare() -> u8 { 0 }\n",
    )
    .unwrap();
    let missing = functions_without_examples(&file);
    fs::remove_dir_all(&dir).ok();
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert!(missing[0].ends_with(":10 bare"), "{missing:?}");
}
