//! The pages run as written: every REPL line that `docs/repl.md` (and
//! `README.md`) shows is typed, in page order, into one session per page,
//! and what the page says it prints is compared with what it prints. So a
//! page cannot use a name it never defined, nor show a drawing the REPL no
//! longer makes.
//!
//! How a page is read:
//!
//! - A *transcript* is a fenced block with a line that starts with `> `.
//!   Blocks without one (shell commands, listings) are not typed.
//! - `> INPUT` is a line typed at the prompt; an input left open (an
//!   unclosed `{`, `(`, `[` or `<<<`) goes on at the lines after it that
//!   start with `. `, as in the golden transcripts.
//! - The lines after an input, up to the next input or the end of the
//!   block, are its answer exactly as printed off a terminal: 64 columns,
//!   64 rows, no colour (`Style::default()`, as the golden tests use;
//!   `:set` lines on the page change it as they would for a reader).
//!   Blank lines at the end of an answer, shown or printed, are not part
//!   of it (the REPL prints one after each result and diagnostic).
//! - A line `…` alone stands for answer lines left out, any number of
//!   them: the shown lines must appear in the answer in order, those before
//!   the first `…` starting it and those after the last `…` ending it. An
//!   answer shown as `…` alone is not checked at all.
//! - An answer whose first line starts with `error` is a diagnostic: the
//!   input must be rejected, with exactly that diagnostic (which names the
//!   input `in[N]`, N its number on the page, as an interactive session
//!   does). Any other input must be accepted.
//!
//! In fenced `sh` blocks, each `cargo run -p graphene-repl [-- ARGS]` or
//! `graphene ARGS` line is run as the built `graphene ARGS` from the
//! workspace root, with empty standard input, and must exit 0.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use graphene::viz::Style;
use graphene_repl::input::continues;
use graphene_repl::{Origin, Session};

/// The line that stands for answer lines left out.
const ELIDED: &str = "…";

/// The workspace root: the pages' paths and the commands are relative to it.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the REPL crate sits in the workspace")
        .to_path_buf()
}

fn read_page(page: &str) -> String {
    let path = root().join(page);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A fenced block of a page.
struct Block {
    /// The word after the opening fence (`sh`, or empty).
    info: String,
    /// The heading the block is under (empty before the first).
    heading: String,
    /// Its lines and their numbers on the page (1-based), the fence's
    /// indentation removed.
    lines: Vec<(usize, String)>,
}

/// The fenced blocks of a markdown page, in order.
fn blocks(page: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut heading = String::new();
    let mut open: Option<(usize, Block)> = None;
    for (index, line) in page.lines().enumerate() {
        let number = index + 1;
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match open.take() {
            Some((_, block)) if trimmed.starts_with("```") => out.push(block),
            Some((fence_indent, mut block)) => {
                let text = line.get(fence_indent.min(indent)..).unwrap_or("");
                block.lines.push((number, text.to_string()));
                open = Some((fence_indent, block));
            }
            None if trimmed.starts_with("```") => {
                let info = trimmed.trim_start_matches('`').trim().to_string();
                let block = Block {
                    info,
                    heading: heading.clone(),
                    lines: Vec::new(),
                };
                open = Some((indent, block));
            }
            None => {
                if line.starts_with('#') {
                    heading = line.trim_start_matches('#').trim().to_string();
                }
            }
        }
    }
    assert!(open.is_none(), "a fenced block is never closed");
    out
}

/// One typed input and the answer the page shows for it.
struct Step {
    /// The page's line of the input.
    line: usize,
    /// The input, its lines joined with `\n`.
    input: String,
    /// The answer as shown, blank lines at its end removed.
    answer: Vec<String>,
}

/// The steps of a transcript block; `page` names it in failures.
fn steps(page: &str, block: &Block) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut lines = block.lines.iter().peekable();
    while let Some((number, text)) = lines.next() {
        if let Some(input) = typed(text) {
            let mut input = input.to_string();
            while continues(&input) {
                let Some(more) = lines.next_if(|(_, next)| next.starts_with(". ")) else {
                    break;
                };
                input.push('\n');
                input.push_str(&more.1[2..]);
            }
            steps.push(Step {
                line: *number,
                input,
                answer: Vec::new(),
            });
        } else {
            let Some(step) = steps.last_mut() else {
                panic!("{page}:{number}: a transcript block starts with an answer, not `> `");
            };
            step.answer.push(text.clone());
        }
    }
    for step in &mut steps {
        while step.answer.last().is_some_and(|l| l.trim().is_empty()) {
            step.answer.pop();
        }
    }
    steps
}

/// The input of a line typed at the prompt.
fn typed(line: &str) -> Option<&str> {
    if line == ">" {
        Some("")
    } else {
        line.strip_prefix("> ")
    }
}

fn is_transcript(block: &Block) -> bool {
    block.lines.iter().any(|(_, text)| typed(text).is_some())
}

/// Whether the answer `shown` (with `…` lines) fits the printed `actual`.
fn fits(shown: &[String], actual: &str) -> bool {
    let mut actual: Vec<&str> = actual.lines().collect();
    while actual.last().is_some_and(|line| line.trim().is_empty()) {
        actual.pop();
    }
    let pieces: Vec<&[String]> = shown.split(|line| line == ELIDED).collect();
    let same = |piece: &[String], lines: &[&str]| {
        piece.len() == lines.len() && piece.iter().zip(lines).all(|(a, b)| a == b)
    };
    let [first, rest @ ..] = pieces.as_slice() else {
        return actual.is_empty();
    };
    let Some((last, middle)) = rest.split_last() else {
        return same(first, &actual);
    };
    if first.len() + last.len() > actual.len()
        || !same(first, &actual[..first.len()])
        || !same(last, &actual[actual.len() - last.len()..])
    {
        return false;
    }
    let end = actual.len() - last.len();
    let mut at = first.len();
    for piece in middle {
        let found = (at..end).find(|&start| {
            start + piece.len() <= end && same(piece, &actual[start..start + piece.len()])
        });
        match found {
            Some(start) => at = start + piece.len(),
            None => return false,
        }
    }
    true
}

