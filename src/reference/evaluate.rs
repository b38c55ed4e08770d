//! Reference stage: evaluating a contract in f64 on the host copies of the
//! kernel's global tensors, rounding each result into the output's element
//! type, and the tolerance the comparison allows.

use half::{bf16, f16};
use rayon::prelude::*;

use super::ReferenceError;
use super::contract::{Contract, ContractKind, MatMulShape, Step};
use super::gemm::gemm_accumulate;
use super::pointwise;
use super::view::{CHUNK, FlatIndex, ResolvedView, gather};
use crate::ir::InitValue;
use std::collections::BTreeMap;

use crate::ir::{BufferId, ReduceOp, Scalar};

/// How far the GPU's output may be from the reference, as the relative
/// error ‖out − ref‖ / ‖ref‖ (docs/running.md, "Tolerances").
#[derive(Clone, PartialEq, Debug)]
pub struct Tolerance {
    /// The largest relative error that passes.
    pub relative: f64,
    /// Why this bound, for the report (`fp16 inputs`, `exact move`…).
    pub reason: String,
}

/// Relative error allowed where every value is exact after rounding into
/// the output type (moves, fills) or computed in fp32.
const TIGHT: f64 = 1e-5;
/// Relative error allowed where fp16/bf16 values take part in arithmetic.
const HALF_PRECISION: f64 = 1e-2;

/// What the output of a kernel must hold.
///
/// Rule: `values[i]` is expected at buffer offset `index.offset(i)` of the
/// parameter `param`; every value is representable in `scalar`.
#[derive(Clone, PartialEq, Debug)]
pub struct Expected {
    /// `%name` of the output.
    pub output: String,
    /// Its ABI position.
    pub param: u32,
    /// Its element type.
    pub scalar: Scalar,
    /// Where each value goes.
    pub index: FlatIndex,
    /// The values.
    pub values: Vec<f64>,
    /// The comparison's bound.
    pub tolerance: Tolerance,
}

/// The unit roundoff of `scalar`: half the distance from 1 to the next
/// value (`2^-11` for fp16, `2^-8` bf16, `2^-24` fp32); 0 for integers.
pub fn unit_roundoff(scalar: Scalar) -> f64 {
    match scalar {
        Scalar::Fp16 => (-11f64).exp2(),
        Scalar::Bf16 => (-8f64).exp2(),
        Scalar::Fp32 => (-24f64).exp2(),
        Scalar::I32 | Scalar::U32 | Scalar::Mbarrier => 0.0,
    }
}

/// `value` rounded to the nearest value of `scalar` (ties to even;
/// integers saturate, NaN becomes 0 for them), as an f64.
pub fn round_to(scalar: Scalar, value: f64) -> f64 {
    match scalar {
        Scalar::Fp16 => f64::from(f16::from_f64(value)),
        Scalar::Bf16 => f64::from(bf16::from_f64(value)),
        Scalar::Fp32 => f64::from(value as f32),
        Scalar::I32 => f64::from(value.round_ties_even() as i32),
        // A barrier (never in a contract) rounds as an arrival count.
        Scalar::U32 | Scalar::Mbarrier => f64::from(value.round_ties_even() as u32),
    }
}

fn is_half(scalar: Scalar) -> bool {
    match scalar {
        Scalar::Fp16 | Scalar::Bf16 => true,
        Scalar::Fp32 | Scalar::I32 | Scalar::U32 | Scalar::Mbarrier => false,
    }
}

/// The bound for arithmetic on `operands` that accumulates `terms` values
/// into `accumulator`: the larger of the precision bound (1e-2 when a
/// 16-bit float takes part, else 1e-5) and the accumulator's expected
/// rounding drift, `u·√terms`.
fn arithmetic_tolerance(operands: &[Scalar], accumulator: Scalar, terms: usize) -> Tolerance {
    let (base, base_reason) = match operands.iter().find(|s| is_half(**s)) {
        Some(half) => (HALF_PRECISION, format!("{} operands", half.name())),
        None => (TIGHT, format!("{} arithmetic", accumulator.name())),
    };
    let drift = unit_roundoff(accumulator) * (terms as f64).sqrt();
    if drift > base {
        Tolerance {
            relative: drift,
            reason: format!(
                "{} accumulation of {terms} terms: u·√{terms}",
                accumulator.name()
            ),
        }
    } else {
        Tolerance {
            relative: base,
            reason: base_reason,
        }
    }
}

