//! `graphene`: the interactive explorer of layouts and thread-data maps.
//!
//! Interactive on a terminal (prompt, history, completion, multi-line
//! blocks); otherwise it runs `-e` inputs, a script file, or piped standard
//! input, printing results to standard output and diagnostics to standard
//! error, with no prompt and no colour unless asked. Exit status: 0, or 1
//! when some input was rejected, 2 for a usage or I/O error.

use std::io::{self, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use colored::Colorize;
use graphene::diag::{ColorChoice, SourceMap};
use graphene::viz::Style;
use graphene_repl::failure::shift;
use graphene_repl::input::{Undecodable, decode_lines, split};
use graphene_repl::reader::{ReplHelper, fit_to_height, history_path, read_input};
use graphene_repl::{Origin, Output, Session};
use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::{CompletionType, Config, Editor};

/// When to colour the output.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum ColorArg {
    /// On a terminal, unless NO_COLOR is set.
    Auto,
    /// Always (ANSI codes even into a pipe).
    Always,
    /// Never.
    Never,
}

/// Explore layouts, tiles and thread-data maps of the Graphene IR as text grids.
#[derive(Parser, Debug)]
#[command(name = "graphene", version)]
struct Args {
    /// Evaluate LINE and exit (may be repeated; after FILE if both are given).
    #[arg(short = 'e', long = "eval", value_name = "LINE")]
    eval: Vec<String>,
    /// Run the inputs of FILE (one per line; `{ … }` blocks may span lines).
    file: Option<PathBuf>,
    /// Colour the drawings and diagnostics.
    #[arg(long, value_enum, default_value = "auto", value_name = "WHEN")]
    color: ColorArg,
    /// Widest grid line in characters (default: the terminal's width, or 64).
    #[arg(long, value_name = "N")]
    width: Option<usize>,
    /// Most grid rows drawn (default: the terminal's height, or 64).
    #[arg(long, value_name = "N")]
    height: Option<usize>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let stdout_is_terminal = io::stdout().is_terminal();
    let color = match args.color {
        ColorArg::Auto => ColorChoice::Auto,
        ColorArg::Always => ColorChoice::Always,
        ColorArg::Never => ColorChoice::Never,
    }
    .use_color(stdout_is_terminal);
    colored::control::set_override(color);
    let interactive = args.eval.is_empty() && args.file.is_none() && io::stdin().is_terminal();
    let (width, height) = terminal_size(stdout_is_terminal);
    let style = Style {
        color,
        width: args.width.or(width).unwrap_or(Style::DEFAULT_WIDTH).max(16),
        height: args
            .height
            .or(height)
            .unwrap_or(Style::DEFAULT_HEIGHT)
            .max(1),
    };
    let mut session = Session::new(style);
    if interactive {
        return interact(&mut session);
    }
    let mut failed = false;
    if let Some(path) = &args.file {
        let script = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(error) => {
                eprintln!("graphene: cannot read {}: {error}", path.display());
                return ExitCode::from(2);
            }
        };
        match run_script(&mut session, &script, &path.display().to_string()) {
            Ran::Quit(status) => return status_code(failed || status),
            Ran::Done(status) => failed |= status,
        }
    }
    for line in &args.eval {
        match run_script(&mut session, line.as_bytes(), "-e") {
            Ran::Quit(status) => return status_code(failed || status),
            Ran::Done(status) => failed |= status,
        }
    }
    if args.eval.is_empty() && args.file.is_none() {
        let mut script = Vec::new();
        if let Err(error) = io::stdin().read_to_end(&mut script) {
            eprintln!("graphene: cannot read standard input: {error}");
            return ExitCode::from(2);
        }
        match run_script(&mut session, &script, "<stdin>") {
            Ran::Quit(status) | Ran::Done(status) => failed |= status,
        }
    }
    status_code(failed)
}

/// How a script ended: at its end or at `:quit`; whether an input failed.
enum Ran {
    Done(bool),
    Quit(bool),
}

fn run_script(session: &mut Session, script: &[u8], name: &str) -> Ran {
    let (script, undecodable) = decode_lines(script);
    let mut undecodable = undecodable.into_iter().peekable();
    let mut failed = false;
    for input in split(&script) {
        while let Some(bad) = undecodable.next_if(|bad| bad.line <= input.line) {
            failed = true;
            print_output(&undecodable_output(&bad, name, session));
        }
        let output = session.eval_at(
            &input.text,
            Origin {
                name,
                line: input.line,
            },
        );
        failed |= output.failed;
        print_output(&output);
        if output.quit {
            return Ran::Quit(failed);
        }
    }
    for bad in undecodable {
        failed = true;
        print_output(&undecodable_output(&bad, name, session));
    }
    Ran::Done(failed)
}

