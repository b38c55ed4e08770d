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
