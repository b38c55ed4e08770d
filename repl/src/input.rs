//! Splitting a script (a file, or piped standard input) into the inputs a
//! person would have typed: one line each, except that a line leaving a
//! `{`, `(`, `[` or `<<<` open (`syntax::is_incomplete`) continues on the
//! next ones. Commands (`:…`) are always one line.
//!
//! A script is read as bytes: each line is decoded on its own, so one line
//! that is not UTF-8 is reported (`E0124`) while the lines around it still
//! run; LF, CR and CRLF all end lines.

use graphene::diag::Diagnostic;
use graphene::syntax::{decode, is_incomplete};

/// A line of a script that is not UTF-8.
#[derive(Clone, Debug)]
pub struct Undecodable {
    /// The line (1-based).
    pub line: usize,
    /// The line with its bad bytes replaced by U+FFFD, to show.
    pub text: String,
    /// The `E0124` error, its span in `text`.
    pub diagnostic: Diagnostic,
}

/// The script's text, its lines joined with `\n`, and its lines that are
/// not UTF-8, in order. Such a line is left empty in the text, so the
/// lines after it keep their numbers.
pub fn decode_lines(script: &[u8]) -> (String, Vec<Undecodable>) {
    let mut text = String::with_capacity(script.len());
    let mut undecodable = Vec::new();
    let mut rest = script;
    let mut line = 1;
    while !rest.is_empty() {
        let end = rest
            .iter()
            .position(|&byte| byte == b'\n' || byte == b'\r')
            .unwrap_or(rest.len());
        match decode(&rest[..end]) {
            Ok(decoded) => text.push_str(decoded),
            Err(bad) => undecodable.push(Undecodable {
                line,
                text: bad.text,
                diagnostic: bad.diagnostic,
            }),
        }
        let ending = match rest[end..] {
            [b'\r', b'\n', ..] => 2,
            [_, ..] => 1,
            [] => 0,
        };
        if ending > 0 {
            text.push('\n');
        }
        rest = &rest[end + ending..];
        line += 1;
    }
    (text, undecodable)
}

/// One input of a script and the line it starts at (1-based).
///
/// Rule: `text` is whole lines of the script, `line` the first of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// The text, its lines joined with `\n`.
    pub text: String,
    /// The line of the script it starts at.
    pub line: usize,
}

/// The inputs of `script`, in order. An unfinished input at the end is
/// given as it is (its evaluation reports what is missing).
pub fn split(script: &str) -> Vec<Input> {
    let mut inputs = Vec::new();
    let mut pending: Option<Input> = None;
    for (index, line) in script.lines().enumerate() {
        let input = match pending.take() {
            Some(mut open) => {
                open.text.push('\n');
                open.text.push_str(line);
                open
            }
            None => Input {
                text: line.to_string(),
                line: index + 1,
            },
        };
        if continues(&input.text) {
            pending = Some(input);
        } else {
            inputs.push(input);
        }
    }
    inputs.extend(pending);
    inputs
}

/// Whether an input typed so far goes on at the next line.
pub fn continues(text: &str) -> bool {
    !text.trim_start().starts_with(':') && is_incomplete(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_continue_and_commands_do_not() {
        let script = "let A = (4,8)\nkernel k {\n  sync\n}\n:show (4,\n(8\n";
        let inputs = split(script);
        let texts: Vec<(&str, usize)> = inputs.iter().map(|i| (i.text.as_str(), i.line)).collect();
        assert_eq!(
            texts,
            [
                ("let A = (4,8)", 1),
                ("kernel k {\n  sync\n}", 2),
                (":show (4,", 5),
                ("(8", 6)
            ]
        );
    }

    #[test]
    fn a_line_that_is_not_utf8_is_set_apart_and_the_others_kept() {
        let (text, bad) = decode_lines(b"let A = (4,8)\r\n:show \xffA\rlet B = A\n");
        assert_eq!(text, "let A = (4,8)\n\nlet B = A\n");
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].line, 2);
        assert_eq!(bad[0].text, ":show \u{fffd}A");
        assert_eq!(bad[0].diagnostic.primary.span.start, 6);
        let lines: Vec<usize> = split(&text).iter().map(|input| input.line).collect();
        assert_eq!(lines, [1, 2, 3]);
    }
}
