//! The tile model (seed 003, for our pipelined GEMMs): a block streams
//! k-tiles through three overlapped streams — global (L2 → shared memory),
//! shared (shared memory → tensor cores) and compute (the tensor cores) —
//! after a prologue and before an epilogue; blocks run in rounds of
//! `SMs × occupancy`; split-K multiplies the blocks and divides the
//! k-tiles. docs/tuning.md derives each term.

use crate::reference::MatMulShape;

use super::devices::Device;

/// What the model needs of one configuration at one shape.
///
/// Rule: `bm`, `bn`, `bk` are the block tile (constants `BM`, `BN`, `BK`);
/// `blocks` is the launch's grid (split slices and batch included).
#[derive(Clone, PartialEq, Debug)]
pub struct GemmFacts {
    /// The tensor-core family, as `Device::tensor_flops_per_clock` names it.
    pub family: String,
    /// Block tile rows.
    pub bm: u64,
    /// Block tile columns.
    pub bn: u64,
    /// Block tile depth (one k-tile).
    pub bk: u64,
    /// Shared-memory stages in flight (`STAGES`; 2 when absent).
    pub stages: u64,
    /// K-slices: blocks per output tile (1 without split-K).
    pub splits: u64,
    /// Warp tile (`WM`, `WN`) of an `mma.sync` kernel: how often a block
    /// reads each operand from shared memory; `None` for `wgmma`, whose
    /// warpgroups each read a 64-row slice of A and all of B.
    pub warp_tile: Option<(u64, u64)>,
    /// Threads per block.
    pub threads: u32,
    /// Registers per thread.
    pub registers: u32,
    /// Shared memory per block (bytes).
    pub shared_bytes: u32,
    /// Blocks launched.
    pub blocks: u64,
    /// The problem.
    pub shape: MatMulShape,
    /// Bytes per element of A and B.
    pub in_bytes: u64,
    /// Bytes per element of C.
    pub out_bytes: u64,
}

/// What limits the blocks on one SM.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Limit {
    /// Shared memory per SM.
    Shared,
    /// Registers per SM.
    Registers,
    /// Threads per SM.
    Threads,
    /// Blocks per SM.
    Blocks,
}

impl Limit {
    /// In words.
    pub fn name(self) -> &'static str {
        match self {
            Limit::Shared => "shared memory",
            Limit::Registers => "registers",
            Limit::Threads => "threads",
            Limit::Blocks => "blocks",
        }
    }
}

/// Which stream sets the main loop's pace.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Bound {
    /// L2 → shared memory.
    Global,
    /// Shared memory → tensor cores.
    Shared,
    /// The tensor cores.
    Compute,
    /// Too few stages to cover the load latency.
    Latency,
    /// The whole problem's DRAM traffic.
    Dram,
}

impl Bound {
    /// In words.
    pub fn name(self) -> &'static str {
        match self {
            Bound::Global => "L2",
            Bound::Shared => "shared",
            Bound::Compute => "tensor",
            Bound::Latency => "latency",
            Bound::Dram => "DRAM",
        }
    }
}

/// The model's prediction and its terms (times in µs, summed over rounds).
#[derive(Clone, PartialEq, Debug)]
pub struct Prediction {
    /// Predicted time of `C = A·B` through this configuration (µs),
    /// zeroing C first included for an accumulating kernel.
    pub micros: f64,
    /// Blocks resident per SM.
    pub occupancy: u32,
    /// What limits them.
    pub limit: Limit,
    /// Blocks / (SMs × occupancy).
    pub waves: f64,
    /// k-tiles the busiest block multiplies.
    pub k_tiles: u64,
    /// Global stream over the main loops.
    pub global_us: f64,
    /// Shared stream over the main loops.
    pub shared_us: f64,
    /// Compute stream over the main loops.
    pub compute_us: f64,
    /// Prologues and epilogues.
    pub edges_us: f64,
    /// The DRAM floor: every byte of A, B and C once.
    pub dram_us: f64,
    /// Zeroing C and the extra launch, for an accumulating kernel.
    pub zeroing_us: f64,
    /// The pace-setter.
    pub bound: Bound,
}

