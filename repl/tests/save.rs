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
