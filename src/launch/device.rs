//! Launch stage, device side (feature `cuda`): one kernel on the GPU —
//! inputs filled with seeded random values, outputs poisoned, the launch,
//! the read-back and the comparison with the CPU reference (`run`); and
//! warm-up plus CUDA-event timing over rotated input sets (`bench`).

use std::time::Instant;

use half::{bf16, f16};

use super::plan::{LaunchPlan, ParamPlan};
use super::report::{BenchReport, CheckOutcome, RunReport, Stats, rotation_sets};
use crate::ir::Scalar;
use crate::reference::{Contract, InputDomain, ReferenceError, compare};
use crate::runtime::{
    DeviceBuffer, Element, ElementType, Gpu, KernelArg, LaunchConfig, Module, RuntimeError,
    to_bytes,
};

/// Why running or timing a kernel failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// The runtime failed; `context` says at which step of which kernel
    /// (empty when the runtime's message already names the kernel and its
    /// launch configuration).
    #[error("{}{error}", if context.is_empty() { String::new() } else { format!("{context}: ") })]
    Runtime {
        /// Kernel, launch and step.
        context: String,
        /// The runtime's own message (boxed: it is large, and rare).
        error: Box<RuntimeError>,
    },
    /// The reference could not evaluate the contract.
    #[error("{0}")]
    Reference(#[from] ReferenceError),
}

/// The runtime's tag of a scalar type.
pub fn element_type(scalar: Scalar) -> ElementType {
    match scalar {
        Scalar::Fp16 => ElementType::F16,
        Scalar::Bf16 => ElementType::BF16,
        Scalar::Fp32 => ElementType::F32,
        Scalar::I32 => ElementType::I32,
        Scalar::U32 => ElementType::U32,
    }
}

/// The seed of parameter `position` for the run seed `seed`: distinct
/// parameters draw distinct values, and a report's seed reproduces them.
fn param_seed(seed: u64, position: u32) -> u64 {
    seed.wrapping_mul(1000).wrapping_add(u64::from(position))
}

fn encode_as<T: Element>(values: &[f64]) -> Vec<u8> {
    let converted: Vec<T> = values.iter().map(|&v| T::from_f64(v)).collect();
    to_bytes(&converted)
}

fn encode(ty: ElementType, values: &[f64]) -> Vec<u8> {
    match ty {
        ElementType::F16 => encode_as::<f16>(values),
        ElementType::BF16 => encode_as::<bf16>(values),
        ElementType::F32 => encode_as::<f32>(values),
        ElementType::I32 => encode_as::<i32>(values),
        ElementType::U32 => encode_as::<u32>(values),
    }
}

/// The bytes a filled parameter starts with: seeded random values of its
/// type, mapped into `domain` (exactly, for the float types).
pub fn fill_bytes(param: &ParamPlan, seed: u64, domain: InputDomain) -> Result<Vec<u8>, RunError> {
    let ty = element_type(param.scalar);
    let bytes = ty.random_bytes(param.elements, param_seed(seed, param.position));
    match domain {
        InputDomain::Uniform => Ok(bytes),
        InputDomain::Positive => {
            let values = ty.to_f64(&bytes).map_err(|error| RunError::Runtime {
                context: format!("filling {}", param.name),
                error: Box::new(error),
            })?;
            let mapped: Vec<f64> = values.into_iter().map(|v| domain.map(v)).collect();
            Ok(encode(ty, &mapped))
        }
    }
}

/// Whether each element of `bytes` still holds `ty`'s poison.
fn poison_flags(ty: ElementType, bytes: &[u8]) -> Vec<bool> {
    let poison = ty.poison_bytes(1);
    bytes
        .chunks_exact(ty.bytes())
        .map(|element| element == poison.as_slice())
        .collect()
}

fn launch_config(plan: &LaunchPlan) -> LaunchConfig {
    LaunchConfig::linear(plan.grid, plan.block).with_dynamic_shared(plan.dynamic_shared_bytes)
}

/// `kernel `gemm` <<<64, 256, 0 B>>>: {step}` for errors of host-side steps.
fn context(plan: &LaunchPlan, step: &str) -> String {
    format!("kernel `{}` {}: {step}", plan.kernel, plan.config_text())
}