/// The host values of `view`'s parameter, checked against its size.
fn host_values<'p>(params: &[&'p [f64]], view: &ResolvedView) -> Result<&'p [f64], ReferenceError> {
    let position = view.param.unwrap_or(u32::MAX) as usize;
    let values = params.get(position).copied().ok_or_else(|| {
        ReferenceError::Input(format!(
            "no host values for {} (parameter {position}; {} given)",
            view.name,
            params.len()
        ))
    })?;
    if values.len() != view.buffer_elements {
        return Err(ReferenceError::Input(format!(
            "{} holds {} elements but {} host values were given",
            view.name,
            view.buffer_elements,
            values.len()
        )));
    }
    Ok(values)
}

/// The values of every tensor while a contract runs: the host's copies of
/// the parameters, and what the steps have written so far (temporaries,
/// and parameters a step wrote).
struct Store<'p> {
    params: &'p [&'p [f64]],
    written: BTreeMap<BufferId, Vec<f64>>,
}

impl Store<'_> {
    /// The current values of `view`'s buffer.
    fn data(&self, view: &ResolvedView) -> Result<&[f64], ReferenceError> {
        match self.written.get(&view.buffer) {
            Some(values) => Ok(values),
            None if view.param.is_some() => host_values(self.params, view),
            None => Err(ReferenceError::Input(format!(
                "{} is read before a step computes it",
                view.name
            ))),
        }
    }

    /// `view`'s buffer, to be written: a parameter starts from its host
    /// values (a `MatMul` may accumulate into it), or NaN where it has
    /// none; a temporary starts as NaN, so that an element no step writes
    /// shows in the comparison.
    fn buffer_mut(&mut self, view: &ResolvedView) -> &mut Vec<f64> {
        let params = self.params;
        self.written.entry(view.buffer).or_insert_with(|| {
            match view.param.and_then(|p| params.get(p as usize)) {
                Some(values) if values.len() == view.buffer_elements => values.to_vec(),
                Some(_) | None => vec![f64::NAN; view.buffer_elements],
            }
        })
    }
}

impl Contract {
    /// The tolerance of the comparison: the loosest of the steps'.
    pub fn tolerance(&self) -> Tolerance {
        let mut loosest: Option<Tolerance> = None;
        for step in &self.steps {
            let tolerance = step.tolerance();
            if loosest
                .as_ref()
                .is_none_or(|bound| tolerance.relative >= bound.relative)
            {
                loosest = Some(tolerance);
            }
        }
        loosest.unwrap_or(Tolerance {
            relative: TIGHT,
            reason: "no arithmetic".to_string(),
        })
    }

    /// The expected values of every output, in the outermost spec's order,
    /// for `params`: the host values of every `GL` parameter, by ABI
    /// position (an output's entry is read only when the contract
    /// accumulates into it). The steps run in order, each result rounded
    /// into its output's element type; every output is compared against
    /// the loosest of the steps' tolerances.
    pub fn evaluate_outputs(&self, params: &[&[f64]]) -> Result<Vec<Expected>, ReferenceError> {
        let mut store = Store {
            params,
            written: BTreeMap::new(),
        };
        for step in &self.steps {
            let (index, values) = step.evaluate(&store)?;
            let buffer = store.buffer_mut(&step.output);
            for (offset, value) in index.offsets(0..index.len()).zip(values) {
                let slot = usize::try_from(offset)
                    .ok()
                    .and_then(|offset| buffer.get_mut(offset))
                    .ok_or_else(|| ReferenceError::OutOfBounds {
                        operand: step.output.name.clone(),
                        offset,
                        elements: step.output.buffer_elements,
                    })?;
                *slot = value;
            }
        }
        self.outputs
            .iter()
            .map(|out| {
                let index = out.element_order()?;
                let values = gather(&index, store.data(out)?, &out.name)?;
                Ok(Expected {
                    output: out.name.clone(),
                    param: out.param.unwrap_or(u32::MAX),
                    scalar: out.scalar,
                    index,
                    values,
                    tolerance: self.tolerance(),
                })
            })
            .collect()
    }

    /// The expected values of a kernel with one output
    /// ([`Contract::evaluate_outputs`] for several).
    pub fn evaluate(&self, params: &[&[f64]]) -> Result<Expected, ReferenceError> {
        let mut outputs = self.evaluate_outputs(params)?;
        match outputs.len() {
            1 => Ok(outputs.remove(0)),
            count => Err(ReferenceError::Unsupported {
                kernel: self.kernel.clone(),
                detail: format!("the contract has {count} outputs: `evaluate_outputs` gives each"),
            }),
        }
    }
}

impl Step {
    /// Input `i`, or an error for a step built with too few.
    fn input(&self, i: usize) -> Result<&ResolvedView, ReferenceError> {
        self.inputs.get(i).ok_or_else(|| {
            ReferenceError::Shape(format!(
                "a contract step has {} inputs; its kind reads input {i}",
                self.inputs.len()
            ))
        })
    }

