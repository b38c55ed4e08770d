//! Instruction atoms: Volta's 16×16×8 macro-MMA (seed 001, §IV-A, its
//! Figure 2) — the warp's four quad pairs each run `mma.m8n8k4` twice (k
//! 0–3, then k 4–7) on their own 8×8 block of a 16×16 accumulator, so that
//! the warp as a whole computes `C (16×16) += A (16×8) · B (8×16)`. Built
//! from the one `mma.m8n8k4` table (`super::mma_m8n8k4`): the macro adds
//! only where each quad pair works and which k step a value belongs to.
//!
//! Quad pairs that share rows of C need the same rows of A, and those that
//! share columns the same columns of B, so every element of A and of B is
//! held by two threads (the paper: "thread 0 owns the 8 elements in the
//! first row of matrix A as well as the 8 elements in the first column of
//! B; these elements are also owned by threads 8 and 4"). Each thread holds
//! 8 values of A, 8 of B and 8 accumulators.

use super::{Mma, mma_m8n8k4};

/// One element of a macro operand: lane `lane` holds `(row, col)` as its
/// value number `value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MacroElement {
    /// The lane of the warp.
    pub lane: i64,
    /// The value: for A and B, `4s + v` is value `v` of k step `s`'s
    /// fragment; for C, the accumulator `c[v]` both steps add into.
    pub value: i64,
    /// The row of the operand.
    pub row: i64,
    /// Its column.
    pub col: i64,
}

/// A warp-wide product built from several instances of an atom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MacroMma {
    /// The atom each quad pair runs.
    pub atom: Mma,
    /// How many times each runs it along K.
    pub k_steps: i64,
}

/// The 16×16×8 macro-MMA of seed 001: `mma.m8n8k4` twice per quad pair.
pub fn volta_macro_m16n16k8() -> MacroMma {
    MacroMma {
        atom: mma_m8n8k4(),
        k_steps: 2,
    }
}

impl MacroMma {
    /// `(m, n, k)` of the whole product: 16×16×8.
    pub fn shape(&self) -> (i64, i64, i64) {
        let (m, n, k) = self.atom.shape;
        let blocks = self.atom.instances.size() / 2;
        (m * 2, n * blocks, k * self.k_steps)
    }

    /// Where quad pair `instance` works: the first row of its A and C
    /// block, and the first column of its B and C block. Quad pairs 0 and 1
    /// share B's columns (lanes 0 and 4 both hold column 0), 0 and 2 share
    /// A's rows (lanes 0 and 8 both hold row 0): quad pair q is block
    /// `(q % 2, q / 2)`.
    pub fn origin(&self, instance: i64) -> (i64, i64) {
        let (m, n, _) = self.atom.shape;
        (m * (instance % 2), n * (instance / 2))
    }

    /// Every element of A (16×8, row m, column k) with the lane and value
    /// that hold it; each element twice.
    pub fn a_elements(&self) -> Vec<MacroElement> {
        self.inputs(|atom| &atom.a, |(m, _), step, k| (m, step * k))
    }

    /// Every element of B (8×16, row k, column n); each element twice.
    pub fn b_elements(&self) -> Vec<MacroElement> {
        self.inputs(|atom| &atom.b, |(_, n), step, k| (step * k, n))
    }

    /// Every element of C/D (16×16, row m, column n), once: quad pair q's
    /// 8×8 accumulators at its origin.
    pub fn c_elements(&self) -> Vec<MacroElement> {
        let mut all = Vec::new();
        for instance in 0..self.atom.instances.size() {
            let (row0, col0) = self.origin(instance);
            for (thread, value, row, col) in self.atom.c.elements() {
                all.push(MacroElement {
                    lane: self.lane(instance, thread),
                    value,
                    row: row0 + row,
                    col: col0 + col,
                });
            }
        }
        all.sort_unstable();
        all
    }

    /// The elements of an input operand: every quad pair's fragment, once
    /// per k step, placed by `place(origin, step, atom k)` → the
    /// operand's (row, col) offset, its values numbered after the earlier
    /// steps'.
    fn inputs(
        &self,
        operand: impl Fn(&Mma) -> &super::Fragment,
        place: impl Fn((i64, i64), i64, i64) -> (i64, i64),
    ) -> Vec<MacroElement> {
        let fragment = operand(&self.atom);
        let (_, _, k) = self.atom.shape;
        let mut all = Vec::new();
        for instance in 0..self.atom.instances.size() {
            for step in 0..self.k_steps {
                let (row0, col0) = place(self.origin(instance), step, k);
                for (thread, value, row, col) in fragment.elements() {
                    all.push(MacroElement {
                        lane: self.lane(instance, thread),
                        value: step * fragment.values() + value,
                        row: row0 + row,
                        col: col0 + col,
                    });
                }
            }
        }
        all.sort_unstable();
        all
    }

