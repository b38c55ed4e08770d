//! Stage 3, lowering: one kernel → one `.entry` — its parameters (a `.u64`
//! per global tensor, then a `.u32` per symbolic dimension, docs/language.md
//! §6), `.maxntid` (with `.minnctapersm` and `.maxnreg` when the kernel asks
//! for them), shared arrays, and the walk of its outermost spec. The state
//! every later step of the kernel's lowering works on lives here.

use std::collections::{BTreeMap, BTreeSet};

use super::Options;
use super::emitter::Emitter;
use super::error::LowerError;
use super::registers::RegisterFile;
use super::shared::{SLICE_ALIGN, ScratchSlot, SharedPlan, plan_shared, unique_name};
use crate::check::registers_per_thread;
use crate::expr::Expr;
use crate::index::prove::{Prover, group_size};
use crate::ir::print::Names;
use crate::ir::{
    Buffer, BufferId, BufferKind, Kernel, Memory, Requirement, SpecKind, SpecStmt, Stmt,
};
use crate::ptx::{Catalogue, Entry, ParamType, Reg, RegClass, Symbol, imm};

/// Where a buffer's elements live, as the lowering addresses them.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Storage {
    /// A global tensor: the `.u64` parameter holding its address.
    Global {
        /// The parameter's name.
        param: String,
    },
    /// A shared tensor: a slice of a shared array.
    Shared {
        /// The array's name.
        array: String,
        /// The slice's first byte in the array.
        offset: u32,
    },
    /// A register array (see [`RegisterFile`]).
    Registers,
}

/// The state of lowering one kernel.
///
/// Rule: `storage[i]` is where `kernel.buffers[i]` lives; `unrolled` binds
/// the variables of the unrolled loops being walked to their current value;
/// `errors` collects failures that do not stop the walk (an atomic spec
/// that matches nothing is reported, and the walk goes on).
pub struct KernelLowering<'a, 'c> {
    /// The kernel.
    pub kernel: &'a Kernel,
    /// What the caller asked for.
    pub options: &'a Options,
    /// The code under construction.
    pub out: Emitter<'c>,
    /// Per buffer, its storage.
    pub storage: Vec<Storage>,
    /// The register arrays.
    pub registers: RegisterFile,
    /// Names for printing.
    pub names: Names<'a>,
    /// Values of the unrolled loop variables in scope.
    pub unrolled: BTreeMap<u32, i64>,
    /// The run-time loop variables in scope whose value may differ between
    /// the lanes of a warp (their start or step depends on the thread id):
    /// a branch on one is not uniform.
    pub lane_dependent_loops: BTreeSet<u32>,
    /// Failures collected so far.
    pub errors: Vec<LowerError>,
    /// Threads per block.
    pub block_size: i64,
    /// Whether the last instruction that touched registers was a warpgroup
    /// multiply (`wgmma`), so that the next one needs no `wgmma.fence`.
    pub wgmma_batch_open: bool,
    /// Whether a spec computed into registers since the last `mma_commit`:
    /// work the program put before its next `mma_wait`, to overlap the
    /// multiplies in flight (`walk.rs` pins that wait below it).
    pub register_work_since_mma_commit: bool,
    /// Whether some atomic `MatMul` reads shared memory (`wgmma`, through
    /// the async proxy): then the copies `async_wait` completes are fenced
    /// for it (`fence.proxy.async`).
    pub async_proxy_reads: bool,
    /// Where block reductions leave their warps' partials, when the kernel
    /// has any.
    pub scratch: Option<ScratchSlot>,
    /// The grid barrier's counter, a module-scope `.global` word, when the
    /// kernel holds a `grid_sync`.
    pub grid_counter: Option<Symbol>,
    /// The tensor maps' `.param`s, in the kernel's order.
    pub tensor_maps: Vec<Symbol>,
}