    /// The tolerance of this step's result.
    pub fn tolerance(&self) -> Tolerance {
        let out = self.output.scalar;
        let mut operands: Vec<Scalar> = self.inputs.iter().map(|v| v.scalar).collect();
        operands.push(out);
        match &self.kind {
            ContractKind::Move | ContractKind::Init { .. } => Tolerance {
                relative: TIGHT,
                reason: format!("exact after rounding to {}", out.name()),
            },
            ContractKind::Unary(op) => {
                let rounding = arithmetic_tolerance(&operands, out, 1);
                match pointwise::approximate_bound(*op) {
                    Some((bound, form)) if bound > rounding.relative => Tolerance {
                        relative: bound,
                        reason: form.to_string(),
                    },
                    Some(_) | None => rounding,
                }
            }
            ContractKind::Binary(_) | ContractKind::Ternary(_) | ContractKind::Select(_) => {
                arithmetic_tolerance(&operands, out, 1)
            }
            ContractKind::MatMul(shape) => {
                // The products' operands decide the precision; C only accumulates.
                let inputs: Vec<Scalar> = self.inputs.iter().map(|v| v.scalar).collect();
                arithmetic_tolerance(&inputs, out, shape.k)
            }
            ContractKind::Reduction { reduced, .. } => {
                arithmetic_tolerance(&operands, out, *reduced)
            }
        }
    }

    /// The step's result over `store`, rounded into the output's element
    /// type, with the index that places it in the output's buffer.
    fn evaluate(&self, store: &Store) -> Result<(FlatIndex, Vec<f64>), ReferenceError> {
        let read =
            |view: &ResolvedView| gather(&view.element_order()?, store.data(view)?, &view.name);
        let out = &self.output;
        let (index, mut values) = match &self.kind {
            ContractKind::Move => (out.element_order()?, read(self.input(0)?)?),
            ContractKind::Unary(op) => {
                let mut x = read(self.input(0)?)?;
                x.par_iter_mut()
                    .for_each(|v| *v = pointwise::unary(*op, *v));
                (out.element_order()?, x)
            }
            ContractKind::Binary(op) => {
                let mut x = read(self.input(0)?)?;
                let y = read(self.input(1)?)?;
                x.par_iter_mut()
                    .zip(y.par_iter())
                    .for_each(|(x, y)| *x = pointwise::binary(*op, *x, *y));
                (out.element_order()?, x)
            }
            ContractKind::Ternary(op) => {
                let mut x = read(self.input(0)?)?;
                let y = read(self.input(1)?)?;
                let z = read(self.input(2)?)?;
                x.par_iter_mut()
                    .zip(y.par_iter().zip(z.par_iter()))
                    .for_each(|(x, (y, z))| *x = pointwise::ternary(*op, *x, *y, *z));
                (out.element_order()?, x)
            }
            ContractKind::Select(op) => {
                let a = read(self.input(0)?)?;
                let b = read(self.input(1)?)?;
                let mut x = read(self.input(2)?)?;
                let y = read(self.input(3)?)?;
                x.par_iter_mut()
                    .zip(a.par_iter().zip(b.par_iter()).zip(y.par_iter()))
                    .for_each(|(x, ((a, b), y))| *x = pointwise::select(*op, *a, *b, *x, *y));
                (out.element_order()?, x)
            }
            ContractKind::Init {
                value: InitValue::Number(value),
            } => (out.element_order()?, vec![*value; out.elements()]),
            ContractKind::Init {
                value: InitValue::Index(axis),
            } => (out.element_order()?, out.coordinates(*axis as usize)?),
            ContractKind::MatMul(shape) => self.matmul(shape, store)?,
            ContractKind::Reduction { op, axes, reduced } => (
                out.element_order()?,
                self.reduce(*op, axes, *reduced, store)?,
            ),
        };
        let scalar = out.scalar;
        values
            .par_iter_mut()
            .for_each(|v| *v = round_to(scalar, *v));
        Ok((index, values))
    }

