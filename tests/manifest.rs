//! The launch manifest (`ptxgen --emit manifest`) says what the launch plan
//! says: for every example kernel, its expressions evaluated with dims bound
//! give the grid, block, allocation sizes and dynamic shared memory that
//! `launch::LaunchPlan` computes for `ptxgen run`. The expressions are
//! evaluated twice — here, by a small evaluator of the documented syntax,
//! and by the benchmark harness's reader (`benches/harness.py`) when python3
//! is installed. Every manifest also validates against its JSON Schema,
//! `docs/manifest.schema.json`, and states the work `ptxgen bench` counts.
//! A kernel given TMA tensor maps by hand (as the lowering of `Move<tma>`
//! records them) lists each after the dims, its expressions the plan's
//! numbers, and the runtime's reader (feature `cuda`) prepares the same.

#[path = "support/schema.rs"]
mod schema;
mod support;

use std::io::Write;
use std::path::Path;
use std::process::Command;

use graphene::compile::{self, Options};
use graphene::expr::Expr;
use graphene::ir::{Kernel, MapDim, Program, TensorMap, TmaSwizzle};
use graphene::launch::{self, LaunchPlan, Source, Work};
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

/// The manifest's tensor maps (`entry`, a kernel of it) are the plan's once
/// evaluated, and each has its `tmap<i>_<tensor>` param after the dims.
fn assert_tensor_maps_agree(
    what: &str,
    entry: &Value,
    plan: &LaunchPlan,
    value_of: &dyn Fn(&str) -> i64,
) {
    let maps = entry["tensor_maps"]
        .as_array()
        .expect("tensor_maps is a list");
    assert_eq!(maps.len(), plan.tensor_maps.len(), "{what}");
    let params = entry["params"].as_array().unwrap();
    let first = plan.params.len() + plan.dims.len();
    for (i, (map, planned)) in maps.iter().zip(&plan.tensor_maps).enumerate() {
        let tensor = planned.tensor.strip_prefix('%').unwrap();
        assert_eq!(
            params[first + i],
            json!({ "name": format!("tmap{i}_{tensor}"), "type": "tensor_map", "tensor_map": i }),
            "{what}"
        );
        assert_eq!(map["tensor"], planned.tensor.as_str(), "{what}");
        assert_eq!(map["scalar"], planned.scalar.name(), "{what}");
        assert_eq!(map["element_bytes"], planned.scalar.bytes(), "{what}");
        let values = |key: &str| -> Vec<u64> {
            let texts = map[key].as_array().unwrap();
            let value = |text: &Value| evaluate(text.as_str().unwrap(), value_of) as u64;
            texts.iter().map(value).collect()
        };
        assert_eq!(values("extents"), planned.extents, "{what} {tensor}");
        assert_eq!(values("strides_bytes"), planned.strides_bytes, "{what}");
        assert_eq!(map["box"], json!(planned.boxes), "{what}");
        assert_eq!(map["swizzle_bytes"], planned.swizzle_bytes, "{what}");
    }
}

const TMA_EXAMPLE: &str = "examples/gemm_f16_sm90.gph";

/// A map over the whole of `%name` as declared (one level): the stride-1
/// mode innermost, the other modes after it in order; boxes of 64 along
/// the innermost (128 bytes of fp16, the 128-byte swizzle's span), 128
/// along the next, 1 beyond.
fn map_of(kernel: &Kernel, name: &str) -> TensorMap {
    let id = *kernel
        .params
        .iter()
        .find(|id| kernel.buffers[id.0 as usize].name == name)
        .unwrap_or_else(|| panic!("no %{name}"));
    let level = &kernel.buffers[id.0 as usize].ty.levels[0];
    let modes: Vec<(usize, Expr, Expr)> = level
        .shape
        .leaves()
        .into_iter()
        .zip(level.stride.leaves())
        .enumerate()
        .map(|(mode, (extent, stride))| (mode, extent.clone(), stride.clone()))
        .collect();
    let inner = modes
        .iter()
        .position(|(_, _, stride)| stride.as_const() == Some(1))
        .expect("a stride-1 mode");
    let order = std::iter::once(inner).chain((0..modes.len()).filter(|&m| m != inner));
    let dims: Vec<MapDim> = order
        .map(|m| MapDim {
            mode: modes[m].0,
            extent: modes[m].1.clone(),
            stride: modes[m].2.clone(),
        })
        .collect();
    let boxes = (0..dims.len()).map(|d| [64, 128].get(d).copied().unwrap_or(1));
    TensorMap {
        tensor: id,
        boxes: boxes.collect(),
        dims,
        swizzle: TmaSwizzle::Span128,
    }
}

/// The TMA example's program with maps of `%A` and `%B` in its first
/// kernel, and that kernel's dynamic shared memory.
fn program_with_tensor_maps() -> (Program, String, u32) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(TMA_EXAMPLE);
    let text = std::fs::read_to_string(path).unwrap();
    let compiled = compile::compile(TMA_EXAMPLE, &text, &Options::default()).expect("compiles");
    let mut program = compiled.program;
    let kernel = &mut program.kernels[0];
    let maps = [map_of(kernel, "A"), map_of(kernel, "B")];
    kernel.tensor_maps.extend(maps);
    (program, text, compiled.kernels[0].dynamic_shared_bytes)
}

fn manifest_with_tensor_maps() -> (Value, LaunchPlan) {
    let (program, text, shared) = program_with_tensor_maps();
    let source = Source {
        name: TMA_EXAMPLE,
        text: &text,
    };
    let manifest = launch::manifest(&program, source, "sm_90a", &[shared]);
    let kernel = &program.kernels[0];
    let dims = vec![DIM_VALUE; kernel.dims.len()];
    let plan = LaunchPlan::new(kernel, &dims, shared, None).expect("plans");
    (manifest, plan)
}

