//! Reference stage: a kernel's contract — its outermost spec with the dims
//! bound — checked for what the host can evaluate: a built-in kind, whole
//! global tensors as operands, and shapes that fit the kind.

use std::collections::HashSet;

use super::ReferenceError;
use super::view::{ResolvedView, extent_of};
use crate::ir::{
    BinaryOp, BufferId, BufferKind, CompareOp, InitValue, Kernel, Memory, ReduceOp, SpecKind,
    SpecStmt, TernaryOp, UnaryOp, View,
};

/// The problem size of a `MatMul` contract, from its operands' matrix
/// readings: A is `m×k`, B `k×n`, C `m×n`, `batch` of each (1 for
/// operands of two modes; a third mode is the batch).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct MatMulShape {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B.
    pub k: usize,
    /// Matrices of each operand.
    pub batch: usize,
    /// `C = C + A·B` (true) or `C = A·B` (`MatMul<overwrite>`).
    pub accumulate: bool,
}

impl MatMulShape {
    /// Floating-point operations: one multiply and one add per term.
    pub fn flops(&self) -> u128 {
        2 * self.batch as u128 * self.m as u128 * self.n as u128 * self.k as u128
    }
}

/// What the contract computes, with the operand shapes it needs resolved.
///
/// Rule: the kinds with a whole-tensor contract only; the generic `Spec`
/// and `Shfl` (a register exchange between lanes) have none.
#[derive(Clone, PartialEq, Debug)]
pub enum ContractKind {
    /// `out = in`, converting the element type.
    Move,
    /// `C (+)= A·B`.
    MatMul(MatMulShape),
    /// `y = op(x)`.
    Unary(UnaryOp),
    /// `z = x op y`.
    Binary(BinaryOp),
    /// `w = op(x, y, z)`.
    Ternary(TernaryOp),
    /// `w = (a op b) ? x : y`, compared ordered.
    Select(CompareOp),
    /// `y = op` over the input's modes `axes`; each output element folds
    /// `reduced` input elements.
    Reduction {
        /// The fold.
        op: ReduceOp,
        /// The input's reduced logical modes.
        axes: Vec<u32>,
        /// Input elements per output element.
        reduced: usize,
    },
    /// Every element of the output = `value` (a number, or the element's
    /// coordinate along a logical mode).
    Init {
        /// The value.
        value: InitValue,
    },
}

/// The values an input is filled with. The host draws uniform values in
/// [-1, 1) (exact in the element type); an input whose operation is not
/// defined there is mapped into its domain, exactly.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum InputDomain {
    /// The drawn values as they are.
    Uniform,
    /// `|x| + 1/2`, in [1/2, 3/2]: for `rsqrt`, `sqrt` and `log`, undefined
    /// (or, for `log`, unbounded) at and below 0.
    Positive,
    /// `x · s`: the B operand of a `MatMul` that multiplies an earlier
    /// `MatMul`'s result, with `s = √(3/k)` for its contraction length k —
    /// each product then has about the variance of one input, so a deep
    /// chain (a 20-layer MLP) neither overflows fp16 nor vanishes.
    Scaled(f64),
}

impl InputDomain {
    /// The value an input of this domain holds for a drawn value `x`
    /// (exact for drawn fp16, bf16 and fp32 values).
    pub fn map(self, x: f64) -> f64 {
        match self {
            InputDomain::Uniform => x,
            InputDomain::Positive => x.abs() + 0.5,
            InputDomain::Scaled(scale) => x * scale,
        }
    }
}

/// One built-in spec over whole tensors, as the reference evaluates it: a
/// kernel's outermost spec, or a step of its written contract.
///
/// Rule: every operand is a whole global tensor (a view of a `GL`
/// parameter or of a contract temporary that depends on no thread, block
/// or loop); the shapes fit the kind (equal element counts for elementwise
/// kinds, `m×k · k×n → m×n` for `MatMul`, the kept modes' size for
/// `Reduction`).
#[derive(Clone, PartialEq, Debug)]
pub struct Step {
    /// What is computed.
    pub kind: ContractKind,
    /// The written tensor.
    pub output: ResolvedView,
    /// The read tensors, in the spec's order (A, B for `MatMul`).
    pub inputs: Vec<ResolvedView>,
}

