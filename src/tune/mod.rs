//! Tune stage: choosing a GEMM's tunable constants by the tile model
//! (seed 003) instead of by hand sweeps — `ptxgen tune`, and `run` /
//! `bench --tune`.
//!
//! - [`space`]: the tunable constants (`const BN = 128 tune [64, 128]`) a
//!   kernel depends on and every combination of their values, compiled,
//!   with registers and shared memory from `ptxas`.
//! - [`devices`]: the GPUs' figures (`devices.json`), by name, from a file,
//!   or from the driver.
//! - [`model`]: the predicted time of one configuration at one shape, term
//!   by term.
//! - [`rank`]: every configuration of a space planned at the shape and
//!   ordered by prediction.
//!
//! `docs/tuning.md` records the model and its validation on the GPU.

pub mod devices;
pub mod model;
pub mod space;

pub use devices::{Device, DeviceError};
pub use model::{Bound, GemmFacts, Limit, ModelError, Prediction, predict, rank_correlation};
pub use space::{
    Candidate, Refused, Resources, Space, Tunable, enumerate, settings_text, tunables,
};

use crate::launch::{self, DimArg, LaunchPlan, Work};

/// One configuration planned at the shape, with its prediction.
#[derive(Clone, Debug)]
pub struct Ranked<'s> {
    /// The configuration.
    pub candidate: &'s Candidate,
    /// Its launch at the shape.
    pub plan: LaunchPlan,
    /// The model's terms.
    pub prediction: Prediction,
}

/// A space ranked at one shape: the configurations by predicted time,
/// fastest first (at equal times, more `STAGES` first), and those that cannot run it, with why.
#[derive(Clone, Debug, Default)]
pub struct Ranking<'s> {
    /// Fastest first; ties keep the space's order.
    pub ranked: Vec<Ranked<'s>>,
    /// Configurations the shape or the device rules out, and why.
    pub unfit: Vec<(&'s Candidate, String)>,
}

/// Plans every candidate of `space` with `dims` and predicts it on `device`.
pub fn rank<'s>(space: &'s Space, device: &Device, dims: &[DimArg]) -> Ranking<'s> {
    let mut ranking = Ranking::default();
    for candidate in &space.candidates {
        match plan_and_predict(candidate, device, dims) {
            Ok((plan, prediction)) => ranking.ranked.push(Ranked {
                candidate,
                plan,
                prediction,
            }),
            Err(reason) => ranking.unfit.push((candidate, reason)),
        }
    }
    // At equal predictions the deeper ring first: the model's latency is a
    // mean, and more stages absorb its spread.
    ranking.ranked.sort_by(|a, b| {
        let stages = |r: &Ranked| r.candidate.constant("STAGES").unwrap_or(0);
        a.prediction
            .micros
            .total_cmp(&b.prediction.micros)
            .then_with(|| stages(b).cmp(&stages(a)))
    });
    ranking
}

fn plan_and_predict(
    candidate: &Candidate,
    device: &Device,
    dims: &[DimArg],
) -> Result<(LaunchPlan, Prediction), String> {
    let mut selected = launch::select(&candidate.compiled, Some(&candidate.kernel), dims)
        .map_err(|error| error.to_string())?;
    let plan = selected
        .pop()
        .map(|selected| selected.plan)
        .ok_or_else(|| format!("no plan for `{}`", candidate.kernel))?;
    let facts = facts(candidate, &plan)?;
    let prediction = predict(device, &facts).map_err(|error| error.to_string())?;
    Ok((plan, prediction))
}

/// What the model reads of a configuration: its tile from the constants
/// `BM`, `BN`, `BK` (`STAGES`, `WM`, `WN` where defined), the problem from
/// its `MatMul` contract, the K-slices from its grid (blocks per output
/// tile), the instruction family from its PTX, the rest from the plan and
/// `ptxas`.
pub fn facts(candidate: &Candidate, plan: &LaunchPlan) -> Result<GemmFacts, String> {
    let Work::MatMul(shape) = plan.work else {
        return Err(format!(
            "kernel `{}` has no MatMul contract: the tile model describes GEMMs",
            candidate.kernel
        ));
    };
    let tile = |name: &str| -> Result<u64, String> {
        match candidate.constant(name) {
            Some(value) if value > 0 => Ok(value as u64),
            _ => Err(format!(
                "the tile model reads the block tile from constants BM, BN and BK; `{name}` is \
                 not a positive constant of this file"
            )),
        }
    };
    let optional = |name: &str, default: u64| {
        candidate
            .constant(name)
            .filter(|v| *v > 0)
            .map_or(default, |v| v as u64)
    };
    let ptx = candidate.compiled.ptx().unwrap_or("");
    let (family, warp_tile) = if ptx.contains("wgmma.mma_async") {
        ("wgmma.f16", None)
    } else if ptx.contains("mma.sync") {
        let (wm, wn) = (optional("WM", 64), optional("WN", 64));
        ("mma.sync.f16", Some((wm, wn)))
    } else {
        return Err(format!(
            "kernel `{}` multiplies with no tensor-core instruction the model knows",
            candidate.kernel
        ));
    };
    let scalar_bytes = |role_written: bool| {
        plan.params
            .iter()
            .find(|p| p.role.is_written() == role_written)
            .map_or(2, |p| p.scalar.bytes() as u64)
    };
    let (bm, bn) = (tile("BM")?, tile("BN")?);
    // K-slices: the blocks beyond one per output tile. Read off the grid,
    // not the constant `SPLITS`, which a kernel that does not split may see.
    let tiles = (shape.m as u64).div_ceil(bm) * (shape.n as u64).div_ceil(bn) * shape.batch as u64;
    let splits = (u64::from(plan.grid) / tiles.max(1)).max(1);
    Ok(GemmFacts {
        family: family.to_string(),
        bm,
        bn,
        bk: tile("BK")?,
        stages: optional("STAGES", 2),
        splits,
        warp_tile,
        threads: plan.block,
        registers: candidate.resources.registers,
        shared_bytes: candidate
            .resources
            .shared_bytes
            .max(plan.dynamic_shared_bytes),
        blocks: u64::from(plan.grid),
        shape,
        in_bytes: scalar_bytes(false),
        out_bytes: scalar_bytes(true),
    })
}
