//! `:save` of the pictures drawn at any size: a tiled MMA (`:atom
//! mma.m16n8k16 warps … repeat …`) and a block tile's map zoomed out to
//! warps (`:map … zoom warp`). Each SVG is read back, its grid parsed cell
//! by cell, and every label compared with the owner the PTX ISA's fragment
//! formulas (for the MMA) or the tile's own arithmetic (for the map) give;
//! with `:set colorby warp`, every warp's cells share one colour.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use graphene::viz::{Style, svg_text};
use graphene_repl::Session;

/// A fresh file name in the temporary folder.
fn temporary(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("graphene-zoom-{}-{name}", std::process::id()))
}

/// Runs `inputs` in `session`, then `:save`s the last picture; the SVG.
fn saved(session: &mut Session, inputs: &[&str], name: &str) -> String {
    for input in inputs {
        let out = session.eval_line(input);
        assert!(!out.failed, "{input}: {}", out.errors);
    }
    let path = temporary(name);
    let saved = session.eval_line(&format!(":save {}", path.display()));
    assert!(!saved.failed, "{}", saved.errors);
    let svg = std::fs::read_to_string(&path).expect("the file was written");
    let _ = std::fs::remove_file(&path);
    svg
}

/// The grid rows of a drawing's lines: each row's label and its cells (the
/// words after ` | `, separators left out). Rules and captions are skipped:
/// a row is a line whose label, before the first ` |`, is one word.
fn grid_rows(lines: &[String]) -> Vec<(String, Vec<String>)> {
    lines
        .iter()
        .filter_map(|line| {
            let (label, cells) = line.split_once(" |")?;
            let label = label.trim();
            if label.is_empty() || label.contains(' ') || cells.starts_with('-') {
                return None;
            }
            let cells = cells
                .split_whitespace()
                .filter(|word| *word != "|")
                .map(str::to_string)
                .collect();
            Some((label.to_string(), cells))
        })
        .collect()
}

/// `Tt:vV`, and `+n` when n more threads hold the element.
fn label(thread: i64, value: i64, more: i64) -> String {
    if more == 0 {
        format!("T{thread}:v{value}")
    } else {
        format!("T{thread}:v{value}+{more}")
    }
}

#[test]
fn a_saved_128_by_256_tiled_mma_holds_every_fragment_element_as_the_isa_places_it() {
    // 2×4 warps, the 32×32 warp tile repeated 4×8: C is 128×256.
    let (wm, wn, rm, rn) = (2i64, 4i64, 4i64, 8i64);
    let mut session = Session::new(Style::default());
    let started = Instant::now();
    let svg = saved(
        &mut session,
        &[":atom mma.m16n8k16 warps 2x4 repeat 4x8"],
        "tiled.svg",
    );
    let elapsed = started.elapsed();
    // Well under a second in release; debug builds get room to spare.
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    let rows = grid_rows(&svg_text(&svg));
    let (k_rows, m_rows): (Vec<_>, Vec<_>) = rows.iter().partition(|(l, _)| l.starts_with('k'));
    let (m, n, k) = (16 * wm * rm, 8 * wn * rn, 16i64);
    assert_eq!((k_rows.len() as i64, m_rows.len() as i64), (k, m));
    // mma.m16n8k16 (PTX ISA, "Matrix Fragments for mma.m16n8k16"): lane
    // 4g + t; C's c_e at row g + 8·(e/2), column 2t + e%2; A's a_e at row
    // g + 8·((e/2)%2), column 2t + e%2 + 8·(e/4); B's b_e at row
    // 2t + e%2 + 8·(e/2), column g.
    for (row, (name, cells)) in k_rows.iter().enumerate() {
        let kk = row as i64;
        assert_eq!(name, &format!("k{kk}"));
        assert_eq!(cells.len() as i64, n, "B row {kk}");
        for (col, cell) in cells.iter().enumerate() {
            let nn = col as i64;
            let (t, e) = ((kk % 8) / 2, kk % 2 + 2 * (kk / 8));
            let lane = 4 * (nn % 8) + t;
            let warp = wm * ((nn / 8) % wn);
            let value = e + 4 * (nn / (8 * wn));
            assert_eq!(
                cell,
                &label(32 * warp + lane, value, wm - 1),
                "B ({kk},{nn})"
            );
        }
    }
    let mut c_cells = 0;
    for (row, (name, cells)) in m_rows.iter().enumerate() {
        let mm = row as i64;
        assert_eq!(name, &format!("m{mm}"));
        assert_eq!(cells.len() as i64, k + n, "row m{mm}");
        let (i, g) = (mm % 16, mm % 8);
        let warp_m = (mm / 16) % wm;
        let repeat_m = mm / (16 * wm);
        for (col, cell) in cells.iter().enumerate() {
            let col = col as i64;
            if col < k {
                let (t, e) = ((col % 8) / 2, col % 2 + 2 * (i / 8) + 4 * (col / 8));
                let expected = label(32 * warp_m + 4 * g + t, e + 8 * repeat_m, wn - 1);
                assert_eq!(cell, &expected, "A ({mm},{col})");
                continue;
            }
            let nn = col - k;
            let j = nn % 8;
            let (t, e) = (j / 2, j % 2 + 2 * (i / 8));
            let warp = warp_m + wm * ((nn / 8) % wn);
            let value = e + 4 * (repeat_m + rm * (nn / (8 * wn)));
            assert_eq!(
                cell,
                &label(32 * warp + 4 * g + t, value, 0),
                "C ({mm},{nn})"
            );
            c_cells += 1;
        }
    }
    assert_eq!(c_cells, 128 * 256);
}