/// What a kernel computes, with the dims bound: the contract of its
/// outermost built-in spec (one step), or its written `contract { … }`
/// (docs/language.md, "Contracts").
///
/// Rule: `steps` is non-empty; `outputs` are the outermost spec's outputs,
/// `GL` parameters that some step writes.
#[derive(Clone, PartialEq, Debug)]
pub struct Contract {
    /// The kernel's name.
    pub kernel: String,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// The kernel's outputs, as its outermost spec names them, in its order
    /// (most kernels have one; an LSTM cell writes H' and C').
    pub outputs: Vec<ResolvedView>,
}

/// The number of inputs each kind takes (the checker's rule E0252).
fn input_count(kind: &ContractKind) -> usize {
    match kind {
        ContractKind::Init { .. } => 0,
        ContractKind::Move | ContractKind::Unary(_) | ContractKind::Reduction { .. } => 1,
        ContractKind::MatMul(_) | ContractKind::Binary(_) => 2,
        ContractKind::Ternary(_) => 3,
        ContractKind::Select(_) => 4,
    }
}

/// `view` with the dims bound, if it is a whole global tensor: a parameter,
/// or a temporary of the kernel's contract.
fn resolve_whole(
    kernel: &Kernel,
    view: &View,
    dims: &[i64],
) -> Result<ResolvedView, ReferenceError> {
    let resolved = ResolvedView::resolve(kernel, view, dims)?;
    let temporary = kernel
        .buffers
        .get(view.buffer.0 as usize)
        .is_some_and(|buffer| buffer.kind == BufferKind::Temporary);
    match (resolved.memory, resolved.param) {
        (Memory::Global, Some(_)) => Ok(resolved),
        (Memory::Global, None) if temporary => Ok(resolved),
        (memory @ (Memory::Shared | Memory::Registers), _) => Err(ReferenceError::NotGlobal {
            operand: resolved.name,
            memory,
        }),
        (Memory::Global, None) => Err(ReferenceError::NotGlobal {
            operand: resolved.name,
            memory: Memory::Global,
        }),
    }
}

impl Step {
    /// The whole-tensor reading of `spec` in `kernel` with `dims`.
    pub fn of(kernel: &Kernel, spec: &SpecStmt, dims: &[i64]) -> Result<Step, ReferenceError> {
        let unsupported = |detail: &str| ReferenceError::Unsupported {
            kernel: kernel.name.clone(),
            detail: detail.to_string(),
        };
        let placeholder = match &spec.kind {
            SpecKind::Generic => {
                return Err(ReferenceError::NoContract {
                    kernel: kernel.name.clone(),
                });
            }
            SpecKind::Shfl { .. } => {
                return Err(unsupported(
                    "an outermost `Shfl` exchanges registers between lanes; it has no \
                     whole-tensor contract to check",
                ));
            }
            SpecKind::Move { .. } => ContractKind::Move,
            SpecKind::MatMul { accumulate, .. } => ContractKind::MatMul(MatMulShape {
                m: 0,
                n: 0,
                k: 0,
                batch: 1,
                accumulate: *accumulate,
            }),
            SpecKind::Unary(op) => ContractKind::Unary(*op),
            SpecKind::Binary(op) => ContractKind::Binary(*op),
            SpecKind::Ternary(op) => ContractKind::Ternary(*op),
            SpecKind::Select(op) => ContractKind::Select(*op),
            SpecKind::Reduction { op, axes } => ContractKind::Reduction {
                op: *op,
                axes: axes.clone(),
                reduced: 0,
            },
            SpecKind::Init { value } => ContractKind::Init { value: *value },
        };
        if spec.outputs.len() != 1 || spec.inputs.len() != input_count(&placeholder) {
            return Err(ReferenceError::Shape(format!(
                "kernel `{}`: a spec has {} outputs and {} inputs; its kind takes 1 and {}",
                kernel.name,
                spec.outputs.len(),
                spec.inputs.len(),
                input_count(&placeholder)
            )));
        }
        let output = resolve_whole(kernel, &spec.outputs[0], dims)?;
        let inputs = spec
            .inputs
            .iter()
            .map(|view| resolve_whole(kernel, view, dims))
            .collect::<Result<Vec<_>, _>>()?;
        let kind = match placeholder {
            ContractKind::Move
            | ContractKind::Unary(_)
            | ContractKind::Binary(_)
            | ContractKind::Ternary(_)
            | ContractKind::Select(_) => {
                for input in &inputs {
                    same_count(&output, input)?;
                }
                placeholder
            }
            ContractKind::Init { .. } => placeholder,
            ContractKind::MatMul(shape) => ContractKind::MatMul(matmul_shape(
                &inputs[0],
                &inputs[1],
                &output,
                shape.accumulate,
            )?),
            ContractKind::Reduction { op, axes, .. } => {
                let reduced = reduction_size(&inputs[0], &output, &axes)?;
                ContractKind::Reduction { op, axes, reduced }
            }
        };
        Ok(Step {
            kind,
            output,
            inputs,
        })
    }

