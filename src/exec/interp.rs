//! CPU executor: the run — blocks one after another, each block's warps
//! in turn up to the next barrier, and in a warp the lanes that share the
//! lowest program counter executed together (every thread has its own pc,
//! so divergent branches just run apart and meet again). Warp-wide
//! instructions need every lane they name at the same instruction.
//!
//! A kernel that polls global memory (a grid barrier's acquire loads) has
//! every block in flight at once, as a cooperative launch has: a block runs
//! until each of its threads is exited, at a barrier or polling, and then
//! the next block runs; a polling thread goes on when its block's turn
//! comes again. A round of every block in which nothing was written to
//! global memory and no block finished is a deadlock, reported as such.
//!
//! Inside a block, a thread whose `mbarrier.try_wait` says no spins: its
//! warp yields, the other warps run, and the block's warps go round again
//! until none spins. A round in which no mbarrier changed and no wait
//! succeeded, and which left every thread where the round before did (each
//! one spinning, exited or at `bar.sync`), would repeat forever: a
//! deadlock too.

use std::collections::{BTreeMap, HashMap, VecDeque};

use super::decode::{Op, decode};
use super::machine::{
    Access, Conflict, Finding, FindingKind, Findings, Globals, PARAM_SLOT, Shared,
};
use super::ops::tma::{Mbarrier, Spin, tensor_map_problem};
use super::parse::{Entry, Instr, Operand, Special};
use super::{Arg, BankReport, ExecError, ExecReport, LaunchShape, TensorMapArg};

/// Warp instructions one block may execute before the run is stopped.
const STEP_LIMIT: u64 = 1 << 32;

/// A kernel ready to run: its operations decoded, its names resolved.
pub(super) struct Kernel<'e> {
    pub entry: &'e Entry,
    pub ops: Vec<Op>,
    /// Parameter name → index.
    pub params: HashMap<String, usize>,
    /// Shared variable name → byte offset in the block's shared memory.
    pub shared_offsets: HashMap<String, u32>,
    /// Static plus dynamic shared memory, bytes.
    pub shared_size: usize,
    /// Module `.global` variable name → its address.
    pub global_addresses: HashMap<String, u64>,
    /// Whether a thread may poll another block's writes: every block is
    /// then in flight at once.
    pub polls: bool,
}

/// Where a thread stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum State {
    Running,
    AtBarrier,
    /// After a polled load: waits for the other blocks to run.
    Polling,
    /// After an `mbarrier.try_wait` that said no: waits for the block's
    /// other warps to run.
    Spinning,
    Exited,
}

/// How a block's turn ended.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Turn {
    /// Every thread exited.
    Finished,
    /// Some thread polls memory that only another block can change.
    Polling,
}

/// A `cp.async` in flight: its bytes, read at issue, and where they land.
#[derive(Clone, Debug)]
pub(super) struct PendingCopy {
    pub offset: usize,
    pub data: Vec<u8>,
    pub pc: usize,
}

/// One thread's control state and its asynchronous work.
#[derive(Clone, Debug)]
pub(super) struct Thread {
    pub pc: usize,
    pub state: State,
    pub copies_open: Vec<PendingCopy>,
    pub copy_groups: VecDeque<Vec<PendingCopy>>,
    pub wgmma_open: Vec<u32>,
    pub wgmma_groups: VecDeque<Vec<u32>>,
    /// Per mbarrier (shared offset), the phases this thread has seen
    /// complete through a successful `try_wait`.
    pub seen_phases: HashMap<u32, u32>,
    /// What a spinning thread waits for.
    pub spin: Option<Spin>,
}

/// The state of a launch shared by its blocks.
#[derive(Default)]
pub(super) struct Run {
    pub globals: Globals,
    /// Each parameter's value (a buffer's address, or the scalar; 0 for a
    /// tensor map).
    pub params: Vec<u64>,
    /// Each parameter's tensor map, where it is one.
    pub tensor_maps: Vec<Option<TensorMapArg>>,
    pub findings: Findings,
    /// pc → (worst degree, executions).
    pub banks: BTreeMap<usize, (u32, u64)>,
    pub steps: u64,
    /// Global stores and atomics so far: a round of polling blocks that
    /// changes nothing is a deadlock.
    pub global_writes: u64,
}