/// Types every transcript of `page` into one session; returns the number
/// of inputs and the failures, each naming its line.
fn run_page(page: &str) -> (usize, Vec<String>) {
    let text = read_page(page);
    let mut session = Session::new(Style::default());
    let mut count = 0;
    let mut failures = Vec::new();
    for block in blocks(&text).iter().filter(|b| is_transcript(b)) {
        for step in steps(page, block) {
            count += 1;
            let name = format!("in[{count}]");
            let output = session.eval_at(
                &step.input,
                Origin {
                    name: &name,
                    line: 1,
                },
            );
            let printed = format!("{}{}", output.text, output.errors);
            let where_ = format!("{page}:{}: `{}`", step.line, step.input);
            let error_shown = step
                .answer
                .first()
                .is_some_and(|line| line.starts_with("error"));
            if output.failed && !error_shown {
                failures.push(format!("{where_} is rejected:\n{}", output.errors));
            } else if !output.failed && error_shown {
                failures.push(format!(
                    "{where_} is shown as an error but is accepted:\n{}",
                    output.text
                ));
            } else if !fits(&step.answer, &printed) {
                failures.push(format!(
                    "{where_}: the page shows\n{}\nbut the REPL prints\n{printed}",
                    step.answer.join("\n")
                ));
            }
        }
    }
    (count, failures)
}

fn assert_runs(page: &str) -> usize {
    let (count, failures) = run_page(page);
    assert!(
        failures.is_empty(),
        "{} of {count} inputs of {page} do not run as written:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    count
}

#[test]
fn the_repl_tour_runs_as_written() {
    let count = assert_runs("docs/repl.md");
    assert!(count > 0, "docs/repl.md types nothing");
    // Each numbered section of the tour types something.
    let page = read_page("docs/repl.md");
    let all = blocks(&page);
    for line in page.lines().filter(|l| l.starts_with("## ")) {
        let heading = line.trim_start_matches('#').trim();
        if heading.starts_with(|c: char| c.is_ascii_digit()) {
            assert!(
                all.iter().any(|b| b.heading == heading && is_transcript(b)),
                "docs/repl.md: section `{heading}` has no `> ` lines"
            );
        }
    }
}

#[test]
fn the_readme_runs_as_written() {
    assert_runs("README.md");
}

/// Splits a shell line into words: whitespace separates, single quotes
/// group, a word starting with `#` starts a comment.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        match chars.peek() {
            None | Some('#') => return out,
            Some(_) => {}
        }
        let mut word = String::new();
        while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
            if c == '\'' {
                word.extend(chars.by_ref().take_while(|&c| c != '\''));
            } else {
                word.push(c);
            }
        }
        out.push(word);
    }
}

/// The arguments a shell line gives the REPL, if it runs the REPL.
fn repl_arguments(line: &str) -> Option<Vec<String>> {
    let words = words(line);
    match words.as_slice() {
        [cargo, run, p, package, rest @ ..]
            if cargo == "cargo" && run == "run" && p == "-p" && package == "graphene-repl" =>
        {
            Some(match rest {
                [dashes, args @ ..] if dashes == "--" => args.to_vec(),
                _ => Vec::new(),
            })
        }
        [graphene, args @ ..] if graphene == "graphene" => Some(args.to_vec()),
        _ => None,
    }
}

#[test]
fn the_pages_commands_run() {
    let mut ran = 0;
    for page in ["docs/repl.md", "README.md"] {
        let text = read_page(page);
        for block in blocks(&text).iter().filter(|b| b.info == "sh") {
            for (number, line) in &block.lines {
                let Some(args) = repl_arguments(line) else {
                    continue;
                };
                let out = Command::new(env!("CARGO_BIN_EXE_graphene"))
                    .args(&args)
                    .current_dir(root())
                    .stdin(Stdio::null())
                    .output()
                    .expect("the binary starts");
                assert!(
                    out.status.success(),
                    "{page}:{number}: `graphene {}` exits with {}:\n{}",
                    args.join(" "),
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                );
                ran += 1;
            }
        }
    }
    assert!(ran > 0, "no page shows how to start the REPL");
}

#[test]
fn elided_answers_fit_in_order() {
    let shown = |lines: &[&str]| lines.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    let actual = "a\nb\nc\nd\ne\n";
    assert!(fits(&shown(&["a", "b", "c", "d", "e"]), actual));
    assert!(!fits(&shown(&["a", "b", "c", "d"]), actual));
    assert!(fits(&shown(&["a", "…"]), actual));
    assert!(fits(&shown(&["a", "…", "c", "…", "e"]), actual));
    assert!(fits(&shown(&["…", "d", "e"]), actual));
    assert!(fits(&shown(&["…"]), actual));
    assert!(!fits(&shown(&["a", "…", "b", "a", "…"]), actual));
    assert!(!fits(&shown(&["c", "…"]), actual));
    assert!(!fits(&shown(&["a", "b", "c", "…", "c", "d", "e"]), actual));
    assert!(fits(&shown(&[]), ""));
    assert!(!fits(&shown(&[]), actual));
}
