//! What the drawings mean, checked apart from their text: the atom maps
//! against the atoms' thread–value layouts (themselves checked against the
//! PTX ISA's formulas in `graphene::atoms`) and against the two `ldmatrix`
//! figures of seed 000 §2; bank degrees against a byte-by-byte count; layout grids
//! read back and compared with the layout function; widths, colours and
//! tile letters by their rules.

mod layout_gen;

use std::collections::{BTreeMap, BTreeSet};

use graphene::atoms::{self, Fragment};
use graphene::layout::{Tiler, tile};
use graphene::viz::{
    AtomName, LdmatrixCount, MmaInput, Owner, Style, ThreadMap, WarpAccess, atom, bank_report,
    banks, layout_grid, swizzled_grid, thread_map, tiled_grid, tiles_in_place,
};
use layout_gen::{arb_layout, layout};
use proptest::prelude::*;

/// `(lane, e)` → `(row, col)` of a map, read through `elements_of`.
fn positions(map: &ThreadMap) -> BTreeMap<(i64, i64), (usize, usize)> {
    let mut out = BTreeMap::new();
    for lane in map.threads() {
        for (value, row, col) in map.elements_of(lane) {
            assert!(out.insert((lane, value), (row, col)).is_none());
        }
    }
    out
}

/// The map an atom's fragment gives, thread `i` drawn as `lane(i)` and
/// element `(row, col)` at `(row, col) + at`.
fn drawn(
    fragment: &Fragment,
    lane: impl Fn(i64) -> i64,
    at: (i64, i64),
) -> BTreeMap<(i64, i64), (usize, usize)> {
    fragment
        .elements()
        .map(|(thread, value, row, col)| {
            let cell = ((at.0 + row) as usize, (at.1 + col) as usize);
            ((lane(thread), value), cell)
        })
        .collect()
}

fn ldmatrix(count: LdmatrixCount, trans: bool) -> Vec<ThreadMap> {
    AtomName::Ldmatrix { count, trans }.maps()
}

// Which thread holds which element is the atoms' (`graphene::atoms`, whose
// tests check each layout against the PTX ISA's formulas); the drawings
// must show exactly that.

#[test]
fn ldmatrix_draws_its_atom() {
    for count in [LdmatrixCount::X1, LdmatrixCount::X2, LdmatrixCount::X4] {
        for trans in [false, true] {
            let maps = ldmatrix(count, trans);
            let atom = atoms::ldmatrix(count, trans);
            let n = count.matrices() as i64;
            let addresses = drawn(&atom.addresses, |thread| thread, (0, 0));
            assert_eq!(positions(&maps[0]), addresses, "{count:?} trans={trans}");
            // Threads past 8·num give no address.
            assert_eq!(maps[0].threads(), (0..8 * n).collect::<Vec<_>>());
            let values = drawn(&atom.values, |lane| lane, (0, 0));
            assert_eq!(positions(&maps[1]), values, "{count:?} trans={trans}");
        }
    }
}

#[test]
fn mma_m16n8k16_draws_its_atom() {
    let atom = atoms::mma_m16n8k16();
    for input in [MmaInput::F16, MmaInput::Bf16] {
        let maps = AtomName::MmaM16n8k16 { input }.maps();
        for (map, fragment) in maps.iter().zip([&atom.a, &atom.b, &atom.c]) {
            assert_eq!(positions(map), drawn(fragment, |lane| lane, (0, 0)));
        }
    }
}

