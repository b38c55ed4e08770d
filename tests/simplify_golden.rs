//! Golden files for index-expression simplification: each
//! `tests/golden/simplify/NAME.txt` lists facts and expressions; beside it
//! `NAME.out` pins, per expression, its simplified and strength-reduced
//! forms, node counts and analyses. `BLESS=1 cargo test --test
//! simplify_golden` rewrites the `.out` files. Every pinned rewrite is also
//! checked by evaluation on the assignments the facts allow.

mod simplify_support;
mod support;

use std::fmt::Write as _;

use graphene::expr::Expr;
use graphene::index::analysis::analyze;
use graphene::index::facts::Facts;
use graphene::index::simplify::simplify;
use graphene::index::strength::strength_reduce;
use pretty_assertions::assert_eq;

/// Evaluates `original` and each rewrite on the assignments `facts` allows
/// and checks the analyses; panics naming the first disagreement.
fn check_by_evaluation(original: &Expr, rewrites: &[&Expr], facts: &Facts) {
    let vars = original.vars();
    let analysis = analyze(original, facts);
    for assignment in simplify_support::assignments(&vars, facts, 3000, 7) {
        let env = simplify_support::env(&assignment);
        let Ok(expected) = original.eval(&env) else {
            continue;
        };
        for rewrite in rewrites {
            assert_eq!(
                rewrite.eval(&env),
                Ok(expected),
                "{rewrite} differs from {original} at {assignment:?}"
            );
        }
        assert!(
            analysis.range.contains(expected),
            "range of {original} misses {expected}"
        );
        assert!(
            analysis.bits.contains(expected),
            "bits of {original} miss {expected}"
        );
        assert_eq!(
            expected % analysis.divisor(),
            0,
            "divisor of {original} does not divide {expected}"
        );
    }
}

/// Runs one `.txt` file: the report the `.out` file pins.
fn report(input: &str) -> String {
    let mut out = String::new();
    let mut facts = Facts::none();
    for line in input.lines() {
        let line = line.trim();
        if line.is_empty() {
            out.push('\n');
        } else if line.starts_with('#') {
            writeln!(out, "{line}").unwrap();
        } else if let Some(text) = line.strip_prefix("facts:") {
            facts = simplify_support::facts(text);
            writeln!(out, "facts: {facts}").unwrap();
        } else {
            let original = simplify_support::expr(line);
            let simplified = simplify(&original, &facts);
            let emitted = strength_reduce(&simplified);
            check_by_evaluation(&original, &[&simplified, &emitted], &facts);
            let analysis = analyze(&simplified, &facts);
            writeln!(out, "  {line}").unwrap();
            writeln!(
                out,
                "    = {simplified}    [{} -> {} nodes]",
                original.node_count(),
                simplified.node_count()
            )
            .unwrap();
            writeln!(out, "    emit {emitted}").unwrap();
            writeln!(
                out,
                "    range {}, divisor {}, bits {}",
                analysis.range,
                analysis.divisor(),
                analysis.bits
            )
            .unwrap();
        }
    }
    out
}

#[test]
fn golden_files_match() {
    let dir = support::golden::dir("simplify");
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/golden/simplify exists")
        .map(|entry| entry.expect("readable directory").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "txt"))
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "no golden inputs in {}", dir.display());
    for input in inputs {
        let text = std::fs::read_to_string(&input).expect("readable input");
        let actual = report(&text);
        support::golden::check(&input.with_extension("out"), &actual);
    }
}
