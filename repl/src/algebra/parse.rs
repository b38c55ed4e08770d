//! The layout language, parsing: a recursive descent over the line's
//! bytes that evaluates as it goes; literals are found here and read by
//! `layout::parse_layout`.

use graphene::diag::Span;
use graphene::layout::{
    Layout, LayoutError, LayoutParseError, Swizzle, SwizzledLayout, Tiler, parse_layout,
};

use super::calls::{as_tiler, call, kind_error};
use super::{FUNCTIONS, MAX_DEPTH, Scope, Value};
use crate::failure::{Failure, codes, similar, span};

/// Parses and evaluates all of `src`, which sits at byte `base` of the line.
pub(super) fn run(src: &str, base: usize, scope: &Scope) -> Result<Value, Failure> {
    let mut parser = Parser {
        src,
        pos: 0,
        base,
        depth: 0,
        scope,
    };
    let value = parser.expr()?;
    parser.ws();
    if parser.pos < src.len() {
        return Err(parser.expected("the end of the expression"));
    }
    Ok(value.value)
}

/// A value and the bytes of the line it was written at.
pub(super) struct Spanned {
    pub(super) value: Value,
    pub(super) start: usize,
    pub(super) end: usize,
}

impl Spanned {
    pub(super) fn span(&self) -> Span {
        span(self.start, self.end - self.start)
    }
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    base: usize,
    depth: usize,
    scope: &'a Scope<'a>,
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.src[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn ws(&mut self) {
        let trimmed = self.rest().trim_start();
        self.pos = self.src.len() - trimmed.len();
    }

    fn here(&self) -> usize {
        self.base + self.pos
    }

    /// "expected …, found …" at the current position.
    fn expected(&self, what: &str) -> Failure {
        let found: String = self
            .rest()
            .split_whitespace()
            .next()
            .map(|word| word.chars().take(12).collect())
            .unwrap_or_default();
        let (found, len) = if found.is_empty() {
            ("end of input".to_string(), 0)
        } else {
            (format!("`{found}`"), found.len())
        };
        Failure::new(
            codes::LAYOUT_SYNTAX,
            format!("expected {what}, found {found}"),
            span(self.here(), len),
        )
        .label(format!("expected {what}"))
    }

    fn eat(&mut self, c: char) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn word(&mut self) -> Option<&str> {
        self.ws();
        let rest = self.rest();
        if !rest.starts_with(is_name_start) {
            return None;
        }
        let len = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
        let start = self.pos;
        self.pos += len;
        Some(&self.src[start..start + len])
    }

    /// Whether the next word is exactly `word`, without consuming it.
    fn at_word(&self, word: &str) -> bool {
        let rest = self.rest().trim_start();
        rest.starts_with(word) && !rest[word.len()..].starts_with(is_name_char)
    }

    fn expr(&mut self) -> Result<Spanned, Failure> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Failure::new(
                codes::LAYOUT_SYNTAX,
                "expression nested too deeply",
                span(self.here(), 1),
            )
            .label(format!("more than {MAX_DEPTH} levels of calls here"))
            .help("name intermediate results with `let`"));
        }
        let mut value = self.primary()?;
        loop {
            self.ws();
            let rest = self.rest();
            let suffix = rest.strip_prefix('.').map(str::trim_start);
            if !suffix.is_some_and(|s| s.starts_with("Sw")) {
                break;
            }
            self.pos += 1;
            let swizzle = self.swizzle_params()?;
            let layout = match value.value {
                Value::Layout(layout) => layout,
                Value::Int(n) => leaf_layout(n, &value)?,
                Value::Swizzled(_) | Value::Swizzle(_) | Value::Tiler(_) => {
                    return Err(kind_error(&value, "a layout to swizzle"));
                }
            };
            value = Spanned {
                value: Value::Swizzled(SwizzledLayout::new(swizzle, 0, layout)),
                start: value.start,
                end: self.here(),
            };
        }
        self.depth -= 1;
        Ok(value)
    }

    fn primary(&mut self) -> Result<Spanned, Failure> {
        self.ws();
        let start = self.here();
        let value = match self.peek() {
            Some('[') => {
                let end = self.matching('[', ']')?;
                self.literal(end)?
            }
            Some('(') => {
                let mut end = self.matching('(', ')')?;
                if let Some(stride_end) = self.stride_after(end)? {
                    end = stride_end;
                }
                self.literal(end)?
            }
            Some(c) if c.is_ascii_digit() || c == '-' || c == '+' => self.number()?,
            Some('<') => Value::Tiler(self.tiler()?),
            Some(c) if is_name_start(c) => return self.named(),
            Some(_) | None => return Err(self.expected("a layout, an integer, a name or a call")),
        };
        Ok(Spanned {
            value,
            start,
            end: self.here(),
        })
    }

    /// The end (exclusive, in `src`) of the bracketed text opened at `pos`.
    fn matching(&self, open: char, close: char) -> Result<usize, Failure> {
        let mut depth = 0usize;
        for (i, c) in self.rest().char_indices() {
            if c == open {
                depth += 1;
            } else if c == close {
                depth -= 1;
                if depth == 0 {
                    return Ok(self.pos + i + 1);
                }
            }
        }
        Err(Failure::new(
            codes::LAYOUT_SYNTAX,
            format!("`{open}` is never closed"),
            span(self.here(), 1),
        )
        .label("opened here")
        .help(format!("close it with `{close}`")))
    }

    /// After a shape ending at `end`: the end of `: stride`, if one follows.
    fn stride_after(&self, end: usize) -> Result<Option<usize>, Failure> {
        let after = &self.src[end..];
        let trimmed = after.trim_start();
        let Some(stride) = trimmed.strip_prefix(':') else {
            return Ok(None);
        };
        let stride_start = self.src.len() - stride.trim_start().len();
        let probe = Parser {
            src: self.src,
            pos: stride_start,
            base: self.base,
            depth: self.depth,
            scope: self.scope,
        };
        if probe.peek() == Some('(') {
            return probe.matching('(', ')').map(Some);
        }
        let digits = integer_len(probe.rest());
        if digits == 0 {
            return Err(probe.expected("a stride: an integer or `(`"));
        }
        Ok(Some(stride_start + digits))
    }

    /// Parses `src[pos..end]` as a layout literal and moves past it.
    fn literal(&mut self, end: usize) -> Result<Value, Failure> {
        let text = &self.src[self.pos..end];
        let at = self.here();
        let layout = parse_layout(text).map_err(|error| literal_error(error, text, at))?;
        self.pos = end;
        Ok(Value::Layout(layout))
    }

    /// An integer, or a CuTe literal that starts with one (`8:1`).
    fn number(&mut self) -> Result<Value, Failure> {
        let len = integer_len(self.rest());
        if len == 0 {
            return Err(self.expected("an integer"));
        }
        let end = self.pos + len;
        if let Some(stride_end) = self.stride_after(end)? {
            return self.literal(stride_end);
        }
        let text = &self.src[self.pos..end];
        let value = text.parse::<i64>().map_err(|_| {
            Failure::new(
                codes::LAYOUT_SYNTAX,
                "integer does not fit in 64 bits",
                span(self.here(), len),
            )
            .label("too large")
        })?;
        self.pos = end;
        Ok(Value::Int(value))
    }

    /// `<T0, T1, …>`: `_` keeps a mode; an integer `n` is `n:1`.
    fn tiler(&mut self) -> Result<Tiler, Failure> {
        self.eat('<');
        let mut entries = Vec::new();
        loop {
            self.ws();
            if self.at_word("_") {
                self.pos += 1;
                entries.push(Tiler::Keep);
            } else {
                let entry = self.expr()?;
                entries.push(as_tiler(entry)?);
            }
            if self.eat(',') {
                continue;
            }
            if self.eat('>') {
                return Ok(Tiler::ByMode(entries));
            }
            return Err(self.expected("`,` or `>`"));
        }
    }

    /// `<B, M, S>` after `Sw` or `Swizzle`, as a valid swizzle.
    fn swizzle_params(&mut self) -> Result<Swizzle, Failure> {
        let start = self.here();
        let word = self.word().unwrap_or_default().to_string();
        if word != "Sw" && word != "Swizzle" {
            return Err(self.expected("`Swizzle<B,M,S>`"));
        }
        if !self.eat('<') {
            return Err(self.expected("`<`"));
        }
        let mut numbers = [0i64; 3];
        for (i, number) in numbers.iter_mut().enumerate() {
            if i > 0 && !self.eat(',') {
                return Err(self.expected("`,`"));
            }
            self.ws();
            let len = integer_len(self.rest());
            let parsed = self.src[self.pos..self.pos + len].parse::<i64>();
            let Ok(value) = parsed else {
                return Err(self.expected("an integer"));
            };
            *number = value;
            self.pos += len;
        }
        if !self.eat('>') {
            return Err(self.expected("`>`"));
        }
        let [bits, base, shift] = numbers;
        Swizzle::new(bits, base, shift).map_err(|error| {
            algebra_error(error, span(start, self.here() - start))
                .label("not a valid swizzle")
                .help("Swizzle<B,M,S> XORs the B bits at M+S into the B bits at M; |S| ≥ B")
        })
    }

    /// A word: a swizzle, a call, or a name.
    fn named(&mut self) -> Result<Spanned, Failure> {
        let start = self.here();
        let word_start = self.pos;
        let word = self.word().unwrap_or_default().to_string();
        if (word == "Sw" || word == "Swizzle") && self.rest().trim_start().starts_with('<') {
            self.pos = word_start;
            return self.swizzle_prefixed(start);
        }
        let word_span = span(start, word.len());
        if word == "_" {
            return Err(
                Failure::new(codes::LAYOUT_SYNTAX, "`_` outside a tiler", word_span)
                    .label("keeps a whole mode only inside `<…>`")
                    .help("write a by-mode tiler, e.g. `<_, 4:1>`"),
            );
        }
        if self.rest().trim_start().starts_with('(') {
            self.eat('(');
            let mut args = Vec::new();
            if !self.eat(')') {
                loop {
                    args.push(self.expr()?);
                    if self.eat(',') {
                        continue;
                    }
                    if self.eat(')') {
                        break;
                    }
                    return Err(self.expected("`,` or `)`"));
                }
            }
            let call_span = span(start, self.here() - start);
            let value = call(&word, word_span, args, call_span)?;
            return Ok(Spanned {
                value,
                start,
                end: self.here(),
            });
        }
        let value = self.lookup(&word, word_span)?;
        Ok(Spanned {
            value,
            start,
            end: self.here(),
        })
    }

    fn lookup(&self, word: &str, at: Span) -> Result<Value, Failure> {
        if let Some(value) = self.scope.bound.get(word) {
            return Ok(value.clone());
        }
        if let Some(&value) = self.scope.constants.get(word) {
            return Ok(Value::Int(value));
        }
        let known = self
            .scope
            .bound
            .keys()
            .map(String::as_str)
            .chain(FUNCTIONS.iter().map(|(name, _, _)| *name));
        let mut failure =
            Failure::new(codes::UNKNOWN_NAME, format!("no layout named `{word}`"), at)
                .label("not defined");
        let suggestions = similar(word, known);
        failure = match suggestions.as_slice() {
            [] => failure.help(format!("define it first: `let {word} = (4,8):(1,4)`")),
            names => failure.help(format!("did you mean {}?", quoted(names))),
        };
        Err(failure)
    }

    /// `Sw<B,M,S>`, or `Sw<B,M,S> o L`, or `Sw<B,M,S> o offset o L`.
    fn swizzle_prefixed(&mut self, start: usize) -> Result<Spanned, Failure> {
        let swizzle = self.swizzle_params()?;
        if !self.at_word("o") {
            return Ok(Spanned {
                value: Value::Swizzle(swizzle),
                start,
                end: self.here(),
            });
        }
        self.word();
        self.ws();
        let mut offset = 0;
        let len = integer_len(self.rest());
        if len > 0 {
            let after = self.src[self.pos + len..].trim_start();
            if after.starts_with('o') && !after[1..].starts_with(is_name_char) {
                offset = self.src[self.pos..self.pos + len]
                    .parse::<i64>()
                    .map_err(|_| {
                        Failure::new(
                            codes::LAYOUT_SYNTAX,
                            "offset does not fit in 64 bits",
                            span(self.here(), len),
                        )
                    })?;
                self.pos += len;
                self.word();
            }
        }
        let operand = self.expr()?;
        let layout = match operand.value {
            Value::Layout(layout) => layout,
            Value::Int(n) => leaf_layout(n, &operand)?,
            Value::Swizzled(_) | Value::Swizzle(_) | Value::Tiler(_) => {
                return Err(kind_error(&operand, "a layout after `o`"));
            }
        };
        Ok(Spanned {
            value: Value::Swizzled(SwizzledLayout::new(swizzle, offset, layout)),
            start,
            end: self.here(),
        })
    }
}