    /// `C (+)= A·B` on dense row-major copies, matrix by matrix of a batch;
    /// the result in C's row-major order (the batch outermost), with the
    /// index that places it.
    fn matmul(
        &self,
        shape: &MatMulShape,
        store: &Store,
    ) -> Result<(FlatIndex, Vec<f64>), ReferenceError> {
        let data = |view: &ResolvedView| store.data(view);
        let row_major = |view: &ResolvedView| -> Result<FlatIndex, ReferenceError> {
            let (rows, columns, batch) = view
                .matrix()
                .ok_or_else(|| ReferenceError::Shape(format!("{} is not a matrix", view.name)))?;
            // Columns fastest: element (b·rows + r)·columns + c.
            view.index_over(columns.into_iter().chain(rows).chain(batch).collect())
        };
        let (a, b, c) = (self.input(0)?, self.input(1)?, &self.output);
        let a_dense = gather(&row_major(a)?, data(a)?, &a.name)?;
        let b_dense = gather(&row_major(b)?, data(b)?, &b.name)?;
        let c_index = row_major(c)?;
        let mut c_dense = if shape.accumulate {
            gather(&c_index, data(c)?, &c.name)?
        } else {
            vec![0.0; c_index.len()]
        };
        let (a_size, b_size, c_size) = (shape.m * shape.k, shape.k * shape.n, shape.m * shape.n);
        for matrix in 0..shape.batch {
            gemm_accumulate(
                shape.m,
                shape.n,
                shape.k,
                &a_dense[matrix * a_size..(matrix + 1) * a_size],
                &b_dense[matrix * b_size..(matrix + 1) * b_size],
                &mut c_dense[matrix * c_size..(matrix + 1) * c_size],
            )?;
        }
        Ok((c_index, c_dense))
    }

    /// `op` over the reduced modes, one output element per combination of
    /// the kept modes (first kept mode fastest).
    fn reduce(
        &self,
        op: ReduceOp,
        axes: &[u32],
        reduced: usize,
        store: &Store,
    ) -> Result<Vec<f64>, ReferenceError> {
        let data = |view: &ResolvedView| store.data(view);
        let x = self.input(0)?;
        let modes = x.logical_modes().ok_or_else(|| {
            ReferenceError::Shape(format!("{}'s levels have different ranks", x.name))
        })?;
        let is_reduced = |mode: usize| axes.contains(&(mode as u32));
        // Reduced leaves fastest: each output element's inputs are contiguous.
        let leaves = (0..modes.len())
            .filter(|&mode| is_reduced(mode))
            .chain((0..modes.len()).filter(|&mode| !is_reduced(mode)))
            .flat_map(|mode| modes[mode].iter().copied())
            .collect();
        let dense = gather(&x.index_over(leaves)?, data(x)?, &x.name)?;
        let fold = |terms: &[f64]| match op {
            ReduceOp::Add => terms.iter().sum(),
            ReduceOp::Max => terms.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        };
        let mut out = vec![0.0; dense.len() / reduced.max(1)];
        out.par_chunks_mut(CHUNK)
            .zip(dense.par_chunks(CHUNK * reduced.max(1)))
            .for_each(|(out, terms)| {
                for (value, terms) in out.iter_mut().zip(terms.chunks(reduced.max(1))) {
                    *value = fold(terms);
                }
            });
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_matches_the_types() {
        assert_eq!(round_to(Scalar::Fp16, 1.0 + 1.0 / 4096.0), 1.0);
        assert_eq!(round_to(Scalar::Fp16, 70000.0), f64::INFINITY);
        assert_eq!(round_to(Scalar::Bf16, 1.0 + 1.0 / 256.0), 1.0);
        assert_eq!(round_to(Scalar::Bf16, 1.0 + 3.0 / 256.0), 1.0 + 4.0 / 256.0);
        assert_eq!(round_to(Scalar::Fp32, 0.1), f64::from(0.1f32));
        assert_eq!(round_to(Scalar::I32, 2.5), 2.0);
        assert_eq!(round_to(Scalar::I32, -1e12), f64::from(i32::MIN));
        assert_eq!(round_to(Scalar::U32, -3.0), 0.0);
    }

    #[test]
    fn tolerances_follow_precision_and_accumulation_length() {
        let half = arithmetic_tolerance(&[Scalar::Fp16, Scalar::Fp16], Scalar::Fp32, 4096);
        assert_eq!(half.relative, 1e-2);
        assert_eq!(half.reason, "fp16 operands");
        let single = arithmetic_tolerance(&[Scalar::Fp32], Scalar::Fp32, 128);
        assert_eq!(single.relative, 1e-5);
        // fp16 accumulation over 1024 terms drifts past 1e-2: 2^-11·32.
        let drift = arithmetic_tolerance(&[Scalar::Fp16], Scalar::Fp16, 1024);
        assert_eq!(drift.relative, 32.0 / 2048.0);
        assert_eq!(drift.reason, "fp16 accumulation of 1024 terms: u·√1024");
        assert_eq!(unit_roundoff(Scalar::I32), 0.0);
    }
}
