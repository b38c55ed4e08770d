//! Drawing: linked views — `ldmatrix.x4` loading the A operand of
//! `mma.m16n8k16`, followed from shared memory through the registers into
//! the multiply. Which quadrant of A each of the four 8×8 matrices must
//! be is not written here: it is read off the two atom tables
//! (`crate::atoms`), by asking where the multiply wants each value a
//! thread receives, and the picture says where the paper's figure (seed
//! 000 §2, drawn by `:atom ldmatrix.x4`) orders the matrices differently.

use crate::atoms::{self, LdmatrixCount};

use super::VizError;
use super::thread_map::{Owner, ThreadMap};

/// The linked view: its maps and what the caption says about them.
pub(super) struct Linked {
    /// Shared memory (row addresses), registers (values received, placed
    /// where the multiply wants them), the multiply's A fragment.
    pub maps: Vec<ThreadMap>,
    /// `origins[j]`: the (row, column) of A where matrix `j` must go.
    pub origins: Vec<(i64, i64)>,
    /// Whether the received values are exactly the A fragment, with the
    /// first difference when not.
    pub verdict: Result<(), String>,
}

/// Where `ldmatrix` (and the paper's figure) draws matrix `j` of an `.x4`:
/// block `(j / 2, j % 2)`.
fn drawn_origin(j: i64) -> (i64, i64) {
    (8 * (j / 2), 8 * (j % 2))
}

/// `ldmatrix.x4` for the A of `mma.m16n8k16`: for every lane and value
/// `E` (half `E % 2` of register `d[E/2]`, of matrix `j = E/2`), the
/// element of its matrix it receives and the element of A the multiply
/// wants as that lane's value `E`; their difference is matrix `j`'s place
/// in A, and must be the same for every value of the matrix.
pub(super) fn ldmatrix_for_mma_a() -> Result<Linked, VizError> {
    let load = atoms::ldmatrix(LdmatrixCount::X4, false);
    let mma = atoms::mma_m16n8k16();
    let matrices = LdmatrixCount::X4.matrices() as i64;
    let values_per_matrix = load.values.values() / matrices;
    let mut origins: Vec<Option<(i64, i64)>> = vec![None; matrices as usize];
    let mut verdict = Ok(());
    for (lane, value, row, col) in load.values.elements() {
        let j = value / values_per_matrix;
        let (m, k) = mma.a.element(mma.lanes.eval(lane)?, value);
        let origin = (m - row % 8, k - col % 8);
        let slot = &mut origins[j as usize];
        match slot {
            None => *slot = Some(origin),
            Some(known) if *known == origin => {}
            Some(known) => {
                if verdict.is_ok() {
                    verdict = Err(format!(
                        "lane {lane} value {value} of matrix {j} lands at ({m},{k}), not in the \
                         quadrant at ({},{}) the matrix's other values land in",
                        known.0, known.1
                    ));
                }
            }
        }
    }
    let origins: Vec<(i64, i64)> = origins.into_iter().map(Option::unwrap_or_default).collect();
    let place = |row: i64, col: i64| {
        let j = 2 * (row / 8) + col / 8;
        let (r0, c0) = origins[j as usize];
        ((r0 + row % 8) as usize, (c0 + col % 8) as usize)
    };
    let mut shared = ThreadMap::new(
        "1. shared memory: the 16×16 A tile (row m, column k); a cell Tt: thread t gives the address of that row of 8 elements (matrix j = threads 8j..8j+7, in the order the multiply needs)",
        16,
        16,
    )?
    .with_blocks(8, 8)
    .threads_only();
    for (lane, value, row, col) in load.addresses.elements() {
        let (m, k) = place(row, col);
        shared.assign(m, k, owner(lane, value))?;
    }
    let mut registers = ThreadMap::new(
        "2. registers: what each thread receives (vE: half E%2 of register d[E/2], loaded from matrix E/2), drawn where the multiply reads it",
        16,
        16,
    )?
    .with_blocks(8, 8);
    for (lane, value, row, col) in load.values.elements() {
        let (m, k) = place(row, col);
        registers.assign(m, k, owner(lane, value))?;
    }
    let mut operand = ThreadMap::new(
        "3. mma.m16n8k16 A (16×16, row m, column k): vE is half E%2 of register a[E/2]",
        16,
        16,
    )?
    .with_blocks(8, 8);
    for (thread, value, m, k) in mma.a.elements() {
        operand.assign(
            m as usize,
            k as usize,
            owner(mma.lanes.eval(thread)?, value),
        )?;
    }
    if verdict.is_ok() {
        verdict = first_difference(&registers, &operand);
    }
    Ok(Linked {
        maps: vec![shared, registers, operand],
        origins,
        verdict,
    })
}

fn owner(thread: i64, value: i64) -> Owner {
    Owner { thread, value }
}

