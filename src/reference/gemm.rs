//! Reference stage: the dense f64 GEMM under every `MatMul` contract,
//! `C += A·B` on row-major arrays, parallel over blocks of rows of C.
//!
//! Loop order: per task a block of 16 C rows; inside, panels of 256 values
//! of K; inside, tiles of 4 rows × 8 columns of C whose 32 sums stay in
//! registers over the panel (per step: 4 values of A, 8 of B, 32
//! multiply-adds), with the B strip of a tile (256 × 8 values, 16 KiB) in
//! L1 while the block's rows pass over it. On x86-64 CPUs with AVX2 and FMA
//! the same loops are compiled a second time for them and chosen at run
//! time.
//!
//! Each C element adds its panel sums in the same order whatever the
//! thread count, so results are reproducible bit for bit.

use rayon::prelude::*;

use super::ReferenceError;

/// Rows of C per parallel task.
const ROW_BLOCK: usize = 16;
/// Products of one K panel.
const K_PANEL: usize = 256;

/// `c += a · b` for row-major `a` (`m×k`), `b` (`k×n`) and `c` (`m×n`);
/// slices of other lengths are an error, and `c` is left alone.
pub fn gemm_accumulate(
    m: usize,
    n: usize,
    k: usize,
    a: &[f64],
    b: &[f64],
    c: &mut [f64],
) -> Result<(), ReferenceError> {
    let expect = |len: usize, rows: usize, columns: usize| Some(len) == rows.checked_mul(columns);
    if !(expect(a.len(), m, k) && expect(b.len(), k, n) && expect(c.len(), m, n)) {
        return Err(ReferenceError::Input(format!(
            "gemm of {m}×{k} by {k}×{n} given arrays of {}, {} and {} values",
            a.len(),
            b.len(),
            c.len()
        )));
    }
    if m == 0 || n == 0 || k == 0 {
        return Ok(());
    }
    let fused = fused_available();
    c.par_chunks_mut(ROW_BLOCK * n)
        .enumerate()
        .for_each(|(block, c_rows)| {
            let first_row = block * ROW_BLOCK;
            let rows = c_rows.len() / n;
            let a_rows = &a[first_row * k..(first_row + rows) * k];
            if fused {
                row_block_fused(a_rows, b, c_rows, n, k);
            } else {
                row_block::<false>(a_rows, b, c_rows, n, k);
            }
        });
    Ok(())
}

#[cfg(target_arch = "x86_64")]
fn fused_available() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

#[cfg(not(target_arch = "x86_64"))]
fn fused_available() -> bool {
    false
}

#[cfg(target_arch = "x86_64")]
fn row_block_fused(a_rows: &[f64], b: &[f64], c_rows: &mut [f64], n: usize, k: usize) {
    #[target_feature(enable = "avx2,fma")]
    fn with_fma(a_rows: &[f64], b: &[f64], c_rows: &mut [f64], n: usize, k: usize) {
        row_block::<true>(a_rows, b, c_rows, n, k);
    }
    // SAFETY: only called when `fused_available()` found AVX2 and FMA.
    unsafe { with_fma(a_rows, b, c_rows, n, k) }
}

#[cfg(not(target_arch = "x86_64"))]
fn row_block_fused(a_rows: &[f64], b: &[f64], c_rows: &mut [f64], n: usize, k: usize) {
    row_block::<false>(a_rows, b, c_rows, n, k);
}

/// `c_rows += a_rows · b` for a block of rows: per K panel, tiles of
/// `TILE_ROWS × TILE_COLUMNS` sums held in registers, the ragged edges
/// element by element.
#[inline(always)]
fn row_block<const FUSED: bool>(a_rows: &[f64], b: &[f64], c_rows: &mut [f64], n: usize, k: usize) {
    let rows = c_rows.len() / n;
    for k0 in (0..k).step_by(K_PANEL) {
        let panel = k0..(k0 + K_PANEL).min(k);
        let full_columns = n - n % TILE_COLUMNS;
        for j in (0..full_columns).step_by(TILE_COLUMNS) {
            let full_rows = rows - rows % TILE_ROWS;
            for i in (0..full_rows).step_by(TILE_ROWS) {
                tile::<FUSED>(a_rows, b, c_rows, n, k, i, j, panel.clone());
            }
            edge::<FUSED>(
                a_rows,
                b,
                c_rows,
                n,
                k,
                full_rows..rows,
                j..j + TILE_COLUMNS,
                panel.clone(),
            );
        }
        edge::<FUSED>(a_rows, b, c_rows, n, k, 0..rows, full_columns..n, panel);
    }
}

/// Rows of the register tile.
const TILE_ROWS: usize = 4;
/// Columns of the register tile (two 256-bit vectors of f64).
const TILE_COLUMNS: usize = 8;

