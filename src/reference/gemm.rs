//! Reference stage: the dense f64 GEMM under every `MatMul` contract,
//! `C += A·B` on row-major arrays, parallel over blocks of rows of C.
//!
//! Loop order: per task a block of C rows; inside, a panel of K and a panel
//! of N columns, so that the B panel (256 × 512 values, 1 MiB) stays in a
//! core's L2 while every row of the block streams over it, and each row of
//! C is updated by four rows of B at a time (one load and store of C per
//! four multiply-adds). On x86-64 CPUs with AVX2 and FMA the same loop is
//! compiled a second time for them and chosen at run time.
//!
//! Each C element sums its K products in the same order whatever the
//! thread count, so results are reproducible bit for bit.

use rayon::prelude::*;

use super::ReferenceError;

/// Rows of C per parallel task.
const ROW_BLOCK: usize = 16;
/// Products of one K panel.
const K_PANEL: usize = 256;
/// Columns of one N panel.
const N_PANEL: usize = 512;

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

/// `c_rows += a_rows · b` for a block of rows.
#[inline(always)]
fn row_block<const FUSED: bool>(a_rows: &[f64], b: &[f64], c_rows: &mut [f64], n: usize, k: usize) {
    for k0 in (0..k).step_by(K_PANEL) {
        let k1 = (k0 + K_PANEL).min(k);
        for j0 in (0..n).step_by(N_PANEL) {
            let j1 = (j0 + N_PANEL).min(n);
            for (a_row, c_row) in a_rows.chunks_exact(k).zip(c_rows.chunks_exact_mut(n)) {
                panel::<FUSED>(&a_row[k0..k1], b, k0, j0, &mut c_row[j0..j1], n);
            }
        }
    }
}

/// `c[j] += Σ_t a[t] · b[k0 + t][j0 + j]`, four products per pass.
#[inline(always)]
fn panel<const FUSED: bool>(a: &[f64], b: &[f64], k0: usize, j0: usize, c: &mut [f64], n: usize) {
    let width = c.len();
    let b_row = |t: usize| &b[(k0 + t) * n + j0..][..width];
    let mut t = 0;
    while t + 4 <= a.len() {
        let (a0, a1, a2, a3) = (a[t], a[t + 1], a[t + 2], a[t + 3]);
        let (b0, b1, b2, b3) = (b_row(t), b_row(t + 1), b_row(t + 2), b_row(t + 3));
        for j in 0..width {
            let mut sum = c[j];
            sum = multiply_add::<FUSED>(a0, b0[j], sum);
            sum = multiply_add::<FUSED>(a1, b1[j], sum);
            sum = multiply_add::<FUSED>(a2, b2[j], sum);
            sum = multiply_add::<FUSED>(a3, b3[j], sum);
            c[j] = sum;
        }
        t += 4;
    }
    while t < a.len() {
        let (at, bt) = (a[t], b_row(t));
        for j in 0..width {
            c[j] = multiply_add::<FUSED>(at, bt[j], c[j]);
        }
        t += 1;
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
        gemm_accumulate(2, 2, 2, &[1.0, 2.0, 3.0, 4.0], &[1.0, 0.0, 0.0, 1.0], &mut c).unwrap();
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