/// Lowers `kernel` into an entry. `taken` holds the names already used at
/// module scope (entries, dynamic shared arrays) and receives this kernel's.
pub fn lower_kernel(
    kernel: &Kernel,
    options: &Options,
    catalogue: &Catalogue,
    taken: &mut BTreeSet<String>,
) -> Result<Entry, Vec<LowerError>> {
    let mut lowering =
        KernelLowering::new(kernel, options, catalogue, taken).map_err(|e| vec![e])?;
    if let Err(error) = lowering.versions() {
        lowering.errors.push(error);
    }
    if !lowering.errors.is_empty() {
        return Err(lowering.errors);
    }
    let entry = lowering.out.finish().map_err(|error| vec![error])?;
    check_registers(kernel, &entry).map_err(|error| vec![error])?;
    Ok(entry)
}

/// Refuses an entry whose occupancy attributes leave fewer registers per
/// thread than its neediest instruction needs: ptxas would refuse it
/// ("Insufficient registers"), and the attributes, not the code, are at fault.
fn check_registers(kernel: &Kernel, entry: &Entry) -> Result<(), LowerError> {
    let Some(threads) = entry.max_threads else {
        return Ok(());
    };
    let Some(budget) = registers_per_thread(kernel.occupancy, threads) else {
        return Ok(());
    };
    match entry.register_floor() {
        Some((instruction, needed)) if needed > budget => {
            let occupancy = kernel.occupancy;
            let attributes: Vec<String> = [
                occupancy
                    .min_blocks_per_sm
                    .map(|blocks| format!("min_blocks_per_sm = {blocks}")),
                occupancy
                    .max_registers
                    .map(|registers| format!("max_registers = {registers}")),
            ]
            .into_iter()
            .flatten()
            .collect();
            Err(LowerError::Registers {
                span: kernel.span,
                budget,
                needed,
                instruction: instruction.name().to_string(),
                attributes: attributes.join(", "),
            })
        }
        Some(_) | None => Ok(()),
    }
}

impl<'a, 'c> KernelLowering<'a, 'c> {
    /// The kernel's body; with specializations (`specialize`) that the
    /// kernel's requirements do not already imply, twice: first knowing
    /// them, under a uniform branch taken when they all hold at run time,
    /// then without (docs/lowering.md, "Specialized versions").
    fn versions(&mut self) -> Result<(), LowerError> {
        let root = &self.kernel.root;
        let open: Vec<Requirement> = self
            .kernel
            .specializations
            .iter()
            .filter(|condition| !self.proves(condition))
            .cloned()
            .collect();
        if open.is_empty() {
            return self.spec(root);
        }
        let mut holds: Option<Reg> = None;
        for condition in &open {
            let Requirement::Divisible { value, divisor, .. } = condition else {
                return Err(LowerError::unsupported(
                    self.kernel.span,
                    "a specialization other than a divisibility",
                    "this is a checker bug: `specialize` states `a % d == 0`",
                ));
            };
            let remainder = self
                .out
                .int_reg(&Expr::rem(value.clone(), divisor.clone()))?;
            let divides = self.out.reg(RegClass::Pred);
            self.out.emit(
                "setp.eq.u32",
                vec![divides.into(), remainder.into(), imm(0)],
            )?;
            if let Some(before) = holds {
                self.out.emit(
                    "and.pred",
                    vec![divides.into(), divides.into(), before.into()],
                )?;
            }
            holds = Some(divides);
        }
        let holds = holds.expect("at least one open specialization");
        let general = self.out.prover.clone();
        let specialized = general.clone().with_requirements(&open);
        // The conditions read only the dims: every thread takes one version.
        self.either(
            "specialized",
            holds,
            true,
            |this| {
                this.out.prover = specialized;
                let body = this.spec(root);
                this.out.prover = general.clone();
                this.reset_statement_state();
                body
            },
            |this| this.spec(root),
        )
    }

    /// Whether the kernel's facts already imply `condition`.
    fn proves(&self, condition: &Requirement) -> bool {
        match condition {
            Requirement::Divisible { value, divisor, .. } => divisor
                .as_const()
                .is_some_and(|d| d >= 1 && self.out.prover.divisor(value) % d == 0),
            Requirement::Positive { .. } => false,
        }
    }