    /// The tensors whose values the step reads: its inputs, and the output
    /// too when it accumulates (`MatMul` without `overwrite`).
    pub fn reads(&self) -> Vec<&ResolvedView> {
        let mut read: Vec<&ResolvedView> = self.inputs.iter().collect();
        if let ContractKind::MatMul(MatMulShape {
            accumulate: true, ..
        }) = self.kind
        {
            read.push(&self.output);
        }
        read
    }
}

impl Contract {
    /// The contract of `kernel` with `dims` (one value per symbolic
    /// dimension, in the kernel's order): its written contract if it has
    /// one, else its outermost spec's.
    pub fn of(kernel: &Kernel, dims: &[i64]) -> Result<Contract, ReferenceError> {
        if dims.len() != kernel.dims.len() {
            return Err(ReferenceError::Dims(format!(
                "kernel `{}` has {} symbolic dims; {} values given",
                kernel.name,
                kernel.dims.len(),
                dims.len()
            )));
        }
        let root = &kernel.root;
        let steps = match &kernel.contract {
            Some(contract) => contract
                .steps
                .iter()
                .map(|step| Step::of(kernel, step, dims))
                .collect::<Result<Vec<_>, _>>()?,
            None => vec![Step::of(kernel, root, dims)?],
        };
        let outputs = root
            .outputs
            .iter()
            .map(|output| resolve_whole(kernel, output, dims))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Contract {
            kernel: kernel.name.clone(),
            steps,
            outputs,
        })
    }

    /// The `MatMul` of the contract, if it has exactly one: the problem
    /// whose FLOPs `bench` reports.
    pub fn matmul(&self) -> Option<MatMulShape> {
        let mut shapes = self.steps.iter().filter_map(|step| match step.kind {
            ContractKind::MatMul(shape) => Some(shape),
            ContractKind::Move
            | ContractKind::Unary(_)
            | ContractKind::Binary(_)
            | ContractKind::Ternary(_)
            | ContractKind::Select(_)
            | ContractKind::Reduction { .. }
            | ContractKind::Init { .. } => None,
        });
        let first = shapes.next()?;
        shapes.next().is_none().then_some(first)
    }

    /// The kernel parameters whose values the contract reads.
    pub fn reads(&self) -> Vec<&ResolvedView> {
        self.steps
            .iter()
            .flat_map(Step::reads)
            .filter(|view| view.param.is_some())
            .collect()
    }

    /// The values parameter `param` must hold for the contract to be
    /// defined everywhere: positive where a step takes its `rsqrt`, `sqrt`
    /// or `log` directly.
    pub fn input_domain(&self, param: u32) -> InputDomain {
        let positive = self.steps.iter().any(|step| {
            let reads_param = step.inputs.iter().any(|input| input.param == Some(param));
            match step.kind {
                ContractKind::Unary(UnaryOp::Rsqrt | UnaryOp::Sqrt | UnaryOp::Log) => reads_param,
                ContractKind::Unary(_)
                | ContractKind::Ternary(_)
                | ContractKind::Select(_)
                | ContractKind::Move
                | ContractKind::MatMul(_)
                | ContractKind::Binary(_)
                | ContractKind::Reduction { .. }
                | ContractKind::Init { .. } => false,
            }
        });
        if positive {
            InputDomain::Positive
        } else if let Some(scale) = self.chained_matmul_scale(param) {
            InputDomain::Scaled(scale)
        } else {
            InputDomain::Uniform
        }
    }

    /// `√(3/k)` when parameter `param` is the B operand of a `MatMul` whose
    /// A operand derives from an earlier `MatMul`'s result (k: that
    /// multiply's contraction length); `None` otherwise.
    fn chained_matmul_scale(&self, param: u32) -> Option<f64> {
        let mut derived: HashSet<BufferId> = HashSet::new();
        for step in &self.steps {
            let product = matches!(step.kind, ContractKind::MatMul(_));
            if let ([a, b], true) = (step.inputs.as_slice(), product)
                && b.param == Some(param)
                && derived.contains(&a.buffer)
            {
                let (_, columns, _) = a.matrix()?;
                let k = extent_of(&columns).max(1);
                return Some((3.0 / k as f64).sqrt());
            }
            if product
                || step
                    .inputs
                    .iter()
                    .any(|input| derived.contains(&input.buffer))
            {
                derived.insert(step.output.buffer);
            }
        }
        None
    }
}

