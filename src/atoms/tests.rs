//! Every atom against the PTX ISA's formulas (written out again here,
//! from the ISA's fragment sections), by brute force over all
//! `(thread, value)` pairs.

use std::collections::BTreeSet;

use super::*;

/// Asserts that `fragment` maps every `(thread, value)` as `formula` does
/// and covers its matrix exactly once.
fn follows(
    fragment: &Fragment,
    threads: i64,
    values: i64,
    formula: impl Fn(i64, i64) -> (i64, i64),
) {
    assert_eq!(
        (fragment.threads(), fragment.values()),
        (threads, values),
        "{}",
        fragment.tv
    );
    let mut seen = BTreeSet::new();
    for thread in 0..threads {
        for value in 0..values {
            let expected = formula(thread, value);
            assert_eq!(
                fragment.element(thread, value),
                expected,
                "{} thread {thread} value {value}",
                fragment.tv
            );
            assert!(
                seen.insert(expected),
                "{} holds {expected:?} twice",
                fragment.tv
            );
        }
    }
    assert_eq!(
        seen.len() as i64,
        fragment.rows * fragment.cols,
        "{}",
        fragment.tv
    );
}

#[test]
fn ldmatrix_follows_the_ptx_formulas() {
    for count in [LdmatrixCount::X1, LdmatrixCount::X2, LdmatrixCount::X4] {
        for trans in [false, true] {
            let atom = ldmatrix(count, trans);
            let n = count.matrices() as i64;
            // Matrix j at block (j / 2, j % 2) of 8×8 blocks.
            let at = |j: i64, r: i64, c: i64| (8 * (j / 2) + r, 8 * (j % 2) + c);
            // Thread 8j + r gives the address of row r of matrix j.
            follows(&atom.addresses, 8 * n, 8, |thread, c| {
                at(thread / 8, thread % 8, c)
            });
            // d[j].lo/hi = M_j[groupID][2·threadID_in_group + h], with
            // `.trans` M_j[2·threadID_in_group + h][groupID].
            follows(&atom.values, 32, 2 * n, |lane, e| {
                let (group, in_group, j, h) = (lane / 4, lane % 4, e / 2, e % 2);
                if trans {
                    at(j, 2 * in_group + h, group)
                } else {
                    at(j, group, 2 * in_group + h)
                }
            });
        }
    }
}

#[test]
fn mma_m16n8k16_follows_the_ptx_formulas() {
    let atom = mma_m16n8k16();
    let split = |lane: i64| (lane / 4, lane % 4);
    follows(&atom.a, 32, 8, |lane, e| {
        let (group, in_group) = split(lane);
        let row = if matches!(e, 0 | 1 | 4 | 5) {
            group
        } else {
            group + 8
        };
        let col = if e < 4 {
            2 * in_group + e % 2
        } else {
            2 * in_group + e % 2 + 8
        };
        (row, col)
    });
    follows(&atom.b, 32, 4, |lane, e| {
        let (group, in_group) = split(lane);
        let row = if e < 2 {
            2 * in_group + e
        } else {
            2 * in_group + e - 2 + 8
        };
        (row, group)
    });
    follows(&atom.c, 32, 4, |lane, e| {
        let (group, in_group) = split(lane);
        let row = if e < 2 { group } else { group + 8 };
        (row, 2 * in_group + e % 2)
    });
    assert_eq!(atom.shape, (16, 8, 16));
    assert_eq!((atom.a.rows, atom.a.cols), (16, 16));
    assert_eq!((atom.b.rows, atom.b.cols), (16, 8));
    assert_eq!((atom.c.rows, atom.c.cols), (16, 8));
}

#[test]
fn mma_m8n8k4_follows_the_ptx_formulas_per_quad_pair() {
    let atom = mma_m8n8k4();
    // The atom's thread i is lane `lanes(i)` of quad pair 0; the ISA's
    // formulas are in terms of that lane.
    let lane = |i: i64| atom.lanes.eval(i).unwrap();
    let high = |lane: i64| i64::from(lane >= 16);
    follows(&atom.a, 8, 4, |i, e| (lane(i) % 4 + 4 * high(lane(i)), e));
    follows(&atom.b, 8, 4, |i, e| (e, lane(i) % 4 + 4 * high(lane(i))));
    follows(&atom.c, 8, 8, |i, e| {
        let l = lane(i);
        (
            l % 2 + (e & 0b10) + 4 * high(l),
            (e & 0b100) + (l & 0b10) + (e & 0b1),
        )
    });
    // Quad pair q is lanes 4q..4q+3 and 4q+16..4q+19; together the four
    // cover the warp once.
    let mut lanes = BTreeSet::new();
    for q in 0..4 {
        let base = atom.instances.eval(q).unwrap();
        let mine: BTreeSet<i64> = atom.lanes.offsets().map(|i| base + i).collect();
        let expected: BTreeSet<i64> = (0..4).flat_map(|t| [4 * q + t, 4 * q + t + 16]).collect();
        assert_eq!(mine, expected, "quad pair {q}");
        lanes.extend(mine);
    }
    assert_eq!(lanes, (0..32).collect());
}