#[test]
fn mma_m8n8k4_draws_each_quad_pair_as_its_atom() {
    let maps = AtomName::MmaM8n8k4.maps();
    let atom = atoms::mma_m8n8k4();
    // Quad pair q is drawn at block (q % 2, q / 2).
    for (map, fragment) in maps.iter().zip([&atom.a, &atom.b, &atom.c]) {
        let mut expected = BTreeMap::new();
        for q in 0..4 {
            let base = atom.instances.eval(q).unwrap();
            let lane = |i| base + atom.lanes.eval(i).unwrap();
            let at = ((q % 2) * fragment.rows, (q / 2) * fragment.cols);
            expected.extend(drawn(fragment, lane, at));
        }
        assert_eq!(positions(map), expected, "{}", map.title());
    }

    // The lanes of each block are the paper's quad pair
    // `#warp.tile([4,2 : 1,16])` = `[4 : 4].[(4,2) : (1,16)]`: tile q holds
    // lanes 4q + {0,1,2,3,16,17,18,19}.
    let quads = tile(
        &layout("[32 : 1]"),
        &[Tiler::Layout(layout("[4,2 : 1,16]"))],
    )
    .unwrap();
    for q in 0..4 {
        let base = quads.outer.eval(q).unwrap();
        let lanes: BTreeSet<i64> = quads.inner.offsets().map(|i| base + i).collect();
        let (br, bc) = ((q % 2) as usize, (q / 2) as usize);
        let owners: BTreeSet<i64> = (0..8)
            .flat_map(|r| (0..8).map(move |c| (8 * br + r, 8 * bc + c)))
            .flat_map(|(r, c)| maps[2].owners(r, c).iter().map(|o| o.thread))
            .collect();
        assert_eq!(owners, lanes, "quad pair {q}");
    }
}

/// Thread owning element `(row, col)` of a map, which must have one owner.
fn thread_at(map: &ThreadMap, row: usize, col: usize) -> i64 {
    match map.owners(row, col) {
        [Owner { thread, .. }] => *thread,
        other => panic!("({row},{col}) has owners {other:?}"),
    }
}

#[test]
fn ldmatrix_x4_matches_the_papers_two_figures() {
    let maps = ldmatrix(LdmatrixCount::X4, false);
    // Figure (a), as the notes transcribe it: each half row of 8 fp16
    // values with the (hexadecimal, then decimal) thread giving its address.
    // (row, left half, right half); the notes elide the other rows.
    let figure_a = [
        (0, 0x0, Some(0x8)),
        (1, 0x1, Some(0x9)),
        (2, 0x2, None),
        (7, 0x7, Some(0xf)),
        (8, 16, Some(24)),
        (9, 17, Some(25)),
        (15, 23, Some(31)),
    ];
    for (row, left, right) in figure_a {
        for c in 0..8 {
            assert_eq!(thread_at(&maps[0], row, c), left, "(a) row {row}");
            if let Some(right) = right {
                assert_eq!(thread_at(&maps[0], row, 8 + c), right, "(a) row {row}");
            }
        }
    }
    // Figure (b): the thread receiving each value; the two blocks of rows
    // repeat. Row 0's right half is printed in the notes as
    // "4 4 5 5 6 6 7 7", a slip that repeats row 1: lanes 4-7 already hold
    // row 1 of that matrix, and the PTX rule (row g goes to lanes 4g..4g+3
    // in every matrix) gives "0 0 1 1 2 2 3 3", as in the left half.
    let pairs = |first: i64| -> Vec<i64> { (first..first + 4).flat_map(|t| [t, t]).collect() };
    let figure_b = [
        (0, pairs(0), pairs(0)),
        (1, pairs(4), pairs(4)),
        (7, pairs(28), pairs(28)),
    ];
    for block in [0, 8] {
        for (row, left, right) in &figure_b {
            let got: Vec<i64> = (0..16)
                .map(|c| thread_at(&maps[1], block + row, c))
                .collect();
            assert_eq!(&got[..8], &left[..], "(b) row {}", block + row);
            assert_eq!(&got[8..], &right[..], "(b) row {}", block + row);
        }
    }
}

/// Per phase, the distinct 4-byte words (by index) in each bank, found byte
/// by byte.
fn brute_force_words(
    addresses: &[Option<i64>],
    access_bytes: i64,
) -> Vec<BTreeMap<i64, BTreeSet<i64>>> {
    let per_phase = match access_bytes {
        16 => 8,
        8 => 16,
        _ => 32,
    };
    (0..32 / per_phase)
        .map(|phase| {
            let mut words: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
            for lane in phase * per_phase..(phase + 1) * per_phase {
                if let Some(Some(address)) = addresses.get(lane) {
                    for byte in *address..address + access_bytes {
                        words.entry((byte / 4) % 32).or_default().insert(byte / 4);
                    }
                }
            }
            words
        })
        .collect()
}