fn same_count(output: &ResolvedView, input: &ResolvedView) -> Result<(), ReferenceError> {
    if output.elements() == input.elements() {
        return Ok(());
    }
    Err(ReferenceError::Shape(format!(
        "{} holds {} elements but {} holds {}: an elementwise contract pairs them one to one",
        output.name,
        output.elements(),
        input.name,
        input.elements()
    )))
}

fn matrix_of(view: &ResolvedView) -> Result<(usize, usize, usize), ReferenceError> {
    let (rows, columns, batch) = view.matrix().ok_or_else(|| {
        ReferenceError::Shape(format!(
            "{} is not a matrix: a MatMul operand has two modes at every level (three for a batch)",
            view.name
        ))
    })?;
    Ok((extent_of(&rows), extent_of(&columns), extent_of(&batch)))
}

fn matmul_shape(
    a: &ResolvedView,
    b: &ResolvedView,
    c: &ResolvedView,
    accumulate: bool,
) -> Result<MatMulShape, ReferenceError> {
    let (m, k, l_a) = matrix_of(a)?;
    let (k_b, n, l_b) = matrix_of(b)?;
    let (m_c, n_c, batch) = matrix_of(c)?;
    if k != k_b || m != m_c || n != n_c || l_a != batch || l_b != batch {
        return Err(ReferenceError::Shape(format!(
            "MatMul of {} ({m}×{k}, batch {l_a}) by {} ({k_b}×{n}, batch {l_b}) into {} \
             ({m_c}×{n_c}, batch {batch})",
            a.name, b.name, c.name
        )));
    }
    Ok(MatMulShape {
        m,
        n,
        k,
        batch,
        accumulate,
    })
}