/// One block in flight.
pub(super) struct Block<'k, 'e> {
    pub kernel: &'k Kernel<'e>,
    pub shape: LaunchShape,
    pub ctaid: u32,
    pub threads: Vec<Thread>,
    pub nregs: usize,
    pub regs: Vec<u64>,
    pub written: Vec<bool>,
    /// Registers a `wgmma` in flight will write.
    pub pending: Vec<bool>,
    pub shared: Shared,
    pub epoch: u32,
    /// The block's mbarriers, by shared offset.
    pub mbarriers: HashMap<u32, Mbarrier>,
    /// Inits, arrivals, completed bytes and successful waits so far: a
    /// round of spinning warps that changes none of them is a deadlock.
    pub mbarrier_events: u64,
    /// The launch's shared state, lent to the block for its turn.
    pub run: Run,
}

fn align_up(value: u32, align: u32) -> u32 {
    value.div_ceil(align.max(1)) * align.max(1)
}

fn prepare<'e>(
    entry: &'e Entry,
    dynamic_shared: u32,
    first_global: usize,
) -> Result<Kernel<'e>, ExecError> {
    let ops = entry
        .body
        .iter()
        .map(decode)
        .collect::<Result<Vec<_>, _>>()?;
    let params = entry
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name.clone(), i))
        .collect();
    let mut shared_offsets = HashMap::new();
    let mut end = 0u32;
    for decl in entry.shared.iter().filter(|d| d.bytes.is_some()) {
        let at = align_up(end, decl.align);
        shared_offsets.insert(decl.name.clone(), at);
        end = at + decl.bytes.unwrap_or(0);
    }
    let dynamic_align = entry
        .shared
        .iter()
        .filter(|d| d.bytes.is_none())
        .map(|d| d.align)
        .max()
        .unwrap_or(1);
    let dynamic_at = align_up(end, dynamic_align);
    for decl in entry.shared.iter().filter(|d| d.bytes.is_none()) {
        shared_offsets.insert(decl.name.clone(), dynamic_at);
    }
    let global_addresses = entry
        .globals
        .iter()
        .enumerate()
        .map(|(i, decl)| (decl.name.clone(), Globals::base(first_global + i)))
        .collect();
    let polls = ops.iter().any(|op| matches!(op, Op::Poll(_)));
    Ok(Kernel {
        entry,
        ops,
        params,
        shared_offsets,
        shared_size: (dynamic_at + dynamic_shared) as usize,
        global_addresses,
        polls,
    })
}

/// The arguments' values by parameter: buffers become global allocations
/// (their parameter gets the address), tensor maps are kept aside for
/// `cp.async.bulk.tensor` after the checks `cuTensorMapEncodeTiled` makes.
fn bind_args(entry: &Entry, args: &[Arg]) -> Result<Run, ExecError> {
    let refuse = |message: String| ExecError::Arguments {
        kernel: entry.name.clone(),
        message,
    };
    if args.len() != entry.params.len() {
        return Err(refuse(format!(
            "{} arguments for {} parameters",
            args.len(),
            entry.params.len()
        )));
    }
    let mut globals = Globals::default();
    let mut params = Vec::with_capacity(args.len());
    let mut tensor_maps = Vec::with_capacity(args.len());
    for (arg, param) in args.iter().zip(&entry.params) {
        match arg {
            Arg::Buffer(bytes) if param.bytes == 8 => {
                params.push(Globals::base(globals.buffers.len()));
                globals.buffers.push(bytes.clone());
                tensor_maps.push(None);
            }
            Arg::U32(value) if param.bytes == 4 => {
                params.push(u64::from(*value));
                tensor_maps.push(None);
            }
            Arg::TensorMap(map) if param.bytes == 128 => {
                params.push(0);
                tensor_maps.push(Some(map.clone()));
            }
            Arg::Buffer(_) | Arg::U32(_) | Arg::TensorMap(_) => {
                return Err(refuse(format!(
                    "parameter `{}` is {} bytes wide; the argument does not fit it",
                    param.name, param.bytes
                )));
            }
        }
    }
    let buffers = globals.buffers.len();
    for (map, param) in tensor_maps.iter().zip(&entry.params) {
        if let Some(problem) = map.as_ref().and_then(|m| tensor_map_problem(m, buffers)) {
            return Err(refuse(format!(
                "the tensor map for parameter `{}` {problem}",
                param.name
            )));
        }
    }
    Ok(Run {
        globals,
        params,
        tensor_maps,
        ..Run::default()
    })
}

