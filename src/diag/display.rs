//! Diagnostics, display: source text and messages made safe to print on a
//! terminal before they are rendered.
//!
//! Rules: no control character of the input reaches the terminal (C0 in
//! caret notation, `^[` for ESC; DEL and C1 as `\u{…}`); a lone CR is a line
//! end like LF, and the CR of CRLF is not shown; a name or number longer
//! than `LONG_TOKEN` characters is shown once shortened, its first
//! `KEPT_PREFIX` characters, `…` and its length. The shown source keeps a
//! map from the input's byte offsets, so spans still point where they did.

/// Runs of name characters longer than this are shortened.
pub const LONG_TOKEN: usize = 64;
/// How much of a shortened run is kept.
pub const KEPT_PREFIX: usize = 32;

/// One stretch of the input and what is shown for it.
#[derive(Clone, Debug)]
struct Piece {
    /// Byte offset of the stretch in the input.
    input_start: usize,
    /// Byte offset of what is shown for it.
    shown_start: usize,
    /// Shown byte for byte (offsets inside map one to one); otherwise any
    /// offset inside maps to the start of what is shown.
    verbatim: bool,
}

/// The input as shown, and the map from input offsets into it.
#[derive(Clone, Debug)]
pub struct Shown {
    /// The text to render.
    pub text: String,
    pieces: Vec<Piece>,
}

impl Shown {
    /// `text` made safe to show.
    pub fn new(text: &str) -> Shown {
        let mut shown = Shown {
            text: String::with_capacity(text.len()),
            pieces: Vec::new(),
        };
        let mut chars = text.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            if is_name_char(c) {
                let mut end = at + c.len_utf8();
                while let Some(&(next, d)) = chars.peek().filter(|(_, d)| is_name_char(*d)) {
                    end = next + d.len_utf8();
                    chars.next();
                }
                let run = &text[at..end];
                let count = run.chars().count();
                if count > LONG_TOKEN {
                    shown.push(at, &shortened(run, count), false);
                } else {
                    shown.push(at, run, true);
                }
            } else if c == '\r' {
                let crlf = chars.peek().is_some_and(|&(_, d)| d == '\n');
                shown.push(at, if crlf { "" } else { "\n" }, !crlf);
            } else if let Some(escaped) = escape(c) {
                shown.push(at, &escaped, false);
            } else {
                shown.push(at, &text[at..at + c.len_utf8()], true);
            }
        }
        shown.pieces.push(Piece {
            input_start: text.len(),
            shown_start: shown.text.len(),
            verbatim: true,
        });
        shown
    }

    fn push(&mut self, input_start: usize, text: &str, verbatim: bool) {
        let shown_start = self.text.len();
        let extends = self.pieces.last().is_some_and(|last| {
            last.verbatim
                && verbatim
                && input_start - last.input_start == shown_start - last.shown_start
        });
        if !extends {
            self.pieces.push(Piece {
                input_start,
                shown_start,
                verbatim,
            });
        }
        self.text.push_str(text);
    }

    /// Where input byte `offset` is in the shown text.
    pub fn offset(&self, offset: usize) -> usize {
        let index = self
            .pieces
            .partition_point(|piece| piece.input_start <= offset)
            .saturating_sub(1);
        let Some(piece) = self.pieces.get(index) else {
            return 0;
        };
        if piece.verbatim {
            (piece.shown_start + (offset - piece.input_start)).min(self.text.len())
        } else {
            piece.shown_start
        }
    }
}

/// A message, label, note or help made safe to show, by the same rules.
pub fn message(text: &str) -> String {
    Shown::new(text).text
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn shortened(run: &str, count: usize) -> String {
    let kept: String = run.chars().take(KEPT_PREFIX).collect();
    format!("{kept}…({count} characters)")
}

/// How a character that must not reach a terminal is shown; `None` for
/// one shown as it is. Tabs and line feeds are layout, not controls.
fn escape(c: char) -> Option<String> {
    match c {
        '\t' | '\n' => None,
        '\u{0}'..='\u{1f}' => Some(format!("^{}", char::from(c as u8 + 0x40))),
        '\u{7f}'..='\u{9f}' => Some(format!("\\u{{{:x}}}", c as u32)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_offsets_follow() {
        let shown = Shown::new("a\u{1b}[31mb\u{7}c\u{85}");
        assert_eq!(shown.text, "a^[[31mb^Gc\\u{85}");
        assert_eq!(shown.offset(0), 0);
        assert_eq!(shown.offset(1), 1);
        assert_eq!(shown.offset(2), 3);
        assert_eq!(shown.offset(7), 8);
        assert_eq!(shown.offset(9), 11);
        assert_eq!(shown.offset(100), shown.text.len());
    }

    #[test]
    fn carriage_returns_end_lines() {
        assert_eq!(Shown::new("a\rb\r\nc").text, "a\nb\nc");
        let shown = Shown::new("a\r\nb");
        assert_eq!(shown.offset(3), 2);
    }

    #[test]
    fn long_names_are_shortened_once() {
        let name = "x".repeat(5000);
        let shown = Shown::new(&format!("%{name} <- y"));
        let expected = format!("%{}…(5000 characters) <- y", "x".repeat(32));
        assert_eq!(shown.text, expected);
        assert_eq!(shown.offset(5002), expected.find('<').unwrap());
        assert_eq!(shown.offset(300), 1);
        let short = "y".repeat(LONG_TOKEN);
        assert_eq!(message(&short), short);
    }
}
