//! The `graphene` binary end to end, off a terminal: `-e`, a script file,
//! piped standard input; exit statuses; no prompt; colour only when asked.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn graphene(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_graphene"))
        .args(args)
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("the binary ends")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The text with ANSI escape sequences (`ESC [ … letter`) removed.
fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn eval_prints_the_layout_first_then_its_grid() {
    let out = graphene(&["--color=never", "-e", "(4,8):(1,4)"], "");
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("(4,8):(1,4)\nlayout [4,8 : 1,4]"),
        "{stdout}"
    );
    assert!(stdout.contains("0 |  0  4  8 12 16 20 24 28"), "{stdout}");
    assert!(!stdout.contains('\u{1b}'));
    assert!(text(&out.stderr).is_empty());
}

#[test]
fn a_bad_line_is_diagnosed_and_the_next_still_runs() {
    let out = graphene(
        &[
            "--color=never",
            "-e",
            "let A = (4,8)",
            "-e",
            "coalsce(A)",
            "-e",
            "coalesce(A)",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("error[E0903]: no function named `coalsce`"),
        "{stderr}"
    );
    assert!(stderr.contains("--> -e:1:1"), "{stderr}");
    assert!(
        text(&out.stdout).contains("32:1\n"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn piped_input_runs_without_prompts_and_with_blocks() {
    let script = "const N = 64\nkernel k {\n  %y:[N].fp32.GL\n  #b:[1].block\n  #t:[N].thread\n  %y <- Init<1.0><<<#b, #t>>>()\n}\n#w:[32].thread\n:show #w.tile(8)\n";
    let out = graphene(&[], script);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("kernel k checked"), "{stdout}");
    assert!(stdout.contains("[4 : 8].[8 : 1]: 4 tiles"), "{stdout}");
    assert!(!stdout.contains("graphene>"), "{stdout}");
    assert!(!stdout.contains('\u{1b}'), "no colour into a pipe");
}

#[test]
fn a_script_file_reports_its_own_line_numbers() {
    let path = std::env::temp_dir().join(format!("graphene-repl-{}.repl", std::process::id()));
    std::fs::write(&path, "let A = (4,8)\n\n:show B\n").unwrap();
    let out = graphene(&["--color=never", path.to_str().unwrap()], "");
    std::fs::remove_file(&path).ok();
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:3:7", path.display())),
        "{stderr}"
    );
    assert!(stderr.contains("3 | :show B"), "{stderr}");
}

#[test]
fn colour_only_when_asked_and_it_changes_nothing_else() {
    let line = "%A:[4,8 : 1,4].fp32.GL\n:show %A.tile([2:2],[4:1])\ncoalsce(1)\n";
    let plain = graphene(&["--color=never"], line);
    let auto = graphene(&[], line);
    let coloured = graphene(&["--color=always"], line);
    assert_eq!(plain.stdout, auto.stdout, "auto is off in a pipe");
    let coloured_out = text(&coloured.stdout);
    assert!(coloured_out.contains("\u{1b}["), "{coloured_out}");
    assert_eq!(strip_ansi(&coloured_out), text(&plain.stdout));
    assert!(text(&coloured.stderr).contains("\u{1b}["));
    assert_eq!(strip_ansi(&text(&coloured.stderr)), text(&plain.stderr));
}

#[test]
fn no_color_turns_auto_off() {
    let out = Command::new(env!("CARGO_BIN_EXE_graphene"))
        .args(["-e", "(2,2)"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(!text(&out.stdout).contains('\u{1b}'));
}

#[test]
fn off_a_terminal_grids_fit_64_columns() {
    let out = graphene(&["-e", "(8,64):(64,1)", "-e", "[4096,4096]"], "");
    let stdout = text(&out.stdout);
    // Grid lines (labels, then ` | `) and captions fit; the type line is text.
    for line in stdout.lines().filter(|l| !l.starts_with("layout ")) {
        assert!(line.chars().count() <= 64, "too wide: {line}");
    }
    // Too wide for 64: wrapped into panels that hold every column.
    assert!(stdout.contains("columns 0-14 (of 64):"), "{stdout}");
    assert!(stdout.contains("columns 60-63 (of 64):"), "{stdout}");
    assert!(stdout.contains("too large to draw whole"), "{stdout}");
    let wide = graphene(&["--width", "300", "-e", "(8,64):(64,1)"], "");
    assert!(!text(&wide.stdout).contains("more columns"));
}

#[test]
fn quit_stops_the_script() {
    let out = graphene(&["-e", ":quit", "-e", "(4,8)"], "");
    assert!(out.status.success());
    assert!(text(&out.stdout).is_empty(), "{}", text(&out.stdout));
}

#[test]
fn a_piped_line_that_is_not_utf8_is_reported_and_the_others_run() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_graphene"))
        .arg("--color=never")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("graphene runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"let A = (4,8)\n:show \xffA\ncoalesce(A)\n")
        .expect("write stdin");
    let out = child.wait_with_output().expect("graphene ends");
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("error[E0124]: invalid UTF-8: byte 0xff"),
        "{stderr}"
    );
    assert!(stderr.contains("--> <stdin>:2:7"), "{stderr}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("(4,8):(1,4)"), "{stdout}");
    assert!(stdout.contains("32:1\n"), "{stdout}");
}