/// Runs every block of the launch.
pub(super) fn run(
    entry: &Entry,
    shape: LaunchShape,
    args: &[Arg],
) -> Result<ExecReport, ExecError> {
    let mut run = bind_args(entry, args)?;
    let arguments = run.globals.buffers.len();
    let kernel = prepare(entry, shape.dynamic_shared, arguments)?;
    for decl in &entry.globals {
        run.globals
            .buffers
            .push(vec![0; decl.bytes.unwrap_or(0) as usize]);
    }
    if kernel.polls {
        run = run_together(&kernel, shape, run)?;
    } else {
        for ctaid in 0..shape.grid {
            let mut block = Block::new(&kernel, shape, ctaid, run);
            block.turn()?;
            run = block.run;
        }
    }
    run.globals.buffers.truncate(arguments);
    let banks = run
        .banks
        .iter()
        .map(|(&pc, &(worst, executions))| {
            let instr = &entry.body[pc];
            BankReport {
                line: instr.line,
                instruction: instr.text.clone(),
                source: instr.source.clone(),
                worst,
                executions,
            }
        })
        .collect();
    Ok(ExecReport {
        outputs: run.globals.buffers,
        findings: run.findings.kept,
        finding_total: run.findings.total,
        banks,
        warp_instructions: run.steps,
    })
}

/// Every block in flight at once, each running in turn until it finishes or
/// polls, until all have finished.
fn run_together(kernel: &Kernel<'_>, shape: LaunchShape, mut run: Run) -> Result<Run, ExecError> {
    let mut waiting: Vec<Block<'_, '_>> = (0..shape.grid)
        .map(|ctaid| Block::new(kernel, shape, ctaid, Run::default()))
        .collect();
    while !waiting.is_empty() {
        let writes_before = run.global_writes;
        let blocks_before = waiting.len();
        let mut still = Vec::with_capacity(waiting.len());
        for mut block in waiting {
            block.run = std::mem::take(&mut run);
            let turn = block.turn();
            run = std::mem::take(&mut block.run);
            match turn? {
                Turn::Finished => {}
                Turn::Polling => still.push(block),
            }
        }
        waiting = still;
        if !waiting.is_empty()
            && waiting.len() == blocks_before
            && run.global_writes == writes_before
        {
            let blocks: Vec<String> = waiting.iter().map(|b| b.ctaid.to_string()).collect();
            return Err(ExecError::Deadlock {
                kernel: kernel.entry.name.clone(),
                blocks: blocks.join(", "),
                waiting: "poll memory that no block writes any more (a grid barrier some \
                          block never reaches?)"
                    .to_string(),
            });
        }
    }
    Ok(run)
}

impl<'k, 'e> Block<'k, 'e> {
    fn new(kernel: &'k Kernel<'e>, shape: LaunchShape, ctaid: u32, run: Run) -> Self {
        let nregs = kernel.entry.registers.len();
        let threads = shape.block as usize;
        let thread = Thread {
            pc: 0,
            state: State::Running,
            copies_open: Vec::new(),
            copy_groups: VecDeque::new(),
            wgmma_open: Vec::new(),
            wgmma_groups: VecDeque::new(),
            seen_phases: HashMap::new(),
            spin: None,
        };
        Block {
            kernel,
            shape,
            ctaid,
            threads: vec![thread; threads],
            nregs,
            regs: vec![0; nregs * threads],
            written: vec![false; nregs * threads],
            pending: vec![false; nregs * threads],
            shared: Shared::new(kernel.shared_size),
            epoch: 1,
            mbarriers: HashMap::new(),
            mbarrier_events: 0,
            run,
        }
    }

