//! The pictures of the wide and composite atoms read back from their text
//! — every panel of a wrapped grid, every cell — and compared with the atom
//! tables of `graphene::atoms`: wgmma's accumulators at every width,
//! wgmma's operands in shared memory under every descriptor layout, Volta's
//! macro-MMA, and `ldmatrix.x4` feeding the A of `mma.m16n8k16`.

use std::collections::BTreeMap;

use graphene::atoms::{self, Major, MatrixDescriptor, SharedSwizzle};
use graphene::viz::{AtomName, Style, WgmmaOperand, atom};

/// `(row label, column label)` → cell text of the first grid in `text`,
/// read across all its panels (`columns A-B (of N):`), separators skipped.
fn read_grid(text: &str) -> BTreeMap<(String, String), String> {
    let lines: Vec<&str> = text.lines().collect();
    // A row is `LABEL | cells`; a rule `   |----` has no label.
    let is_row = |line: &str| {
        line.split_once(" |").is_some_and(|(label, _)| {
            let label = label.trim();
            !label.is_empty() && !label.contains(' ')
        })
    };
    let mut cells = BTreeMap::new();
    let mut header: Vec<String> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let next_is_row = lines.get(i + 1).is_some_and(|next| is_row(next));
        if !line.contains('|') && next_is_row {
            header = line.split_whitespace().map(str::to_string).collect();
        } else if is_row(line) {
            let (label, rest) = line.split_once(" |").unwrap();
            let row: Vec<&str> = rest
                .split_whitespace()
                .filter(|token| *token != "|")
                .collect();
            assert_eq!(row.len(), header.len(), "{line} under {header:?}");
            for (column, cell) in header.iter().zip(row) {
                let key = (label.trim().to_string(), column.clone());
                assert!(cells.insert(key, cell.to_string()).is_none(), "{line}");
            }
        }
    }
    cells
}

/// The figures of an atom's text: its blank-line-separated parts.
fn figures(name: &str, style: &Style) -> Vec<String> {
    let name: AtomName = name.parse().unwrap();
    atom(name, style)
        .split("\n\n")
        .map(str::to_string)
        .collect()
}

/// `Tt:vV` (or `Tt:vV+n`) → (t, V).
fn owner(cell: &str) -> (i64, i64) {
    let cell = cell.split('+').next().unwrap();
    let (thread, value) = cell.split_once(":v").unwrap();
    (
        thread.trim_start_matches('T').parse().unwrap(),
        value.parse().unwrap(),
    )
}

#[test]
fn every_wgmma_operand_cell_is_the_byte_its_descriptor_reads() {
    for (n, operand) in [
        (64, WgmmaOperand::A),
        (24, WgmmaOperand::B),
        (256, WgmmaOperand::B),
    ] {
        for swizzle in SharedSwizzle::ALL {
            for major in [Major::K, Major::Mn] {
                let name = AtomName::WgmmaShared {
                    n,
                    operand,
                    swizzle,
                    major,
                };
                let parts = figures(&name.to_string(), &Style::plain(64));
                let (rows, mn) = match operand {
                    WgmmaOperand::A => (64, 64),
                    WgmmaOperand::B => (16, n),
                };
                let descriptor = MatrixDescriptor::compact(major, swizzle, mn);
                let words = parts[1].replace('\n', " ");
                assert!(
                    words.contains(&format!("= 0x{:016x}", descriptor.encode())),
                    "{name}: {words}"
                );
                let grid = read_grid(&parts[2]);
                let cols = if rows == 64 { 16 } else { n };
                assert_eq!(grid.len() as i64, rows * cols, "{name}");
                for ((row, col), text) in grid {
                    let (r, c): (i64, i64) = (row.parse().unwrap(), col.parse().unwrap());
                    let (m, k) = match operand {
                        WgmmaOperand::A => (r, c),
                        WgmmaOperand::B => (c, r),
                    };
                    let address: i64 = text.parse().unwrap();
                    assert_eq!(address, descriptor.address(major, m, k), "{name} ({r},{c})");
                }
            }
        }
    }
}

#[test]
fn the_widest_wgmma_accumulators_draw_whole_in_panels() {
    let parts = figures("wgmma.m64n256k16", &Style::plain(64));
    let grid = read_grid(&parts[1]);
    assert_eq!(grid.len(), 64 * 256);
    let fragment = atoms::wgmma_m64nnk16_accumulators(256);
    let mut expected = BTreeMap::new();
    for (thread, value, row, col) in fragment.elements() {
        expected.insert((row.to_string(), col.to_string()), (thread, value));
    }
    for (key, text) in &grid {
        assert_eq!(owner(text), expected[key], "{key:?}");
    }
}

#[test]
fn the_macro_mma_cells_are_its_quad_pairs_products() {
    let parts = figures("mma.m8n8k4.macro", &Style::plain(100));
    let macro_mma = atoms::volta_macro_m16n16k8();
    // Figures: caption, then A, B and C/D each as element view and thread view.
    for (figure, elements) in [
        (1, macro_mma.a_elements()),
        (3, macro_mma.b_elements()),
        (5, macro_mma.c_elements()),
    ] {
        let grid = read_grid(&parts[figure]);
        let mut owners: BTreeMap<(String, String), Vec<(i64, i64)>> = BTreeMap::new();
        for e in elements {
            owners
                .entry((e.row.to_string(), e.col.to_string()))
                .or_default()
                .push((e.lane, e.value));
        }
        assert_eq!(grid.len(), owners.len());
        for (key, text) in &grid {
            let mut all = owners[key].clone();
            all.sort_unstable();
            // The first owner is drawn, `+n` counts the others.
            assert_eq!(owner(text), all[0], "{key:?}");
            let extra = all.len() - 1;
            assert_eq!(
                text.ends_with(&format!("+{extra}")),
                extra > 0,
                "{key:?} {text}"
            );
        }
    }
}

#[test]
fn ldmatrix_for_mma_delivers_the_a_fragment_cell_by_cell() {
    let parts = figures("ldmatrix.x4 for mma.m16n8k16.A", &Style::plain(80));
    // Caption, addresses (element view only), registers (two views), A.
    let registers = read_grid(&parts[2]);
    let mma = atoms::mma_m16n8k16();
    assert_eq!(registers.len(), 256);
    for (thread, value, m, k) in mma.a.elements() {
        let key = (m.to_string(), k.to_string());
        assert_eq!(owner(&registers[&key]), (thread, value), "{key:?}");
    }
    // Thread 8j + r gives the address of row r of matrix j, which the
    // caption places; its cells are those of the row it names.
    let addresses = read_grid(&parts[1]);
    let caption = parts[0].replace('\n', " ");
    for j in 0..4 {
        let (m, k) = (8 * (j % 2), 8 * (j / 2));
        assert!(
            caption.contains(&format!(
                "{j} (threads {}-{}, register d{j} = a{j}) is rows {m}-{}, columns {k}-{}",
                8 * j,
                8 * j + 7,
                m + 7,
                k + 7
            )),
            "{caption}"
        );
        for r in 0..8 {
            for c in 0..8 {
                let key = ((m + r).to_string(), (k + c).to_string());
                assert_eq!(addresses[&key], format!("T{}", 8 * j + r), "{key:?}");
            }
        }
    }
}