fn reduction_size(
    x: &ResolvedView,
    y: &ResolvedView,
    axes: &[u32],
) -> Result<usize, ReferenceError> {
    let modes = x.logical_modes().ok_or_else(|| {
        ReferenceError::Shape(format!("{}'s levels have different ranks", x.name))
    })?;
    let mut reduced = 1usize;
    for (position, &axis) in axes.iter().enumerate() {
        let mode = modes.get(axis as usize).ok_or_else(|| {
            ReferenceError::Shape(format!(
                "axis {axis} of {}, which has {} modes",
                x.name,
                modes.len()
            ))
        })?;
        if axes[..position].contains(&axis) {
            return Err(ReferenceError::Shape(format!(
                "axis {axis} is listed twice"
            )));
        }
        reduced *= extent_of(mode);
    }
    let kept = x.elements() / reduced;
    if kept != y.elements() {
        return Err(ReferenceError::Shape(format!(
            "{} keeps {kept} elements of {} but holds {}",
            y.name,
            x.name,
            y.elements()
        )));
    }
    Ok(reduced)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::{Options, check};

    fn kernel(source: &str) -> Kernel {
        let checked =
            check("t.gph", source, &Options::default()).unwrap_or_else(|d| panic!("{d:#?}"));
        checked
            .program
            .kernels
            .into_iter()
            .next()
            .expect("one kernel")
    }

    const GEMM: &str = "%a:[M, K].fp16.GL\n%b:[K, N].fp16.GL\n%c:[M, N].fp32.GL\n\
                        #g:[1].block\n#t:[32].thread\n%c <- MatMul<<<#g, #t>>>(%a, %b)\n";

    #[test]
    fn matmul_sizes_come_from_the_dims() {
        let contract = Contract::of(&kernel(GEMM), &[64, 32, 48]).unwrap();
        let ContractKind::MatMul(shape) = contract.steps[0].kind else {
            panic!("{:?}", contract.steps[0].kind)
        };
        assert_eq!((shape.m, shape.n, shape.k), (64, 48, 32));
        assert!(shape.accumulate);
        assert_eq!(shape.flops(), 2 * 64 * 48 * 32);
        // C is read as well as written.
        let read: Vec<&str> = contract.reads().iter().map(|v| v.name.as_str()).collect();
        assert_eq!(read, ["%a", "%b", "%c"]);
    }

    #[test]
    fn the_generic_spec_and_shared_operands_have_no_contract() {
        let generic =
            kernel("%a:[8].fp32.GL\n#g:[1].block\n#t:[8].thread\n%a <- Spec<<<#g, #t>>>() {}\n");
        let error = Contract::of(&generic, &[]).unwrap_err();
        assert!(
            matches!(error, ReferenceError::NoContract { .. }),
            "{error}"
        );
        assert!(
            error
                .to_string()
                .starts_with("kernel `t` has no contract to check")
        );

        let shared = kernel(
            "%a:[8].fp32.GL\n#g:[1].block\n#t:[8].thread\n%a <- Move<<<#g, #t>>>(%s)\n"
                .replace("%a <- Move", "%s:[8].fp32.SH\n%a <- Move")
                .as_str(),
        );
        let error = Contract::of(&shared, &[]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "%s is a SH tensor: only global (GL) tensors are filled and read back by the host"
        );
    }

    #[test]
    fn rsqrt_inputs_are_positive_and_others_uniform() {
        let rsqrt = kernel(
            "%x:[64].fp32.GL\n%y:[64].fp32.GL\n#g:[1].block\n#t:[64].thread\n\
             %y <- UnaryPointwise<rsqrt><<<#g, #t>>>(%x)\n",
        );
        let contract = Contract::of(&rsqrt, &[]).unwrap();
        assert_eq!(contract.input_domain(0), InputDomain::Positive);
        assert_eq!(contract.input_domain(1), InputDomain::Uniform);
        assert_eq!(InputDomain::Positive.map(-1.0), 1.5);
        assert_eq!(InputDomain::Positive.map(0.0), 0.5);
    }

    #[test]
    fn reductions_count_the_folded_elements() {
        let sum = kernel(
            "%x:[R, 128 : 128, 1].fp32.GL\n%y:[R].fp32.GL\n#g:[R].block\n#t:[32].thread\n\
             %y <- Reduction<add, [1]><<<#g, #t>>>(%x)\n",
        );
        let contract = Contract::of(&sum, &[16]).unwrap();
        assert!(matches!(
            contract.steps[0].kind,
            ContractKind::Reduction { reduced: 128, .. }
        ));
        assert!(Contract::of(&sum, &[]).is_err(), "one value per dim");
    }

    /// The B operand of a MatMul fed by an earlier MatMul is drawn scaled by
    /// √(3/k); the first MatMul's operands and every other input are not.
    #[test]
    fn a_chained_matmul_scales_its_weights() {
        let chain = kernel(
            "%x:[8, 64].fp32.GL\n%w:[64, 64].fp32.GL\n%v:[64, 16].fp32.GL\n%y:[8, 16].fp32.GL\n\
             contract {\n%h:[8, 64].fp32.GL\n%h <- MatMul<overwrite>(%x, %w)\n\
             %y <- MatMul<overwrite>(%h, %v)\n}\n\
             #g:[1].block\n#t:[1].thread\n%y <- Spec<<<#g, #t>>>(%x, %w, %v) {}\n",
        );
        let contract = Contract::of(&chain, &[]).expect("a contract");
        assert_eq!(contract.input_domain(0), InputDomain::Uniform);
        assert_eq!(contract.input_domain(1), InputDomain::Uniform);
        assert_eq!(
            contract.input_domain(2),
            InputDomain::Scaled((3.0f64 / 64.0).sqrt())
        );
        assert_eq!(InputDomain::Scaled(0.5).map(-1.0), -0.5);
    }
}