    /// Runs the block until every thread has exited, or until it waits
    /// on memory another block writes.
    fn turn(&mut self) -> Result<Turn, ExecError> {
        let warps = self.threads.len().div_ceil(32);
        let start = self.run.steps;
        for thread in &mut self.threads {
            if matches!(thread.state, State::Polling | State::Spinning) {
                thread.state = State::Running;
            }
        }
        // Where every thread stood after the last round that ended with
        // threads spinning.
        let mut spun: Option<Vec<(State, usize)>> = None;
        loop {
            let events = self.mbarrier_events;
            for warp in 0..warps {
                self.run_warp(warp)?;
                if self.run.steps - start > STEP_LIMIT {
                    return Err(ExecError::StepLimit {
                        kernel: self.kernel.entry.name.clone(),
                        block: self.ctaid,
                        limit: STEP_LIMIT,
                    });
                }
            }
            let count = |state: State| self.threads.iter().filter(|t| t.state == state).count();
            if count(State::Polling) > 0 {
                return Ok(Turn::Polling);
            }
            let (spinning, at_barrier) = (count(State::Spinning), count(State::AtBarrier));
            if spinning > 0 {
                // The spinning threads try again; but a round that left
                // every thread where the last one did, with no mbarrier
                // changed, would repeat forever: every thread that has not
                // exited spins or waits at bar.sync for a spinning one.
                let now: Vec<(State, usize)> =
                    self.threads.iter().map(|t| (t.state, t.pc)).collect();
                if self.mbarrier_events == events && spun.as_ref() == Some(&now) {
                    return Err(self.mbarrier_deadlock(spinning, at_barrier));
                }
                spun = Some(now);
                for thread in &mut self.threads {
                    if thread.state == State::Spinning {
                        thread.state = State::Running;
                        thread.spin = None;
                    }
                }
                continue;
            }
            if at_barrier == 0 {
                return Ok(Turn::Finished);
            }
            for thread in &mut self.threads {
                if thread.state == State::AtBarrier {
                    thread.state = State::Running;
                    thread.pc += 1;
                }
            }
            self.epoch += 1;
        }
    }

    /// The deadlock of a block whose threads spin on mbarriers that
    /// nothing will complete, described by its first spinning thread.
    fn mbarrier_deadlock(&self, spinning: usize, at_barrier: usize) -> ExecError {
        let first = self.threads.iter().enumerate().find_map(|(t, thread)| {
            let spin = thread.spin.filter(|_| thread.state == State::Spinning)?;
            Some((t as u32, spin))
        });
        let mut waiting = match first {
            Some((t, spin)) => self.describe_spin(t, spin),
            None => "spin on mbarriers".to_string(),
        };
        waiting.push_str(&format!(
            "; {spinning} thread{} spin, {at_barrier} wait at bar.sync, nothing else runs",
            if spinning == 1 { "" } else { "s" }
        ));
        ExecError::Deadlock {
            kernel: self.kernel.entry.name.clone(),
            blocks: self.ctaid.to_string(),
            waiting,
        }
    }

    /// Runs warp `warp` until none of its lanes can go on (barrier or exit).
    fn run_warp(&mut self, warp: usize) -> Result<(), ExecError> {
        let first = warp * 32;
        let last = (first + 32).min(self.threads.len());
        let mut active: Vec<u32> = Vec::with_capacity(32);
        loop {
            let lowest = (first..last)
                .filter(|&t| self.threads[t].state == State::Running)
                .map(|t| self.threads[t].pc)
                .min();
            let Some(pc) = lowest else {
                return Ok(());
            };
            active.clear();
            active.extend(
                (first..last)
                    .filter(|&t| {
                        self.threads[t].state == State::Running && self.threads[t].pc == pc
                    })
                    .map(|t| t as u32),
            );
            self.run.steps += 1;
            if pc >= self.kernel.ops.len() {
                for &t in &active {
                    self.threads[t as usize].state = State::Exited;
                }
                continue;
            }
            self.step(pc, &active, last - first)?;
        }
    }

