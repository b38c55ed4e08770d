//! Stage 3, lowering: what the thread group executing an atomic spec means
//! for instruction selection. Every thread of the block runs every
//! statement (SPMD); the group's innermost level is the unit that performs
//! one collective instruction together — one thread, a hardware warp, a
//! Volta quad pair, or an aligned power-of-two set of lanes — and its outer
//! levels enumerate the units side by side. A unit of several whole warps
//! (a block reduction's instance) is the checker's rule,
//! `check::block_reduction_warps`.

use crate::atoms;
use crate::check::{WARP_THREADS, block_reduction_warps};
use crate::ir::print::{Names, Print};
use crate::ir::{GroupType, Level};

/// The unit that executes one instance of an atomic spec.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Unit {
    /// Each thread alone (`[]` or an innermost level of size 1).
    Thread,
    /// One hardware warp: the innermost level reaches lanes 0–31 exactly,
    /// and every unit starts at a multiple of 32.
    Warp,
    /// One Hopper warpgroup: the innermost level reaches threads 0–127
    /// exactly, and every unit starts at a multiple of 128 (four warps whose
    /// warp ids are consecutive from a multiple of 4).
    Warpgroup,
    /// Several whole warps (not a warpgroup, which is named on its own):
    /// `32 · count` consecutive threads, each unit starting at a multiple of
    /// its size, the block a whole number of units — what a block reduction
    /// needs (`check::block_reduction_warps`).
    Warps {
        /// The warps of one unit, 2 to 32.
        count: u32,
    },
    /// A Volta quad pair `[(4,2) : (1,16)]`: lanes `4q..4q+3` and
    /// `4q+16..4q+19`, coordinate `(t, h)` at lane `4q + t + 16h`.
    QuadPair,
    /// `2^k` lanes of one warp closed under XOR with `masks` (a butterfly
    /// over them reaches every lane of the unit).
    Lanes {
        /// The single-bit lane masks, lowest first.
        masks: Vec<u32>,
    },
    /// Anything else, with the reason.
    Other(String),
}

/// An executing thread group, analysed.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GroupInfo {
    /// The group's type as text, e.g. `[4 : 32].[32 : 1].thread`.
    pub text: String,
    /// Its unit.
    pub unit: Unit,
}

impl GroupInfo {
    /// Analyses `group` for a block of `block` threads.
    pub fn analyse(group: &GroupType, block: i64, names: &Names) -> GroupInfo {
        GroupInfo {
            text: group.display(names).to_string(),
            unit: unit_of(group, block),
        }
    }

    /// The unit in words, for rejection messages.
    pub fn describe(&self) -> String {
        match &self.unit {
            Unit::Thread => "each thread alone".into(),
            Unit::Warp => "a whole warp".into(),
            Unit::Warpgroup => "a warpgroup".into(),
            Unit::Warps { count } => format!("{count} consecutive warps"),
            Unit::QuadPair => "a quad pair".into(),
            Unit::Lanes { masks } => format!("{} lanes of a warp", 1usize << masks.len()),
            Unit::Other(reason) => reason.clone(),
        }
    }
}