#[test]
fn tensor_maps_follow_the_dims_and_agree_with_the_plan() {
    let (manifest, plan) = manifest_with_tensor_maps();
    let entry = &manifest["kernels"][0];
    assert_eq!(plan.tensor_maps.len(), 2);
    assert_tensor_maps_agree(TMA_EXAMPLE, entry, &plan, &|_| DIM_VALUE);
    // As written: K innermost for both, rows K·2 bytes apart.
    assert_eq!(
        entry["tensor_maps"][0],
        json!({
            "tensor": "%A", "scalar": "fp16", "element_bytes": 2,
            "extents": ["K", "M"], "strides_bytes": ["K*2"],
            "box": [64, 128], "swizzle_bytes": 128,
        })
    );
    assert_eq!(entry["tensor_maps"][1]["extents"], json!(["K", "N"]));
    let params = entry["params"].as_array().unwrap();
    let names: Vec<&str> = params[params.len() - 2..]
        .iter()
        .map(|param| param["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["tmap0_A", "tmap1_B"]);
    let errors = schema::validate(&manifest_schema(), &manifest);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// The harness's `tensor_map_arguments` (no GPU, no PyTorch) gives the
/// driver the plan's numbers, and refuses in the runtime's words.
#[test]
fn the_harness_encodes_the_maps_the_plan_describes() {
    let python = Command::new("python3").arg("--version").output();
    if !python.is_ok_and(|out| out.status.success()) {
        support::skip::skip(
            "python3 missing",
            "the harness's tensor maps are not exercised",
        );
        return;
    }
    let (manifest, plan) = manifest_with_tensor_maps();
    let dims: Vec<String> = plan
        .dims
        .iter()
        .map(|(name, value)| format!("'{name}': {value}"))
        .collect();
    // A `\` continuation drops the next line's leading spaces; `\x20` keeps
    // Python's indentation.
    let script = format!(
        "import json, sys; sys.path.insert(0, 'benches'); import harness\n\
         entry = json.load(sys.stdin)['kernels'][0]\n\
         dims = {{{dims}}}\n\
         for i in range(len(entry['tensor_maps'])):\n\
         \x20   print(json.dumps(harness.tensor_map_arguments(entry, i, dims, 4096 * (i + 1))))\n\
         try:\n\
         \x20   harness.tensor_map_arguments(entry, 0, dict(dims, K=100), 4096)\n\
         except ValueError as error:\n\
         \x20   print(error)\n",
        dims = dims.join(", ")
    );
    let mut child = Command::new("python3")
        .args(["-c", &script])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(manifest.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), plan.tensor_maps.len() + 1, "{stdout}");
    for (i, (line, planned)) in lines.iter().zip(&plan.tensor_maps).enumerate() {
        let arguments: Value = serde_json::from_str(line).expect("JSON");
        let rank = planned.extents.len();
        assert_eq!(
            arguments,
            json!({
                "data_type": 6, "rank": rank, "address": 4096 * (i + 1),
                "extents": planned.extents, "strides_bytes": planned.strides_bytes,
                "boxes": planned.boxes, "element_strides": vec![1; rank],
                "interleave": 0, "swizzle": 3, "l2_promotion": 2, "oob_fill": 0,
            })
        );
    }
    assert_eq!(
        lines[plan.tensor_maps.len()],
        "kernel `gemm_f16_sm90`: tensor map of `%A`: the stride of dim 1 is 200 B, not a \
         multiple of 16 B"
    );
}

/// The runtime's reader of the manifest prepares, with no GPU, the maps the
/// plan describes, each after the dims.
#[cfg(feature = "cuda")]
#[test]
fn the_runtime_prepares_the_maps_the_plan_describes() {
    use graphene::runtime::{DeviceSlice, ElementType, Manifest};

    let (manifest, plan) = manifest_with_tensor_maps();
    let parsed = Manifest::parse(&manifest.to_string()).expect("the runtime reads it");
    let kernel = &parsed.kernels[0];
    let buffers: Vec<(&str, DeviceSlice)> = plan
        .params
        .iter()
        .enumerate()
        .map(|(i, param)| {
            let address = (i as u64 + 1) << 36;
            let memory = DeviceSlice {
                address,
                bytes: param.bytes,
            };
            (param.name.as_str(), memory)
        })
        .collect();
    let dims: Vec<(&str, u64)> = plan
        .dims
        .iter()
        .map(|(name, value)| (name.as_str(), *value as u64))
        .collect();
    let launch = kernel.prepare(&buffers, &dims).expect("valid");
    assert_eq!(launch.tensor_maps.len(), plan.tensor_maps.len());
    for (i, (prepared, planned)) in launch.tensor_maps.iter().zip(&plan.tensor_maps).enumerate() {
        assert_eq!(prepared.position, plan.params.len() + plan.dims.len() + i);
        assert_eq!(prepared.address, (u64::from(planned.position) + 1) << 36);
        let description = &prepared.description;
        assert_eq!(description.tensor, planned.tensor);
        assert_eq!(
            description.element,
            ElementType::from_name(planned.scalar.name()).unwrap()
        );
        assert_eq!(description.extents, planned.extents);
        assert_eq!(description.strides_bytes, planned.strides_bytes);
        assert_eq!(description.boxes, planned.boxes);
        assert_eq!(description.swizzle_bytes, planned.swizzle_bytes);
    }
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
            assert_eq!(
                params.len(),
                plan.params.len() + kernel.dims.len() + plan.tensor_maps.len()
            );
            assert_tensor_maps_agree(&example, entry, &plan, &value_of);
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
                    Some("tensor_map") => assert!(param["tensor_map"].is_u64(), "{example}"),
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
