//! Launch stage, CPU side: one kernel run by the executor of emitted PTX
//! ([`crate::exec`]) instead of a GPU — the same seeded fills and poison as
//! the device run, the same comparison with the reference, plus what only
//! the executor sees (out-of-bounds accesses, unwritten reads, races, early
//! reads, bank conflicts). Needs no driver: it is in the default build.

use std::io::Write;
use std::time::Instant;

use super::command::{CommandError, RunOptions, Selected};
use super::fill::{element_type, expected_outputs, host_inputs, poison_flags};
use super::plan::LaunchPlan;
use super::report::{CheckOutcome, RunReport};
use crate::compile::Compiled;
use crate::data::DataError;
use crate::exec::{self, Arg, BankReport, ExecError, ExecReport, TensorMapArg};
use crate::reference::{Contract, ReferenceError, compare};

/// Why a CPU run failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CpuRunError {
    /// The executor could not run the PTX.
    #[error("{0}")]
    Exec(#[from] ExecError),
    /// The host data could not be made or read.
    #[error("{0}")]
    Data(#[from] DataError),
    /// The reference could not evaluate the contract.
    #[error("{0}")]
    Reference(#[from] ReferenceError),
}

/// A CPU run: the report `ptxgen run` prints, and the executor's own.
#[derive(Clone, Debug)]
pub struct CpuRun {
    /// The summary (check included).
    pub report: RunReport,
    /// Outputs, findings and bank conflicts.
    pub exec: ExecReport,
}

impl CpuRun {
    /// Whether the check (if any) passed and the executor found nothing.
    pub fn passed(&self) -> bool {
        self.report.passed() && self.exec.findings.is_empty()
    }

    /// The run's summary line, as the GPU run writes it, but `FAIL` when
    /// the executor found something (the output may still have compared
    /// equal: a race can go the lucky way) and the number of findings.
    pub fn line(&self) -> String {
        let line = self.report.line();
        if self.exec.findings.is_empty() {
            return line;
        }
        // The verdict is the line's first field, padded to four columns.
        let rest = line.get(4..).unwrap_or_default();
        let total = self.exec.finding_total;
        let plural = if total == 1 { "" } else { "s" };
        format!("{:<4}{rest}; {total} executor finding{plural}", "FAIL")
    }

    /// The lines under the summary: each finding (the first of its kind at
    /// its instruction), then the bank-conflict degree of every
    /// shared-memory instruction.
    pub fn detail_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .exec
            .findings
            .iter()
            .map(|finding| format!("  finding  {finding}"))
            .collect();
        let kept = self.exec.findings.len();
        if self.exec.finding_total > kept {
            lines.push(format!(
                "  ({} more findings of the same kinds at the same instructions)",
                self.exec.finding_total - kept
            ));
        }
        if !self.exec.banks.is_empty() {
            let conflicted = self.exec.banks.iter().filter(|b| b.worst > 1).count();
            lines.push(format!(
                "  banks    {} shared-memory instructions, {conflicted} with bank conflicts",
                self.exec.banks.len()
            ));
            lines.extend(self.exec.banks.iter().map(bank_line));
        }
        lines
    }
}

fn bank_line(bank: &BankReport) -> String {
    let mut line = format!(
        "  banks    {}-way  line {}: `{}`",
        bank.worst, bank.line, bank.instruction
    );
    if let Some(source) = &bank.source {
        line.push_str(&format!(" (.gph {source})"));
    }
    line
}

/// `ptxgen run --backend cpu`: each selected kernel on the executor, its
/// summary line and the executor's findings and bank conflicts written to
/// `out`. `Ok(true)` when every kernel passed with no finding.
pub(super) fn run_on_cpu(
    compiled: &Compiled,
    selected: &[Selected],
    options: &RunOptions,
    out: &mut dyn Write,
) -> Result<bool, CommandError> {
    let ptx = compiled.ptx().ok_or_else(|| {
        CommandError::Inconsistent(format!("{} was not compiled to PTX", compiled.name))
    })?;
    writeln!(
        out,
        "# device: CPU executor of the PTX (blocks one after another, a warp's lanes in step)"
    )?;
    let mut all_passed = true;
    for one in selected {
        let run = run_kernel_cpu(ptx, &one.plan, &one.contract, options.seed, options.check)
            .map_err(|error| {
                CommandError::Executor(format!("kernel `{}`: {error}", one.plan.kernel))
            })?;
        writeln!(out, "{}", run.line())?;
        for line in run.detail_lines() {
            writeln!(out, "{line}")?;
        }
        all_passed &= run.passed();
    }
    Ok(all_passed)
}

/// Runs `plan`'s kernel from `ptx` on the CPU: fills, poisons, executes;
/// with `check`, compares each output with `contract` on the same inputs.
pub fn run_kernel_cpu(
    ptx: &str,
    plan: &LaunchPlan,
    contract: &Result<Contract, ReferenceError>,
    seed: u64,
    check: bool,
) -> Result<CpuRun, CpuRunError> {
    let host = host_inputs(plan, contract.as_ref().ok(), seed)?;
    let mut args: Vec<Arg> = plan
        .params
        .iter()
        .zip(&host)
        .map(|(param, bytes)| {
            Arg::Buffer(match bytes {
                Some(bytes) => bytes.clone(),
                None => element_type(param.scalar).poison_bytes(param.elements),
            })
        })
        .collect();
    // Dims were checked to be 1 ..= u32::MAX when they were parsed.
    args.extend(plan.dims.iter().map(|(_, v)| Arg::U32(*v as u32)));
    args.extend(tensor_map_args(plan)?);
    let started = Instant::now();
    let run = exec::run_kernel(
        ptx,
        &plan.kernel,
        plan.grid,
        plan.block,
        plan.dynamic_shared_bytes,
        &args,
    )?;
    let mut report = RunReport::for_plan(plan);
    report.elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    if check {
        report.check = Some(check_outputs(plan, contract, &host, &run)?);
    }
    Ok(CpuRun { report, exec: run })
}

/// The tensor maps of `plan` as the executor takes them, after the dims:
/// each names its tensor by that tensor's index among the buffers.
fn tensor_map_args(plan: &LaunchPlan) -> Result<Vec<Arg>, CpuRunError> {
    plan.tensor_maps
        .iter()
        .map(|map| {
            let buffer = plan
                .params
                .iter()
                .position(|param| param.position == map.position)
                .ok_or_else(|| ExecError::Arguments {
                    kernel: plan.kernel.clone(),
                    message: format!(
                        "the tensor map of {} names global parameter {}, which the plan lacks",
                        map.tensor, map.position
                    ),
                })?;
            Ok(Arg::TensorMap(TensorMapArg {
                buffer,
                element_bytes: map.scalar.bytes(),
                extents: map.extents.clone(),
                strides_bytes: map.strides_bytes.clone(),
                boxes: map.boxes.clone(),
                swizzle_bytes: map.swizzle_bytes,
            }))
        })
        .collect()
}

fn check_outputs(
    plan: &LaunchPlan,
    contract: &Result<Contract, ReferenceError>,
    host: &[Option<Vec<u8>>],
    run: &ExecReport,
) -> Result<CheckOutcome, CpuRunError> {
    let contract = match contract {
        Ok(contract) => contract,
        Err(reason) => return Ok(CheckOutcome::NoContract(reason.to_string())),
    };
    let mut comparisons = Vec::new();
    for (expected, output) in expected_outputs(plan, contract, host)? {
        let bytes = &run.outputs[output];
        let ty = element_type(plan.params[output].scalar);
        let actual = ty.to_f64(bytes)?;
        comparisons.push(compare(&expected, &actual, &poison_flags(ty, bytes))?);
    }
    Ok(CheckOutcome::Compared(comparisons))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::plan::{ParamPlan, Role, TensorMapPlan, Work};
    use crate::reference::ReferenceError;
    use crate::vocab::Scalar;

    /// Thread 0 copies the box of 32 fp32 at element 32 of `A` into shared
    /// memory through the tensor map; the warp waits and stores it to `out`.
    const TMA_ROW: &str = "\
.version 8.0
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 smem[];
.visible .entry k(
    .param .u64 out,
    .param .u64 A,
    .param .align 64 .b8 tmap0_A[128]
)
{
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, smem;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_init;
    mbarrier.init.shared::cta.b64 [%r2+128], 1;
$L_init:
    bar.sync 0;
    @%p1 bra $L_wait;
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [%r2+128], 128;
    mov.b64 %rd1, tmap0_A;
    cvta.param.u64 %rd2, %rd1;
    mov.u32 %r3, 32;
    add.u32 %r4, %r2, 128;
    cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd2, {%r3}], [%r4];
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2+128], 0;
    @!%p2 bra $L_wait;
    shl.b32 %r5, %r1, 2;
    add.u32 %r6, %r2, %r5;
    ld.shared.u32 %r7, [%r6];
    ld.param.u64 %rd4, [out];
    cvt.u64.u32 %rd5, %r5;
    add.u64 %rd6, %rd4, %rd5;
    st.global.u32 [%rd6], %r7;
    ret;
}
";

    fn param(name: &str, position: u32, elements: usize, role: Role) -> ParamPlan {
        ParamPlan {
            name: name.to_string(),
            position,
            scalar: Scalar::Fp32,
            elements,
            bytes: 4 * elements,
            role,
        }
    }

    #[test]
    fn the_cpu_launch_passes_each_tensor_map_after_the_dims() {
        let plan = LaunchPlan {
            kernel: "k".to_string(),
            dims: Vec::new(),
            grid: 1,
            block: 32,
            dynamic_shared_bytes: 136,
            cooperative: false,
            params: vec![
                param("%out", 0, 32, Role::Output),
                param("%A", 1, 64, Role::Input),
            ],
            tensor_maps: vec![TensorMapPlan {
                tensor: "%A".to_string(),
                position: 1,
                scalar: Scalar::Fp32,
                extents: vec![64],
                strides_bytes: Vec::new(),
                boxes: vec![32],
                swizzle_bytes: 0,
            }],
            work: Work::Bytes(0),
        };
        let contract = Err(ReferenceError::NoContract {
            kernel: "k".to_string(),
        });
        let run = run_kernel_cpu(TMA_ROW, &plan, &contract, 7, false).expect("runs");
        assert!(run.exec.findings.is_empty(), "{:#?}", run.exec.findings);
        let (out, a) = (&run.exec.outputs[0], &run.exec.outputs[1]);
        assert_eq!(out[..], a[128..256]);
        assert!(a[128..256].iter().any(|&b| b != 0), "A was filled");
    }
}