    /// Forgets what the last statements left open (a `wgmma` batch,
    /// register work since `mma_commit`): a version starts afresh.
    fn reset_statement_state(&mut self) {
        self.wgmma_batch_open = false;
        self.register_work_since_mma_commit = false;
    }

    fn new(
        kernel: &'a Kernel,
        options: &'a Options,
        catalogue: &'c Catalogue,
        taken: &mut BTreeSet<String>,
    ) -> Result<Self, LowerError> {
        if taken.contains(&kernel.name) {
            return Err(LowerError::unsupported(
                kernel.span,
                format!(
                    "a kernel named `{}` is already defined in this file",
                    kernel.name
                ),
                "give every kernel of a file its own name",
            ));
        }
        taken.insert(kernel.name.clone());
        let block_size = group_size(&kernel.block)
            .filter(|size| (1..=1024).contains(size))
            .ok_or_else(|| {
                LowerError::unsupported(
                    kernel.span,
                    format!(
                        "the block group has {} threads; a block has a constant 1 to 1024",
                        group_size(&kernel.block)
                            .map_or("a symbolic number of".into(), |n| { n.to_string() })
                    ),
                    "declare the kernel's thread group with a constant size of at most 1024",
                )
            })?;
        let prover = Prover::for_kernel(kernel);
        let mut out = Emitter::new(&kernel.name, catalogue, prover, kernel.span)?;
        out.annotate = options.annotate;
        out.max_threads(block_size as u32)?;
        out.occupancy(kernel.occupancy)?;
        let plan = plan_shared(kernel, options.arch, taken)?;
        let grid_counter = if kernel.has_grid_barrier() {
            let name = unique_name(&format!("{}_grid_barrier", kernel.name), taken);
            Some(out.global_variable(&name, 4, 4)?)
        } else {
            None
        };
        let mut entry_names: BTreeSet<String> = BTreeSet::from([kernel.name.clone()]);
        entry_names.extend(taken.iter().cloned());
        let mut storage = vec![Storage::Registers; kernel.buffers.len()];
        declare_shared(&mut out, &plan, &mut storage)?;
        for (position, id) in kernel.params.iter().enumerate() {
            let buffer = buffer(kernel, *id)?;
            match buffer.kind {
                BufferKind::Param(index) if index as usize == position => {}
                BufferKind::Param(_)
                | BufferKind::Shared
                | BufferKind::Registers
                | BufferKind::Temporary => {
                    return Err(LowerError::unsupported(
                        buffer.span,
                        format!(
                            "`%{}` is parameter {position} of the kernel but its storage says \
                             otherwise",
                            buffer.name
                        ),
                        "this is a checker bug: parameters are the global tensors in order",
                    ));
                }
            }
            let name = unique_name(&buffer.name, &mut entry_names);
            out.param(&name, ParamType::U64)?;
            storage[id.0 as usize] = Storage::Global { param: name };
        }
        for dim in &kernel.dims {
            let name = unique_name(&dim.name, &mut entry_names);
            out.dim_param(&name)?;
        }
        let mut tensor_maps = Vec::with_capacity(kernel.tensor_maps.len());
        for (index, map) in kernel.tensor_maps.iter().enumerate() {
            let tensor = buffer(kernel, map.tensor)?;
            let name = unique_name(&format!("tmap{index}_{}", tensor.name), &mut entry_names);
            tensor_maps.push(out.param(&name, ParamType::TensorMap)?);
        }
        for (index, buffer) in kernel.buffers.iter().enumerate() {
            let unplaced = match (&buffer.kind, &storage[index]) {
                (BufferKind::Param(_), Storage::Global { .. })
                | (BufferKind::Shared, Storage::Shared { .. })
                | (BufferKind::Registers, Storage::Registers) => false,
                // The contract's values: the body cannot name them.
                (BufferKind::Temporary, _) => false,
                (BufferKind::Param(_) | BufferKind::Shared | BufferKind::Registers, _) => true,
            };
            if unplaced {
                return Err(LowerError::unsupported(
                    buffer.span,
                    format!(
                        "`%{}` is a global tensor that is not a kernel parameter",
                        buffer.name
                    ),
                    "declare global tensors at kernel scope: they are the kernel's parameters",
                ));
            }
        }
        Ok(KernelLowering {
            kernel,
            options,
            out,
            storage,
            registers: RegisterFile::new(),
            names: Names::of(kernel),
            unrolled: BTreeMap::new(),
            lane_dependent_loops: BTreeSet::new(),
            errors: Vec::new(),
            block_size,
            wgmma_batch_open: false,
            register_work_since_mma_commit: false,
            async_proxy_reads: reads_shared_in_matmul(std::slice::from_ref(&kernel.root)),
            scratch: plan.scratch,
            grid_counter,
            tensor_maps,
        })
    }

