//! The example kernels end to end: every `examples/*.gph` parses, checks and
//! lowers; its PTX is pinned in `tests/golden/ptx/NAME.ptx` (`BLESS=1`
//! rewrites them); and it assembles with ptxas for every target of its
//! `// targets:` line, without spills, its SASS holding every opcode of its
//! `// sass:` line (on sm_70, which nvdisasm 13 cannot read, ptxas must link
//! no emulation routine instead).

mod ptx_support;
mod support;

use std::path::{Path, PathBuf};

use graphene::compile::{self, Options};
use graphene::ptx::{Arch, Module};

/// One example and what its header promises.
struct Example {
    name: String,
    source: String,
    targets: Vec<Arch>,
    sass: Vec<String>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn header_line<'a>(source: &'a str, key: &str) -> Option<&'a str> {
    source
        .lines()
        .take_while(|line| line.starts_with("//") || line.trim().is_empty())
        .find_map(|line| line.strip_prefix("//")?.trim().strip_prefix(key))
}

fn examples() -> Vec<Example> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .expect("examples/ exists")
        .map(|entry| entry.expect("readable").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "gph"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let source = std::fs::read_to_string(&path).expect("readable example");
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let targets = header_line(&source, "targets:")
                .unwrap_or_else(|| panic!("{name}: no `// targets:` line"))
                .split_whitespace()
                .map(|arch| arch.parse().unwrap_or_else(|e| panic!("{name}: {e}")))
                .collect();
            let sass = header_line(&source, "sass:")
                .unwrap_or_else(|| panic!("{name}: no `// sass:` line"))
                .split_whitespace()
                .map(str::to_string)
                .collect();
            Example {
                name,
                source,
                targets,
                sass,
            }
        })
        .collect()
}

fn compile(example: &Example, options: &Options) -> Module {
    // Named as from the repository's root, as `ptxgen examples/…` would
    // name it: the PTX header records the source, and the golden files
    // must not depend on where the checkout is.
    let file = format!("examples/{}.gph", example.name);
    compile::compile(&file, &example.source, options)
        .unwrap_or_else(|d| panic!("{}: does not compile: {d:#?}", example.name))
        .module
        .expect("PTX was asked for")
}

#[test]
fn every_example_promises_targets_and_sass_opcodes() {
    let all = examples();
    assert!(all.len() >= 7, "{} examples", all.len());
    for example in &all {
        assert!(!example.targets.is_empty(), "{}: no target", example.name);
        assert!(!example.sass.is_empty(), "{}: no SASS opcode", example.name);
        let teaches = example.source.contains("What it teaches");
        assert!(teaches, "{}: the header says what it teaches", example.name);
    }
}

/// Compares `text` with the golden file `name` (see `support::golden`).
fn golden(name: &str, text: &str) {
    support::golden::check(&support::golden::dir("ptx").join(name), text);
}

#[test]
fn example_ptx_matches_the_golden_files() {
    for example in examples() {
        let text = compile(&example, &Options::default()).to_ptx().unwrap();
        golden(&format!("{}.ptx", example.name), &text);
    }
}

#[test]
fn annotated_ptx_shows_each_source_line_above_its_instructions() {
    let example = examples()
        .into_iter()
        .find(|example| example.name == "ldmatrix_move")
        .expect("the ldmatrix example");
    let options = Options {
        annotate: true,
        ..Options::default()
    };
    let text = compile(&example, &options).to_ptx().unwrap();
    golden("ldmatrix_move.annotated.ptx", &text);
    let statement = "%11 <- Move<<<#3, #4>>>(%10)";
    let line = 1 + example
        .source
        .lines()
        .position(|line| line.trim() == statement)
        .expect("the paper's atomic move");
    let comment = text
        .lines()
        .position(|text| text.trim() == format!("// line {line}: {statement}"))
        .expect("the paper's atomic move is annotated");
    assert!(text.lines().nth(comment + 1).unwrap().contains("ldmatrix"));
}

#[test]
fn lowering_is_deterministic() {
    for example in examples() {
        let once = compile(&example, &Options::default()).to_ptx().unwrap();
        let again = compile(&example, &Options::default()).to_ptx().unwrap();
        assert!(once == again, "{}: two runs differ", example.name);
    }
}

#[test]
fn every_example_assembles_for_its_targets_with_the_promised_sass() {
    if !ptx_support::tools_available() {
        return;
    }
    for example in examples() {
        for arch in &example.targets {
            let options = Options {
                arch: Some(*arch),
                ..Options::default()
            };
            let module = compile(&example, &options);
            let expected: Vec<(&str, Vec<String>)> = module
                .entries
                .iter()
                .map(|entry| (entry.name.as_str(), example.sass.clone()))
                .collect();
            let checked = ptx_support::check_module(&module, *arch, &expected);
            assert!(checked.text.contains(&format!(".target {arch}")));
        }
    }
}
