//! Commands: the lines that start with `:`. Parsing only — the words after
//! the command name are split at the command's keywords (`by`, `width`,
//! `blocks`, `zoom`, `warps`, `repeat`, outside brackets), and each part is
//! kept as a slice of the line with its offset, so that what evaluates it
//! can point into the line.

use graphene::diag::Span;
use graphene::syntax::{TokenKind, tokenize};

use crate::failure::{Failure, codes, similar, span};

/// Every command: its name, its arguments, and what it does (for `:help`
/// and completion). Aliases: `:q` and `:exit` for `:quit`, `:h` for `:help`.
pub const COMMANDS: [(&str, &str, &str); 12] = [
    (
        "help",
        "[COMMAND | algebra | ir]",
        "say what a command does, with examples",
    ),
    (
        "show",
        "X [blocks]",
        "draw a layout, tensor or thread group as a grid",
    ),
    (
        "atom",
        "[NAME] [warps MxN] [repeat MxN]",
        "draw an instruction's thread-data map (ldmatrix, mma, wgmma), or an mma tiled over warps",
    ),
    (
        "map",
        "%T by #G [zoom warp|MxN]",
        "which thread (or warp) of #G owns each element of %T, and the inverse",
    ),
    (
        "banks",
        "%T [by #G] [width 4|8|16]",
        "shared-memory banks: of each element, or of a warp's access",
    ),
    (
        "swizzle",
        "B M S [X [by #G] [width N]]",
        "Swizzle<B,M,S> explained, or X under it: the permuted grid and its banks",
    ),
    (
        "tma",
        "%DST %SRC",
        "a Move<tma>'s tensor map, box and swizzle, and where it lands each chunk",
    ),
    (
        "save",
        "FILE.svg",
        "write the last picture drawn as SVG, in colour and whole",
    ),
    ("names", "", "list the names defined so far"),
    (
        "set",
        "width N | height N | color on|off",
        "change how grids are drawn",
    ),
    ("reset", "", "forget every name"),
    ("quit", "", "leave (also Ctrl-D)"),
];

/// A part of the line: its text and where it starts.
///
/// Rule: `text` is exactly the bytes `start..start + text.len()` of the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arg {
    /// The text, trimmed.
    pub text: String,
    /// Its first byte in the line.
    pub start: usize,
}

impl Arg {
    /// Where it is in the line.
    pub fn span(&self) -> Span {
        span(self.start, self.text.len())
    }
}

/// An integer argument and where it was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Number {
    /// The value.
    pub value: i64,
    /// Its text in the line.
    pub span: Span,
}

/// Two extents written `MxN` (`2x4`), and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    /// Along M (rows).
    pub m: i64,
    /// Along N (columns).
    pub n: i64,
    /// Its text in the line.
    pub span: Span,
}

/// A parsed command.
///
/// Rule: every argument is a slice of the line (so diagnostics about it
/// point into the line); a keyword appears at most once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `:help [topic]`.
    Help(Option<Arg>),
    /// `:quit`.
    Quit,
    /// `:show X [blocks]`.
    Show {
        /// What to draw.
        target: Arg,
        /// Draw a tiled value as blocks rather than in place.
        blocks: bool,
    },
    /// `:atom [NAME]`.
    Atom(Option<Arg>),
    /// `:atom NAME [warps MxN] [repeat MxN]` with at least one of the two:
    /// the atom tiled over a warp grid and repeated.
    TiledAtom {
        /// The atom.
        name: Arg,
        /// The warp grid, `M x N` (default `1x1`).
        warps: Option<Grid>,
        /// The repeats along M and N (default `1x1`).
        repeat: Option<Grid>,
    },
    /// `:map %T by #G [zoom warp|MxN]`.
    Map {
        /// The per-thread view.
        target: Arg,
        /// The threads that evaluate it.
        threads: Arg,
        /// `zoom warp`: cells stand for warps; `zoom MxN`: for tiles.
        zoom: Option<Arg>,
    },
    /// `:banks %T [by #G] [width N]`.
    Banks {
        /// The shared tensor (or per-thread view).
        target: Arg,
        /// The threads of the access, if an access is drawn.
        threads: Option<Arg>,
        /// The access width in bytes.
        width: Option<Number>,
    },
    /// `:swizzle B M S [X [by #G] [width N]]`.
    Swizzle {
        /// `B`, `M`, `S`.
        params: [Number; 3],
        /// The layout or tensor swizzled; none: explain the swizzle itself.
        target: Option<Arg>,
        /// The threads of the access, if an access is drawn.
        threads: Option<Arg>,
        /// The access width in bytes.
        width: Option<Number>,
    },
    /// `:tma %DST %SRC`.
    Tma {
        /// The shared tile the copy lands in.
        dst: Arg,
        /// The global tile view it reads.
        src: Arg,
    },
    /// `:save FILE.svg`.
    Save(Arg),
    /// `:names`.
    Names,
    /// `:set KEY VALUE`.
    Set {
        /// `width`, `height` or `color`.
        key: Arg,
        /// The new value.
        value: Option<Arg>,
    },
    /// `:reset`.
    Reset,
}

