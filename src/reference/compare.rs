//! Reference stage: the verdict — a kernel's output, read back from the
//! GPU, against the expected values: max abs error, relative error
//! ‖out − ref‖/‖ref‖, elements never written (still poisoned), NaN and
//! infinite values where the reference is finite.

use std::fmt;

use rayon::prelude::*;

use super::ReferenceError;
use super::evaluate::{Expected, Tolerance};
use super::view::CHUNK;

/// The element that differs most from the reference.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Worst {
    /// Its position in the expected values.
    pub element: usize,
    /// Its buffer offset.
    pub offset: i64,
    /// The reference value.
    pub expected: f64,
    /// The GPU's value.
    pub actual: f64,
}

/// The figures of one comparison.
///
/// Rule: unwritten and non-finite elements are counted and left out of the
/// error norms; the comparison passes when none exist and
/// `relative_error ≤ tolerance.relative`.
#[derive(Clone, PartialEq, Debug)]
pub struct Comparison {
    /// `%name` of the output.
    pub output: String,
    /// Elements compared.
    pub elements: usize,
    /// Largest |out − ref| over the written, finite elements.
    pub max_abs_error: f64,
    /// ‖out − ref‖₂ / ‖ref‖₂ (the absolute norm when the reference is 0).
    pub relative_error: f64,
    /// Elements still holding the poison written before the launch.
    pub unwritten: usize,
    /// Elements that are NaN or infinite where the reference is not.
    pub non_finite: usize,
    /// The bound applied.
    pub tolerance: Tolerance,
    /// The element with the largest error, if any was compared.
    pub worst: Option<Worst>,
    /// The first unwritten element (position, offset), if any.
    pub first_unwritten: Option<(usize, i64)>,
}

impl Comparison {
    /// Whether the output matches the reference.
    pub fn passed(&self) -> bool {
        self.unwritten == 0
            && self.non_finite == 0
            && self.relative_error <= self.tolerance.relative
    }

    /// `PASS` or `FAIL`.
    pub fn verdict(&self) -> &'static str {
        if self.passed() { "PASS" } else { "FAIL" }
    }
}

/// `rel 3.1e-4 (tol 1e-2: fp16 operands), max abs 2.0e-3, unwritten 0/4096, NaN/inf 0`,
/// followed on failure by the first unwritten and the worst element.
impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rel err {:.3e} (tol {}: {}), max abs err {:.3e}, unwritten {}/{}, NaN/inf {}",
            self.relative_error,
            short(self.tolerance.relative),
            self.tolerance.reason,
            self.max_abs_error,
            self.unwritten,
            self.elements,
            self.non_finite
        )?;
        if self.passed() {
            return Ok(());
        }
        if let Some((element, offset)) = self.first_unwritten {
            write!(
                f,
                "; first unwritten: element {element} ({}[{offset}])",
                self.output
            )?;
        }
        if let Some(worst) = self.worst {
            write!(
                f,
                "; worst: element {} ({}[{}]) = {} where {} was expected",
                worst.element, self.output, worst.offset, worst.actual, worst.expected
            )?;
        }
        Ok(())
    }
}

/// `x` in scientific notation with at most three significant digits and no
/// trailing zeros: `1e-2`, `1.56e-2`.
fn short(x: f64) -> String {
    let text = format!("{x:.2e}");
    match text.split_once('e') {
        Some((mantissa, exponent)) if mantissa.contains('.') => {
            let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
            format!("{mantissa}e{exponent}")
        }
        Some(_) | None => text,
    }
}

/// Partial figures of one chunk, combined in chunk order so that the
/// result does not depend on the thread count.
#[derive(Clone, Copy, Default)]
struct Partial {
    diff_squares: f64,
    ref_squares: f64,
    max_abs: f64,
    worst: Option<Worst>,
    unwritten: usize,
    first_unwritten: Option<(usize, i64)>,
    non_finite: usize,
}

impl Partial {
    fn merge(mut self, next: Partial) -> Partial {
        self.diff_squares += next.diff_squares;
        self.ref_squares += next.ref_squares;
        // Ties keep the earlier element.
        if self.worst.is_none() || (next.worst.is_some() && next.max_abs > self.max_abs) {
            self.max_abs = next.max_abs;
            self.worst = next.worst;
        }
        self.unwritten += next.unwritten;
        self.first_unwritten = self.first_unwritten.or(next.first_unwritten);
        self.non_finite += next.non_finite;
        self
    }
}

