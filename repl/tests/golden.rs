//! Golden transcripts: each `tests/golden/repl/NAME.repl` (in the workspace's
//! golden tree) is a script typed into
//! a fresh session (64 columns, no colour: the form used off a terminal);
//! its transcript — each input after `> ` (continuation lines after `. `),
//! then what it printed, diagnostics included — is pinned in
//! `tests/golden/repl/NAME.out`. `BLESS=1 cargo test -p graphene-repl --test
//! golden` rewrites the expected files.

// The workspace's one golden harness, shared with the library's tests.
#[path = "../../tests/support/mod.rs"]
mod support;

use graphene::viz::Style;
use graphene_repl::input::split;
use graphene_repl::{Origin, Session};
use pretty_assertions::assert_eq;

/// The transcript of `script` run in a fresh session.
fn transcript(script: &str, name: &str) -> String {
    let mut session = Session::new(Style::default());
    let mut out = String::new();
    for input in split(script) {
        for (i, line) in input.text.lines().enumerate() {
            out.push_str(if i == 0 { "> " } else { ". " });
            out.push_str(line);
            out.push('\n');
        }
        let output = session.eval_at(
            &input.text,
            Origin {
                name,
                line: input.line,
            },
        );
        out.push_str(&output.text);
        out.push_str(&output.errors);
        if output.quit {
            out.push_str("(quit)\n");
            break;
        }
    }
    out
}

fn check(name: &str) {
    let folder = support::golden::dir("repl");
    let script_path = folder.join(format!("{name}.repl"));
    let script = std::fs::read_to_string(&script_path)
        .unwrap_or_else(|e| panic!("{}: {e}", script_path.display()));
    let actual = transcript(&script, &format!("{name}.repl"));
    support::golden::check(&folder.join(format!("{name}.out")), &actual);
}

macro_rules! golden {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                check(stringify!($name));
            }
        )*
    };
}

golden!(
    section_3_2_layouts,
    section_3_3_tiles,
    section_4_warp_groups,
    ldmatrix,
    mma_fragments,
    wgmma_accumulators,
    banks_and_swizzle,
    swizzle_explained,
    algebra,
    errors_keep_the_session,
    elision,
    help,
    tma,
    width_panels,
    wgmma_operands,
    volta_macro_mma,
    ldmatrix_for_mma,
    tiled_mma,
    warp_zoom,
);

/// Every golden script is listed above (a new file cannot be forgotten).
#[test]
fn every_script_has_a_test() {
    let folder = support::golden::dir("repl");
    let mut scripts: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let stem = path.file_stem()?.to_string_lossy().into_owned();
            (path.extension()? == "repl").then_some(stem)
        })
        .collect();
    scripts.sort();
    assert_eq!(
        scripts,
        [
            "algebra",
            "banks_and_swizzle",
            "elision",
            "errors_keep_the_session",
            "help",
            "ldmatrix",
            "ldmatrix_for_mma",
            "mma_fragments",
            "section_3_2_layouts",
            "section_3_3_tiles",
            "section_4_warp_groups",
            "swizzle_explained",
            "tiled_mma",
            "tma",
            "volta_macro_mma",
            "warp_zoom",
            "wgmma_accumulators",
            "wgmma_operands",
            "width_panels",
        ]
    );
}
