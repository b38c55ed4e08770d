//! CPU executor: which thread holds which element of the warp-wide
//! instructions' operands — one small function per atom, as
//! docs/ptx-fragments.md states them. (When the atoms table lands, these
//! are the functions it replaces.)
//!
//! Notation: `lane` 0..31, `g = lane / 4`, `t = lane % 4`; element `e`
//! of a fragment lives in register `e / 2` (16-bit elements, low half
//! first) or register `e` (32-bit elements).

/// `ldmatrix` of one 8×8 matrix: the (row, column) of the matrix (rows as
/// the addresses of threads `8j + row` gave them) that element `e` (0 or 1)
/// of `lane`'s register comes from.
pub fn ldmatrix(lane: usize, e: usize, trans: bool) -> (usize, usize) {
    let (g, t) = (lane / 4, lane % 4);
    if trans {
        (2 * t + e, g)
    } else {
        (g, 2 * t + e)
    }
}

/// `mma.m16n8k16` A (16×16): element `e` (0..8) of `lane` → (m, k).
pub fn mma_m16n8k16_a(lane: usize, e: usize) -> (usize, usize) {
    let (g, t) = (lane / 4, lane % 4);
    (g + 8 * ((e / 2) % 2), 2 * t + e % 2 + 8 * (e / 4))
}

/// `mma.m16n8k16` B (16×8): element `e` (0..4) of `lane` → (k, n).
pub fn mma_m16n8k16_b(lane: usize, e: usize) -> (usize, usize) {
    let (g, t) = (lane / 4, lane % 4);
    (2 * t + e % 2 + 8 * (e / 2), g)
}

/// `mma.m16n8k16` C/D (16×8): element `e` (0..4) of `lane` → (m, n).
pub fn mma_m16n8k16_c(lane: usize, e: usize) -> (usize, usize) {
    let (g, t) = (lane / 4, lane % 4);
    (g + 8 * (e / 2), 2 * t + e % 2)
}

/// `mma.m8n8k4` (Volta): the quad pair of `lane` (0..4; four independent
/// products per warp).
pub fn mma_m8n8k4_quad_pair(lane: usize) -> usize {
    (lane >> 2) % 4
}

/// `mma.m8n8k4` A (8×4, `.row`): element `e` (0..4) of `lane` → (m, k).
pub fn mma_m8n8k4_a(lane: usize, e: usize) -> (usize, usize) {
    (lane % 4 + 4 * (lane >> 4), e)
}

/// `mma.m8n8k4` B (4×8, `.col`): element `e` (0..4) of `lane` → (k, n).
pub fn mma_m8n8k4_b(lane: usize, e: usize) -> (usize, usize) {
    (e, lane % 4 + 4 * (lane >> 4))
}

/// `mma.m8n8k4` C/D f32 (8×8): element `e` (0..8) of `lane` → (m, n).
pub fn mma_m8n8k4_c(lane: usize, e: usize) -> (usize, usize) {
    let h = lane >> 4;
    ((lane % 2) + (e & 2) + 4 * h, (e & 4) + (lane & 2) + (e & 1))
}

/// `wgmma.m64nNk16` C/D f32: register `i` of thread `lane` of warp `warp`
/// (of the warpgroup) → (m, n).
pub fn wgmma_c(warp: usize, lane: usize, i: usize) -> (usize, usize) {
    (
        16 * warp + lane / 4 + 8 * ((i / 2) % 2),
        8 * (i / 4) + 2 * (lane % 4) + i % 2,
    )
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
        covers(64, 16, 128, 8, |t, i| wgmma_c(t / 32, t % 32, i));
    }
}