/// Adds context unless the runtime's message already names the kernel.
fn in_context(plan: &LaunchPlan, step: &str) -> impl Fn(RuntimeError) -> RunError {
    let context = context(plan, step);
    move |error| {
        let names_kernel = match &error {
            RuntimeError::Launch { .. }
            | RuntimeError::Config { .. }
            | RuntimeError::Arguments { .. }
            | RuntimeError::KernelNotFound { .. } => true,
            RuntimeError::NoDriver { .. }
            | RuntimeError::NoDevice { .. }
            | RuntimeError::Driver { .. }
            | RuntimeError::Jit { .. }
            | RuntimeError::Input(_) => false,
        };
        RunError::Runtime {
            context: if names_kernel {
                String::new()
            } else {
                context.clone()
            },
            error: Box::new(error),
        }
    }
}

/// One input set on the device: a buffer per parameter, and the arguments.
struct DeviceSet<'g> {
    buffers: Vec<DeviceBuffer<'g>>,
    args: Vec<KernelArg>,
}

/// Allocates every parameter, uploads the filled ones and poisons the rest.
fn upload_set<'g>(
    gpu: &'g Gpu,
    plan: &LaunchPlan,
    host: &[Option<Vec<u8>>],
    set: &str,
) -> Result<DeviceSet<'g>, RunError> {
    let mut buffers = Vec::with_capacity(plan.params.len());
    for (param, bytes) in plan.params.iter().zip(host) {
        let step = |what: &str| format!("{what} {} ({} B){set}", param.name, param.bytes);
        let mut buffer = gpu
            .alloc(param.bytes)
            .map_err(in_context(plan, &step("allocating")))?;
        match bytes {
            Some(bytes) => buffer
                .copy_from_host(bytes)
                .map_err(in_context(plan, &step("uploading")))?,
            None => buffer
                .fill_poison(element_type(param.scalar))
                .map_err(in_context(plan, &step("poisoning")))?,
        }
        buffers.push(buffer);
    }
    let mut args: Vec<KernelArg> = buffers.iter().map(DeviceBuffer::arg).collect();
    // Dims were checked to be 1 ..= u32::MAX when they were parsed.
    args.extend(plan.dims.iter().map(|(_, v)| KernelArg::U32(*v as u32)));
    Ok(DeviceSet { buffers, args })
}

/// The host bytes of every parameter: random values for those the kernel
/// reads, `None` (poison) for the others.
fn host_inputs(
    plan: &LaunchPlan,
    contract: Option<&Contract>,
    seed: u64,
) -> Result<Vec<Option<Vec<u8>>>, RunError> {
    plan.params
        .iter()
        .map(|param| {
            if !param.role.is_filled() {
                return Ok(None);
            }
            let domain = contract.map_or(InputDomain::Uniform, |c| c.input_domain(param.position));
            fill_bytes(param, seed, domain).map(Some)
        })
        .collect()
}

/// Runs `plan`'s kernel once from `module`: fills, poisons, launches and
/// waits. With `check`, compares the output with `contract` evaluated on
/// the same inputs (a kernel without a contract fails the check).
pub fn run_kernel(
    gpu: &Gpu,
    module: &Module<'_>,
    plan: &LaunchPlan,
    contract: &Result<Contract, ReferenceError>,
    seed: u64,
    check: bool,
) -> Result<RunReport, RunError> {
    let kernel = module
        .kernel(&plan.kernel)
        .map_err(in_context(plan, "looking it up in the module"))?;
    let host = host_inputs(plan, contract.as_ref().ok(), seed)?;
    let set = upload_set(gpu, plan, &host, "")?;
    let config = launch_config(plan);
    let started = Instant::now();
    kernel
        .launch(&config, &set.args)
        .map_err(in_context(plan, "launching"))?;
    let mut report = RunReport::for_plan(plan);
    report.elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    if !check {
        return Ok(report);
    }
    let contract = match contract {
        Ok(contract) => contract,
        Err(reason) => {
            report.check = Some(CheckOutcome::NoContract(reason.to_string()));
            return Ok(report);
        }
    };
    let mut values: Vec<Vec<f64>> = Vec::with_capacity(plan.params.len());
    for (param, bytes) in plan.params.iter().zip(&host) {
        let widened = match bytes {
            Some(bytes) => element_type(param.scalar)
                .to_f64(bytes)
                .map_err(in_context(plan, "reading the inputs"))?,
            None => Vec::new(),
        };
        values.push(widened);
    }
    let slices: Vec<&[f64]> = values.iter().map(Vec::as_slice).collect();
    let expected = contract.evaluate(&slices)?;
    let output = plan
        .params
        .iter()
        .position(|p| p.position == expected.param)
        .ok_or_else(|| {
            ReferenceError::Input(format!(
                "{} is not a parameter of the launch",
                expected.output
            ))
        })?;
    let bytes = set.buffers[output].to_host().map_err(in_context(
        plan,
        &format!("reading back {}", expected.output),
    ))?;
    let ty = element_type(plan.params[output].scalar);
    let actual = ty
        .to_f64(&bytes)
        .map_err(in_context(plan, "reading back the output"))?;
    let comparison = compare(&expected, &actual, &poison_flags(ty, &bytes))?;
    report.check = Some(CheckOutcome::Compared(comparison));
    Ok(report)
}