    /// The byte offset of a shared buffer's slice in its array (`None` for
    /// other storage).
    pub fn shared_slice_offset(&self, id: BufferId) -> Option<u32> {
        match self.storage.get(id.0 as usize)? {
            Storage::Shared { offset, .. } => Some(*offset),
            Storage::Global { .. } | Storage::Registers => None,
        }
    }

    /// The buffer `id` of this kernel.
    pub fn buffer(&self, id: BufferId) -> Result<&'a Buffer, LowerError> {
        buffer(self.kernel, id)
    }
}

fn declare_shared(
    out: &mut Emitter,
    plan: &SharedPlan,
    storage: &mut [Storage],
) -> Result<(), LowerError> {
    if plan.dynamic {
        let align = plan.slots.iter().map(|slot| slot.align).max();
        out.dynamic_shared(
            &plan.dynamic_array,
            align.unwrap_or(SLICE_ALIGN),
            plan.total,
        )?;
    }
    for slot in &plan.slots {
        if !plan.dynamic {
            out.shared_array(&slot.array, slot.bytes, slot.align)?;
        }
        storage[slot.buffer.0 as usize] = Storage::Shared {
            array: slot.array.clone(),
            offset: slot.offset,
        };
    }
    if let Some(scratch) = plan.scratch.as_ref().filter(|_| !plan.dynamic) {
        out.shared_array(&scratch.array, scratch.bytes, SLICE_ALIGN)?;
    }
    Ok(())
}

fn buffer(kernel: &Kernel, id: BufferId) -> Result<&Buffer, LowerError> {
    kernel.buffers.get(id.0 as usize).ok_or_else(|| {
        LowerError::unsupported(
            kernel.span,
            format!("buffer number {} does not exist", id.0),
            "this is a checker bug: views name buffers of their kernel",
        )
    })
}

/// Whether any atomic `MatMul` among `specs` and their bodies reads an
/// operand from shared memory.
fn reads_shared_in_matmul(specs: &[SpecStmt]) -> bool {
    specs.iter().any(|spec| match &spec.body {
        None => {
            matches!(spec.kind, SpecKind::MatMul { .. })
                && spec
                    .inputs
                    .iter()
                    .any(|view| view.ty.memory == Memory::Shared)
        }
        Some(body) => body_reads_shared_in_matmul(body),
    })
}

fn body_reads_shared_in_matmul(body: &[Stmt]) -> bool {
    body.iter().any(|stmt| match stmt {
        Stmt::Spec(spec) => reads_shared_in_matmul(std::slice::from_ref(spec)),
        Stmt::For(each) => body_reads_shared_in_matmul(&each.body),
        Stmt::If(branch) => {
            body_reads_shared_in_matmul(&branch.then_body)
                || body_reads_shared_in_matmul(&branch.else_body)
        }
        Stmt::Sync { .. }
        | Stmt::Commit { .. }
        | Stmt::Wait { .. }
        | Stmt::Arrive { .. }
        | Stmt::WaitPhase { .. }
        | Stmt::SetMaxRegisters { .. } => false,
    })
}