    /// Executes instruction `pc` for the lanes `active` (threads of one
    /// warp of `warp_size` lanes).
    fn step(&mut self, pc: usize, active: &[u32], warp_size: usize) -> Result<(), ExecError> {
        let instr = &self.kernel.entry.body[pc];
        let op = self.kernel.ops[pc];
        let mut enabled = Vec::with_capacity(active.len());
        for &t in active {
            let on = match instr.guard {
                None => true,
                Some((reg, negated)) => (self.read_reg(t, reg, pc) & 1 == 1) != negated,
            };
            if on {
                enabled.push(t);
            } else {
                self.threads[t as usize].pc += 1;
            }
        }
        // `bra.uni` promises one guard value in every lane the warp runs
        // together: a lane that disagrees would be sent the wrong way on
        // hardware that trusts the promise.
        if matches!(op, Op::Bra)
            && instr.opcode.iter().any(|part| part == "uni")
            && !enabled.is_empty()
            && enabled.len() != active.len()
        {
            return Err(self.divergent(
                pc,
                format!(
                    "a `bra.uni` whose guard holds in {} of the {} lanes that reach it",
                    enabled.len(),
                    active.len()
                ),
            ));
        }
        if enabled.is_empty() {
            return Ok(());
        }
        if op.is_collective()
            && !matches!(op, super::decode::Op::Shfl(_))
            && enabled.len() != warp_size
        {
            return Err(self.divergent(
                pc,
                format!(
                    "a warp-wide instruction reached by {} of the warp's {warp_size} lanes",
                    enabled.len()
                ),
            ));
        }
        match op {
            Op::Bra => {
                let target = match instr.operands.first() {
                    Some(Operand::Name(label)) => self.kernel.entry.labels.get(label).copied(),
                    _ => None,
                };
                let target = target.ok_or_else(|| self.operands(pc, "a branch to no label"))?;
                for &t in &enabled {
                    self.threads[t as usize].pc = target;
                }
                return Ok(());
            }
            Op::Bar => {
                for &t in &enabled {
                    self.threads[t as usize].state = State::AtBarrier;
                }
                return Ok(());
            }
            Op::Ret => {
                for &t in &enabled {
                    self.threads[t as usize].state = State::Exited;
                }
                return Ok(());
            }
            _ => self.execute_op(pc, op, &enabled)?,
        }
        for &t in &enabled {
            self.threads[t as usize].pc += 1;
        }
        Ok(())
    }

