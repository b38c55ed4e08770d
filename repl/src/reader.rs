//! The terminal side of the REPL: rustyline's helper (tab completion of
//! commands, names, algebra functions and atoms; the validator that keeps
//! reading while a `{ … }` block is open) and where the history lives.

use std::borrow::Cow;
use std::ffi::OsString;
use std::path::PathBuf;

use graphene::viz::AtomName;
use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Helper};

use crate::algebra::FUNCTIONS;
use crate::command::COMMANDS;
use crate::input::continues;
use crate::session::IR_KEYWORDS;

/// The rustyline helper.
///
/// Rule: `names` is refreshed from the session after every input, so it
/// completes exactly the names defined so far.
#[derive(Default)]
pub struct ReplHelper {
    /// The names defined so far (`%x`, `#g`, `@i`, layouts, constants).
    pub names: Vec<String>,
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '%' | '#' | '@' | '.' | ':')
}

impl ReplHelper {
    /// The candidates that complete the word ending at `pos` of `line`, and
    /// where that word starts.
    pub fn candidates(&self, line: &str, pos: usize) -> (usize, Vec<String>) {
        let before = &line[..pos];
        let start = before
            .char_indices()
            .rev()
            .take_while(|(_, c)| is_word_char(*c))
            .last()
            .map_or(pos, |(i, _)| i);
        let word = &before[start..];
        let leading = before.len() - before.trim_start().len();
        let mut pool: Vec<String> = if start == leading && word.starts_with(':') {
            COMMANDS
                .iter()
                .map(|(name, _, _)| format!(":{name}"))
                .collect()
        } else if before.trim_start().starts_with(":atom") {
            // The word under the cursor is one word of a name: names of
            // several words (`ldmatrix.x4 for mma.m16n8k16.A`) complete
            // their first; `warps` and `repeat` tile an atom.
            AtomName::all()
                .iter()
                .filter_map(|name| name.to_string().split(' ').next().map(str::to_string))
                .chain(["warps", "repeat"].map(String::from))
                .collect()
        } else if before.trim_start().starts_with(":help") {
            COMMANDS
                .iter()
                .map(|(name, _, _)| name.to_string())
                .chain(["algebra".to_string(), "ir".to_string()])
                .collect()
        } else {
            let mut pool = self.names.clone();
            pool.extend(FUNCTIONS.iter().map(|(name, _, _)| name.to_string()));
            pool.extend(IR_KEYWORDS.iter().map(ToString::to_string));
            pool.extend(["let", "by", "width", "blocks", "zoom"].map(String::from));
            pool
        };
        pool.retain(|candidate| candidate.starts_with(word) && candidate != word);
        pool.sort();
        pool.dedup();
        (start, pool)
    }
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let (start, found) = self.candidates(line, pos);
        let pairs = found
            .into_iter()
            .map(|text| Pair {
                display: text.clone(),
                replacement: text,
            })
            .collect();
        Ok((start, pairs))
    }
}

/// Every line is accepted as typed: an unfinished block goes on at the
/// next line under the continuation prompt ([`read_input`]), which the line
/// editor's own multi-line mode cannot show.
impl Validator for ReplHelper {
    fn validate(&self, _ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        Ok(ValidationResult::Valid(None))
    }
}

/// An answer cut to `height` lines for the terminal: the height is the
/// screen's, so an answer of several grids (each within the height on its
/// own) would still scroll its start away. The last line kept says how
/// many were left out and how to see them.
pub fn fit_to_height(text: &str, height: usize) -> Cow<'_, str> {
    let lines = text.lines().count();
    let height = height.max(2);
    if lines <= height {
        return Cow::Borrowed(text);
    }
    let kept: Vec<&str> = text.lines().take(height - 1).collect();
    Cow::Owned(format!(
        "{}\n… {} more lines of this answer (`:set height {lines}` shows them all)",
        kept.join("\n"),
        lines - (height - 1)
    ))
}

/// What the continuation prompt says: the input goes on.
pub const CONTINUATION_PROMPT: &str = "     ...> ";

/// One whole input: the first line under `prompt`, then, while the text
/// so far is an unfinished block (an open `{`, `(` or `[`), further lines
/// under [`CONTINUATION_PROMPT`]. `next_line` reads one line under the
/// prompt it is given.
pub fn read_input<E>(
    prompt: &str,
    mut next_line: impl FnMut(&str) -> Result<String, E>,
) -> Result<String, E> {
    let mut text = next_line(prompt)?;
    while continues(&text) {
        let line = next_line(CONTINUATION_PROMPT)?;
        text.push('\n');
        text.push_str(&line);
    }
    Ok(text)
}

