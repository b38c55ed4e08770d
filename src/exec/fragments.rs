//! CPU executor: which lane holds which element of the warp-wide
//! instructions' operands, read off the atoms table ([`crate::atoms`]) —
//! the same thread–value layouts instruction selection and the REPL's
//! `:atom` use, so the executor cannot disagree with the lowering about a
//! fragment. Each atom is evaluated once into a lookup table (the layouts'
//! evaluation is too slow for the inner loop of an `mma`).
//!
//! Element `e` of a fragment lives in register `e / 2` (16-bit elements,
//! low half first) or register `e` (32-bit elements), as the atoms number
//! their values.

use std::sync::LazyLock;

use crate::atoms::{self, Fragment, LdmatrixCount};

/// `(row, col)` of every `(thread, value)` of one fragment, thread-major.
struct Table {
    values: usize,
    cells: Vec<(usize, usize)>,
}

impl Table {
    fn of(fragment: &Fragment) -> Table {
        let (threads, values) = (fragment.threads(), fragment.values());
        let cells = (0..threads)
            .flat_map(|thread| (0..values).map(move |value| (thread, value)))
            .map(|(thread, value)| {
                let (row, col) = fragment.element(thread, value);
                (row as usize, col as usize)
            })
            .collect();
        Table {
            values: values as usize,
            cells,
        }
    }

    fn at(&self, thread: usize, value: usize) -> (usize, usize) {
        self.cells[thread * self.values + value]
    }
}

/// The widest `wgmma` B the executor takes: the accumulators of a narrower
/// N are the first `N / 2` values of this one's (checked below).
const WGMMA_MAX_N: i64 = 256;

struct Tables {
    ldmatrix: Table,
    ldmatrix_trans: Table,
    m16n8k16: [Table; 3],
    m8n8k4: [Table; 3],
    /// Per lane of the warp: (quad pair, thread within the m8n8k4 atom).
    m8n8k4_lanes: [(usize, usize); 32],
    wgmma: Table,
}

static TABLES: LazyLock<Tables> = LazyLock::new(|| {
    let m16n8k16 = atoms::mma_m16n8k16();
    let m8n8k4 = atoms::mma_m8n8k4();
    let mut m8n8k4_lanes = [(usize::MAX, usize::MAX); 32];
    for quad_pair in 0..m8n8k4.instances.size() {
        let base = m8n8k4
            .instances
            .eval(quad_pair)
            .expect("quad pair in range");
        for thread in 0..m8n8k4.lanes.size() {
            let lane = base + m8n8k4.lanes.eval(thread).expect("atom thread in range");
            m8n8k4_lanes[lane as usize] = (quad_pair as usize, thread as usize);
        }
    }
    assert!(
        m8n8k4_lanes.iter().all(|&(q, _)| q != usize::MAX),
        "the m8n8k4 quad pairs cover the warp"
    );
    Tables {
        ldmatrix: Table::of(&atoms::ldmatrix(LdmatrixCount::X1, false).values),
        ldmatrix_trans: Table::of(&atoms::ldmatrix(LdmatrixCount::X1, true).values),
        m16n8k16: [
            Table::of(&m16n8k16.a),
            Table::of(&m16n8k16.b),
            Table::of(&m16n8k16.c),
        ],
        m8n8k4: [
            Table::of(&m8n8k4.a),
            Table::of(&m8n8k4.b),
            Table::of(&m8n8k4.c),
        ],
        m8n8k4_lanes,
        wgmma: Table::of(&atoms::wgmma_m64nnk16_accumulators(WGMMA_MAX_N)),
    }
});

/// `ldmatrix` of one 8×8 matrix: the (row, column) of the matrix (rows as
/// the addresses of threads `8j + row` gave them) that element `e` (0 or 1)
/// of `lane`'s register comes from.
pub fn ldmatrix(lane: usize, e: usize, trans: bool) -> (usize, usize) {
    let tables = &*TABLES;
    if trans {
        tables.ldmatrix_trans.at(lane, e)
    } else {
        tables.ldmatrix.at(lane, e)
    }
}

/// `mma.m16n8k16` A (16×16): element `e` (0..8) of `lane` → (m, k).
pub fn mma_m16n8k16_a(lane: usize, e: usize) -> (usize, usize) {
    TABLES.m16n8k16[0].at(lane, e)
}

/// `mma.m16n8k16` B (16×8): element `e` (0..4) of `lane` → (k, n).
pub fn mma_m16n8k16_b(lane: usize, e: usize) -> (usize, usize) {
    TABLES.m16n8k16[1].at(lane, e)
}

