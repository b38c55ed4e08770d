//! Stage 1, syntax: a source file's bytes before parsing, and what a parsed
//! file says as a whole.
//!
//! A file is UTF-8; one that is not is refused with the place of its first
//! bad byte (line and column, as every diagnostic), not an I/O error. A
//! file that parses but holds no kernel compiles to nothing: a warning.

use super::ast::{File, Item};
use super::error::codes;
use crate::diag::{Diagnostic, Span};

/// A source that is not UTF-8: its text with every bad sequence replaced by
/// U+FFFD (the same bytes up to the first one, so the diagnostic's span
/// points into it), and the diagnostic.
#[derive(Clone, Debug)]
pub struct Undecodable {
    /// The text to render the diagnostic against.
    pub text: String,
    /// The `E0124` error at the first bad byte.
    pub diagnostic: Diagnostic,
}

/// The text of `bytes`, or where it stops being UTF-8.
pub fn decode(bytes: &[u8]) -> Result<&str, Box<Undecodable>> {
    let error = match std::str::from_utf8(bytes) {
        Ok(text) => return Ok(text),
        Err(error) => error,
    };
    let at = error.valid_up_to();
    let bad = &bytes[at..at + error.error_len().unwrap_or(bytes.len() - at)];
    let shown: Vec<String> = bad.iter().map(|byte| format!("0x{byte:02x}")).collect();
    let start = u32::try_from(at).unwrap_or(u32::MAX);
    // U+FFFD takes 3 bytes in the text the diagnostic is rendered against.
    let diagnostic = Diagnostic::error(
        codes::INVALID_UTF8,
        format!("invalid UTF-8: byte {}", shown.join(" ")),
        Span::new(start, start.saturating_add(3)),
    )
    .with_label("not a UTF-8 character")
    .with_help(
        "save the file as UTF-8; programs are ASCII outside comments, and comments \
         may hold any Unicode text",
    );
    Err(Box::new(Undecodable {
        text: String::from_utf8_lossy(bytes).into_owned(),
        diagnostic,
    }))
}

/// The warning for a file without a kernel (only constants, comments, or
/// nothing): it compiles to an empty module, which is rarely what was meant.
pub fn no_kernel(file: &File) -> Option<Diagnostic> {
    let has_kernel = file.items.iter().any(|item| match item {
        Item::Kernel(_) | Item::Variant(_) => true,
        Item::Const(_) => false,
    });
    if has_kernel {
        return None;
    }
    Some(
        Diagnostic::warning(
            codes::NO_KERNEL,
            "the file has no kernel; its module will be empty",
            Span::at(file.span.start),
        )
        .with_label("no `kernel` in this file")
        .with_help("write `kernel NAME { … }`, or statements the file's kernel runs"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_bad_byte_is_found_and_named() {
        assert_eq!(decode(b"kernel k {}").ok(), Some("kernel k {}"));
        let bad = decode(b"ab\ncd\xff\xfe").unwrap_err();
        assert_eq!(bad.diagnostic.code, codes::INVALID_UTF8);
        assert_eq!(bad.diagnostic.primary.span, Span::new(5, 8));
        assert!(
            bad.diagnostic.message.contains("0xff"),
            "{}",
            bad.diagnostic
        );
        assert!(bad.text.starts_with("ab\ncd\u{fffd}"));
        let cut = decode("é".as_bytes().split_at(1).0).unwrap_err();
        assert!(cut.diagnostic.message.contains("0xc3"));
    }

    #[test]
    fn only_files_without_kernels_are_warned_about() {
        let empty = crate::syntax::parse_file("c.gph", "const A = 1\n// none\n").unwrap();
        let warning = no_kernel(&empty).expect("a warning");
        assert!(!warning.is_error());
        let bare = crate::syntax::parse_file("b.gph", "#t:[32].thread\n").unwrap();
        assert!(no_kernel(&bare).is_none());
        let kernel = crate::syntax::parse_file("k.gph", "kernel k {\n}\n").unwrap();
        assert!(no_kernel(&kernel).is_none());
    }
}
