//! Stage 1, syntax: a forgiving tokenizer of `.gph` text. The grammar itself
//! is parsed without it (by the nom parser over characters); tokens serve
//! what needs a coarse view of the text: saying what was *found* where an
//! error is, finding a statement boundary to recover at, bounding the nesting
//! depth before parsing, telling a REPL that input is unfinished, and
//! mutating programs token by token in tests.

use crate::diag::Span;

/// The coarse classes of tokens.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum TokenKind {
    /// `%name`.
    Tensor,
    /// `#name`.
    Group,
    /// `@name`.
    Index,
    /// A word: keyword, identifier, type or kind name, `_`.
    Word,
    /// Decimal digits.
    Int,
    /// Digits with a fraction or an exponent, e.g. `0.5`, `1e-3`.
    Float,
    /// An operator or delimiter, e.g. `<<<`, `<-`, `{`, `%`.
    Punct,
    /// A character that starts no token (`$`, `?`, a lone `#`, …).
    Unknown,
}

/// One token: its class and where it is.
///
/// Rule: tokens never overlap, are in source order, and never cover
/// whitespace or comments.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Token {
    /// The class.
    pub kind: TokenKind,
    /// The text.
    pub span: Span,
}

impl Token {
    /// The token's text in `src`.
    pub fn text(self, src: &str) -> &str {
        &src[self.span.range()]
    }
}

/// Operators and delimiters, longest first so that `<<<` wins over `<`.
const PUNCTS: [&str; 28] = [
    "<<<", ">>>", "<-", "<=", ">=", "==", "!=", "&&", "||", "+=", "{", "}", "(", ")", "[", "]",
    "<", ">", ",", ".", ":", ";", "=", "+", "-", "*", "/", "%",
];

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Splits `src` into tokens, skipping whitespace and `//` comments. Never
/// fails: a character that starts no token becomes an `Unknown` token.
pub fn tokenize(src: &str) -> Vec<Token> {
    let bytes = src.as_bytes();
    let mut tokens = Vec::new();
    let mut at = 0usize;
    while at < src.len() {
        let rest = &src[at..];
        let c = rest.chars().next().unwrap_or(' ');
        if c.is_whitespace() {
            at += c.len_utf8();
            continue;
        }
        if rest.starts_with("//") {
            // As in the parser, a comment ends at LF or CR.
            at += rest.find(['\n', '\r']).unwrap_or(rest.len());
            continue;
        }
        let (kind, len) =
            if matches!(c, '%' | '#' | '@') && rest[1..].chars().next().is_some_and(is_name_char) {
                let name = rest[1..]
                    .find(|ch: char| !is_name_char(ch))
                    .unwrap_or(rest.len() - 1);
                let kind = match c {
                    '%' => TokenKind::Tensor,
                    '#' => TokenKind::Group,
                    _ => TokenKind::Index,
                };
                (kind, 1 + name)
            } else if c.is_ascii_digit() {
                number(rest)
            } else if c.is_ascii_alphabetic() || c == '_' {
                let len = rest
                    .find(|ch: char| !is_name_char(ch))
                    .unwrap_or(rest.len());
                (TokenKind::Word, len)
            } else if let Some(punct) = PUNCTS.iter().find(|p| rest.starts_with(**p)) {
                (TokenKind::Punct, punct.len())
            } else {
                (TokenKind::Unknown, c.len_utf8())
            };
        debug_assert!(len > 0 && src.is_char_boundary(at + len) && at + len <= bytes.len());
        tokens.push(Token {
            kind,
            span: Span::new(at as u32, (at + len) as u32),
        });
        at += len;
    }
    tokens
}

/// An integer or floating literal at the start of `rest` (which starts with
/// a digit): its class and length.
pub(crate) fn number(rest: &str) -> (TokenKind, usize) {
    let digits = |s: &str| s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let mut len = digits(rest);
    let mut kind = TokenKind::Int;
    let after = &rest[len..];
    if after.starts_with('.') && after[1..].starts_with(|c: char| c.is_ascii_digit()) {
        len += 1 + digits(&after[1..]);
        kind = TokenKind::Float;
    }
    let after = &rest[len..];
    if after.starts_with(['e', 'E']) {
        let sign = usize::from(after[1..].starts_with(['+', '-']));
        let exponent = digits(&after[1 + sign..]);
        if exponent > 0 {
            len += 1 + sign + exponent;
            kind = TokenKind::Float;
        }
    }
    (kind, len)
}