/// The error for a line that is not UTF-8, rendered at its line of the
/// script like any other input's diagnostics.
fn undecodable_output(bad: &Undecodable, name: &str, session: &Session) -> Output {
    let padding = bad.line.saturating_sub(1);
    let mut map = SourceMap::new();
    let id = map.add(name, format!("{}{}", "\n".repeat(padding), bad.text));
    let diagnostic = shift(
        bad.diagnostic.clone(),
        u32::try_from(padding).unwrap_or(u32::MAX),
    );
    let color = if session.style().color {
        ColorChoice::Always
    } else {
        ColorChoice::Never
    };
    Output {
        errors: map.render(id, &[diagnostic], color),
        failed: true,
        ..Output::default()
    }
}

fn status_code(failed: bool) -> ExitCode {
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Prints an output, and a blank line after a result to set it apart
/// from the next.
fn print_output(output: &Output) {
    // A closed pipe (`graphene … | head`) is not an error worth reporting.
    let mut stdout = io::stdout().lock();
    let _ = stdout.write_all(output.text.as_bytes());
    if !output.text.is_empty() {
        let _ = stdout.write_all(b"\n");
    }
    drop(stdout);
    let _ = io::stdout().flush();
    let _ = io::stderr().lock().write_all(output.errors.as_bytes());
}

/// The terminal's columns and rows (less two for the prompt), when
/// standard output is one.
fn terminal_size(stdout_is_terminal: bool) -> (Option<usize>, Option<usize>) {
    if !stdout_is_terminal {
        return (None, None);
    }
    let Ok(mut editor) = rustyline::DefaultEditor::new() else {
        return (None, None);
    };
    match editor.dimensions() {
        Some((cols, rows)) if cols > 0 && rows > 0 => (
            Some(cols as usize),
            Some((rows as usize).saturating_sub(2).max(8)),
        ),
        Some(_) | None => (None, None),
    }
}

fn interact(session: &mut Session) -> ExitCode {
    // Tab lists every completion at once (as a shell does) rather than
    // cycling through them one press at a time.
    let config = Config::builder()
        .auto_add_history(false)
        .completion_type(CompletionType::List)
        .build();
    let mut editor: Editor<ReplHelper, FileHistory> = match Editor::with_config(config) {
        Ok(editor) => editor,
        Err(error) => {
            eprintln!("graphene: cannot start the line editor: {error}");
            return ExitCode::from(2);
        }
    };
    editor.set_helper(Some(ReplHelper::default()));
    let history = history_path();
    if let Some(path) = &history {
        // A missing file is the first run, not a problem.
        if path.exists() {
            if let Err(error) = editor.load_history(path) {
                eprintln!(
                    "graphene: warning: cannot read history {}: {error}",
                    path.display()
                );
            }
        }
    }
    println!(
        "graphene {} — :help for help, :quit to leave",
        env!("CARGO_PKG_VERSION")
    );
    let prompt = if session.style().color {
        "graphene> ".bold().to_string()
    } else {
        "graphene> ".to_string()
    };
    let mut count = 0usize;
    loop {
        match read_input(&prompt, |shown| editor.readline(shown)) {
            Ok(line) => {
                count += 1;
                if !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                }
                let name = format!("in[{count}]");
                let output = session.eval_at(
                    &line,
                    Origin {
                        name: &name,
                        line: 1,
                    },
                );
                // On the terminal the height limits a whole answer.
                let fitted = Output {
                    text: fit_to_height(&output.text, session.style().height).into_owned(),
                    ..output.clone()
                };
                print_output(&fitted);
                if let Some(helper) = editor.helper_mut() {
                    helper.names = session.names();
                }
                if output.quit {
                    break;
                }
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(error) => {
                eprintln!("graphene: {error}");
                break;
            }
        }
    }
    if let Some(path) = &history {
        save_history(&mut editor, path);
    }
    ExitCode::SUCCESS
}

/// Writes the history; a failure is a warning, never an error.
fn save_history(editor: &mut Editor<ReplHelper, FileHistory>, path: &std::path::Path) {
    if let Some(folder) = path.parent() {
        let _ = std::fs::create_dir_all(folder);
    }
    if let Err(error) = editor.save_history(path) {
        eprintln!(
            "graphene: warning: cannot save history to {}: {error}",
            path.display()
        );
    }
}