    /// The lane of atom thread `thread` in quad pair `instance`.
    fn lane(&self, instance: i64, thread: i64) -> i64 {
        let eval = |layout: &crate::layout::Layout, i: i64| {
            layout
                .eval(i)
                .unwrap_or_else(|error| panic!("{i} is inside {layout}: {error}"))
        };
        eval(&self.atom.instances, instance) + eval(&self.atom.lanes, thread)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn owners(elements: &[MacroElement]) -> BTreeMap<(i64, i64), Vec<(i64, i64)>> {
        let mut map: BTreeMap<(i64, i64), Vec<(i64, i64)>> = BTreeMap::new();
        for e in elements {
            map.entry((e.row, e.col))
                .or_default()
                .push((e.lane, e.value));
        }
        map
    }

    #[test]
    fn the_macro_is_16_by_16_by_8_with_eight_values_of_each_per_thread() {
        let macro_mma = volta_macro_m16n16k8();
        assert_eq!(macro_mma.shape(), (16, 16, 8));
        for (elements, rows, cols, copies) in [
            (macro_mma.a_elements(), 16, 8, 2),
            (macro_mma.b_elements(), 8, 16, 2),
            (macro_mma.c_elements(), 16, 16, 1),
        ] {
            let map = owners(&elements);
            assert_eq!(map.len(), rows * cols);
            assert!(map.values().all(|o| o.len() == copies), "{map:?}");
            for lane in 0..32 {
                let mine: Vec<_> = elements.iter().filter(|e| e.lane == lane).collect();
                assert_eq!(mine.len(), 8, "lane {lane}");
            }
        }
    }

    /// Seed 001's Figure 2, in words: thread 0 owns the first row of A and
    /// the first column of B, which threads 8 and 4 also own; its
    /// accumulators are the first two elements of row 0 and three other
    /// pairs of neighbours.
    #[test]
    fn thread_zero_holds_what_the_paper_says() {
        let macro_mma = volta_macro_m16n16k8();
        let a = owners(&macro_mma.a_elements());
        for k in 0..8 {
            let lanes: Vec<i64> = a[&(0, k)].iter().map(|&(lane, _)| lane).collect();
            assert_eq!(lanes, [0, 8], "A (0,{k})");
            assert!(
                a[&(0, k)].contains(&(0, k)),
                "A (0,{k}) is value {k} of lane 0"
            );
        }
        let b = owners(&macro_mma.b_elements());
        for k in 0..8 {
            let lanes: Vec<i64> = b[&(k, 0)].iter().map(|&(lane, _)| lane).collect();
            assert_eq!(lanes, [0, 4], "B ({k},0)");
        }
        let mut c: Vec<(i64, i64)> = macro_mma
            .c_elements()
            .iter()
            .filter(|e| e.lane == 0)
            .map(|e| (e.row, e.col))
            .collect();
        c.sort_unstable();
        assert_eq!(
            c,
            [
                (0, 0),
                (0, 1),
                (0, 4),
                (0, 5),
                (2, 0),
                (2, 1),
                (2, 4),
                (2, 5)
            ]
        );
    }

    /// Each quad pair's block is the m8n8k4 atom itself: its C is where
    /// the atom's C is, shifted to the block, for its own lanes only.
    #[test]
    fn each_quad_pair_computes_its_block_with_its_own_lanes() {
        let macro_mma = volta_macro_m16n16k8();
        for e in macro_mma.c_elements() {
            let quad_pair = (e.lane % 16) / 4;
            assert_eq!(
                macro_mma.origin(quad_pair),
                (8 * (e.row / 8), 8 * (e.col / 8)),
                "{e:?}"
            );
        }
        for e in macro_mma.a_elements() {
            assert_eq!(e.row / 8, ((e.lane % 16) / 4) % 2, "{e:?}");
        }
        for e in macro_mma.b_elements() {
            assert_eq!(e.col / 8, ((e.lane % 16) / 4) / 2, "{e:?}");
        }
    }
}
