//! The README's taste of the language is a working kernel: it compiles,
//! and it runs on the CPU executor and passes its check against its
//! contract, as the README says it does.

use graphene::compile::{Options, compile};
use graphene::launch::{DimArg, run_kernel_cpu, select};

/// The first fenced block after `## A taste` in README.md.
fn taste() -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let section = readme
        .split("## A taste")
        .nth(1)
        .expect("README.md has a `## A taste` section");
    let block = section.split("```").nth(1).expect("a fenced block");
    block
        .split_once('\n')
        .map(|(_, body)| body.to_string())
        .expect("a fenced block with a body")
}

#[test]
fn the_readme_taste_compiles_runs_and_checks() {
    let text = taste();
    let compiled = compile("bias_add.gph", &text, &Options::default())
        .unwrap_or_else(|d| panic!("the README's taste does not compile: {d:#?}"));
    let dims: Vec<DimArg> = ["N=1024", "M=8"]
        .iter()
        .map(|d| d.parse().expect("NAME=VALUE"))
        .collect();
    let selected = select(&compiled, None, &dims).expect("the dims fit");
    for one in &selected {
        let run = run_kernel_cpu(&compiled.text, &one.plan, &one.contract, 7, true)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(run.passed(), "{}", run.line());
    }
}
