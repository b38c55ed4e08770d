//! Launch stage, device side (feature `cuda`): one kernel on the GPU —
//! inputs filled with seeded random values, outputs poisoned, tensor maps
//! encoded over each input set's buffers, the launch,
//! the read-back and the comparison with the CPU reference (`run`); and
//! warm-up plus CUDA-event timing over rotated input sets (`bench`).

use std::time::Instant;

use super::fill::{self, element_type, expected_outputs, poison_flags};
use super::plan::{LaunchPlan, TensorMapPlan};
use super::report::{BenchReport, CheckOutcome, RunReport, Stats, rotation_sets};
use crate::reference::{Contract, ReferenceError, compare};
use crate::runtime::{
    DeviceBuffer, Gpu, KernelArg, LaunchConfig, Module, RuntimeError, TensorMapDescription,
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

fn launch_config(plan: &LaunchPlan) -> LaunchConfig {
    LaunchConfig::linear(plan.grid, plan.block)
        .with_dynamic_shared(plan.dynamic_shared_bytes)
        .with_cooperative(plan.cooperative)
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
            | RuntimeError::KernelNotFound { .. }
            | RuntimeError::Manifest(_) => true,
            RuntimeError::NoDriver { .. }
            | RuntimeError::NoDevice { .. }
            | RuntimeError::Driver { .. }
            | RuntimeError::Jit { .. }
            | RuntimeError::TensorMap { .. }
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
    let buffers = upload_buffers(gpu, plan, host, set)?;
    let args = set_args(gpu, plan, &buffers, set)?;
    Ok(DeviceSet { buffers, args })
}

/// A buffer per parameter of `plan`: the filled ones uploaded, the rest
/// poisoned.
fn upload_buffers<'g>(
    gpu: &'g Gpu,
    plan: &LaunchPlan,
    host: &[Option<Vec<u8>>],
    set: &str,
) -> Result<Vec<DeviceBuffer<'g>>, RunError> {
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
    Ok(buffers)
}

