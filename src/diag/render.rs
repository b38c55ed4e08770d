//! Diagnostics, rendering: the files a run has read (`SourceMap`) and the
//! translation of our `Diagnostic` into `codespan-reporting`'s, which draws
//! `file:line:col`, the source line, underlines, labels, notes and help.

use std::io::{self, IsTerminal, Write};

use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, Chars, Config, termcolor};

use super::display::{self, Shown};
use super::{Diagnostic, Severity, Span};

/// Whether rendered diagnostics carry ANSI colours.
///
/// Rule: `Auto` means colour exactly when the output is a terminal and the
/// `NO_COLOR` environment variable is unset (or empty), per no-color.org.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum ColorChoice {
    /// Colour when writing to a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    /// Always colour.
    Always,
    /// Never colour (files, golden tests, pipes).
    Never,
}

impl ColorChoice {
    /// Decides for an output that is (`is_terminal`) or is not a terminal.
    pub fn use_color(self, is_terminal: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
                is_terminal && !no_color
            }
        }
    }
}

/// Identifies one file of a `SourceMap`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct FileId(usize);

/// One source file: the name it is reported under and its text.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SourceFile {
    /// The name shown in `name:line:col`, usually the path as given.
    pub name: String,
    /// The whole text.
    pub text: String,
}

/// The files of one run, in the order they were added.
///
/// Rule: a `FileId` is valid only for the map that returned it; files are
/// never removed, so ids stay valid for the map's lifetime. What is
/// rendered is each file as `display::Shown` makes it safe to print.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    files: SimpleFiles<String, String>,
    list: Vec<SourceFile>,
    shown: Vec<Shown>,
}

impl SourceMap {
    /// An empty map.
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    /// Adds a file and returns its id.
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        let file = SourceFile {
            name: name.into(),
            text: text.into(),
        };
        let shown = Shown::new(&file.text);
        let id = self
            .files
            .add(display::message(&file.name), shown.text.clone());
        self.list.push(file);
        self.shown.push(shown);
        FileId(id)
    }

    /// The file with id `id`, or `None` for an id of another map.
    pub fn get(&self, id: FileId) -> Option<&SourceFile> {
        self.list.get(id.0)
    }

    /// One-based line and column (in characters as shown) of byte `offset`
    /// in file `id`; offsets past the end count as the end. CR, LF and
    /// CRLF each end a line.
    pub fn line_column(&self, id: FileId, offset: u32) -> Option<(usize, usize)> {
        let shown = self.shown.get(id.0)?;
        let text = &shown.text;
        let offset = clamp_to_boundary(text, shown.offset(offset as usize));
        let line_start = text[..offset].rfind('\n').map_or(0, |newline| newline + 1);
        let line = text[..offset].matches('\n').count() + 1;
        let column = text[line_start..offset].chars().count() + 1;
        Some((line, column))
    }

    /// Renders `diagnostics` about file `id` as text, one after another, the
    /// way a compiler prints them: header, `--> name:line:col`, the source
    /// lines with underlines, then notes and help. Colour per `color`, with
    /// `Auto` judged against standard error.
    pub fn render(&self, id: FileId, diagnostics: &[Diagnostic], color: ColorChoice) -> String {
        let mut buffer = if color.use_color(io::stderr().is_terminal()) {
            termcolor::Buffer::ansi()
        } else {
            termcolor::Buffer::no_color()
        };
        self.write_to(&mut buffer, id, diagnostics);
        String::from_utf8_lossy(buffer.as_slice()).into_owned()
    }

    /// Writes `diagnostics` about file `id` to standard error.
    pub fn emit_to_stderr(
        &self,
        id: FileId,
        diagnostics: &[Diagnostic],
        color: ColorChoice,
    ) -> io::Result<()> {
        let text = self.render(id, diagnostics, color);
        io::stderr().lock().write_all(text.as_bytes())
    }

    fn write_to(&self, out: &mut termcolor::Buffer, id: FileId, diagnostics: &[Diagnostic]) {
        let config = Config {
            chars: Chars::ascii(),
            ..Config::default()
        };
        let Some(shown) = self.shown.get(id.0) else {
            for diagnostic in diagnostics {
                let _ = writeln!(out, "{}", display::message(&diagnostic.to_string()));
            }
            return;
        };
        for diagnostic in diagnostics {
            let converted = convert(diagnostic, id.0, shown);
            if term::emit_to_write_style(out, &config, &self.files, &converted).is_err() {
                // The renderer refused (it cannot for spans clamped into the
                // file); still say what the problem was.
                let _ = writeln!(out, "{}", display::message(&diagnostic.to_string()));
            }
        }
    }
}