fn unit_of(group: &GroupType, block: i64) -> Unit {
    let Some((inner, outer)) = group.levels.split_last() else {
        return Unit::Thread;
    };
    let Some(lanes) = offsets(std::slice::from_ref(inner)) else {
        return Unit::Other("a thread group with a symbolic extent or stride".into());
    };
    if lanes.len() == 1 {
        return Unit::Thread;
    }
    let Some(bases) = offsets(outer) else {
        return Unit::Other("a thread group with a symbolic extent or stride".into());
    };
    let mut sorted = lanes.clone();
    sorted.sort_unstable();
    let whole_warps = block % 32 == 0;
    if sorted == (0..32).collect::<Vec<_>>() {
        return if !whole_warps {
            Unit::Other(format!(
                "a warp, but the block's {block} threads are not whole warps"
            ))
        } else if bases.iter().all(|base| base % 32 == 0) {
            Unit::Warp
        } else {
            Unit::Other("a set of 32 threads that is not one hardware warp".into())
        };
    }
    if sorted == (0..128).collect::<Vec<_>>() {
        return if block % 128 != 0 {
            Unit::Other(format!(
                "128 threads, but the block's {block} threads are not whole warpgroups"
            ))
        } else if bases.iter().all(|base| base % 128 == 0) {
            Unit::Warpgroup
        } else {
            Unit::Other("a set of 128 threads that is not one warpgroup".into())
        };
    }
    if lanes.len() as i64 > WARP_THREADS {
        if let Ok(count) = block_reduction_warps(&lanes, Some(&bases), block) {
            return Unit::Warps { count };
        }
    }
    // The quad pair is the `mma.m8n8k4` atom's threads, in its order, at
    // one of the warp's instances.
    let quad_pair = atoms::mma_m8n8k4();
    let starts: Vec<i64> = quad_pair.instances.offsets().collect();
    if lanes == quad_pair.lanes.offsets().collect::<Vec<_>>()
        && whole_warps
        && bases.iter().all(|base| starts.contains(&(base % 32)))
    {
        return Unit::QuadPair;
    }
    let union = sorted.iter().fold(0i64, |acc, lane| acc | lane);
    let closed = sorted.len().is_power_of_two()
        && sorted.len() == 1 << union.count_ones()
        && sorted.iter().all(|a| {
            sorted
                .iter()
                .all(|b| sorted.binary_search(&(a ^ b)).is_ok())
        });
    if closed && union < 32 && whole_warps && bases.iter().all(|base| base & union == 0) {
        let masks = (0..5)
            .map(|bit| 1u32 << bit)
            .filter(|mask| union & i64::from(*mask) != 0)
            .collect();
        return Unit::Lanes { masks };
    }
    Unit::Other(format!(
        "a unit of threads {{{}}}: not one thread, a warp, a warpgroup, a quad pair or an \
         aligned power-of-two set of lanes",
        lanes
            .iter()
            .take(12)
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// The thread ids of every coordinate of `levels` (summed over levels), in
/// element order (the last level fastest, inside a level the first mode);
/// `None` when an extent or stride is symbolic, or there are too many.
fn offsets(levels: &[Level]) -> Option<Vec<i64>> {
    let mut all = vec![0i64];
    for level in levels {
        let constants = |tuple: &crate::layout::Tuple<crate::expr::Expr>| -> Option<Vec<i64>> {
            tuple.leaves().into_iter().map(|e| e.as_const()).collect()
        };
        let extents = constants(&level.shape)?;
        let strides = constants(&level.stride)?;
        let size = extents
            .iter()
            .try_fold(1i64, |size, extent| size.checked_mul(*extent))
            .filter(|size| *size >= 1 && size.saturating_mul(all.len() as i64) <= 1 << 16)?;
        let within: Vec<i64> = (0..size)
            .map(|n| {
                let mut rest = n;
                extents
                    .iter()
                    .zip(&strides)
                    .map(|(extent, stride)| {
                        let coordinate = rest % extent;
                        rest /= extent;
                        coordinate * stride
                    })
                    .sum()
            })
            .collect();
        all = all
            .iter()
            .flat_map(|a| within.iter().map(move |w| a + w))
            .collect();
    }
    Some(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lower::testing::group;

    fn unit(levels: &[(&[i64], &[i64])], block: i64) -> Unit {
        GroupInfo::analyse(&group(levels), block, &Names::NONE).unit
    }

    #[test]
    fn scalar_and_size_one_groups_are_single_threads() {
        assert_eq!(unit(&[], 128), Unit::Thread);
        assert_eq!(unit(&[(&[32], &[1]), (&[1], &[1])], 32), Unit::Thread);
    }

    #[test]
    fn warps_must_be_hardware_warps() {
        assert_eq!(unit(&[(&[32], &[1])], 32), Unit::Warp);
        assert_eq!(unit(&[(&[4], &[32]), (&[32], &[1])], 128), Unit::Warp);
        // The paper's [2,2].[8] reshaping is still the whole warp.
        assert_eq!(unit(&[(&[2, 2, 8], &[16, 8, 1])], 32), Unit::Warp);
        assert!(matches!(
            unit(&[(&[2], &[16]), (&[32], &[1])], 64),
            Unit::Other(_)
        ));
        assert!(matches!(unit(&[(&[32], &[1])], 48), Unit::Other(_)));
    }

    #[test]
    fn warpgroups_are_four_aligned_warps() {
        assert_eq!(unit(&[(&[128], &[1])], 128), Unit::Warpgroup);
        assert_eq!(
            unit(&[(&[2], &[128]), (&[128], &[1])], 256),
            Unit::Warpgroup
        );
        // Four warps in another order still reach threads 0..127.
        assert_eq!(unit(&[(&[32, 4], &[1, 32])], 128), Unit::Warpgroup);
        // Starting at warp 2 straddles two warpgroups.
        assert!(matches!(
            unit(&[(&[2], &[64]), (&[128], &[1])], 192),
            Unit::Other(_)
        ));
        assert!(matches!(unit(&[(&[128], &[1])], 160), Unit::Other(_)));
    }

    #[test]
    fn runs_of_whole_warps_are_units_of_warps() {
        assert_eq!(unit(&[(&[256], &[1])], 256), Unit::Warps { count: 8 });
        assert_eq!(
            unit(&[(&[2], &[64]), (&[64], &[1])], 128),
            Unit::Warps { count: 2 }
        );
        assert_eq!(
            unit(&[(&[2], &[96]), (&[32, 3], &[1, 32])], 192),
            Unit::Warps { count: 3 }
        );
        // Starting at thread 64, a unit of 256 straddles two rows.
        assert!(matches!(
            unit(&[(&[2], &[64]), (&[256], &[1])], 512),
            Unit::Other(_)
        ));
        // Every other thread: not whole warps.
        assert!(matches!(unit(&[(&[64], &[2])], 128), Unit::Other(_)));
    }

    #[test]
    fn quad_pairs_follow_the_paper() {
        // #warp.tile([4,2 : 1,16]) = [4 : 4].[(4,2) : (1,16)]
        assert_eq!(
            unit(&[(&[4], &[4]), (&[4, 2], &[1, 16])], 32),
            Unit::QuadPair
        );
        // (2,4) : (16,1) reaches the same lanes in another order: not the
        // coordinate the fragments are defined on.
        assert!(!matches!(unit(&[(&[2, 4], &[16, 1])], 32), Unit::QuadPair));
    }

    #[test]
    fn lane_sets_closed_under_xor_give_their_masks() {
        assert_eq!(
            unit(&[(&[8], &[4]), (&[4], &[1])], 32),
            Unit::Lanes { masks: vec![1, 2] }
        );
        assert_eq!(
            unit(&[(&[4], &[1]), (&[8], &[4])], 32),
            Unit::Lanes {
                masks: vec![4, 8, 16]
            }
        );
        assert!(matches!(unit(&[(&[3], &[1])], 32), Unit::Other(_)));
    }

    #[test]
    fn offsets_are_in_element_order() {
        let level = group(&[(&[2, 2], &[16, 1])]).levels;
        assert_eq!(offsets(&level), Some(vec![0, 16, 1, 17]));
    }
}