/// Compares the output buffer `actual` (every element of the parameter,
/// widened to f64) with `expected`; `unwritten[o]` says whether element
/// `o` still holds the poison.
pub fn compare(
    expected: &Expected,
    actual: &[f64],
    unwritten: &[bool],
) -> Result<Comparison, ReferenceError> {
    if unwritten.len() != actual.len() {
        return Err(ReferenceError::Input(format!(
            "{}: {} values read back but {} poison flags",
            expected.output,
            actual.len(),
            unwritten.len()
        )));
    }
    let partials: Vec<Result<Partial, ReferenceError>> = expected
        .values
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(chunk, values)| {
            let start = chunk * CHUNK;
            let mut partial = Partial::default();
            for ((i, &reference), offset) in (start..)
                .zip(values)
                .zip(expected.index.offsets(start..start + values.len()))
            {
                let at = usize::try_from(offset)
                    .ok()
                    .filter(|&at| at < actual.len())
                    .ok_or_else(|| ReferenceError::OutOfBounds {
                        operand: expected.output.clone(),
                        offset,
                        elements: actual.len(),
                    })?;
                if unwritten[at] {
                    partial.unwritten += 1;
                    partial.first_unwritten.get_or_insert((i, offset));
                    continue;
                }
                let value = actual[at];
                if !reference.is_finite() || !value.is_finite() {
                    // Equal infinities agree; anything else non-finite is wrong.
                    if value != reference {
                        partial.non_finite += 1;
                    }
                    continue;
                }
                let error = (value - reference).abs();
                partial.diff_squares += error * error;
                partial.ref_squares += reference * reference;
                if error > partial.max_abs || partial.worst.is_none() {
                    partial.max_abs = error;
                    partial.worst = Some(Worst {
                        element: i,
                        offset,
                        expected: reference,
                        actual: value,
                    });
                }
            }
            Ok(partial)
        })
        .collect();
    let mut total = Partial::default();
    for partial in partials {
        total = total.merge(partial?);
    }
    let norm = total.diff_squares.sqrt();
    let reference_norm = total.ref_squares.sqrt();
    Ok(Comparison {
        output: expected.output.clone(),
        elements: expected.values.len(),
        max_abs_error: total.max_abs,
        relative_error: if reference_norm > 0.0 {
            norm / reference_norm
        } else {
            norm
        },
        unwritten: total.unwritten,
        non_finite: total.non_finite,
        tolerance: expected.tolerance.clone(),
        worst: total.worst,
        first_unwritten: total.first_unwritten,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Scalar;
    use crate::reference::{FlatIndex, Leaf};

    fn expected(values: Vec<f64>, tolerance: f64) -> Expected {
        let len = values.len() as i64;
        Expected {
            output: "%y".into(),
            param: 1,
            scalar: Scalar::Fp32,
            index: FlatIndex::new(
                0,
                vec![Leaf {
                    extent: len,
                    stride: 1,
                }],
                None,
            )
            .unwrap(),
            values,
            tolerance: Tolerance {
                relative: tolerance,
                reason: "test".into(),
            },
        }
    }

    #[test]
    fn exact_output_passes_with_zero_errors() {
        let e = expected(vec![1.0, -2.0, 3.0], 1e-5);
        let c = compare(&e, &[1.0, -2.0, 3.0], &[false; 3]).unwrap();
        assert!(c.passed());
        assert_eq!(
            (c.max_abs_error, c.relative_error, c.unwritten),
            (0.0, 0.0, 0)
        );
        assert_eq!(
            c.to_string(),
            "rel err 0.000e0 (tol 1e-5: test), max abs err 0.000e0, unwritten 0/3, NaN/inf 0"
        );
    }

    #[test]
    fn errors_are_measured_in_the_two_norm() {
        let e = expected(vec![3.0, 4.0], 1e-2);
        // ‖(0.03, 0)‖ / ‖(3, 4)‖ = 0.006: passes at 1e-2, fails at 1e-3.
        let c = compare(&e, &[3.03, 4.0], &[false; 2]).unwrap();
        assert!((c.relative_error - 0.006).abs() < 1e-12, "{c}");
        assert!((c.max_abs_error - 0.03).abs() < 1e-12);
        assert!(c.passed());
        let strict = expected(vec![3.0, 4.0], 1e-3);
        let c = compare(&strict, &[3.03, 4.0], &[false; 2]).unwrap();
        assert!(!c.passed());
        assert!(
            c.to_string()
                .ends_with("worst: element 0 (%y[0]) = 3.03 where 3 was expected"),
            "{c}"
        );
    }

    #[test]
    fn unwritten_and_nan_elements_fail_even_when_the_rest_is_exact() {
        let e = expected(vec![1.0, 2.0, 3.0, 4.0], 1e-2);
        let c = compare(
            &e,
            &[1.0, f64::NAN, 3.0, f64::NAN],
            &[false, true, false, false],
        )
        .unwrap();
        assert_eq!((c.unwritten, c.non_finite), (1, 1));
        assert_eq!(c.first_unwritten, Some((1, 1)));
        assert_eq!(c.relative_error, 0.0);
        assert!(!c.passed());
        assert_eq!(c.verdict(), "FAIL");
    }

    #[test]
    fn a_zero_reference_uses_the_absolute_norm() {
        let e = expected(vec![0.0; 4], 1e-5);
        let c = compare(&e, &[0.0, 0.0, 0.0, 1e-3], &[false; 4]).unwrap();
        assert_eq!(c.relative_error, 1e-3);
        assert!(!c.passed());
    }

    #[test]
    fn figures_do_not_depend_on_chunking() {
        let n = 5 * CHUNK + 17;
        let values: Vec<f64> = (0..n).map(|i| (i % 101) as f64 - 50.0).collect();
        let actual: Vec<f64> = values
            .iter()
            .enumerate()
            .map(|(i, v)| v + (i % 7) as f64 / 1024.0)
            .collect();
        let e = expected(values, 1e-2);
        let first = compare(&e, &actual, &vec![false; n]).unwrap();
        let again = compare(&e, &actual, &vec![false; n]).unwrap();
        assert_eq!(first, again);
        assert_eq!(
            first.worst.map(|w| w.element),
            Some(6),
            "first of the largest errors"
        );
    }

    #[test]
    fn tolerances_print_short() {
        assert_eq!(short(1e-2), "1e-2");
        assert_eq!(short(1e-5), "1e-5");
        assert_eq!(short(32.0 / 2048.0), "1.56e-2");
        assert_eq!(short(0.5), "5e-1");
    }

    #[test]
    fn mismatched_buffers_are_errors() {
        let e = expected(vec![1.0; 4], 1e-2);
        assert!(compare(&e, &[1.0; 4], &[false; 3]).is_err());
        assert!(compare(&e, &[1.0; 3], &[false; 3]).is_err());
    }
}