/// `mma.m16n8k16` C/D (16×8): element `e` (0..4) of `lane` → (m, n).
pub fn mma_m16n8k16_c(lane: usize, e: usize) -> (usize, usize) {
    TABLES.m16n8k16[2].at(lane, e)
}

/// `mma.m8n8k4` (Volta): the quad pair of `lane` (0..4; four independent
/// products per warp).
pub fn mma_m8n8k4_quad_pair(lane: usize) -> usize {
    TABLES.m8n8k4_lanes[lane].0
}

fn m8n8k4(operand: usize, lane: usize, e: usize) -> (usize, usize) {
    let tables = &*TABLES;
    tables.m8n8k4[operand].at(tables.m8n8k4_lanes[lane].1, e)
}

/// `mma.m8n8k4` A (8×4, `.row`): element `e` (0..4) of `lane` → (m, k).
pub fn mma_m8n8k4_a(lane: usize, e: usize) -> (usize, usize) {
    m8n8k4(0, lane, e)
}

/// `mma.m8n8k4` B (4×8, `.col`): element `e` (0..4) of `lane` → (k, n).
pub fn mma_m8n8k4_b(lane: usize, e: usize) -> (usize, usize) {
    m8n8k4(1, lane, e)
}

/// `mma.m8n8k4` C/D f32 (8×8): element `e` (0..8) of `lane` → (m, n).
pub fn mma_m8n8k4_c(lane: usize, e: usize) -> (usize, usize) {
    m8n8k4(2, lane, e)
}

/// `wgmma.m64nNk16` C/D f32 (N ≤ 256): register `i` of thread `lane` of
/// warp `warp` (of the warpgroup) → (m, n).
pub fn wgmma_c(warp: usize, lane: usize, i: usize) -> (usize, usize) {
    TABLES.wgmma.at(32 * warp + lane, i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Every fragment covers its matrix exactly once.
    fn covers(
        rows: usize,
        cols: usize,
        lanes: usize,
        per_lane: usize,
        f: impl Fn(usize, usize) -> (usize, usize),
    ) {
        let seen: HashSet<(usize, usize)> = (0..lanes)
            .flat_map(|l| (0..per_lane).map(move |e| (l, e)))
            .map(|(l, e)| f(l, e))
            .collect();
        assert_eq!(seen.len(), lanes * per_lane);
        assert!(seen.iter().all(|&(r, c)| r < rows && c < cols));
        assert_eq!(seen.len(), rows * cols);
    }

    #[test]
    fn every_fragment_is_a_bijection() {
        covers(8, 8, 32, 2, |l, e| ldmatrix(l, e, false));
        covers(8, 8, 32, 2, |l, e| ldmatrix(l, e, true));
        covers(16, 16, 32, 8, mma_m16n8k16_a);
        covers(16, 8, 32, 4, mma_m16n8k16_b);
        covers(16, 8, 32, 4, mma_m16n8k16_c);
        // One quad pair: lanes 0..4 and 16..20.
        let pair = [0, 1, 2, 3, 16, 17, 18, 19];
        covers(8, 8, 8, 8, |l, e| mma_m8n8k4_c(pair[l], e));
        covers(8, 4, 8, 4, |l, e| mma_m8n8k4_a(pair[l], e));
        covers(4, 8, 8, 4, |l, e| mma_m8n8k4_b(pair[l], e));
        covers(64, 16, 128, 8, |t, i| wgmma_c(t / 32, t % 32, i));
    }

    #[test]
    fn the_quad_pairs_are_lanes_4q_and_4q_plus_16() {
        for lane in 0..32 {
            assert_eq!(mma_m8n8k4_quad_pair(lane), (lane / 4) % 4, "lane {lane}");
        }
    }

    /// The executor reads every N's accumulators off the widest atom.
    #[test]
    fn a_narrower_wgmma_is_a_prefix_of_the_widest() {
        for n in (8..=WGMMA_MAX_N).step_by(8) {
            let atom = atoms::wgmma_m64nnk16_accumulators(n);
            for thread in 0..128 {
                for i in 0..n / 2 {
                    let (row, col) = atom.element(thread, i);
                    assert_eq!(
                        wgmma_c(thread as usize / 32, thread as usize % 32, i as usize),
                        (row as usize, col as usize),
                        "N = {n}, thread {thread}, value {i}"
                    );
                }
            }
        }
    }
}