#[test]
fn wgmma_accumulators_follow_the_ptx_formula() {
    for n in (8..=256).step_by(8) {
        let c = wgmma_m64nnk16_accumulators(n);
        // row = 16·warp + lane/4 + 8·((i/2) mod 2),
        // col = 8·(i/4) + 2·(lane mod 4) + (i mod 2).
        follows(&c, 128, n / 2, |thread, i| {
            let (warp, lane) = (thread / 32, thread % 32);
            (
                16 * warp + lane / 4 + 8 * ((i / 2) % 2),
                8 * (i / 4) + 2 * (lane % 4) + i % 2,
            )
        });
    }
}

#[test]
fn levels_are_the_per_thread_shapes_the_lowering_documents() {
    let m16n8k16 = mma_m16n8k16();
    assert_eq!(m16n8k16.c.levels(), [[2, 1], [1, 2]]);
    assert_eq!(m16n8k16.a.levels(), [[2, 2], [1, 2]]);
    assert_eq!(m16n8k16.b.levels(), [[2, 1], [2, 1]]);
    let m8n8k4 = mma_m8n8k4();
    assert_eq!(m8n8k4.c.levels(), [[2, 2], [1, 2]]);
    assert_eq!(m8n8k4.a.levels(), [vec![1, 4]]);
    assert_eq!(m8n8k4.b.levels(), [vec![4, 1]]);
    assert_eq!(
        wgmma_m64nnk16_accumulators(64).levels(),
        [[1, 8], [2, 1], [1, 2]]
    );
}

/// A register tensor's levels are numbered column-major, innermost level
/// fastest: each level's values must walk their `[rows, cols]` extents in
/// that order, or the shape read off by `levels` would name the registers
/// in another order than the instruction.
#[test]
fn each_level_walks_its_extents_column_major() {
    let m16n8k16 = mma_m16n8k16();
    let m8n8k4 = mma_m8n8k4();
    let mut fragments = vec![
        m16n8k16.a, m16n8k16.b, m16n8k16.c, m8n8k4.a, m8n8k4.b, m8n8k4.c,
    ];
    fragments.extend((8..=256).step_by(8).map(wgmma_m64nnk16_accumulators));
    for fragment in fragments {
        for (level, shape) in fragment
            .value_mode()
            .modes()
            .iter()
            .zip(fragment.levels().iter().rev())
        {
            let (r0, c0) = (
                level.eval(0).unwrap() % fragment.rows,
                level.eval(0).unwrap() / fragment.rows,
            );
            let walked: Vec<(i64, i64)> = level
                .offsets()
                .map(|o| (o % fragment.rows - r0, o / fragment.rows - c0))
                .collect();
            let steps: BTreeSet<i64> = walked.iter().map(|(r, _)| *r).collect();
            let row_step = steps.iter().copied().find(|s| *s > 0).unwrap_or(1);
            let steps: BTreeSet<i64> = walked.iter().map(|(_, c)| *c).collect();
            let col_step = steps.iter().copied().find(|s| *s > 0).unwrap_or(1);
            let expected: Vec<(i64, i64)> = (0..shape[1])
                .flat_map(|c| (0..shape[0]).map(move |r| (r * row_step, c * col_step)))
                .collect();
            assert_eq!(walked, expected, "{} level {level}", fragment.tv);
        }
    }
}

#[test]
fn two_m16n8_accumulator_tiles_are_the_m16n8k16_a_fragment() {
    assert_eq!(mma_m16n8k16().c_pair_is_a(), Ok(()));
    // Volta's atom has no such identity: its C is 8×8, its A 8×4.
    assert_eq!(
        mma_m8n8k4().c_pair_is_a(),
        Err(CAsAMismatch::Shape {
            c: (8, 16),
            a: (8, 4)
        })
    );
}

#[test]
fn wgmma_register_a_is_the_mma_a_fragment_per_warp() {
    // Warp w's threads hold rows 16w.. as mma.m16n8k16's A (PTX ISA,
    // "Register fragment: matrix A" of wgmma .m64nNk16).
    let mma = mma_m16n8k16();
    follows(&wgmma_m64nnk16_a_registers(), 128, 8, |thread, value| {
        let (row, col) = mma.a.element(thread % 32, value);
        (row + 16 * (thread / 32), col)
    });
    // And two 64×8 accumulator tiles of the warpgroup are that A.
    assert_eq!(
        c_pair_is_a(
            &wgmma_m64nnk16_accumulators(8),
            &wgmma_m64nnk16_a_registers()
        ),
        Ok(())
    );
}

#[test]
fn the_identity_is_computed_from_the_tables_not_assumed() {
    // An A fragment whose m-half and k-half levels are swapped (a1 is
    // rows 0–7 of k 8–15): the proof finds the first value that moved.
    let mut atom = mma_m16n8k16();
    atom.a = Fragment::new(16, 16, 16, "((4,8),(2,(2,2))):((32,1),(16,(128,8)))");
    let mismatch = atom.c_pair_is_a().unwrap_err();
    assert_eq!(
        mismatch,
        CAsAMismatch::Element {
            thread: 0,
            value: 2,
            c: (8, 0),
            a: (0, 8)
        }
    );
    assert_eq!(
        mismatch.to_string(),
        "thread 0 value 2 is (8, 0) as C but (0, 8) as A"
    );
}
