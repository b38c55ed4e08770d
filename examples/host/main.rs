//! A program of one's own launching PTX that `ptxgen` wrote, through
//! `graphene::runtime` and the launch manifest — no `.gph` is compiled here.
//!
//! ```sh
//! target/release/ptxgen examples/vector_copy.gph -o vc.ptx
//! target/release/ptxgen examples/vector_copy.gph --emit manifest -o vc.json
//! cargo run --release --features cuda --example host -- vc.ptx vc.json [B=4096]
//! ```
//!
//! It loads the PTX with its manifest, allocates the kernel's two tensors
//! (sized from the manifest's element counts), fills the input with seeded
//! random values and the output with poison, launches the manifest's first
//! kernel with every dim 4096 unless given as `NAME=VALUE`, and checks that
//! the output is the input, bit for bit: a copy kernel such as
//! `vector_copy`. One line: `PASS …` (exit 0), `FAIL …` (exit 1), an error
//! (exit 2), or `skipped: no CUDA device (…)` (exit 0) where no GPU exists.

use std::process::ExitCode;

use graphene::runtime::{
    DeviceSlice, ElementType, Gpu, Manifest, ManifestParam, RuntimeError, evaluate,
};

/// Each dim's value unless the command line gives one.
const DEFAULT_DIM: u64 = 4096;

fn main() -> ExitCode {
    let gpu = match Gpu::new() {
        Ok(gpu) => gpu,
        Err(error) if error.is_unavailable() => {
            println!("skipped: no CUDA device ({error})");
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    match run(&gpu) {
        Ok(line) if line.starts_with("PASS") => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Ok(line) => {
            println!("{line}");
            ExitCode::from(1)
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(2)
        }
    }
}

fn run(gpu: &Gpu) -> Result<String, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (files, settings): (Vec<&String>, Vec<&String>) =
        args.iter().partition(|arg| !arg.contains('='));
    let ptx_path = files
        .first()
        .map_or("vector_copy.ptx", |path| path.as_str());
    let json_path = files
        .get(1)
        .map_or("vector_copy.json", |path| path.as_str());
    let read = |path: &str| std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"));
    let (ptx, json) = (read(ptx_path)?, read(json_path)?);

    let manifest = Manifest::parse(&json).map_err(|e| format!("{json_path}: {e}"))?;
    let kernel = manifest
        .kernels
        .first()
        .ok_or_else(|| format!("{json_path}: no kernels"))?;
    let mut dims: Vec<(String, u64)> = kernel
        .dims()
        .into_iter()
        .map(|dim| (dim.to_owned(), DEFAULT_DIM))
        .collect();
    for setting in settings {
        let (name, value) = setting.split_once('=').unwrap_or_default();
        let value: u64 = value
            .parse()
            .map_err(|_| format!("`{setting}`: the value is not a whole number"))?;
        match dims.iter_mut().find(|(dim, _)| dim == name) {
            Some(slot) => slot.1 = value,
            None => return Err(format!("`{name}` is not a dim of `{}`", kernel.name)),
        }
    }
    let value_of = |name: &str| {
        dims.iter()
            .find(|(dim, _)| dim == name)
            .and_then(|&(_, value)| i64::try_from(value).ok())
    };

    // The tensors: one input, one output, of one element size.
    let mut tensors = Vec::new();
    for param in &kernel.params {
        if let ManifestParam::Tensor {
            name,
            element_bytes,
            elements,
            role,
            ..
        } = param
        {
            let count = evaluate(elements, &value_of)?;
            let count = usize::try_from(count).map_err(|_| format!("{name}: {count} elements"))?;
            tensors.push((name.as_str(), role.as_str(), count, *element_bytes as usize));
        }
    }
    let [input, output] = match tensors.as_slice() {
        [a, b] if a.1 == "input" && b.1 == "output" => [*a, *b],
        [a, b] if a.1 == "output" && b.1 == "input" => [*b, *a],
        _ => {
            return Err(format!(
                "`{}` is not a copy (one input, one output tensor); this example checks copies",
                kernel.name
            ));
        }
    };
    if input.2 != output.2 || input.3 != output.3 {
        return Err(format!(
            "`{}`: input and output differ in size",
            kernel.name
        ));
    }

    let host_error = |e: RuntimeError| e.to_string();
    let module = gpu.load_with_manifest(&ptx, &json).map_err(host_error)?;
    let ty = match input.3 {
        2 => ElementType::F16,
        _ => ElementType::F32,
    };
    let values = ty.random_bytes(input.2, 1);
    let source = gpu.upload(&values).map_err(host_error)?;
    let mut destination = gpu.alloc(values.len()).map_err(host_error)?;
    destination.fill_poison(ty).map_err(host_error)?;

    let buffers: [(&str, DeviceSlice); 2] = [
        (input.0, (&source).into()),
        (output.0, (&destination).into()),
    ];
    let dim_refs: Vec<(&str, u64)> = dims.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    let start = std::time::Instant::now();
    let config = module
        .launch(&kernel.name, &buffers, &dim_refs)
        .map_err(host_error)?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let copied = destination.to_host().map_err(host_error)?;
    let wrong = values
        .chunks(input.3)
        .zip(copied.chunks(input.3))
        .filter(|(a, b)| a != b)
        .count();
    let dims_text: Vec<String> = dims.iter().map(|(n, v)| format!("{n}={v}")).collect();
    let verdict = if wrong == 0 { "PASS" } else { "FAIL" };
    Ok(format!(
        "{verdict}  {} {}  {config}  {ms:.3} ms  {wrong} of {} elements differ from {}",
        kernel.name,
        dims_text.join(" "),
        output.2,
        input.0
    ))
}