    /// The instruction at `pc`.
    pub fn instr(&self, pc: usize) -> &'e Instr {
        &self.kernel.entry.body[pc]
    }

    /// An operand error at `pc`.
    pub fn operands(&self, pc: usize, message: &str) -> ExecError {
        let instr = self.instr(pc);
        ExecError::Operands {
            line: instr.line,
            text: instr.text.clone(),
            message: message.to_string(),
        }
    }

    /// A divergence error at `pc`.
    pub fn divergent(&self, pc: usize, message: String) -> ExecError {
        let instr = self.instr(pc);
        ExecError::Divergent {
            line: instr.line,
            text: instr.text.clone(),
            message,
        }
    }

    /// Records a finding of thread `t` at `pc`.
    pub fn find(&mut self, t: u32, pc: usize, kind: FindingKind) {
        let instr = self.instr(pc);
        let finding = Finding {
            kind,
            block: self.ctaid,
            thread: t,
            line: instr.line,
            instruction: instr.text.clone(),
            source: instr.source.clone(),
        };
        self.run.findings.add(pc, finding);
    }

    /// Records a race found by thread `t` at `pc`.
    pub fn race(&mut self, t: u32, pc: usize, conflict: Conflict, now_writes: bool) {
        let other = self.instr(conflict.earlier.pc as usize);
        let order = match (conflict.earlier_wrote, now_writes) {
            (true, true) => "write after write",
            (true, false) => "read after write",
            (false, _) => "write after read",
        };
        let kind = FindingKind::Race {
            offset: conflict.offset,
            other_thread: conflict.earlier.thread,
            other: format!("line {}: `{}`", other.line, other.text),
            order,
        };
        self.find(t, pc, kind);
    }

    /// The access record of thread `t` at `pc` now.
    pub fn access(&self, t: u32, pc: usize) -> Access {
        Access {
            epoch: self.epoch,
            thread: t,
            pc: pc as u32,
        }
    }

    /// Register `reg` of thread `t`, noting a read of an unwritten one or
    /// of one a `wgmma` in flight will write.
    pub fn read_reg(&mut self, t: u32, reg: u32, pc: usize) -> u64 {
        let at = t as usize * self.nregs + reg as usize;
        if !self.written[at] {
            let register = self.kernel.entry.registers[reg as usize].clone();
            self.find(t, pc, FindingKind::UninitialisedRegister { register });
        } else if self.pending[at] {
            let register = self.kernel.entry.registers[reg as usize].clone();
            self.find(
                t,
                pc,
                FindingKind::EarlyRead {
                    what: format!("{register}, the result of a wgmma not yet waited for"),
                },
            );
        }
        self.regs[at]
    }

    /// Writes register `reg` of thread `t`.
    pub fn write_reg(&mut self, t: u32, reg: u32, value: u64) {
        let at = t as usize * self.nregs + reg as usize;
        self.regs[at] = value;
        self.written[at] = true;
    }

    /// The value of a source operand for thread `t`.
    pub fn value(&mut self, t: u32, pc: usize, operand: &Operand) -> Result<u64, ExecError> {
        Ok(match operand {
            Operand::Reg(reg) => self.read_reg(t, *reg, pc),
            Operand::Int(value) => *value as u64,
            Operand::F32Bits(bits) => u64::from(*bits),
            Operand::Special(special) => self.special(t, *special),
            Operand::Name(name) => match (
                self.kernel.shared_offsets.get(name),
                self.kernel.global_addresses.get(name),
                self.kernel.params.get(name),
            ) {
                (Some(&offset), _, _) => u64::from(offset),
                (None, Some(&address), _) => address,
                // `mov.b64 %rd, tmap`: the parameter's param-space address.
                (None, None, Some(&index)) => index as u64 * PARAM_SLOT,
                (None, None, None) => {
                    return Err(self.operands(
                        pc,
                        &format!("`{name}` is no shared or global variable or parameter"),
                    ));
                }
            },
            Operand::Vector(_) | Operand::Address { .. } | Operand::TensorCoords { .. } => {
                return Err(self.operands(pc, "a vector or address where a value belongs"));
            }
        })
    }

    fn special(&self, t: u32, special: Special) -> u64 {
        u64::from(match special {
            Special::Tid(0) => t,
            Special::Ntid(0) => self.shape.block,
            Special::Ctaid(0) => self.ctaid,
            Special::Nctaid(0) => self.shape.grid,
            Special::Tid(_) | Special::Ctaid(_) => 0,
            Special::Ntid(_) | Special::Nctaid(_) => 1,
            Special::LaneId => t % 32,
            Special::WarpId => t / 32,
        })
    }

    /// The register of a destination operand.
    pub fn dest(&self, pc: usize, operand: &Operand) -> Result<u32, ExecError> {
        match operand {
            Operand::Reg(reg) => Ok(*reg),
            _ => Err(self.operands(pc, "a destination that is not a register")),
        }
    }

    /// The registers of a vector operand (or of a single register).
    pub fn regs_of(&self, pc: usize, operand: &Operand) -> Result<Vec<u32>, ExecError> {
        match operand {
            Operand::Vector(items) => items.iter().map(|i| self.dest(pc, i)).collect(),
            Operand::Reg(reg) => Ok(vec![*reg]),
            _ => Err(self.operands(pc, "expected a register or a vector of registers")),
        }
    }

    /// Records one warp execution of a shared-memory instruction.
    pub fn note_banks(&mut self, pc: usize, degree: u32) {
        let entry = self.run.banks.entry(pc).or_insert((0, 0));
        entry.0 = entry.0.max(degree);
        entry.1 += 1;
    }
}