/// The conflict degree of each phase: the most distinct words in one bank.
fn brute_force_degrees(addresses: &[Option<i64>], access_bytes: i64) -> Vec<usize> {
    brute_force_words(addresses, access_bytes)
        .iter()
        .map(|banks| banks.values().map(BTreeSet::len).max().unwrap_or(0))
        .collect()
}

fn report_degrees(access: &WarpAccess) -> Vec<usize> {
    bank_report(access)
        .phases
        .iter()
        .map(|p| p.degree())
        .collect()
}

#[test]
fn bank_degrees_of_strided_columns() {
    // fp32 column reads of a row-major tile with a pitch of `pitch` words:
    // the degree is 32 / (number of distinct banks) = gcd(pitch, 32).
    for pitch in 1..=64i64 {
        let column: Vec<Option<i64>> = (0..32).map(|lane| Some(lane * pitch)).collect();
        let access = WarpAccess::new(&column, 4, 4).unwrap();
        let gcd = (1..=32)
            .rev()
            .find(|d| pitch % d == 0 && 32 % d == 0)
            .unwrap();
        assert_eq!(report_degrees(&access), [gcd as usize], "pitch {pitch}");
        let addresses = access.addresses().to_vec();
        assert_eq!(report_degrees(&access), brute_force_degrees(&addresses, 4));
    }
}

proptest! {
    #[test]
    fn bank_degrees_match_a_byte_count(
        (element_bytes, access_bytes) in prop_oneof![
            Just((1i64, 1i64)), Just((2, 2)), Just((2, 4)), Just((4, 4)),
            Just((2, 8)), Just((4, 8)), Just((2, 16)), Just((4, 16)), Just((8, 16)),
        ],
        slots in prop::collection::vec(prop::option::weighted(0.85, 0i64..96), 0..=32),
    ) {
        let step = access_bytes / element_bytes;
        let offsets: Vec<Option<i64>> = slots.iter().map(|s| s.map(|k| k * step)).collect();
        let access = WarpAccess::new(&offsets, element_bytes, access_bytes).unwrap();
        let expected = brute_force_degrees(access.addresses(), access_bytes);
        prop_assert_eq!(report_degrees(&access), expected.clone());
        let report = bank_report(&access);
        prop_assert_eq!(report.degree(), expected.iter().copied().max().unwrap_or(0));
        prop_assert_eq!(report.wavefronts(), expected.iter().sum::<usize>());
        // The words listed per bank are exactly those touched, and each
        // lists the lanes whose access covers it.
        let words = brute_force_words(access.addresses(), access_bytes);
        for (phase, expected) in report.phases.iter().zip(&words) {
            let listed: BTreeMap<i64, BTreeSet<i64>> = phase
                .banks
                .iter()
                .enumerate()
                .filter(|(_, words)| !words.is_empty())
                .map(|(bank, words)| (bank as i64, words.iter().map(|w| w.byte_address / 4).collect()))
                .collect();
            prop_assert_eq!(&listed, expected);
            for word in phase.banks.iter().flatten() {
                for &lane in &word.lanes {
                    let start = access.addresses()[lane].unwrap();
                    prop_assert!(start <= word.byte_address + 3);
                    prop_assert!(word.byte_address < start + access_bytes);
                }
            }
        }
    }

    #[test]
    fn layout_grids_show_the_layout_function(l in arb_layout()) {
        let whole = Style { color: false, width: 100_000, height: 100_000 };
        let rows = grid_rows(&layout_grid(&l, &whole));
        let height = rows.len() as i64;
        let mut seen = 0;
        for (r, cells) in rows.iter().enumerate() {
            for (c, cell) in cells.iter().enumerate() {
                let index = r as i64 + height * c as i64;
                prop_assert_eq!(cell.parse::<i64>().unwrap(), l.eval(index).unwrap());
                seen += 1;
            }
        }
        prop_assert_eq!(seen, l.size());
    }

    #[test]
    fn lines_fit_the_width(l in arb_layout(), width in 24usize..120, height in 1usize..40) {
        let style = Style { color: false, width, height };
        let text = layout_grid(&l, &style);
        for line in text.lines() {
            prop_assert!(
                line.chars().count() <= width || !line.contains(' '),
                "line over {} columns: {:?}", width, line
            );
        }
        // Each panel of columns draws at most `height` rows.
        let panels = text.lines().filter(|l| l.starts_with("columns ")).count().max(1);
        prop_assert!(grid_rows(&text).len() <= height * panels);
    }
}