/// The first cell where two maps differ, or `Ok` when they are the same.
fn first_difference(left: &ThreadMap, right: &ThreadMap) -> Result<(), String> {
    for row in 0..left.rows() {
        for col in 0..left.cols() {
            if left.owners(row, col) != right.owners(row, col) {
                return Err(format!(
                    "element ({row},{col}) is received as {:?} but read as {:?}",
                    left.owners(row, col),
                    right.owners(row, col)
                ));
            }
        }
    }
    Ok(())
}

/// The caption: the chain, each matrix's place, the verdict, and where the
/// paper's figure differs.
pub(super) fn summary() -> String {
    let linked = match ldmatrix_for_mma_a() {
        Ok(linked) => linked,
        Err(error) => return format!("ldmatrix.x4 for mma.m16n8k16.A cannot be drawn: {error}"),
    };
    let places: Vec<String> = linked
        .origins
        .iter()
        .enumerate()
        .map(|(j, &(m, k))| {
            format!(
                "{} {j} (threads {}-{}, register d{j} = a{j}) is rows {m}-{}, columns {k}-{}",
                if j == 0 { "Matrix" } else { "matrix" },
                8 * j,
                8 * j + 7,
                m + 7,
                k + 7
            )
        })
        .collect();
    let verdict = match &linked.verdict {
        Ok(()) => "Every thread receives exactly the A fragment the multiply reads, value for value (checked from the two atom tables), so the four registers pass straight through as {a0, a1, a2, a3}".to_string(),
        Err(why) => format!("the registers are NOT the A fragment: {why}"),
    };
    let moved: Vec<usize> = (0..linked.origins.len())
        .filter(|&j| linked.origins[j] != drawn_origin(j as i64))
        .collect();
    let paper = if moved.is_empty() {
        "The paper's figure (seed 000 §2, `:atom ldmatrix.x4`) orders the matrices the same way."
            .to_string()
    } else {
        // Loaded in the paper's order, register d_j holds the quadrant the
        // paper draws matrix j at; the multiply's a_i is the d_j whose
        // quadrant is matrix i's here.
        let passed: Vec<String> = linked
            .origins
            .iter()
            .map(|origin| {
                (0..linked.origins.len() as i64)
                    .find(|&j| drawn_origin(j) == *origin)
                    .map_or("?".to_string(), |j| format!("d{j}"))
            })
            .collect();
        let moved_text: Vec<String> = moved
            .iter()
            .map(|&j| {
                let (m, k) = drawn_origin(j as i64);
                format!("matrix {j} at rows {m}-{}, columns {k}-{}", m + 7, k + 7)
            })
            .collect();
        format!(
            "The paper's figure (seed 000 §2, its listing's [2,2 : 16,8] thread groups, and `:atom ldmatrix.x4`) orders them differently: it draws {}. Loaded in the paper's order, pass {{{}}} as {{a0, a1, a2, a3}}, or give the addresses in the order above.",
            moved_text.join(" and "),
            passed.join(", ")
        )
    };
    format!(
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16 feeding the A of mma.m16n8k16 (16×16): shared memory → registers → operand. {}. {verdict}. {paper}",
        places.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The PTX ISA's A fragment of m16n8k16: a0 rows 0-7 k 0-7, a1 rows
    /// 8-15, a2 k 8-15, a3 both — so matrix j sits at (8·(j%2), 8·(j/2)).
    #[test]
    fn the_matrices_go_where_the_multiply_reads_them() {
        let linked = ldmatrix_for_mma_a().unwrap();
        assert_eq!(linked.origins, [(0, 0), (8, 0), (0, 8), (8, 8)]);
        assert_eq!(linked.verdict, Ok(()));
        let [_, registers, operand] = &linked.maps[..] else {
            panic!("three maps")
        };
        for row in 0..16 {
            for col in 0..16 {
                assert_eq!(registers.owners(row, col), operand.owners(row, col));
                assert_eq!(registers.owners(row, col).len(), 1);
            }
        }
    }

    /// Thread 8 + r gives the address of row 8 + r, column 0 (matrix 1 at
    /// the bottom-left), where the paper's figure has it at the top-right.
    #[test]
    fn the_addresses_follow_the_multiply_and_the_caption_says_the_paper_differs() {
        let linked = ldmatrix_for_mma_a().unwrap();
        let shared = &linked.maps[0];
        for r in 0..8 {
            for c in 0..8 {
                assert_eq!(shared.owners(8 + r, c)[0].thread, 8 + r as i64);
                assert_eq!(shared.owners(r, 8 + c)[0].thread, 16 + r as i64);
            }
        }
        let text = summary();
        assert!(
            text.contains(
                "matrix 1 at rows 0-7, columns 8-15 and matrix 2 at rows 8-15, columns 0-7"
            ),
            "{text}"
        );
        assert!(
            text.contains("pass {d0, d2, d1, d3} as {a0, a1, a2, a3}"),
            "{text}"
        );
    }
}
