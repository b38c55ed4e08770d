//! `docs/architecture.md` matches the code: every top-level module of
//! `src/` has a row in its table, the modules it uses (`crate::…` in its
//! code, tests left out) are in that row's "may use" column, and every file
//! of `src/` and `repl/src/` is named in its folder's line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn doc() -> String {
    std::fs::read_to_string(root().join("docs/architecture.md")).expect("docs/architecture.md")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The table's rows: module name → the names in its "may use" column.
fn table(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut rows = BTreeMap::new();
    for line in doc.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        let name = cells[0]
            .trim_start_matches("| `")
            .split('`')
            .next()
            .unwrap()
            .to_string();
        let may_use = cells.last().unwrap();
        let names = may_use
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        rows.insert(name, names);
    }
    rows
}

/// The top-level modules `code` names as `crate::NAME`, outside `//`
/// comments; the index expressions `crate::expr` are the IR's.
fn uses(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in code.lines() {
        let line = line.split("//").next().unwrap();
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            found.insert(if name == "expr" {
                "ir".to_string()
            } else {
                name
            });
        }
    }
    found
}

/// The code of a file up to its test module, if any.
fn without_tests(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |at| &text[..at])
}

#[test]
fn every_top_level_module_has_a_row_and_keeps_to_what_it_may_use() {
    let rows = table(&doc());
    let src = root().join("src");
    let mut modules: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter_map(|path| {
            let stem = path.file_stem()?.to_str()?.to_string();
            (path.is_dir() && stem != "bin"
                || path.extension().is_some_and(|e| e == "rs") && stem != "lib")
                .then_some(stem)
        })
        .collect();
    modules.sort();
    for module in &modules {
        let allowed = rows
            .get(module)
            .unwrap_or_else(|| panic!("src/{module} has no row in docs/architecture.md's table"));
        let mut files = Vec::new();
        let dir = src.join(module);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        } else {
            files.push(src.join(format!("{module}.rs")));
        }
        for file in files {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            if name == "tests.rs" || file.components().any(|c| c.as_os_str() == "tests") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for used in uses(without_tests(&text)) {
                assert!(
                    used == *module || allowed.contains(&used),
                    "{} uses `crate::{used}`, which `{module}` may not use (docs/architecture.md)",
                    file.display()
                );
            }
        }
    }
}

#[test]
fn every_file_is_named_in_its_folders_line() {
    let doc = doc();
    for base in ["src", "repl/src"] {
        let mut files = Vec::new();
        rust_files(&root().join(base), &mut files);
        for file in files {
            let relative = file.strip_prefix(root()).unwrap();
            let folder = relative.parent().unwrap().to_string_lossy().into_owned();
            let stem = relative.file_stem().unwrap().to_string_lossy().into_owned();
            let marker = format!("- **`{folder}/`**:");
            let line = doc
                .lines()
                .find(|line| line.starts_with(&marker))
                .unwrap_or_else(|| panic!("docs/architecture.md has no line for {folder}/"));
            assert!(
                line.contains(&format!("`{stem}`")),
                "{} is not named in docs/architecture.md's line for {folder}/",
                relative.display()
            );
        }
    }
}

#[test]
fn a_module_missing_from_the_table_is_found() {
    let rows = table("| `layout` | 0 | the algebra | — |\n| `atoms` | 0 | atoms | `layout` |\n");
    assert!(rows.contains_key("atoms") && !rows.contains_key("check"));
    assert_eq!(rows["atoms"], BTreeSet::from(["layout".to_string()]));
    assert_eq!(
        uses("use crate::expr::Expr; // crate::check"),
        BTreeSet::from(["ir".to_string()])
    );
}