/// The length of the integer at the start of `text` (sign included), 0 if none.
fn integer_len(text: &str) -> usize {
    let sign = usize::from(text.starts_with(['-', '+']));
    let digits = text[sign..]
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len() - sign);
    if digits == 0 { 0 } else { sign + digits }
}

pub(super) fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(" or ")
}

fn literal_error(error: LayoutParseError, text: &str, at: usize) -> Failure {
    match error {
        LayoutParseError::Syntax {
            offset,
            expected,
            found,
        } => {
            let len = text[offset.min(text.len())..]
                .split_whitespace()
                .next()
                .map_or(0, str::len);
            Failure::new(
                codes::LAYOUT_SYNTAX,
                format!("expected {expected}, found {found}"),
                span(at + offset, len),
            )
            .label(format!("expected {expected}"))
            .help("a layout is written `(4,8):(1,4)` or `[4,8 : 1,4]`; strides may be left out")
        }
        LayoutParseError::Invalid { offset, error } => algebra_error(
            error,
            span(at + offset, text.len() - offset.min(text.len())),
        )
        .label("not a layout"),
    }
}

pub(super) fn algebra_error(error: LayoutError, at: Span) -> Failure {
    Failure::new(codes::ALGEBRA, error.to_string(), at)
}

pub(super) fn leaf_layout(n: i64, at: &Spanned) -> Result<Layout, Failure> {
    Layout::leaf(n, 1).map_err(|e| algebra_error(e, at.span()).label("as the layout n:1"))
}
