//! `:save FILE.svg`: the last picture drawn, written as SVG whose text is
//! the picture's, character for character — so every cell label of a
//! thread-data map sits in the SVG where the map puts it.

use graphene::viz::{Style, svg_text};
use graphene_repl::Session;
use graphene_repl::session::{SAVED_HEIGHT, SAVED_WIDTH};

/// A fresh file name in the temporary folder.
fn temporary(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("graphene-save-{}-{name}", std::process::id()))
}

#[test]
fn a_saved_atom_holds_the_map_cell_for_cell_and_colours_its_threads() {
    let mut session = Session::new(Style::default());
    let input = ":atom mma.m16n8k16.f16";
    assert!(!session.eval_line(input).failed);
    let path = temporary("mma.svg");
    let saved = session.eval_line(&format!(":save {}", path.display()));
    assert!(!saved.failed, "{}", saved.errors);
    let svg = std::fs::read_to_string(&path).expect("the file was written");
    let _ = std::fs::remove_file(&path);
    // The same drawing, monochrome, at the width and height `:save` uses.
    let mut plain = Session::new(Style {
        color: false,
        width: SAVED_WIDTH,
        height: SAVED_HEIGHT,
    });
    let expected = plain.eval_line(input).text;
    assert_eq!(svg_text(&svg), expected.lines().collect::<Vec<_>>());
    // Thread 5's second value of the A fragment is labelled, in a colour.
    assert!(svg.contains(">T5:v2<") || svg.contains("> T5:v2<"), "{svg}");
    assert!(svg.contains("fill-opacity"), "cells are tinted by colour");
    // The session's style is what it was.
    assert_eq!(session.style(), Style::default());
}

#[test]
fn save_needs_a_picture_an_svg_name_and_a_writable_place() {
    let mut session = Session::new(Style::default());
    let nothing = session.eval_line(":save nothing.svg");
    assert!(nothing.failed && nothing.errors.contains("nothing has been drawn yet"));
    assert!(!session.eval_line("(4,8):(1,4)").failed);
    let png = session.eval_line(":save picture.png");
    assert!(png.failed && png.errors.contains("is not an .svg file"));
    let nowhere = session.eval_line(":save /nonexistent-folder/x.svg");
    assert!(nowhere.failed && nowhere.errors.contains("cannot write"));
    // A layout expression is a picture too.
    let path = temporary("layout.svg");
    let saved = session.eval_line(&format!(":save {}", path.display()));
    assert!(!saved.failed, "{}", saved.errors);
    let svg = std::fs::read_to_string(&path).expect("written");
    let _ = std::fs::remove_file(&path);
    assert!(
        svg_text(&svg)
            .iter()
            .any(|line| line.contains("[4,8 : 1,4]")),
        "{svg}"
    );
}

/// Every kind of picture `:save` writes is the drawing, line for line: the
/// wgmma accumulators at N = 256 and its shared-memory operands, Volta's
/// macro-MMA, the linked ldmatrix → mma view, a tiled MMA, a layout in
/// panels and a zoomed thread map.
#[test]
fn every_picture_saves_as_its_drawing() {
    let inputs: &[&[&str]] = &[
        &[":atom wgmma.m64n256k16"],
        &[":atom wgmma.m64n128k16 B sw128"],
        &[":atom wgmma.m64n64k16 A none"],
        &[":atom mma.m8n8k4.macro"],
        &[":atom ldmatrix.x4 for mma.m16n8k16.A"],
        &[":atom mma.m16n8k16 warps 2x2 repeat 1x2"],
        &["(4,600):(600,1)"],
        &[
            "%tile:[128,128 : 128,1].fp16.SH",
            "#cta:[256].thread",
            "@hr, @hc = #cta.tile(2).indices()",
            "%half = %tile.tile([1,64])[@hr, @hc]",
            ":map %half by #cta zoom warp",
        ],
    ];
    for lines in inputs {
        let mut session = Session::new(Style::default());
        let mut plain = Session::new(Style {
            color: false,
            width: SAVED_WIDTH,
            height: SAVED_HEIGHT,
        });
        let mut expected = String::new();
        for line in *lines {
            assert!(!session.eval_line(line).failed, "{line}");
            let drawn = plain.eval_line(line);
            assert!(!drawn.failed, "{line}: {}", drawn.errors);
            expected = drawn.text;
        }
        let path = temporary("every.svg");
        let saved = session.eval_line(&format!(":save {}", path.display()));
        assert!(!saved.failed, "{lines:?}: {}", saved.errors);
        let svg = std::fs::read_to_string(&path).expect("the file was written");
        let _ = std::fs::remove_file(&path);
        let text = svg_text(&svg);
        assert!(
            text.len() > 8,
            "{lines:?}: a picture of {} lines",
            text.len()
        );
        assert_eq!(text, expected.lines().collect::<Vec<_>>(), "{lines:?}");
    }
}