/// The usage line of a command, `:name args`.
pub fn usage(name: &str) -> String {
    match COMMANDS.iter().find(|(n, _, _)| *n == name) {
        Some((n, "", _)) => format!(":{n}"),
        Some((n, args, _)) => format!(":{n} {args}"),
        None => format!(":{name}"),
    }
}

/// A segment of the arguments: the keyword that opened it (`""` for the
/// first) and its text.
struct Segment {
    keyword: &'static str,
    keyword_span: Span,
    arg: Option<Arg>,
}

/// The keywords of each command that has some: its arguments are split at
/// them, and at the keywords every drawing command shares (so that `by`
/// after `:show` is refused, not read as part of its operand).
fn keywords(command: &str) -> &'static [&'static str] {
    match command {
        "show" => &["blocks"],
        "map" => &["by", "zoom"],
        "banks" | "swizzle" => &["by", "width"],
        "atom" => &["warps", "repeat"],
        _ => &[],
    }
}

/// The keywords every command with keywords splits at.
const SHARED_KEYWORDS: [&str; 3] = ["by", "width", "blocks"];

/// Splits `line[from..]` at the keywords that stand outside brackets.
fn segments(line: &str, from: usize, keywords: &'static [&'static str]) -> Vec<Segment> {
    let rest = &line[from..];
    let tokens = tokenize(rest);
    let mut segments = vec![Segment {
        keyword: "",
        keyword_span: span(from, 0),
        arg: None,
    }];
    let mut depth = 0i64;
    let mut first: Option<usize> = None;
    let mut last = 0usize;
    let close = |segments: &mut Vec<Segment>, first: Option<usize>, last: usize| {
        if let (Some(first), Some(segment)) = (first, segments.last_mut()) {
            segment.arg = Some(Arg {
                text: rest[first..last].to_string(),
                start: from + first,
            });
        }
    };
    for token in &tokens {
        let text = token.text(rest);
        match text {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            _ => {}
        }
        let keyword = keywords
            .iter()
            .chain(&SHARED_KEYWORDS)
            .find(|k| **k == text);
        if let (Some(keyword), 0, TokenKind::Word) = (keyword, depth, token.kind) {
            close(&mut segments, first, last);
            segments.push(Segment {
                keyword,
                keyword_span: span(from + token.span.start as usize, text.len()),
                arg: None,
            });
            first = None;
            continue;
        }
        first.get_or_insert(token.span.start as usize);
        last = token.span.end as usize;
    }
    close(&mut segments, first, last);
    segments
}

/// `line[from..]` as one segment.
fn whole(line: &str, from: usize) -> Vec<Segment> {
    let rest = &line[from..];
    let trimmed = rest.trim();
    let arg = (!trimmed.is_empty()).then(|| Arg {
        text: trimmed.to_string(),
        start: from + rest.len() - rest.trim_start().len(),
    });
    vec![Segment {
        keyword: "",
        keyword_span: span(from, 0),
        arg,
    }]
}

fn bad(name: &str, message: impl Into<String>, at: Span) -> Failure {
    Failure::new(codes::BAD_ARGUMENTS, message, at).help(format!("usage: {}", usage(name)))
}

fn number(arg: &Arg, name: &str, what: &str) -> Result<Number, Failure> {
    arg.text
        .parse::<i64>()
        .map(|value| Number {
            value,
            span: arg.span(),
        })
        .map_err(|_| {
            bad(name, format!("{what} must be an integer"), arg.span()).label("not an integer")
        })
}

