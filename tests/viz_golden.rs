//! Golden drawings of the `viz` module: the figures of the Graphene paper
//! (seed 000 §2–4), the instruction fragments, the bank view of an fp16
//! tile before and after its swizzle, elision and colour. Each test pins its
//! output in `tests/golden/viz/NAME.txt` (the input is the code of the test;
//! each drawing's caption names it). `BLESS=1 cargo test --test viz_golden`
//! rewrites the files.

mod support;

use graphene::layout::{
    Layout, Swizzle, SwizzledLayout, Tiled, Tiler, int_tuple::flat, reshape, tile,
};
use graphene::viz::{
    AtomName, Style, WarpAccess, atom, bank_grid, bank_report, banks, layout_grid, swizzled_grid,
    tiled_grid, tiles_in_place,
};
use pretty_assertions::assert_eq;

fn check(name: &str, actual: &str) {
    support::golden::check(
        &support::golden::dir("viz").join(format!("{name}.txt")),
        actual,
    );
}

fn layout(text: &str) -> Layout {
    text.parse().unwrap()
}

fn tiler(text: &str) -> Tiler {
    Tiler::Layout(layout(text))
}

/// Wide enough for every figure here to be drawn whole.
fn wide() -> Style {
    Style::plain(160)
}

/// Drawings one after the other, a blank line between.
fn joined(parts: &[String]) -> String {
    parts.join("\n")
}

#[test]
fn section_3_2_layouts() {
    // The paper prints D's strides as (1,4),(1,8); its grid needs (1,4),(2,8).
    let drawings: Vec<String> = [
        "[4,8 : 1,4]",
        "[4,8 : 8,1]",
        "[4,(2,4) : 2,(1,8)]",
        "[(2,2),(2,4) : (1,4),(2,8)]",
    ]
    .iter()
    .map(|text| layout_grid(&layout(text), &Style::default()))
    .collect();
    check("section_3_2_layouts", &joined(&drawings));
}

#[test]
fn section_3_3_tiles_of_a() {
    let a = layout("[4,8 : 1,4]");
    let cases = [
        (["[2:1]", "[4:1]"], "[2,2 : 2,16].[2,4 : 1,4]"),
        (["[2:2]", "[4:1]"], "[2,2 : 1,16].[2,4 : 2,4]"),
        (["[2:2]", "[2,2 : 1,4]"], "[2,2 : 1,8].[2,(2,2) : 2,(4,16)]"),
    ];
    let mut drawings = Vec::new();
    for (tilers, paper) in cases {
        let tiled = tile(&a, &[tiler(tilers[0]), tiler(tilers[1])]).unwrap();
        assert_eq!(tiled.to_string(), paper);
        drawings.push(tiles_in_place(&a, &tiled, &Style::default()).unwrap());
        drawings.push(tiled_grid(&tiled, &Style::default()).unwrap());
    }
    check("section_3_3_tiles", &joined(&drawings));
}

#[test]
fn section_4_warp_groups() {
    let warp = layout("[32 : 1]");
    let groups = tile(&warp, &[tiler("[8 : 1]")]).unwrap();
    assert_eq!(groups.to_string(), "[4 : 8].[8 : 1]");
    let groups_2d = Tiled {
        outer: reshape(&groups.outer, &layout("[2,2 : 2,1]")).unwrap(),
        inner: groups.inner.clone(),
    };
    assert_eq!(groups_2d.to_string(), "[2,2 : 16,8].[8 : 1]");
    let quad_pairs = tile(&warp, &[tiler("[4,2 : 1,16]")]).unwrap();
    assert_eq!(quad_pairs.to_string(), "[4 : 4].[(4,2) : (1,16)]");
    let drawings = [
        tiled_grid(&groups, &wide()).unwrap(),
        tiled_grid(&groups_2d, &Style::default()).unwrap(),
        tiled_grid(&quad_pairs, &Style::default()).unwrap(),
    ];
    check("section_4_warp_groups", &joined(&drawings));
}

#[test]
fn every_atom() {
    for name in AtomName::all() {
        let file = format!("atom_{}", name.to_string().replace(['.', ' '], "_"));
        check(&file, &atom(name, &wide()));
    }
}

/// Lane `l` of an `ldmatrix.x4` over the first 32 columns of an (8,64)
/// tile gives the address of row `l % 8` of matrix `l / 8`, which is the
/// 16-byte chunk `l / 8` of that row.
fn ldmatrix_rows(tile: &SwizzledLayout) -> Vec<Option<i64>> {
    (0..32)
        .map(|lane| Some(tile.eval_coord(&flat(&[lane % 8, 8 * (lane / 8)])).unwrap()))
        .collect()
}

#[test]
fn banks_of_an_fp16_tile_before_and_after_swizzle() {
    let plain = SwizzledLayout::new(Swizzle::identity(), 0, layout("[8,64 : 64,1]"));
    let swizzled = SwizzledLayout::new(Swizzle::new(3, 3, 3).unwrap(), 0, layout("[8,64 : 64,1]"));
    let before = WarpAccess::new(&ldmatrix_rows(&plain), 2, 16).unwrap();
    let after = WarpAccess::new(&ldmatrix_rows(&swizzled), 2, 16).unwrap();
    assert_eq!(bank_report(&before).degree(), 8);
    assert_eq!(bank_report(&before).wavefronts(), 32);
    assert_eq!(bank_report(&after).degree(), 1);
    assert_eq!(bank_report(&after).wavefronts(), 4);
    let style = Style::plain(200);
    let drawings = [
        bank_grid(&plain, 2, &style).unwrap(),
        banks(&before, &Style::default()),
        swizzled_grid(&swizzled, &style).unwrap(),
        bank_grid(&swizzled, 2, &style).unwrap(),
        banks(&after, &Style::default()),
    ];
    check("banks_fp16_8x64_swizzle", &joined(&drawings));
}

#[test]
fn elision_and_summaries() {
    let tall = Style {
        height: 6,
        ..Style::default()
    };
    let big_tiles = tile(
        &layout("[1024,1024]"),
        &[Tiler::shape(&[128, 128]).unwrap()],
    )
    .unwrap();
    let drawings = [
        layout_grid(&layout("[8,64 : 64,1]"), &Style::default()),
        layout_grid(&layout("[64,4]"), &tall),
        layout_grid(&layout("[4096,4096]"), &Style::default()),
        tiled_grid(&big_tiles, &Style::default()).unwrap(),
        layout_grid(&layout("[8 : 3]"), &Style::default()),
        layout_grid(&layout("[2,3,4]"), &Style::default()),
        layout_grid(&Layout::empty(), &Style::default()),
    ];
    check("elision_and_summaries", &joined(&drawings));
}

#[test]
fn colour_marks_the_tiles() {
    let a = layout("[4,8 : 1,4]");
    let tiled = tile(&a, &[tiler("[2:2]"), tiler("[2,2 : 1,4]")]).unwrap();
    let colour = Style::default().colored();
    check(
        "colour_tiles",
        &tiles_in_place(&a, &tiled, &colour).unwrap(),
    );
}