impl Hinter for ReplHelper {
    type Hint = String;
}

impl Highlighter for ReplHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        _default: bool,
    ) -> Cow<'b, str> {
        Cow::Borrowed(prompt)
    }
}

impl Helper for ReplHelper {}

/// Where the history is kept: `$GRAPHENE_HISTORY` if set, else
/// `$XDG_STATE_HOME/graphene/history`, else `~/.graphene_history`.
pub fn history_path() -> Option<PathBuf> {
    history_path_from(|name| std::env::var_os(name))
}

/// [`history_path`] with the environment given by `lookup`.
pub fn history_path_from(lookup: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let var = |name: &str| lookup(name).filter(|v| !v.is_empty());
    if let Some(path) = var("GRAPHENE_HISTORY") {
        return Some(PathBuf::from(path));
    }
    if let Some(state) = var("XDG_STATE_HOME") {
        return Some(PathBuf::from(state).join("graphene").join("history"));
    }
    var("HOME").map(|home| PathBuf::from(home).join(".graphene_history"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contract_block_is_ir_and_reads_on() {
        // `contract` starts an IR statement, as the parser's keywords say:
        // the REPL checks the block rather than reading it as a layout.
        assert!(IR_KEYWORDS.contains(&"contract"));
        let mut session = crate::Session::new(graphene::viz::Style::default());
        let origin = crate::Origin {
            name: "in",
            line: 1,
        };
        let output = session.eval_at("contract {\n}", origin);
        assert!(!output.failed, "{}", output.errors);
    }

    #[test]
    fn an_answer_taller_than_the_screen_is_cut_once_not_per_grid() {
        let answer: String = (0..10).map(|i| format!("row {i}\n")).collect();
        assert_eq!(fit_to_height(&answer, 10), answer.as_str());
        let cut = fit_to_height(&answer, 4);
        let lines: Vec<&str> = cut.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[..3], ["row 0", "row 1", "row 2"]);
        assert_eq!(
            lines[3],
            "… 7 more lines of this answer (`:set height 10` shows them all)"
        );
    }

    #[test]
    fn an_open_block_reads_on_under_the_continuation_prompt() {
        let mut lines = vec!["kernel k {", "  sync", "}", "(4,8)"].into_iter();
        let mut prompts = Vec::new();
        let mut next = |prompt: &str| -> Result<String, ()> {
            prompts.push(prompt.to_string());
            lines.next().map(str::to_string).ok_or(())
        };
        assert_eq!(
            read_input("graphene> ", &mut next),
            Ok("kernel k {\n  sync\n}".to_string())
        );
        assert_eq!(read_input("graphene> ", &mut next), Ok("(4,8)".to_string()));
        assert_eq!(
            prompts,
            [
                "graphene> ",
                CONTINUATION_PROMPT,
                CONTINUATION_PROMPT,
                "graphene> "
            ]
        );
    }

    #[test]
    fn history_lives_in_the_state_folder_or_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        assert_eq!(
            history_path_from(env(&[("XDG_STATE_HOME", "/s"), ("HOME", "/h")])),
            Some(PathBuf::from("/s/graphene/history"))
        );
        assert_eq!(
            history_path_from(env(&[("XDG_STATE_HOME", ""), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.graphene_history"))
        );
        assert_eq!(
            history_path_from(env(&[("GRAPHENE_HISTORY", "/x"), ("HOME", "/h")])),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(history_path_from(env(&[])), None);
    }

    #[test]
    fn completes_commands_names_functions_and_atoms() {
        let helper = ReplHelper {
            names: vec!["%A".to_string(), "#warp".to_string(), "Acc".to_string()],
        };
        assert_eq!(helper.candidates(":sh", 3), (0, vec![":show".to_string()]));
        assert_eq!(
            helper.candidates(":show #w", 8),
            (6, vec!["#warp".to_string()])
        );
        assert_eq!(
            helper.candidates("coalesce(Ac", 11),
            (9, vec!["Acc".to_string()])
        );
        assert_eq!(
            helper.candidates("compl", 5).1,
            vec!["complement".to_string()]
        );
        let (_, atoms) = helper.candidates(":atom ldmatrix.x4", 17);
        assert_eq!(atoms, vec!["ldmatrix.x4.trans".to_string()]);
        let (_, tiling) = helper.candidates(":atom mma.m16n8k16 wa", 21);
        assert_eq!(tiling, vec!["warps".to_string()]);
        let (_, zoom) = helper.candidates(":map %A by #warp zo", 19);
        assert_eq!(zoom, vec!["zoom".to_string()]);
    }
}
