//! The launch manifest (`ptxgen --emit manifest`) says what the launch plan
//! says: for every example kernel, its expressions evaluated with dims bound
//! give the grid, block, allocation sizes and dynamic shared memory that
//! `launch::LaunchPlan` computes for `ptxgen run`. The expressions are
//! evaluated twice — here, by a small evaluator of the documented syntax,
//! and by the benchmark harness's reader (`benches/harness.py`) when python3
//! is installed. Every manifest also validates against its JSON Schema,
//! `docs/manifest.schema.json`, and states the work `ptxgen bench` counts.

#[path = "support/schema.rs"]
mod schema;
mod support;

use std::path::Path;
use std::process::Command;

use graphene::compile::{self, Options};
use graphene::launch::{LaunchPlan, Work};
use serde_json::{Value, json};

/// Dims that satisfy every example's requirements (multiples of 256).
const DIM_VALUE: i64 = 512;

fn manifest_of(example: &str) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_ptxgen"))
        .args([example, "--emit", "manifest", "-o", "-"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("ptxgen runs");
    assert!(
        output.status.success(),
        "{example}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the manifest is JSON")
}

/// The documented expression syntax: integers, names, `+ - * / %`,
/// parentheses, usual precedence, `/` floor division.
fn evaluate(text: &str, value_of: &dyn Fn(&str) -> i64) -> i64 {
    fn sum(tokens: &[String], at: &mut usize, value_of: &dyn Fn(&str) -> i64) -> i64 {
        let mut value = product(tokens, at, value_of);
        while let Some(op) = tokens.get(*at).filter(|t| *t == "+" || *t == "-").cloned() {
            *at += 1;
            let rhs = product(tokens, at, value_of);
            value = if op == "+" { value + rhs } else { value - rhs };
        }
        value
    }
    fn product(tokens: &[String], at: &mut usize, value_of: &dyn Fn(&str) -> i64) -> i64 {
        let mut value = atom(tokens, at, value_of);
        while let Some(op) = tokens
            .get(*at)
            .filter(|t| ["*", "/", "%"].contains(&t.as_str()))
            .cloned()
        {
            *at += 1;
            let rhs = atom(tokens, at, value_of);
            value = match op.as_str() {
                "*" => value * rhs,
                "/" => value.div_euclid(rhs),
                _ => value.rem_euclid(rhs),
            };
        }
        value
    }
    fn atom(tokens: &[String], at: &mut usize, value_of: &dyn Fn(&str) -> i64) -> i64 {
        let token = tokens[*at].clone();
        *at += 1;
        if token == "(" {
            let value = sum(tokens, at, value_of);
            assert_eq!(tokens[*at], ")");
            *at += 1;
            return value;
        }
        token.parse().unwrap_or_else(|_| value_of(&token))
    }
    let mut tokens = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            tokens.push(std::mem::take(&mut word));
        }
        if !c.is_whitespace() {
            tokens.push(c.to_string());
        }
    }
    if !word.is_empty() {
        tokens.push(word);
    }
    let mut at = 0;
    let value = sum(&tokens, &mut at, value_of);
    assert_eq!(at, tokens.len(), "`{text}` read to its end");
    value
}

fn examples() -> Vec<String> {
    support::examples::paths()
}

#[test]
fn every_example_manifest_agrees_with_the_launch_plan() {
    for example in examples() {
        let manifest = manifest_of(&example);
        assert_eq!(manifest["manifest"], 1);
        let text =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(&example)).unwrap();
        let compiled = compile::compile(&example, &text, &Options::default()).expect("compiles");
        for (i, kernel) in compiled.program.kernels.iter().enumerate() {
            let entry = &manifest["kernels"][i];
            assert_eq!(entry["name"], kernel.name.as_str());
            let dims = vec![DIM_VALUE; kernel.dims.len()];
            let plan = LaunchPlan::new(
                kernel,
                &dims,
                compiled.kernels[i].dynamic_shared_bytes,
                None,
            )
            .unwrap_or_else(|e| panic!("{example} {}: {e}", kernel.name));
            let names: Vec<&str> = kernel.dims.iter().map(|d| d.name.as_str()).collect();
            let value_of = |name: &str| {
                assert!(names.contains(&name), "{example}: `{name}` is not a dim");
                DIM_VALUE
            };
            let at = |field: &str, i: usize| evaluate(entry[field][i].as_str().unwrap(), &value_of);
            assert_eq!(
                at("grid", 0),
                i64::from(plan.grid),
                "{example} {} grid",
                kernel.name
            );
            assert_eq!(
                at("block", 0),
                i64::from(plan.block),
                "{example} {} block",
                kernel.name
            );
            assert_eq!(entry["dynamic_shared_bytes"], plan.dynamic_shared_bytes);
            let params = entry["params"].as_array().unwrap();
            assert_eq!(params.len(), plan.params.len() + kernel.dims.len());
            for (param, planned) in params.iter().zip(&plan.params) {
                assert_eq!(param["name"], planned.name.as_str());
                let elements = evaluate(param["elements"].as_str().unwrap(), &value_of);
                assert_eq!(
                    elements as usize, planned.elements,
                    "{example} {}",
                    planned.name
                );
            }
            for (param, dim) in params[plan.params.len()..].iter().zip(&names) {
                assert_eq!(param["name"], *dim);
                assert_eq!(param["type"], "u32");
            }
        }
    }
}

