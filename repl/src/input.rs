//! Splitting a script (a file, or piped standard input) into the inputs a
//! person would have typed: one line each, except that a line leaving a
//! `{`, `(`, `[` or `<<<` open (`syntax::is_incomplete`) continues on the
//! next ones. Commands (`:…`) are always one line.

use graphene::syntax::is_incomplete;

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
}