/// Why the model cannot predict a configuration.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum ModelError {
    /// The device has no rate for the kernel's instructions.
    #[error("{device} has no tensor-core rate for `{family}` (its families: {known})")]
    NoRate {
        /// The device.
        device: String,
        /// The family.
        family: String,
        /// Those it has.
        known: String,
    },
    /// A block needs more than one SM has.
    #[error("a block needs {what} more than an SM of {device} has")]
    DoesNotFit {
        /// The device.
        device: String,
        /// Which resource, with figures.
        what: String,
    },
}

/// Blocks per SM and what limits them (registers allocated per warp in
/// units of 256, shared memory with 1 KiB reserved per block).
pub fn occupancy(device: &Device, facts: &GemmFacts) -> Result<(u32, Limit), ModelError> {
    const RESERVED_SHARED: u32 = 1024;
    let warps = facts.threads.div_ceil(32);
    let per_warp = (facts.registers * 32).div_ceil(256) * 256;
    let by_registers = device.registers_per_sm / (per_warp * warps).max(1);
    let by_shared = device.shared_per_sm / (facts.shared_bytes + RESERVED_SHARED);
    let by_threads = device.threads_per_sm / facts.threads.max(1);
    let limits = [
        (by_shared, Limit::Shared),
        (by_registers, Limit::Registers),
        (by_threads, Limit::Threads),
        (device.blocks_per_sm, Limit::Blocks),
    ];
    let (blocks, limit) = limits
        .into_iter()
        .min_by_key(|(blocks, _)| *blocks)
        .expect("four limits");
    if blocks == 0 || facts.shared_bytes > device.shared_per_block {
        let what = match limit {
            Limit::Shared => format!("{} bytes of shared memory,", facts.shared_bytes),
            Limit::Registers => {
                format!("{} registers × {} threads,", facts.registers, facts.threads)
            }
            Limit::Threads | Limit::Blocks => format!("{} threads,", facts.threads),
        };
        return Err(ModelError::DoesNotFit {
            device: device.name.clone(),
            what,
        });
    }
    Ok((blocks, limit))
}