/// Whether `src` is the beginning of something longer: an unclosed `{`, `(`,
/// `[` or `<<<`, or a trailing `<-`. A REPL keeps reading lines while this
/// holds. Excess closers make input wrong, not incomplete.
pub fn is_incomplete(src: &str) -> bool {
    let tokens = tokenize(src);
    let mut open: Vec<&str> = Vec::new();
    for token in &tokens {
        match token.text(src) {
            opener @ ("{" | "(" | "[" | "<<<") => open.push(opener),
            closer @ ("}" | ")" | "]" | ">>>") => {
                let expected = match closer {
                    "}" => "{",
                    ")" => "(",
                    "]" => "[",
                    _ => "<<<",
                };
                if open.pop() != Some(expected) {
                    return false;
                }
            }
            _ => {}
        }
    }
    !open.is_empty() || tokens.last().is_some_and(|last| last.text(src) == "<-")
}

/// The first opening delimiter (`{`, `(`, `[`) nested deeper than
/// `max_depth`, if any. The parser refuses such input before descending, so
/// that no input can exhaust the stack.
pub fn too_deep(src: &str, tokens: &[Token], max_depth: usize) -> Option<Span> {
    let mut depth = 0usize;
    for token in tokens {
        match token.text(src) {
            "{" | "(" | "[" => {
                depth += 1;
                if depth > max_depth {
                    return Some(token.span);
                }
            }
            "}" | ")" | "]" => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// The token that starts at or after byte `offset`, if any.
pub fn token_at(tokens: &[Token], offset: u32) -> Option<Token> {
    let index = tokens.partition_point(|token| token.span.end <= offset);
    tokens.get(index).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(src: &str) -> Vec<&str> {
        tokenize(src).into_iter().map(|t| t.text(src)).collect()
    }

    #[test]
    fn splits_sigils_launches_and_numbers() {
        assert_eq!(
            texts("%11 <- Move<<<#3, #4>>>(%10) // c\n"),
            [
                "%11", "<-", "Move", "<<<", "#3", ",", "#4", ">>>", "(", "%10", ")"
            ]
        );
        assert_eq!(texts("Init<0.5e-3>"), ["Init", "<", "0.5e-3", ">"]);
        assert_eq!(texts("[8,8].fp16"), ["[", "8", ",", "8", "]", ".", "fp16"]);
        assert_eq!(texts("k % 2 $"), ["k", "%", "2", "$"]);
        let kinds: Vec<_> = tokenize("@i 1e5 12 é").iter().map(|t| t.kind).collect();
        assert_eq!(
            kinds,
            [
                TokenKind::Index,
                TokenKind::Float,
                TokenKind::Int,
                TokenKind::Unknown
            ]
        );
    }

    #[test]
    fn incomplete_input_is_unclosed_or_ends_in_an_arrow() {
        assert!(is_incomplete("%2 <- Move<<<#3, #4>>>(%1) {"));
        assert!(is_incomplete("%2 <-"));
        assert!(is_incomplete("%1:[16,"));
        assert!(is_incomplete("%2 <- Move<<<#3,"));
        assert!(!is_incomplete("%2 <- Move<<<#3, #4>>>(%1) { }"));
        assert!(!is_incomplete("}"));
        assert!(!is_incomplete("for (k = 0; k < 4; k += 1) { ] "));
        assert!(!is_incomplete("// {"));
        assert!(!is_incomplete(""));
    }

    #[test]
    fn depth_bound_finds_the_first_opener_too_deep() {
        let src = "((([x]))) {{";
        let tokens = tokenize(src);
        assert_eq!(too_deep(src, &tokens, 4), None);
        assert_eq!(too_deep(src, &tokens, 3), Some(Span::new(3, 4)));
        let deep = "(".repeat(10_000);
        assert!(too_deep(&deep, &tokenize(&deep), 64).is_some());
    }

    #[test]
    fn token_at_finds_the_next_token() {
        let src = "a  bc";
        let tokens = tokenize(src);
        assert_eq!(token_at(&tokens, 1).map(|t| t.text(src)), Some("bc"));
        assert_eq!(token_at(&tokens, 4).map(|t| t.text(src)), Some("bc"));
        assert_eq!(token_at(&tokens, 5), None);
    }
}
