//! Launch stage: a run's host data, the same on the GPU and on the CPU
//! executor — each parameter's seeded random fill (in the input domain its
//! contract asks for), the runtime's element type of a scalar, and which
//! elements still hold the poison after a run.

use half::{bf16, f16};

use super::plan::{LaunchPlan, ParamPlan};
use crate::data::{DataError, Element, ElementType, to_bytes};
use crate::ir::Scalar;
use crate::reference::{Contract, Expected, InputDomain, ReferenceError};

/// The runtime's tag of a scalar type.
pub fn element_type(scalar: Scalar) -> ElementType {
    match scalar {
        Scalar::Fp16 => ElementType::F16,
        Scalar::Bf16 => ElementType::BF16,
        Scalar::Fp32 => ElementType::F32,
        Scalar::I32 => ElementType::I32,
        // The checker keeps barriers out of global memory; a barrier's
        // 8 bytes are never filled from the host.
        Scalar::U32 | Scalar::Mbarrier => ElementType::U32,
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
pub fn fill_bytes(param: &ParamPlan, seed: u64, domain: InputDomain) -> Result<Vec<u8>, DataError> {
    let ty = element_type(param.scalar);
    let bytes = ty.random_bytes(param.elements, param_seed(seed, param.position));
    match domain {
        InputDomain::Uniform => Ok(bytes),
        InputDomain::Positive | InputDomain::Scaled(_) => {
            let values = ty
                .to_f64(&bytes)
                .map_err(|error| DataError(format!("filling {}: {error}", param.name)))?;
            let mapped: Vec<f64> = values.into_iter().map(|v| domain.map(v)).collect();
            Ok(encode(ty, &mapped))
        }
    }
}

/// Whether each element of `bytes` still holds `ty`'s poison.
pub fn poison_flags(ty: ElementType, bytes: &[u8]) -> Vec<bool> {
    let poison = ty.poison_bytes(1);
    bytes
        .chunks_exact(ty.bytes())
        .map(|element| element == poison.as_slice())
        .collect()
}

/// The host bytes of every parameter: random values for those the kernel
/// reads, `None` (poison) for the others.
pub fn host_inputs(
    plan: &LaunchPlan,
    contract: Option<&Contract>,
    seed: u64,
) -> Result<Vec<Option<Vec<u8>>>, DataError> {
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

/// What `contract` expects of each output on the host inputs `host` (one
/// entry per parameter of `plan`, `None` for those not filled), each with
/// the position in `plan.params` of the parameter it is compared with.
pub fn expected_outputs(
    plan: &LaunchPlan,
    contract: &Contract,
    host: &[Option<Vec<u8>>],
) -> Result<Vec<(Expected, usize)>, ReferenceError> {
    let mut values: Vec<Vec<f64>> = Vec::with_capacity(plan.params.len());
    for (param, bytes) in plan.params.iter().zip(host) {
        values.push(match bytes {
            Some(bytes) => element_type(param.scalar)
                .to_f64(bytes)
                .map_err(|error| ReferenceError::Input(format!("{}: {error}", param.name)))?,
            None => Vec::new(),
        });
    }
    let slices: Vec<&[f64]> = values.iter().map(Vec::as_slice).collect();
    contract
        .evaluate_outputs(&slices)?
        .into_iter()
        .map(|expected| {
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
            Ok((expected, output))
        })
        .collect()
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