/// Times `plan`'s kernel: `warmup` untimed launches, then `reps` launches
/// each timed with CUDA events, cycling through input sets so that no
/// launch finds its inputs in the L2 ([`rotation_sets`]).
pub fn bench_kernel(
    gpu: &Gpu,
    module: &Module<'_>,
    plan: &LaunchPlan,
    contract: Option<&Contract>,
    seed: u64,
    reps: usize,
    warmup: usize,
) -> Result<BenchReport, RunError> {
    let kernel = module
        .kernel(&plan.kernel)
        .map_err(in_context(plan, "looking it up in the module"))?;
    let host = host_inputs(plan, contract, seed)?;
    let count = rotation_sets(plan.set_bytes(), gpu.info().total_memory_bytes);
    let sets = (0..count)
        .map(|i| {
            upload_set(
                gpu,
                plan,
                &host,
                &format!(" for input set {} of {count}", i + 1),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let config = launch_config(plan);
    let mut next = 0usize;
    let times = gpu
        .time_launches(warmup, reps, || {
            let set = &sets[next % sets.len()];
            next += 1;
            kernel.launch_async(&config, &set.args)
        })
        .map_err(in_context(plan, "timing"))?;
    let stats = Stats::of(&times).ok_or_else(|| RunError::Runtime {
        context: context(plan, "timing"),
        error: Box::new(RuntimeError::Input("no timed runs (--reps 0)".to_string())),
    })?;
    Ok(BenchReport {
        kernel: plan.kernel.clone(),
        dims: plan.dims.clone(),
        config: plan.config_text(),
        work: plan.work,
        stats,
        sets: count,
        warmup,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::Role;

    fn param(scalar: Scalar, elements: usize) -> ParamPlan {
        ParamPlan {
            name: "%x".into(),
            position: 2,
            scalar,
            elements,
            bytes: elements * scalar.bytes() as usize,
            role: Role::Input,
        }
    }

    #[test]
    fn positive_inputs_are_exact_and_in_range_for_every_float_type() {
        for scalar in [Scalar::Fp16, Scalar::Bf16, Scalar::Fp32] {
            let p = param(scalar, 4096);
            let ty = element_type(scalar);
            let drawn = ty
                .to_f64(&fill_bytes(&p, 7, InputDomain::Uniform).unwrap())
                .unwrap();
            let mapped = ty
                .to_f64(&fill_bytes(&p, 7, InputDomain::Positive).unwrap())
                .unwrap();
            for (x, y) in drawn.iter().zip(&mapped) {
                assert_eq!(*y, x.abs() + 0.5, "{} {x}", scalar.name());
            }
        }
    }

    #[test]
    fn parameters_draw_distinct_reproducible_values() {
        let a = fill_bytes(&param(Scalar::Fp32, 64), 1, InputDomain::Uniform).unwrap();
        let again = fill_bytes(&param(Scalar::Fp32, 64), 1, InputDomain::Uniform).unwrap();
        let mut other = param(Scalar::Fp32, 64);
        other.position = 3;
        let b = fill_bytes(&other, 1, InputDomain::Uniform).unwrap();
        assert_eq!(a, again);
        assert_ne!(a, b);
        assert_eq!(param_seed(42, 3), 42_003);
    }

    #[test]
    fn poison_is_found_element_by_element() {
        let ty = ElementType::F16;
        let mut bytes = ty.poison_bytes(3);
        bytes[2] = 0;
        assert_eq!(poison_flags(ty, &bytes), [true, false, true]);
    }
}