/// The predicted time of one configuration at its shape on `device`.
pub fn predict(device: &Device, facts: &GemmFacts) -> Result<Prediction, ModelError> {
    let per_clock = device
        .tensor_flops_per_clock
        .get(&facts.family)
        .copied()
        .ok_or_else(|| ModelError::NoRate {
            device: device.name.clone(),
            family: facts.family.clone(),
            known: device
                .tensor_flops_per_clock
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    let (occupancy, limit) = occupancy(device, facts)?;
    let clock = device.clock_seconds();
    let sms = u64::from(device.sms);
    let slots = sms * u64::from(occupancy);
    let shape = &facts.shape;
    let k_tiles = (shape.k as u64)
        .div_ceil(facts.bk)
        .div_ceil(facts.splits.max(1));
    // One k-tile of one block, per stream, in bytes or flops.
    let (bm, bn, bk) = (facts.bm as f64, facts.bn as f64, facts.bk as f64);
    let in_bytes = facts.in_bytes as f64;
    let tile_bytes = (bm + bn) * bk * in_bytes;
    let operand_reads = match facts.warp_tile {
        None => in_bytes * bk * (bm + bn * (bm / 64.0).max(1.0)),
        Some((wm, wn)) => in_bytes * bk * (bm * bn / wn as f64 + bn * bm / wm as f64),
    };
    let tile_flops = 2.0 * bm * bn * bk;
    let latency_clocks = device.dram_latency_ns * 1e-9 / clock;
    let round = |resident: u64, active_sms: u64| -> Round {
        let r = resident as f64;
        // What one SM may take from L2: its port, or its share of the L2.
        let l2_per_clock = device.l2_gbps * 1e9 * clock / active_sms.max(1) as f64;
        let intake = device.l2_port_bytes_per_clock.min(l2_per_clock);
        let global = r * tile_bytes / intake;
        let shared = r * operand_reads / device.shared_bytes_per_clock;
        let compute = r * tile_flops / per_clock;
        // The loads in flight must cover a load's latency: all stages but
        // the one being multiplied (its release waits for its multiplies).
        let in_flight = facts.stages.saturating_sub(1).max(1) as f64;
        let covered = (latency_clocks + tile_bytes / intake) / in_flight;
        let main = global.max(shared).max(compute).max(covered);
        let bound = if main == global {
            Bound::Global
        } else if main == shared {
            Bound::Shared
        } else if main == compute {
            Bound::Compute
        } else {
            Bound::Latency
        };
        let accumulating = shape.accumulate;
        let c_bytes = r * bm * bn * facts.out_bytes as f64 * if accumulating { 2.0 } else { 1.0 };
        let edges = latency_clocks + tile_bytes / intake + c_bytes / intake;
        let kt = k_tiles as f64;
        Round {
            global: kt * global * clock,
            shared: kt * shared * clock,
            compute: kt * compute * clock,
            main: kt * main * clock,
            edges: edges * clock,
            bound,
        }
    };
    let full_rounds = facts.blocks / slots;
    let last = facts.blocks % slots;
    let mut rounds = Vec::new();
    if full_rounds > 0 {
        rounds.push((full_rounds as f64, round(u64::from(occupancy), sms)));
    }
    if last > 0 {
        rounds.push((1.0, round(last.div_ceil(sms), last.min(sms))));
    }
    let sum = |field: fn(&Round) -> f64| -> f64 {
        rounds
            .iter()
            .map(|(count, r)| count * field(r))
            .sum::<f64>()
            * 1e6
    };
    let main_us = sum(|r| r.main);
    let edges_us = sum(|r| r.edges);
    let batch = shape.batch as f64;
    let (m, n, k) = (shape.m as f64, shape.n as f64, shape.k as f64);
    let c_traffic = if shape.accumulate { 2.0 } else { 1.0 };
    let dram_bytes =
        batch * ((m * k + k * n) * in_bytes + c_traffic * m * n * facts.out_bytes as f64);
    let dram_us = dram_bytes / (device.dram_gbps * 1e9) * 1e6;
    let zeroing_us = if shape.accumulate {
        batch * m * n * facts.out_bytes as f64 / (device.dram_gbps * 1e9) * 1e6 + device.launch_us
    } else {
        0.0
    };
    let kernel_us = main_us + edges_us;
    let bound = if dram_us > kernel_us {
        Bound::Dram
    } else {
        rounds
            .iter()
            .max_by(|a, b| (a.0 * a.1.main).total_cmp(&(b.0 * b.1.main)))
            .map(|(_, r)| r.bound)
            .unwrap_or(Bound::Compute)
    };
    // The kernel's streams and the DRAM traffic overlap, but not perfectly:
    // a smooth maximum (the 6-norm) is the larger where one dominates, and
    // still tells apart configurations that all sit near the DRAM floor.
    let overlapped = (kernel_us.powi(6) + dram_us.powi(6)).powf(1.0 / 6.0);
    Ok(Prediction {
        micros: overlapped + device.launch_us + zeroing_us,
        occupancy,
        limit,
        waves: facts.blocks as f64 / slots as f64,
        k_tiles,
        global_us: sum(|r| r.global),
        shared_us: sum(|r| r.shared),
        compute_us: sum(|r| r.compute),
        edges_us,
        dram_us,
        zeroing_us,
        bound,
    })
}

/// One round of blocks on an SM: each stream's time over the main loop,
/// the main loop at the pace of the slowest, the prologue and epilogue.
struct Round {
    global: f64,
    shared: f64,
    compute: f64,
    main: f64,
    edges: f64,
    bound: Bound,
}

/// Spearman's rank correlation of two equally long series (ties get their
/// mean rank); `None` with fewer than two points or a constant series.
pub fn rank_correlation(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() != b.len() || a.len() < 2 {
        return None;
    }
    let (ra, rb) = (ranks(a), ranks(b));
    let mean = (a.len() as f64 + 1.0) / 2.0;
    let (mut num, mut da, mut db) = (0.0, 0.0, 0.0);
    for (x, y) in ra.iter().zip(&rb) {
        num += (x - mean) * (y - mean);
        da += (x - mean).powi(2);
        db += (y - mean).powi(2);
    }
    (da > 0.0 && db > 0.0).then(|| num / (da * db).sqrt())
}

/// 1-based ranks, ties sharing their mean rank.
fn ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        let rank = (start + end + 1) as f64 / 2.0;
        for &index in &order[start..end] {
            ranks[index] = rank;
        }
        start = end;
    }
    ranks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> Device {
        Device::find("H100").expect("built in")
    }

    fn tma_gemm(
        bm: u64,
        bn: u64,
        stages: u64,
        splits: u64,
        m: usize,
        n: usize,
        k: usize,
    ) -> GemmFacts {
        let shape = MatMulShape {
            m,
            n,
            k,
            batch: 1,
            accumulate: splits > 1,
        };
        let threads = 128 * (bm as u32 / 64 + 1);
        GemmFacts {
            family: "wgmma.f16".into(),
            bm,
            bn,
            bk: 64,
            stages,
            splits,
            warp_tile: None,
            threads,
            registers: (65536 / threads / 8 * 8).min(255),
            shared_bytes: (stages * (bm + bn) * 64 * 2) as u32 + 64,
            blocks: (m as u64).div_ceil(bm) * (n as u64).div_ceil(bn) * splits,
            shape,
            in_bytes: 2,
            out_bytes: if splits > 1 { 4 } else { 2 },
        }
    }

    #[test]
    fn the_large_square_gemm_is_l2_bound_at_the_measured_time() {
        // Measured: 237.6 µs at 4096³ with 128×256 tiles (docs/performance.md).
        let p = predict(&h100(), &tma_gemm(128, 256, 4, 1, 4096, 4096, 4096)).unwrap();
        assert_eq!(p.bound, Bound::Global);
        assert_eq!((p.occupancy, p.waves.ceil()), (1, 4.0));
        assert!((200.0..280.0).contains(&p.micros), "{p:?}");
        // Smaller tiles move more bytes per flop.
        let small = predict(&h100(), &tma_gemm(128, 128, 4, 1, 4096, 4096, 4096)).unwrap();
        assert!(small.micros > p.micros);
    }

    #[test]
    fn split_k_wins_where_few_tiles_meet_a_long_k() {
        let device = h100();
        let plain = predict(&device, &tma_gemm(128, 128, 4, 1, 256, 256, 16384)).unwrap();
        let split = predict(&device, &tma_gemm(128, 128, 4, 8, 256, 256, 16384)).unwrap();
        assert!(split.micros < plain.micros / 3.0, "{plain:?} {split:?}");
        // And loses on a square problem that already fills the chip.
        let plain = predict(&device, &tma_gemm(128, 256, 4, 1, 4096, 4096, 4096)).unwrap();
        let split = predict(&device, &tma_gemm(128, 256, 4, 2, 4096, 4096, 4096)).unwrap();
        assert!(split.micros > plain.micros, "{plain:?} {split:?}");
    }

    #[test]
    fn too_few_stages_cannot_cover_the_latency() {
        let two = predict(&h100(), &tma_gemm(128, 128, 2, 1, 4096, 4096, 4096)).unwrap();
        assert_eq!(two.bound, Bound::Latency);
        let four = predict(&h100(), &tma_gemm(128, 128, 4, 1, 4096, 4096, 4096)).unwrap();
        assert!(four.micros < two.micros);
    }

    #[test]
    fn a_block_past_an_sm_does_not_fit() {
        let mut facts = tma_gemm(128, 256, 6, 1, 4096, 4096, 4096);
        facts.shared_bytes = 300_000;
        let error = predict(&h100(), &facts).unwrap_err();
        assert!(
            error.to_string().contains("300000 bytes of shared memory"),
            "{error}"
        );
        facts.family = "wmma.f64".into();
        assert!(matches!(
            predict(&h100(), &facts),
            Err(ModelError::NoRate { .. })
        ));
    }

    #[test]
    fn ranks_correlate_with_ties_counted_once() {
        assert_eq!(
            rank_correlation(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]),
            Some(1.0)
        );
        assert_eq!(
            rank_correlation(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]),
            Some(-1.0)
        );
        assert_eq!(rank_correlation(&[1.0, 1.0], &[1.0, 2.0]), None);
        let r = rank_correlation(&[1.0, 2.0, 2.0, 4.0], &[1.0, 3.0, 2.0, 4.0]).unwrap();
        assert!((r - 0.9487).abs() < 1e-3, "{r}");
    }
}