/// Every `<tspan fill="…">TEXT</tspan>` of an SVG: its colour and text.
fn tinted(svg: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for piece in svg.split("<tspan fill=\"").skip(1) {
        let Some((color, rest)) = piece.split_once("\">") else {
            continue;
        };
        let Some((text, _)) = rest.split_once("</tspan>") else {
            continue;
        };
        out.push((color.to_string(), text.trim().to_string()));
    }
    out
}

#[test]
fn a_saved_block_tile_zoomed_to_warps_shows_each_elements_warp_in_its_warps_colour() {
    // 128×128 fp16, row-major, over 256 threads: thread t holds the half
    // row t % 2 of row t / 2, so warp w holds rows 16w..16w+15.
    let mut session = Session::new(Style::default());
    let svg = saved(
        &mut session,
        &[
            ":set colorby warp",
            "%s:[128,128 : 128,1].fp16.SH",
            "#b:[256].thread",
            "@r, @c = #b.tile(2).indices()",
            "%row = %s.tile([1,64])[@r, @c]",
            ":map %row by #b zoom warp",
        ],
        "zoomed.svg",
    );
    let rows = grid_rows(&svg_text(&svg));
    assert_eq!(rows.len(), 128);
    for (r, (name, cells)) in rows.iter().enumerate() {
        assert_eq!(name, &r.to_string());
        assert_eq!(cells.len(), 128, "row {r}");
        for (c, cell) in cells.iter().enumerate() {
            let thread = 2 * r + c / 64;
            assert_eq!(cell, &format!("W{}", thread / 32), "({r},{c})");
        }
    }
    // One colour per warp, and eight different colours.
    let mut colors: BTreeMap<String, String> = BTreeMap::new();
    let cells = tinted(&svg);
    assert_eq!(cells.len(), 128 * 128);
    for (color, text) in cells {
        let known = colors.entry(text.clone()).or_insert_with(|| color.clone());
        assert_eq!(known, &color, "{text}");
    }
    let mut distinct: Vec<&String> = colors.values().collect();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 8, "{colors:?}");
}

#[test]
fn colouring_by_quad_or_value_changes_the_colours_not_the_text() {
    let mut session = Session::new(Style::default());
    let by_block = saved(&mut session, &[":atom mma.m16n8k16"], "block.svg");
    let by_quad = saved(
        &mut session,
        &[":set colorby quad", ":atom mma.m16n8k16"],
        "quad.svg",
    );
    let by_value = saved(
        &mut session,
        &[":set colorby value", ":atom mma.m16n8k16"],
        "value.svg",
    );
    assert_eq!(svg_text(&by_block), svg_text(&by_quad));
    assert_eq!(svg_text(&by_block), svg_text(&by_value));
    // Quad q = threads 4q..4q+3 share a colour; values v0 and v1 differ.
    let quad = tinted(&by_quad);
    let color_of = |cells: &[(String, String)], text: &str| {
        cells
            .iter()
            .find(|(_, t)| t == text)
            .map(|(c, _)| c.clone())
            .unwrap_or_else(|| panic!("no {text}"))
    };
    assert_eq!(color_of(&quad, "T4:v0"), color_of(&quad, "T7:v3"));
    assert_ne!(color_of(&quad, "T4:v0"), color_of(&quad, "T8:v0"));
    let value = tinted(&by_value);
    assert_eq!(color_of(&value, "T4:v0"), color_of(&value, "T9:v0"));
    assert_ne!(color_of(&value, "T4:v0"), color_of(&value, "T4:v1"));
}