fn convert(diagnostic: &Diagnostic, file: usize, shown: &Shown) -> cs::Diagnostic<usize> {
    let severity = match diagnostic.severity {
        Severity::Error => cs::Severity::Error,
        Severity::Warning => cs::Severity::Warning,
        Severity::Note => cs::Severity::Note,
    };
    let mut labels = vec![
        cs::Label::primary(file, clamp(shown, diagnostic.primary.span))
            .with_message(display::message(&diagnostic.primary.message)),
    ];
    labels.extend(diagnostic.secondary.iter().map(|label| {
        cs::Label::secondary(file, clamp(shown, label.span))
            .with_message(display::message(&label.message))
    }));
    let mut notes: Vec<String> = diagnostic
        .notes
        .iter()
        .map(|note| format!("note: {}", display::message(note)))
        .collect();
    if let Some(help) = &diagnostic.help {
        notes.push(format!("help: {}", display::message(help)));
    }
    cs::Diagnostic::new(severity)
        .with_code(diagnostic.code)
        .with_message(display::message(&diagnostic.message))
        .with_labels(labels)
        .with_notes(notes)
}

/// The span's range in the shown text, moved inside it and onto character
/// boundaries, so a wrong span can never make rendering fail.
fn clamp(shown: &Shown, span: Span) -> std::ops::Range<usize> {
    let text = &shown.text;
    let start = clamp_to_boundary(text, shown.offset(span.start as usize));
    let end = clamp_to_boundary(text, shown.offset(span.end as usize)).max(start);
    start..end
}

fn clamp_to_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (SourceMap, FileId) {
        let mut map = SourceMap::new();
        let id = map.add("k.gph", "kernel k {\n    sync x\n}\n");
        (map, id)
    }

    #[test]
    fn renders_location_source_line_underline_and_help() {
        let (map, id) = sample();
        let diagnostic = Diagnostic::error("E0199", "unexpected `x`", Span::new(20, 21))
            .with_label("not a statement")
            .with_secondary(Span::new(7, 8), "kernel named here")
            .with_note("statements start with a sigil or a keyword")
            .with_help("remove `x`");
        let text = map.render(id, &[diagnostic], ColorChoice::Never);
        assert!(text.starts_with("error[E0199]: unexpected `x`\n"), "{text}");
        assert!(text.contains("--> k.gph:2:10"), "{text}");
        assert!(text.contains("2 |     sync x"), "{text}");
        assert!(text.contains("^ not a statement"), "{text}");
        assert!(text.contains("- kernel named here"), "{text}");
        assert!(text.contains("= note: statements start"), "{text}");
        assert!(text.contains("= help: remove `x`"), "{text}");
        assert!(!text.contains('\u{1b}'), "no colour codes: {text}");
    }

    #[test]
    fn colour_only_when_asked() {
        let (map, id) = sample();
        let diagnostic = Diagnostic::error("E0199", "bad", Span::new(0, 6));
        let coloured = map.render(id, std::slice::from_ref(&diagnostic), ColorChoice::Always);
        assert!(coloured.contains('\u{1b}'));
        assert!(!ColorChoice::Never.use_color(true));
        assert!(ColorChoice::Always.use_color(false));
        assert!(!ColorChoice::Auto.use_color(false));
    }

    #[test]
    fn spans_outside_the_file_or_inside_a_character_are_clamped() {
        let mut map = SourceMap::new();
        let id = map.add("u.gph", "é");
        let diagnostic = Diagnostic::error("E0199", "bad", Span::new(1, 99));
        let text = map.render(id, &[diagnostic], ColorChoice::Never);
        assert!(text.contains("u.gph:1:1"), "{text}");
    }

    #[test]
    fn line_and_column_count_characters() {
        let mut map = SourceMap::new();
        let id = map.add("u.gph", "ab\néx");
        assert_eq!(map.line_column(id, 0), Some((1, 1)));
        assert_eq!(map.line_column(id, 3), Some((2, 1)));
        assert_eq!(map.line_column(id, 5), Some((2, 2)));
        assert_eq!(map.line_column(id, 500), Some((2, 3)));
    }

    #[test]
    fn carriage_returns_end_lines_and_controls_never_reach_the_terminal() {
        let mut map = SourceMap::new();
        let id = map.add("cr.gph", "// a\rkernel k {\r  \u{1b}[2J\u{7} x\r}\r");
        assert_eq!(map.line_column(id, 18), Some((3, 3)));
        let diagnostic = Diagnostic::error("E0199", "bad `\u{1b}[2J`", Span::new(18, 19))
            .with_help("remove \u{7}");
        let text = map.render(id, &[diagnostic], ColorChoice::Never);
        assert!(text.contains("--> cr.gph:3:3"), "{text}");
        assert!(text.contains("3 |   ^[[2J^G x"), "{text}");
        assert!(text.contains("bad `^[[2J`"), "{text}");
        assert!(text.contains("remove ^G"), "{text}");
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
    }

    #[test]
    fn a_huge_name_is_shown_shortened_in_the_line_and_the_message() {
        let mut map = SourceMap::new();
        let name = "a".repeat(5000);
        let id = map.add("h.gph", format!("  %{name} x\n"));
        let diagnostic =
            Diagnostic::error("E0199", format!("undefined `%{name}`"), Span::new(2, 5003));
        let text = map.render(id, &[diagnostic], ColorChoice::Never);
        assert!(text.len() < 600, "{text}");
        assert_eq!(text.matches("…(5000 characters)").count(), 2, "{text}");
        assert_eq!(map.line_column(id, 5004), Some((1, 55)));
    }
}
