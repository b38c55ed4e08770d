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
use crate::exec::{self, Arg, BankReport, ExecError, ExecReport};
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