#[test]
fn the_harness_reads_the_manifest_as_the_plan_does() {
    let python = Command::new("python3").arg("--version").output();
    if !python.is_ok_and(|out| out.status.success()) {
        support::skip::skip(
            "python3 missing",
            "the harness's manifest reader is not exercised",
        );
        return;
    }
    let manifest = manifest_of("examples/gemm_f16_sm90.gph");
    let entry = &manifest["kernels"][0];
    let script = format!(
        "import sys; sys.path.insert(0, 'benches'); import harness\n\
         dims = {{'M': 4096, 'N': 2048, 'K': 1024}}\n\
         print(harness.evaluate({grid:?}, dims), harness.evaluate({elements:?}, dims))",
        grid = entry["grid"][0].as_str().unwrap(),
        elements = entry["params"][0]["elements"].as_str().unwrap(),
    );
    let output = Command::new("python3")
        .args(["-c", &script])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // 4096/128 · 2048/256 blocks; A holds M·K elements.
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("{} {}", 32 * 8, 4096 * 1024)
    );
}

fn manifest_schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/manifest.schema.json");
    let text = std::fs::read_to_string(&path).expect("docs/manifest.schema.json");
    serde_json::from_str(&text).expect("the schema is JSON")
}

#[test]
fn the_schema_is_draft_2020_12_within_the_validated_subset() {
    let schema = manifest_schema();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema::unknown_keywords(&schema), Vec::<String>::new());
}

#[test]
fn every_example_manifest_validates_against_the_schema() {
    let schema = manifest_schema();
    for example in examples() {
        let errors = schema::validate(&schema, &manifest_of(&example));
        assert!(errors.is_empty(), "{example}:\n{}", errors.join("\n"));
    }
}

/// A change that makes a manifest break the schema.
type Breaks = fn(&mut Value);

#[test]
fn the_schema_refuses_manifests_that_break_it() {
    let schema = manifest_schema();
    let good = manifest_of("examples/vector_copy.gph");
    assert!(schema::validate(&schema, &good).is_empty());
    let broken: [(&str, Breaks); 7] = [
        ("`kernels` is required", |m| {
            m.as_object_mut().unwrap().remove("kernels");
        }),
        ("is not one of [1]", |m| m["manifest"] = json!(2)),
        ("is not one of", |m| {
            m["kernels"][0]["params"][0]["role"] = json!("scratch")
        }),
        ("`extra` is not an allowed property", |m| {
            m["kernels"][0]["extra"] = json!(1)
        }),
        ("is string, not integer", |m| {
            m["kernels"][0]["dynamic_shared_bytes"] = json!("0")
        }),
        ("is integer, not string", |m| {
            m["kernels"][0]["grid"][0] = json!(4)
        }),
        ("`value` is required", |m| {
            m["kernels"][0]["work"]
                .as_object_mut()
                .unwrap()
                .remove("value");
        }),
    ];
    for (expected, breaks) in broken {
        let mut manifest = good.clone();
        breaks(&mut manifest);
        let errors = schema::validate(&schema, &manifest);
        assert!(
            errors.iter().any(|error| error.contains(expected)),
            "expected `{expected}` among {errors:?}"
        );
    }
}

#[test]
fn every_example_manifest_states_the_work_bench_counts() {
    for example in examples() {
        let manifest = manifest_of(&example);
        let text =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(&example)).unwrap();
        let compiled = compile::compile(&example, &text, &Options::default()).expect("compiles");
        for (i, kernel) in compiled.program.kernels.iter().enumerate() {
            let work = &manifest["kernels"][i]["work"];
            let dims = vec![DIM_VALUE; kernel.dims.len()];
            let plan = LaunchPlan::new(
                kernel,
                &dims,
                compiled.kernels[i].dynamic_shared_bytes,
                None,
            )
            .unwrap_or_else(|e| panic!("{example} {}: {e}", kernel.name));
            let value_of = |_: &str| DIM_VALUE;
            let at = |field: &str| evaluate(work[field].as_str().unwrap(), &value_of);
            match plan.work {
                Work::MatMul(shape) => {
                    assert_eq!(work["kind"], "flops", "{example} {}", kernel.name);
                    assert_eq!(at("value") as u128, shape.flops(), "{example}");
                    assert_eq!(
                        [at("m"), at("n"), at("k")],
                        [shape.m, shape.n, shape.k].map(|x| x as i64),
                        "{example} {}",
                        kernel.name
                    );
                }
                Work::Bytes(bytes) => {
                    assert_eq!(work["kind"], "bytes", "{example} {}", kernel.name);
                    assert_eq!(at("value") as u128, bytes, "{example} {}", kernel.name);
                }
            }
        }
    }
}

#[test]
fn every_example_manifest_states_alignment_and_limits() {
    for example in examples() {
        let manifest = manifest_of(&example);
        for kernel in manifest["kernels"].as_array().unwrap() {
            let limits = &kernel["limits"];
            assert_eq!(limits["grid"], json!([i32::MAX, 65535, 65535]), "{example}");
            assert_eq!(limits["block_threads"], 1024);
            assert_eq!(limits["default_dynamic_shared_bytes"], 48 * 1024);
            for param in kernel["params"].as_array().unwrap() {
                match param["type"].as_str() {
                    Some("u64") => assert_eq!(param["align_bytes"], 16, "{example}"),
                    _ => assert_eq!(
                        (&param["min"], &param["max"]),
                        (&json!(1), &json!(u32::MAX)),
                        "{example}"
                    ),
                }
            }
        }
    }
}
