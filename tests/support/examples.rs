//! The example kernels, as the tests find them: every `examples/*.gph`,
//! sorted, named relative to the workspace root (`examples/gemm_f16.gph`).

use std::path::Path;

/// The examples' paths relative to the crate root, sorted.
pub fn paths() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the examples folder")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "gph"))
        .map(|path| format!("examples/{}", path.file_name().unwrap().to_string_lossy()))
        .collect();
    names.sort();
    names
}

/// `text` without its kernel variants (`kernel X = Y(…)` lines), for the
/// mutation tests: a variant checks and lowers its base's body again, so a
/// mutant of the body would cost as many checks and assemblies as the file
/// has variants. The variant syntax has its own goldens and round-trip
/// test; the examples tests check and assemble every variant unmutated.
pub fn without_variants(text: &str) -> String {
    text.lines()
        .filter(|line| {
            let words: Vec<&str> = line.split_whitespace().take(3).collect();
            !(words.len() == 3 && words[0] == "kernel" && words[2] == "=")
        })
        .map(|line| format!("{line}\n"))
        .collect()
}