/// Parses a line that starts (after blanks) with `:`.
pub fn parse(line: &str) -> Result<Command, Failure> {
    let colon = line.len() - line.trim_start().len();
    let after = &line[colon + 1..];
    let name_len = after
        .find(|c: char| c.is_whitespace())
        .unwrap_or(after.len());
    let name = &after[..name_len];
    let name_span = span(colon, name_len + 1);
    let args_from = colon + 1 + name_len;
    let canonical = match name {
        "q" | "exit" => "quit",
        "h" | "?" => "help",
        other => other,
    };
    if !COMMANDS.iter().any(|(n, _, _)| *n == canonical) {
        let known = COMMANDS.iter().map(|(n, _, _)| *n);
        let failure = Failure::new(
            codes::UNKNOWN_COMMAND,
            format!("no command `:{name}`"),
            name_span,
        )
        .label("unknown command");
        return Err(match similar(name, known).as_slice() {
            [] => failure.help("`:help` lists the commands"),
            found => failure.help(format!(
                "did you mean {}?",
                found
                    .iter()
                    .map(|f| format!("`:{f}`"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            )),
        });
    }
    // Only the drawing commands have keywords; elsewhere `width` is a word.
    let allowed = keywords(canonical);
    let parts = if allowed.is_empty() {
        whole(line, args_from)
    } else {
        segments(line, args_from, allowed)
    };
    for part in &parts[1..] {
        if !allowed.contains(&part.keyword) {
            return Err(bad(
                canonical,
                format!("`:{canonical}` takes no `{}`", part.keyword),
                part.keyword_span,
            ));
        }
        let wants_value = part.keyword != "blocks";
        match (&part.arg, wants_value) {
            (None, true) => {
                return Err(bad(
                    canonical,
                    format!("`{}` needs a value", part.keyword),
                    part.keyword_span,
                )
                .label("nothing after this"));
            }
            (Some(arg), false) => {
                return Err(bad(
                    canonical,
                    format!("unexpected `{}` after `blocks`", arg.text),
                    arg.span(),
                ));
            }
            (Some(_), true) | (None, false) => {}
        }
        if parts.iter().filter(|p| p.keyword == part.keyword).count() > 1 {
            return Err(bad(
                canonical,
                format!("`{}` given twice", part.keyword),
                part.keyword_span,
            ));
        }
    }
    let keyword = |word: &str| parts.iter().find(|p| p.keyword == word);
    let value_of = |word: &str| keyword(word).and_then(|p| p.arg.clone());
    let main = parts[0].arg.clone();
    let required = |what: &str| {
        main.clone().ok_or_else(|| {
            bad(canonical, format!("`:{canonical}` needs {what}"), name_span)
                .label(format!("{what} missing"))
        })
    };
    let width = value_of("width")
        .map(|arg| number(&arg, canonical, "the access width"))
        .transpose()?;
    let no_arguments = |command: Command| match &main {
        Some(arg) => Err(bad(
            canonical,
            format!("`:{canonical}` takes no arguments"),
            arg.span(),
        )),
        None => Ok(command),
    };
    match canonical {
        "help" => Ok(Command::Help(main)),
        "quit" => no_arguments(Command::Quit),
        "names" => no_arguments(Command::Names),
        "save" => Ok(Command::Save(required("a file name ending in `.svg`")?)),
        "reset" => no_arguments(Command::Reset),
        "atom" => {
            let warps = value_of("warps")
                .map(|arg| grid(&arg, canonical, "the warp grid"))
                .transpose()?;
            let repeat = value_of("repeat")
                .map(|arg| grid(&arg, canonical, "the repeats"))
                .transpose()?;
            if warps.is_none() && repeat.is_none() {
                return Ok(Command::Atom(main));
            }
            Ok(Command::TiledAtom {
                name: required("an atom to tile")?,
                warps,
                repeat,
            })
        }
        "show" => Ok(Command::Show {
            target: required("something to draw")?,
            blocks: keyword("blocks").is_some(),
        }),
        "map" => {
            let target = required("a tensor")?;
            let threads = value_of("by").ok_or_else(|| {
                bad(
                    canonical,
                    "`:map` needs the threads: `by #G`",
                    target.span(),
                )
                .label("whose threads?")
            })?;
            Ok(Command::Map {
                target,
                threads,
                zoom: value_of("zoom"),
            })
        }
        "banks" => Ok(Command::Banks {
            target: required("a shared tensor")?,
            threads: value_of("by"),
            width,
        }),
        "swizzle" => {
            let all = required("B M S and what to swizzle")?;
            let (params, target) = swizzle_arguments(&all)?;
            Ok(Command::Swizzle {
                params,
                target,
                threads: value_of("by"),
                width,
            })
        }
        "tma" => {
            let all = required("a shared tile and a global tile")?;
            let (dst, src) = two_arguments(&all, canonical)?;
            Ok(Command::Tma { dst, src })
        }
        "set" => {
            let all = required("a setting")?;
            let key_len = all.text.find(char::is_whitespace).unwrap_or(all.text.len());
            let key = Arg {
                text: all.text[..key_len].to_string(),
                start: all.start,
            };
            let rest = all.text[key_len..].trim_start();
            let value = (!rest.is_empty()).then(|| Arg {
                text: rest.to_string(),
                start: all.start + all.text.len() - rest.len(),
            });
            Ok(Command::Set { key, value })
        }
        _ => Err(Failure::new(
            codes::UNKNOWN_COMMAND,
            format!("no command `:{name}`"),
            name_span,
        )),
    }
}

/// `MxN`: two positive integers joined by `x` (or `×`), an argument of
/// command `name`.
pub fn grid(arg: &Arg, name: &str, what: &str) -> Result<Grid, Failure> {
    let parts = arg
        .text
        .split_once(['x', '×'])
        .and_then(|(m, n)| Some((m.trim().parse::<i64>().ok()?, n.trim().parse::<i64>().ok()?)))
        .filter(|&(m, n)| m >= 1 && n >= 1);
    match parts {
        Some((m, n)) => Ok(Grid {
            m,
            n,
            span: arg.span(),
        }),
        None => Err(bad(
            name,
            format!("{what} must be written MxN, e.g. `2x4`"),
            arg.span(),
        )
        .label("not MxN")),
    }
}

/// `X Y`: two expressions, split where blanks stand outside brackets
/// (`%A.tile([128, 64])[0, 0]` is one).
fn two_arguments(all: &Arg, name: &str) -> Result<(Arg, Arg), Failure> {
    let text = all.text.as_str();
    let mut parts: Vec<(usize, usize)> = Vec::new();
    let mut depth = 0i64;
    for token in tokenize(text) {
        let (start, end) = (token.span.start as usize, token.span.end as usize);
        let joined = parts.last().is_some_and(|(_, last)| *last == start) || depth > 0;
        match token.text(text) {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            _ => {}
        }
        match parts.last_mut() {
            Some(part) if joined => part.1 = end,
            Some(_) | None => parts.push((start, end)),
        }
    }
    let arg = |(start, end): (usize, usize)| Arg {
        text: text[start..end].to_string(),
        start: all.start + start,
    };
    match parts.as_slice() {
        [first, second] => Ok((arg(*first), arg(*second))),
        [_] | [] => Err(bad(
            name,
            format!("`:{name}` needs two tensors: a shared tile, then a global tile"),
            all.span(),
        )
        .label("one given")),
        [_, _, third, ..] => Err(bad(
            name,
            format!("`:{name}` takes two tensors"),
            span(all.start + third.0, text.len() - third.0),
        )
        .label("unexpected")),
    }
}

/// `B M S [X]`: three integers (S may be negative) and the rest, if any.
fn swizzle_arguments(all: &Arg) -> Result<([Number; 3], Option<Arg>), Failure> {
    let mut rest = all.text.as_str();
    let mut offset = all.start;
    let mut params = [Number {
        value: 0,
        span: span(0, 0),
    }; 3];
    for (i, param) in params.iter_mut().enumerate() {
        let trimmed = rest.trim_start();
        offset += rest.len() - trimmed.len();
        let len = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
        let word = Arg {
            text: trimmed[..len].to_string(),
            start: offset,
        };
        if word.text.is_empty() {
            return Err(bad(
                "swizzle",
                format!(
                    "`:swizzle` needs {} more numbers and a layout or tensor",
                    3 - i
                ),
                span(offset, 0),
            ));
        }
        *param = number(&word, "swizzle", ["B", "M", "S"][i])?;
        rest = &trimmed[len..];
        offset += len;
    }
    let trimmed = rest.trim_start();
    offset += rest.len() - trimmed.len();
    let target = (!trimmed.is_empty()).then(|| Arg {
        text: trimmed.to_string(),
        start: offset,
    });
    Ok((params, target))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(text: &str, start: usize) -> Arg {
        Arg {
            text: text.to_string(),
            start,
        }
    }

    fn code(line: &str) -> &'static str {
        match parse(line) {
            Ok(command) => panic!("{line} gave {command:?}"),
            Err(Failure(diags)) => diags[0].code,
        }
    }

    #[test]
    fn arguments_split_at_keywords_outside_brackets() {
        assert_eq!(
            parse(":map %9[@i, 0] by #6").unwrap(),
            Command::Map {
                target: arg("%9[@i, 0]", 5),
                threads: arg("#6", 18),
                zoom: None,
            }
        );
        let Command::Map { zoom, .. } = parse(":map %t by #b zoom warp").unwrap() else {
            panic!("map")
        };
        assert_eq!(zoom, Some(arg("warp", 19)));
        let Command::TiledAtom {
            name,
            warps,
            repeat,
        } = parse(":atom mma.m16n8k16 warps 2x2 repeat 2x4").unwrap()
        else {
            panic!("tiled atom")
        };
        assert_eq!(name, arg("mma.m16n8k16", 6));
        assert_eq!(warps.map(|g| (g.m, g.n)), Some((2, 2)));
        assert_eq!(repeat.map(|g| (g.m, g.n)), Some((2, 4)));
        assert_eq!(
            parse(":atom ldmatrix.x4").unwrap(),
            Command::Atom(Some(arg("ldmatrix.x4", 6)))
        );
        let Command::Banks {
            target,
            threads,
            width,
        } = parse(" :banks %row by #w.tile(8) width 16 // note").unwrap()
        else {
            panic!("banks")
        };
        assert_eq!(target, arg("%row", 8));
        assert_eq!(threads, Some(arg("#w.tile(8)", 16)));
        assert_eq!(width.map(|w| w.value), Some(16));
        assert_eq!(
            parse(":show %A.tile([2:2],[4:1]) blocks").unwrap(),
            Command::Show {
                target: arg("%A.tile([2:2],[4:1])", 6),
                blocks: true
            }
        );
        let Command::Swizzle { params, target, .. } =
            parse(":swizzle 3 3 -3 (8,64):(64,1)").unwrap()
        else {
            panic!("swizzle")
        };
        assert_eq!(params.map(|p| p.value), [3, 3, -3]);
        assert_eq!(target, Some(arg("(8,64):(64,1)", 16)));
        let Command::Swizzle { target, .. } = parse(":swizzle 3 3 3").unwrap() else {
            panic!("swizzle")
        };
        assert_eq!(target, None);
        assert_eq!(
            parse(":tma %s %A.tile_partial([128, 64])[0, 0]").unwrap(),
            Command::Tma {
                dst: arg("%s", 5),
                src: arg("%A.tile_partial([128, 64])[0, 0]", 8),
            }
        );
        assert_eq!(parse(":q").unwrap(), Command::Quit);
        assert_eq!(
            parse(":set width 120").unwrap(),
            Command::Set {
                key: arg("width", 5),
                value: Some(arg("120", 11))
            }
        );
    }

    #[test]
    fn malformed_commands_are_diagnosed() {
        assert_eq!(code(":shwo A"), codes::UNKNOWN_COMMAND);
        assert_eq!(code(":show"), codes::BAD_ARGUMENTS);
        assert_eq!(code(":map %a"), codes::BAD_ARGUMENTS);
        assert_eq!(code(":map %a by"), codes::BAD_ARGUMENTS);
        assert_eq!(code(":banks %a width x"), codes::BAD_ARGUMENTS);
        assert_eq!(code(":banks %a by #a by #b"), codes::BAD_ARGUMENTS);
        assert_eq!(code(":show %a by #w"), codes::BAD_ARGUMENTS);
        assert_eq!(code(":swizzle 3 3"), codes::BAD_ARGUMENTS);
        assert_eq!(code(":swizzle 3 x 3 A"), codes::BAD_ARGUMENTS);
        assert_eq!(code(":quit now"), codes::BAD_ARGUMENTS);
        assert_eq!(code(":tma %s"), codes::BAD_ARGUMENTS);
        assert_eq!(code(":tma %s %g %h"), codes::BAD_ARGUMENTS);
        assert_eq!(code(":atom mma.m16n8k16 warps 2"), codes::BAD_ARGUMENTS);
        assert_eq!(code(":atom mma.m16n8k16 repeat 0x4"), codes::BAD_ARGUMENTS);
        assert_eq!(code(":atom warps 2x2"), codes::BAD_ARGUMENTS);
        assert_eq!(code(":map %a by #b zoom"), codes::BAD_ARGUMENTS);
        assert_eq!(code(":atom mma.m16n8k16 by #w"), codes::BAD_ARGUMENTS);
        let Err(Failure(diags)) = parse(":shwo A") else {
            panic!()
        };
        assert_eq!(diags[0].help.as_deref(), Some("did you mean `:show`?"));
    }
}