/// `c[i..i+4][j..j+8] += Σ_{t ∈ panel} a[·][t] · b[t][j..j+8]`, the 32 sums
/// in registers over the whole panel.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn tile<const FUSED: bool>(
    a_rows: &[f64],
    b: &[f64],
    c_rows: &mut [f64],
    n: usize,
    k: usize,
    i: usize,
    j: usize,
    panel: std::ops::Range<usize>,
) {
    let mut sums = [[0.0f64; TILE_COLUMNS]; TILE_ROWS];
    let a_panel: [&[f64]; TILE_ROWS] =
        std::array::from_fn(|r| &a_rows[(i + r) * k + panel.start..(i + r) * k + panel.end]);
    for (step, t) in panel.enumerate() {
        let b_row: &[f64; TILE_COLUMNS] = b[t * n + j..][..TILE_COLUMNS]
            .try_into()
            .expect("a slice of TILE_COLUMNS values");
        for (row_sums, a_row) in sums.iter_mut().zip(&a_panel) {
            let a_value = a_row[step];
            for (sum, &b_value) in row_sums.iter_mut().zip(b_row) {
                *sum = multiply_add::<FUSED>(a_value, b_value, *sum);
            }
        }
    }
    for (r, row_sums) in sums.iter().enumerate() {
        let c_row = &mut c_rows[(i + r) * n + j..][..TILE_COLUMNS];
        for (c, sum) in c_row.iter_mut().zip(row_sums) {
            *c += sum;
        }
    }
}

/// The same sums as [`tile`] for any rectangle, one element at a time.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn edge<const FUSED: bool>(
    a_rows: &[f64],
    b: &[f64],
    c_rows: &mut [f64],
    n: usize,
    k: usize,
    rows: std::ops::Range<usize>,
    columns: std::ops::Range<usize>,
    panel: std::ops::Range<usize>,
) {
    for i in rows {
        for j in columns.clone() {
            let sum = panel.clone().fold(0.0, |sum, t| {
                multiply_add::<FUSED>(a_rows[i * k + t], b[t * n + j], sum)
            });
            c_rows[i * n + j] += sum;
        }
    }
}

/// `x·y + z`: one rounding with FMA hardware, two without (where a fused
/// multiply-add would be a slow library call).
#[inline(always)]
fn multiply_add<const FUSED: bool>(x: f64, y: f64, z: f64) -> f64 {
    if FUSED { x.mul_add(y, z) } else { x * y + z }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The textbook triple loop, in the same summation order per element.
    fn naive(m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
        for i in 0..m {
            for j in 0..n {
                let mut sum = c[i * n + j];
                for t in 0..k {
                    sum += a[i * k + t] * b[t * n + j];
                }
                c[i * n + j] = sum;
            }
        }
    }

    fn values(len: usize, seed: u64) -> Vec<f64> {
        // Small integers times 2^-4: every product and partial sum is exact,
        // so any summation order gives the same bits.
        (0..len as u64)
            .map(|i| ((i * 2654435761 + seed * 97) % 17) as f64 / 16.0 - 0.5)
            .collect()
    }

    #[test]
    fn matches_the_triple_loop_on_ragged_sizes() {
        // Sizes that leave remainders in every panel and in the 4-step.
        for (m, n, k) in [(1, 1, 1), (3, 5, 7), (17, 513, 259), (33, 9, 1030)] {
            let a = values(m * k, 1);
            let b = values(k * n, 2);
            let mut c = values(m * n, 3);
            let mut expected = c.clone();
            gemm_accumulate(m, n, k, &a, &b, &mut c).unwrap();
            naive(m, n, k, &a, &b, &mut expected);
            assert_eq!(c, expected, "{m}x{n}x{k}");
        }
    }

    #[test]
    fn accumulates_into_c() {
        let mut c = vec![10.0; 4];
        // [1 2; 3 4] · I = itself, added to 10.
        gemm_accumulate(
            2,
            2,
            2,
            &[1.0, 2.0, 3.0, 4.0],
            &[1.0, 0.0, 0.0, 1.0],
            &mut c,
        )
        .unwrap();
        assert_eq!(c, [11.0, 12.0, 13.0, 14.0]);
    }

    #[test]
    fn empty_problems_and_wrong_sizes_leave_c_alone() {
        let mut c = vec![1.0; 6];
        gemm_accumulate(2, 3, 0, &[], &[], &mut c).unwrap();
        assert_eq!(c, [1.0; 6]);
        let error = gemm_accumulate(2, 3, 1, &[1.0], &[1.0; 3], &mut c).unwrap_err();
        assert_eq!(
            error.to_string(),
            "gemm of 2×1 by 1×3 given arrays of 1, 3 and 6 values"
        );
        assert_eq!(c, [1.0; 6]);
    }
}