/// The cells of the grid lines `label | cell cell | cell …` of a drawing.
fn grid_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter_map(|line| line.split_once(" | "))
        .map(|(_, cells)| {
            cells
                .split_whitespace()
                .filter(|t| *t != "|" && *t != "…")
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// The text with ANSI colour sequences (`ESC [ … m`) removed.
fn strip_colour(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(ch) = chars.next() {
        if ch == '\x1b' {
            for rest in chars.by_ref() {
                if rest == 'm' {
                    break;
                }
            }
        } else {
            out.push(ch);
        }
    }
    out
}

#[test]
fn colour_only_adds_escape_codes() {
    let plain = Style::plain(160);
    let colour = plain.colored();
    let a = layout("[4,8 : 1,4]");
    let tiled = tile(
        &a,
        &[
            Tiler::Layout(layout("[2:2]")),
            Tiler::Layout(layout("[4:1]")),
        ],
    )
    .unwrap();
    let swizzled = "Sw<3,3,3> o (8,64):(64,1)".parse().unwrap();
    let rows: Vec<Option<i64>> = (0..32).map(|l| Some((l % 8) * 64 + 8 * (l / 8))).collect();
    let access = WarpAccess::new(&rows, 2, 16).unwrap();
    let pairs: [(String, String); 6] = [
        (
            tiled_grid(&tiled, &plain).unwrap(),
            tiled_grid(&tiled, &colour).unwrap(),
        ),
        (
            tiles_in_place(&a, &tiled, &plain).unwrap(),
            tiles_in_place(&a, &tiled, &colour).unwrap(),
        ),
        (
            swizzled_grid(&swizzled, &plain).unwrap(),
            swizzled_grid(&swizzled, &colour).unwrap(),
        ),
        (banks(&access, &plain), banks(&access, &colour)),
        (
            atom(AtomName::MmaM8n8k4, &plain),
            atom(AtomName::MmaM8n8k4, &colour),
        ),
        (
            thread_map(&AtomName::MmaM8n8k4.maps()[2], &plain),
            thread_map(&AtomName::MmaM8n8k4.maps()[2], &colour),
        ),
    ];
    for (mono, coloured) in pairs {
        assert_ne!(mono, coloured, "colour changed nothing");
        assert!(!mono.contains('\x1b'));
        assert_eq!(strip_colour(&coloured), mono);
    }
}

#[test]
fn tile_letters_name_the_tiles_that_hold_the_offsets() {
    let a = layout("[4,8 : 1,4]");
    let tilings = [
        ["[2:1]", "[4:1]"],
        ["[2:2]", "[4:1]"],
        ["[2:2]", "[2,2 : 1,4]"],
    ];
    for [t0, t1] in tilings {
        let tiled = tile(&a, &[Tiler::Layout(layout(t0)), Tiler::Layout(layout(t1))]).unwrap();
        let tile_image: BTreeSet<i64> = tiled.inner.offsets().collect();
        for view in [
            tiles_in_place(&a, &tiled, &Style::default()).unwrap(),
            tiled_grid(&tiled, &Style::default()).unwrap(),
        ] {
            // The first grid of the view; the legend follows it.
            let cells: Vec<String> = grid_rows(&view).into_iter().take(4).flatten().collect();
            assert_eq!(cells.len(), 32);
            let mut offsets = BTreeSet::new();
            for cell in cells {
                let split = cell.find(|ch: char| ch.is_ascii_lowercase()).unwrap();
                let offset: i64 = cell[..split].parse().unwrap();
                let letter = cell.as_bytes()[split];
                let base = tiled.outer.eval(i64::from(letter - b'a')).unwrap();
                assert!(tile_image.contains(&(offset - base)), "{t0},{t1}: {cell}");
                offsets.insert(offset);
            }
            assert_eq!(offsets, (0..32).collect());
        }
    }
}