/// `plan`'s arguments over `buffers` (one per parameter): the buffers, the
/// dims, then the tensor maps encoded over them.
fn set_args(
    gpu: &Gpu,
    plan: &LaunchPlan,
    buffers: &[DeviceBuffer<'_>],
    set: &str,
) -> Result<Vec<KernelArg>, RunError> {
    let mut args: Vec<KernelArg> = buffers.iter().map(DeviceBuffer::arg).collect();
    // Dims were checked to be 1 ..= u32::MAX when they were parsed.
    args.extend(plan.dims.iter().map(|(_, v)| KernelArg::U32(*v as u32)));
    // Then the tensor maps, each over this set's copy of its tensor.
    let step = format!("encoding its tensor maps{set}");
    for map in &plan.tensor_maps {
        let buffer = plan
            .params
            .iter()
            .position(|param| param.position == map.position)
            .and_then(|index| buffers.get(index))
            .ok_or_else(|| RunError::Runtime {
                context: context(plan, &step),
                error: Box::new(RuntimeError::Input(format!(
                    "the tensor map of {} names parameter position {}, which no global \
                     parameter has",
                    map.tensor, map.position
                ))),
            })?;
        let encoded = gpu
            .encode_tensor_map(buffer.address(), &tensor_map_description(map))
            .map_err(in_context(plan, &step))?;
        args.push(KernelArg::TensorMap(encoded));
    }
    Ok(args)
}

/// What the runtime encodes for one of the plan's tensor maps.
fn tensor_map_description(map: &TensorMapPlan) -> TensorMapDescription {
    TensorMapDescription {
        tensor: map.tensor.clone(),
        element: element_type(map.scalar),
        extents: map.extents.clone(),
        strides_bytes: map.strides_bytes.clone(),
        boxes: map.boxes.clone(),
        swizzle_bytes: map.swizzle_bytes,
    }
}

fn host_inputs(
    plan: &LaunchPlan,
    contract: Option<&Contract>,
    seed: u64,
) -> Result<Vec<Option<Vec<u8>>>, RunError> {
    fill::host_inputs(plan, contract, seed).map_err(|error| RunError::Runtime {
        context: String::new(),
        error: Box::new(error.into()),
    })
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
    let mut comparisons = Vec::new();
    for (expected, output) in expected_outputs(plan, contract, &host)? {
        let reading = format!("reading back {}", expected.output);
        let bytes = set.buffers[output]
            .to_host()
            .map_err(in_context(plan, &reading))?;
        let ty = element_type(plan.params[output].scalar);
        let actual = ty
            .to_f64(&bytes)
            .map_err(|e| in_context(plan, &reading)(e.into()))?;
        comparisons.push(compare(&expected, &actual, &poison_flags(ty, &bytes))?);
    }
    report.check = Some(CheckOutcome::Compared(comparisons));
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

/// One configuration [`bench_plans`] times: its module and its plan.
pub struct PlannedKernel<'m, 'g> {
    /// The module holding the kernel.
    pub module: &'m Module<'g>,
    /// Its launch at the shape.
    pub plan: &'m LaunchPlan,
}

/// Times several kernels of one problem over one set of buffers, filled
/// once: `plans[0]`'s parameters, which every plan must share (sizes and
/// types; grids, blocks and tensor maps may differ). A plan whose kernel
/// accumulates into an output has that output zeroed before each launch,
/// inside the timed interval: what `C = A·B` costs through it. Each result
/// is that kernel's timing, or why it failed; the buffers stay usable after
/// a kernel's launch fails only if the context survives, so the first
/// sticky fault ends the whole run.
pub fn bench_plans(
    gpu: &Gpu,
    plans: &[PlannedKernel<'_, '_>],
    contract: Option<&Contract>,
    seed: u64,
    reps: usize,
    warmup: usize,
) -> Result<Vec<Result<Stats, RunError>>, RunError> {
    let Some(first) = plans.first() else {
        return Ok(Vec::new());
    };
    for other in plans {
        let shared = other.plan.params.len() == first.plan.params.len()
            && other
                .plan
                .params
                .iter()
                .zip(&first.plan.params)
                .all(|(a, b)| a.bytes == b.bytes && a.scalar == b.scalar);
        if !shared {
            return Err(RunError::Runtime {
                context: context(other.plan, "sharing buffers"),
                error: Box::new(RuntimeError::Input(format!(
                    "its parameters differ from those of `{}`",
                    first.plan.kernel
                ))),
            });
        }
    }
    let host = host_inputs(first.plan, contract, seed)?;
    let mut buffers = upload_buffers(gpu, first.plan, &host, "")?;
    let mut results = Vec::with_capacity(plans.len());
    for planned in plans {
        results.push(bench_over(gpu, planned, &mut buffers, reps, warmup));
    }
    Ok(results)
}

fn bench_over(
    gpu: &Gpu,
    planned: &PlannedKernel<'_, '_>,
    buffers: &mut [DeviceBuffer<'_>],
    reps: usize,
    warmup: usize,
) -> Result<Stats, RunError> {
    let plan = planned.plan;
    let kernel = planned
        .module
        .kernel(&plan.kernel)
        .map_err(in_context(plan, "looking it up in the module"))?;
    let args = set_args(gpu, plan, buffers, "")?;
    let accumulates = matches!(plan.work, super::Work::MatMul(shape) if shape.accumulate);
    let zeroed: Vec<usize> = if accumulates {
        (0..plan.params.len())
            .filter(|&i| plan.params[i].role.is_written())
            .collect()
    } else {
        Vec::new()
    };
    let config = launch_config(plan);
    let times = gpu
        .time_launches(warmup, reps, || {
            for &index in &zeroed {
                buffers[index].fill_bytes(0)?;
            }
            kernel.launch_async(&config, &args)
        })
        .map_err(in_context(plan, "timing"))?;
    Stats::of(&times).ok_or_else(|| RunError::Runtime {
        context: context(plan, "timing"),
        error: Box::new(RuntimeError::Input("no timed runs".to_string())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Scalar;
    use crate::runtime::ElementType;

    #[test]
    fn a_planned_tensor_map_is_described_to_the_runtime_field_for_field() {
        let plan = TensorMapPlan {
            tensor: "%B".into(),
            position: 1,
            scalar: Scalar::Bf16,
            extents: vec![512, 256],
            strides_bytes: vec![1024],
            boxes: vec![64, 64],
            swizzle_bytes: 128,
        };
        let description = tensor_map_description(&plan);
        assert_eq!(
            description,
            TensorMapDescription {
                tensor: "%B".into(),
                element: ElementType::BF16,
                extents: vec![512, 256],
                strides_bytes: vec![1024],
                boxes: vec![64, 64],
                swizzle_bytes: 128,
            }
        );
        // Device allocations are 256-byte aligned.
        assert_eq!(description.check(0x7f00_0000_0100), Ok(()));
    }
}
