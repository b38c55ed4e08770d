//! Stage 2, check: block reductions — a `Reduction` whose executing group's
//! innermost level spans several warps (docs/language.md §5, "Block
//! reductions").
//!
//! Such a reduction cannot be done with shuffles alone: each warp reduces
//! its own threads, its lane 0 leaves the partial in shared memory, and
//! after a barrier every warp combines the partials of its instance. The
//! rule here says which groups can do that — the one statement of it, read
//! by the checker's diagnostic and by the lowering's analysis of executing
//! groups — and which specs are block reductions, so that the barrier rules
//! (`sync` under thread-dependent control flow, races between barriers)
//! count the barrier inside them.

use crate::diag::Diagnostic;
use crate::ir::{SpecKind, SpecStmt};
use crate::syntax::ast;

use super::codes;
use super::env::{Checker, GroupVal};
use super::lanes::Lanes;

/// The threads of a hardware warp: a reduction over at most this many
/// threads is done with shuffles alone.
pub const WARP_THREADS: i64 = 32;

/// Whether `spec` is a block reduction: an atomic `Reduction` whose
/// executing group's innermost level has more than [`WARP_THREADS`]
/// threads. It holds a `bar.sync`, which every thread of the block must
/// reach, as for a `sync` statement.
pub fn is_block_reduction(spec: &SpecStmt) -> bool {
    let reduces = match spec.kind {
        SpecKind::Reduction { .. } => true,
        SpecKind::Move { .. }
        | SpecKind::MatMul { .. }
        | SpecKind::Unary(_)
        | SpecKind::Binary(_)
        | SpecKind::Ternary(_)
        | SpecKind::Select(_)
        | SpecKind::Shfl { .. }
        | SpecKind::Init { .. }
        | SpecKind::Generic => false,
    };
    let innermost = spec.threads.levels.last().and_then(|level| {
        level
            .shape
            .leaves()
            .into_iter()
            .try_fold(1i64, |size, extent| size.checked_mul(extent.as_const()?))
    });
    reduces && spec.body.is_none() && innermost.is_some_and(|size| size > WARP_THREADS)
}

/// The warps of one instance of a block reduction, or why the group cannot
/// execute one. `ids` are the thread ids of the first instance (the
/// innermost level's offsets), `starts` the first thread of every instance
/// (the outer levels' offsets; `None` when an outer level is symbolic),
/// `block` the threads of the block.
///
/// Rule: with `N = ids.len()`, the ids are `0 … N−1` in any order, `N` is a
/// multiple of 32, every instance starts at a multiple of `N`, and the
/// block is a whole number of instances (`N` divides its size, so `N` is at
/// most 1024). Then thread `t` belongs to instance `⌊t/N⌋`, whose warps are
/// `⌊t/N⌋·N/32 … ⌊t/N⌋·N/32 + N/32 − 1`: every thread finds the partials
/// of its instance from its own id.
pub fn block_reduction_warps(
    ids: &[i64],
    starts: Option<&[i64]>,
    block: i64,
) -> Result<u32, String> {
    let threads = ids.len() as i64;
    if threads % WARP_THREADS != 0 {
        return Err(format!(
            "its {threads} threads are not whole warps (a multiple of 32)"
        ));
    }
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    if let Some((position, id)) = sorted
        .iter()
        .enumerate()
        .find(|(position, id)| **id != *position as i64)
    {
        return Err(format!(
            "its {threads} threads are not consecutive: thread {position} of the first \
             instance is missing (the next one named is {id})"
        ));
    }
    let Some(starts) = starts else {
        return Err("an outer level is symbolic, so where its instances start is not known".into());
    };
    if let Some(start) = starts.iter().find(|start| *start % threads != 0) {
        return Err(format!(
            "an instance starts at thread {start}, not at a multiple of its {threads} threads"
        ));
    }
    if block % threads != 0 {
        return Err(format!(
            "the block's {block} threads are not a whole number of instances of {threads}"
        ));
    }
    Ok((threads / WARP_THREADS) as u32)
}

impl Checker {
    /// An atomic `Reduction` over more than a warp must be executed by a
    /// group that [`block_reduction_warps`] accepts.
    pub(crate) fn block_reduction_group(
        &mut self,
        spec: &ast::SpecStmt,
        threads: &GroupVal,
        lanes: Option<&Lanes>,
    ) {
        let (Some(lanes), Some(launch)) = (lanes, self.launch.as_ref()) else {
            return;
        };
        if spec.body.is_some() || lanes.len() as i64 <= WARP_THREADS {
            return;
        }
        let Err(reason) = block_reduction_warps(lanes.ids(), lanes.starts(), launch.block_size)
        else {
            return;
        };
        let text = self.group_text(&threads.ty);
        let threads_per_instance = lanes.len();
        self.report(
            Diagnostic::error(
                codes::BLOCK_REDUCTION_GROUP,
                format!(
                    "a `Reduction` over {threads_per_instance} threads that are not whole rows of \
                     warps"
                ),
                spec.threads_span(),
            )
            .with_label(reason)
            .with_note(format!(
                "the group is `{text}`: its innermost level, {threads_per_instance} threads, \
                 reduces together"
            ))
            .with_note(
                "a reduction over more than a warp combines the warps' partials in shared \
                 memory: each instance must be N consecutive threads, N a multiple of 32, \
                 starting at a multiple of N, and the block a whole number of instances",
            )
            .with_help(
                "execute it with whole rows of warps, e.g. `#t.tile(256)` for rows of 256 threads",
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_aligned_runs_of_warps_reduce_across_warps() {
        let row: Vec<i64> = (0..256).collect();
        assert_eq!(block_reduction_warps(&row, Some(&[0]), 256), Ok(8));
        // Two rows of 128 threads in a block of 256: four warps each.
        let half: Vec<i64> = (0..128).collect();
        assert_eq!(block_reduction_warps(&half, Some(&[0, 128]), 256), Ok(4));
        // Three warps: not a power of two, still whole warps.
        let three: Vec<i64> = (0..96).rev().collect();
        assert_eq!(block_reduction_warps(&three, Some(&[0, 96]), 192), Ok(3));
    }

    #[test]
    fn other_groups_say_why_not() {
        let partial: Vec<i64> = (0..48).collect();
        let reason = block_reduction_warps(&partial, Some(&[0]), 48).unwrap_err();
        assert!(reason.contains("not whole warps"), "{reason}");
        let strided: Vec<i64> = (0..64).map(|i| 2 * i).collect();
        let reason = block_reduction_warps(&strided, Some(&[0]), 128).unwrap_err();
        assert!(
            reason.contains("thread 1 of the first instance"),
            "{reason}"
        );
        let row: Vec<i64> = (0..128).collect();
        let reason = block_reduction_warps(&row, Some(&[0, 64]), 256).unwrap_err();
        assert!(reason.contains("starts at thread 64"), "{reason}");
        let reason = block_reduction_warps(&row, Some(&[0]), 192).unwrap_err();
        assert!(reason.contains("192 threads"), "{reason}");
        assert!(block_reduction_warps(&row, None, 128).is_err());
    }
}
