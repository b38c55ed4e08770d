//! Stage 1, syntax: `.gph` text to an AST with byte spans, and back.
//!
//! - `parse_file` parses a whole file, recovering at statement boundaries
//!   so that one run reports several errors.
//! - `parse_statement`, `parse_line` and `is_incomplete` serve a REPL.
//! - `print` writes the canonical text of any tree; `strip_spans` makes
//!   trees comparable modulo spans, so `parse(print(t))` equals `t`.
//!
//! The grammar is `docs/grammar.md`; the error codes are
//! `docs/diagnostics.md`. Input that nests delimiters deeper than
//! `MAX_NESTING` is refused before parsing, so no input exhausts the stack.

mod arith;
pub mod ast;
mod error;
mod expr;
mod lexeme;
pub mod print;
mod source;
mod spec;
mod stmt;
mod strip;
pub mod token;
mod types;

pub use arith::MAX_EXPR_DEPTH;
pub use ast::*;
pub use error::codes;
pub use print::{print_expr, print_file, print_stmt};
pub use source::{Undecodable, decode, no_kernel};
pub use stmt::KEYWORDS;
pub use strip::{StripSpans, strip_spans};
pub use token::{Token, TokenKind, is_incomplete, tokenize};

use std::path::Path;

use nom::{Err, Parser};

use crate::diag::Diagnostic;
use error::SyntaxError as Failure;
use lexeme::{
    Input, PResult, State, at, at_keyword, comma_list, cut, equals, expect, ident, int_literal,
    keyword, offset, skip, span_to, sym,
};
use nom_locate::LocatedSpan;

/// The deepest nesting of `{`, `(` and `[` the parser accepts.
pub const MAX_NESTING: usize = 48;

/// Parses the file `name` (used for the implicit kernel's name) with text
/// `src`. On failure returns every syntax error found, in source order.
pub fn parse_file(name: &str, src: &str) -> Result<File, Vec<Diagnostic>> {
    let stem = kernel_name_from_path(name);
    run(src, |input| {
        let (rest, file) = file(input, &stem)?;
        Ok((rest, file))
    })
}

/// Parses exactly one statement (with its body, if any).
pub fn parse_statement(src: &str) -> Result<Stmt, Vec<Diagnostic>> {
    run(src, |input| {
        let (rest, stmt) = stmt::statement(input)?;
        end_of_input(rest, stmt)
    })
}

/// Parses exactly one tensor or group expression.
pub fn parse_expr(src: &str) -> Result<Expr, Vec<Diagnostic>> {
    run(src, |input| {
        let (rest, value) = expr::expr(input)?;
        end_of_input(rest, value)
    })
}

/// One line (or several, see `is_incomplete`) typed into a REPL.
#[derive(Clone, PartialEq, Debug)]
pub enum Line {
    /// Only whitespace and comments.
    Empty,
    /// `const NAME = value`.
    Const(ConstDef),
    /// `kernel NAME { … }`.
    Kernel(Box<Kernel>),
    /// A statement.
    Stmt(Box<Stmt>),
    /// An expression to evaluate and show, e.g. `#4.tile(8)`.
    Expr(Expr),
}

/// Parses REPL input: a constant, a kernel, a statement, or an expression
/// to show. A line that is neither a statement nor an expression reports
/// the statement's errors.
pub fn parse_line(src: &str) -> Result<Line, Vec<Diagnostic>> {
    if lexeme::skip_str(src).is_empty() {
        return Ok(Line::Empty);
    }
    let first = lexeme::skip_str(src);
    let starts_with_word = |word: &str| {
        first.starts_with(word) && !first[word.len()..].starts_with(lexeme::is_name_char)
    };
    if starts_with_word("const") {
        return run(src, |input| {
            let (rest, def) = const_def(input)?;
            end_of_input(rest, Line::Const(def))
        });
    }
    if starts_with_word("kernel") {
        return run(src, |input| {
            match kernel(input)? {
            (rest, Item::Kernel(def)) => end_of_input(rest, Line::Kernel(Box::new(def))),
            (_, Item::Variant(variant)) => lexeme::fail(
                Diagnostic::error(
                    codes::MISPLACED,
                    "a kernel variant at the REPL",
                    variant.span,
                )
                .with_label("variants are file items")
                .with_note("a variant reuses a kernel body of its file with other constants")
                .with_help("write the variant in a `.gph` file, or redefine the constants here and enter the kernel again"),
            ),
            (rest, Item::Const(def)) => end_of_input(rest, Line::Const(def)),
        }
        });
    }
    let as_statement = parse_statement(src);
    if as_statement.is_ok() {
        return as_statement.map(|stmt| Line::Stmt(Box::new(stmt)));
    }
    match parse_expr(src) {
        Ok(value) => Ok(Line::Expr(value)),
        Err(_) => as_statement.map(|stmt| Line::Stmt(Box::new(stmt))),
    }
}

/// The identifier an implicit kernel gets from its file's path: the stem,
/// with characters other than ASCII letters, digits and `_` replaced by
/// `_`, and a leading `_` if it would start with a digit or be empty.
pub fn kernel_name_from_path(path: &str) -> String {
    let stem = Path::new(path)
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut name: String = stem
        .chars()
        .map(|c| if lexeme::is_name_char(c) { c } else { '_' })
        .collect();
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) || name == "_" {
        name.insert(0, '_');
    }
    name
}

/// Sets up the state, bounds size and nesting, runs `parse`, and collects
/// the diagnostics recorded while recovering with the final failure.
fn run<T>(
    src: &str,
    parse: impl for<'s> FnOnce(Input<'s>) -> PResult<'s, T>,
) -> Result<T, Vec<Diagnostic>> {
    if u32::try_from(src.len()).is_err() {
        return Err(vec![
            Diagnostic::error(
                codes::TOO_LARGE,
                "source file larger than 4 GiB",
                Span::at(0),
            )
            .with_label("the parser counts bytes in 32 bits")
            .with_help("split the kernels over several files"),
        ]);
    }
    let tokens = tokenize(src);
    if let Some(span) = token::too_deep(src, &tokens, MAX_NESTING) {
        return Err(vec![
            Diagnostic::error(codes::TOO_DEEP, "delimiters nested too deeply", span)
                .with_label(format!("more than {MAX_NESTING} levels of `{{`, `(` and `[` here"))
                .with_help("flatten the program: name intermediate results, or split deep loop nests into kernels"),
        ]);
    }
    let state = State::new(src, tokens);
    let input = LocatedSpan::new_extra(src, &state);
    let result = parse(input);
    let mut diagnostics = state.diagnostics.take();
    match result {
        Ok((_, value)) if diagnostics.is_empty() => return Ok(value),
        Ok(_) => {}
        Err(Err::Error(error) | Err::Failure(error)) => {
            diagnostics.push(error.into_diagnostic(src, &state.tokens));
        }
        Err(Err::Incomplete(_)) => diagnostics.push(
            Failure::expected(src.len() as u32, "more input").into_diagnostic(src, &state.tokens),
        ),
    }
    diagnostics.sort_by_key(|diagnostic| diagnostic.primary.span.start);
    Err(diagnostics)
}

fn end_of_input<T>(rest: Input, value: T) -> PResult<T> {
    let rest = skip(rest);
    if rest.fragment().is_empty() {
        return Ok((rest, value));
    }
    let mut error = Failure::expected(offset(&rest), "the end of the input");
    error.help = Some("give one statement or expression at a time");
    Err(Err::Failure(error))
}

/// The whole file; never fails (errors are recorded in the state).
fn file<'s>(input: Input<'s>, stem: &str) -> PResult<'s, File> {
    let state = input.extra;
    let mut items = Vec::new();
    let mut bare: Vec<Stmt> = Vec::new();
    let mut rest = input;
    loop {
        rest = skip(rest);
        let here = offset(&rest);
        if rest.fragment().is_empty() {
            break;
        }
        if at_keyword(&rest, "const") {
            match const_def(rest) {
                Ok((after, def)) if bare.is_empty() => {
                    items.push(Item::Const(def));
                    rest = after;
                }
                Ok((after, def)) => {
                    state.report(Failure::custom(
                        Diagnostic::error(codes::MISPLACED, "`const` after statements", def.span)
                            .with_label("defined after the kernel's statements began")
                            .with_help("move the `const` above the first statement"),
                    ));
                    rest = after;
                }
                Err(Err::Error(error) | Err::Failure(error)) => {
                    rest = stmt::skip_failed(rest, error)
                }
                Err(Err::Incomplete(_)) => break,
            }
        } else if at_keyword(&rest, "kernel") {
            match kernel(rest) {
                Ok((after, def)) => {
                    items.push(def);
                    rest = after;
                }
                Err(Err::Error(error) | Err::Failure(error)) => {
                    rest = stmt::skip_failed(rest, error)
                }
                Err(Err::Incomplete(_)) => break,
            }
        } else {
            match stmt::statement(rest) {
                Ok((after, stmt)) => {
                    bare.push(stmt);
                    rest = after;
                }
                Err(Err::Error(error) | Err::Failure(error)) => {
                    rest = stmt::skip_failed(rest, error)
                }
                Err(Err::Incomplete(_)) => break,
            }
        }
        debug_assert!(offset(&rest) > here, "the file loop always advances");
    }
    let kernel_span = items.iter().find_map(|item| match item {
        Item::Kernel(kernel) => Some(kernel.name.span),
        Item::Variant(variant) => Some(variant.name.span),
        Item::Const(_) => None,
    });
    if let (Some(first), Some(kernel_span)) = (bare.first(), kernel_span) {
        state.report(Failure::custom(
            Diagnostic::error(codes::MISPLACED, "statement outside a kernel", first.span)
                .with_label("not inside any kernel")
                .with_secondary(kernel_span, "this file defines kernels")
                .with_help("move the statement into a kernel's braces, or write the whole file as bare statements"),
        ));
    } else if let (Some(first), Some(last)) = (bare.first(), bare.last()) {
        let span = first.span.join(last.span);
        items.push(Item::Kernel(Kernel {
            name: Name {
                text: stem.to_string(),
                span: Span::DUMMY,
            },
            implicit: true,
            attributes: Vec::new(),
            body: Block { stmts: bare, span },
            span,
        }));
    }
    let span = Span::new(0, offset(&rest));
    Ok((rest, File { items, span }))
}

/// `const NAME = value [tune [v, …]]`.
fn const_def(input: Input) -> PResult<ConstDef> {
    let input = skip(input);
    let start = offset(&input);
    let help = Some("a constant is defined as `const BM = 128`");
    let (rest, _) = keyword("const").parse(input)?;
    let (rest, mut def) = named_value(start, "the constant's name", help, rest)?;
    if !at_keyword(&rest, "tune") {
        return Ok((rest, def));
    }
    let (rest, tune) = tune_values(rest)?;
    def.span = span_to(start, &rest);
    def.tune = Some(tune);
    Ok((rest, def))
}

/// `tune [v, …]`: a tunable constant's legal values, integer literals.
fn tune_values(input: Input) -> PResult<TuneValues> {
    let input = skip(input);
    let start = offset(&input);
    let help =
        Some("a tunable constant lists its legal values: `const BN = 128 tune [64, 128, 256]`");
    let (rest, _) = keyword("tune").parse(input)?;
    let (rest, _) = cut(expect("`[`", help, sym("["))).parse(rest)?;
    let (rest, values) =
        cut(expect("an integer literal", help, comma_list(int_literal))).parse(rest)?;
    let (rest, _) = cut(expect("`]`", help, sym("]"))).parse(rest)?;
    Ok((
        rest,
        TuneValues {
            values,
            span: span_to(start, &rest),
        },
    ))
}

/// `NAME = int_expr` from `start` (a `const` after its keyword, or one
/// setting of a variant).
fn named_value<'s>(
    start: u32,
    what: &'static str,
    help: Option<&'static str>,
    input: Input<'s>,
) -> PResult<'s, ConstDef> {
    let (rest, name) = cut(expect(what, help, ident)).parse(input)?;
    let (rest, _) = cut(expect("`=`", help, equals)).parse(rest)?;
    let (rest, value) = cut(expect("an integer expression", help, arith::int_expr)).parse(rest)?;
    Ok((
        rest,
        ConstDef {
            name,
            value,
            tune: None,
            span: span_to(start, &rest),
        },
    ))
}

/// `kernel NAME [( attribute, … )] { … }`, or a variant
/// `kernel NAME = BASE(CONST = value, …)`.
fn kernel(input: Input) -> PResult<Item> {
    let input = skip(input);
    let start = offset(&input);
    let help = Some("a kernel is written `kernel gemm { … }`");
    let (rest, _) = keyword("kernel").parse(input)?;
    let (rest, name) = cut(expect("the kernel's name", help, ident)).parse(rest)?;
    if at(&rest, "=") {
        return variant(start, name, rest);
    }
    let (rest, attributes) = if at(&rest, "(") {
        kernel_attributes(rest)?
    } else {
        (rest, Vec::new())
    };
    if !at(&rest, "{") {
        let mut error = Failure::expected(offset(&skip(rest)), "`{`");
        error.help = help;
        return Err(Err::Failure(error));
    }
    let (rest, body) = stmt::block(rest)?;
    Ok((
        rest,
        Item::Kernel(Kernel {
            name,
            implicit: false,
            attributes,
            body,
            span: span_to(start, &rest),
        }),
    ))
}

const VARIANT_HELP: &str = "a variant reads `kernel gemm_nt = gemm(B_K_MAJOR = 0)`: the kernel \
                            `gemm` again with the constant `B_K_MAJOR` set to 0";

/// `= BASE(CONST = value, …)` after `kernel NAME`.
fn variant(start: u32, name: Name, input: Input) -> PResult<Item> {
    let help = Some(VARIANT_HELP);
    let (rest, _) = equals(input)?;
    let (rest, base) = cut(expect("the name of the kernel it varies", help, ident)).parse(rest)?;
    let (rest, open) = cut(expect("`(` and the constants it sets", help, sym("("))).parse(rest)?;
    let (rest, overrides) = cut(comma_list(constant_override)).parse(rest)?;
    let (rest, _) = cut(expr::closing(")", open)).parse(rest)?;
    for (index, def) in overrides.iter().enumerate() {
        if let Some(first) = overrides[..index]
            .iter()
            .find(|earlier| earlier.name.text == def.name.text)
        {
            return lexeme::fail(
                Diagnostic::error(
                    codes::BAD_ATTRIBUTE,
                    format!("the variant sets `{}` twice", def.name.text),
                    def.name.span,
                )
                .with_label("set again here")
                .with_secondary(first.span, "first set here")
                .with_help("keep one of the two values"),
            );
        }
    }
    Ok((
        rest,
        Item::Variant(KernelVariant {
            name,
            base,
            overrides,
            span: span_to(start, &rest),
        }),
    ))
}

/// `CONST = value` inside a variant's parentheses.
fn constant_override(input: Input) -> PResult<ConstDef> {
    let input = skip(input);
    let start = offset(&input);
    named_value(start, "a constant's name", Some(VARIANT_HELP), input)
}

const ATTRIBUTE_HELP: &str =
    "kernel attributes read `kernel gemm (min_blocks_per_sm = 2, max_registers = 128) { … }`";

/// `( name = int_expr, … )`: at least one attribute, each at most once.
fn kernel_attributes(input: Input) -> PResult<Vec<KernelAttribute>> {
    let (rest, open) = sym("(").parse(input)?;
    let (rest, attributes) = cut(comma_list(kernel_attribute)).parse(rest)?;
    for (index, attribute) in attributes.iter().enumerate() {
        let Some(first) = attributes[..index]
            .iter()
            .find(|earlier| earlier.kind == attribute.kind)
        else {
            continue;
        };
        let word = KernelAttributeKind::ALL
            .iter()
            .find_map(|(text, kind)| (*kind == attribute.kind).then_some(*text))
            .unwrap_or("?");
        return lexeme::fail(
            Diagnostic::error(
                codes::BAD_ATTRIBUTE,
                format!("the kernel attribute `{word}` is given twice"),
                attribute.name,
            )
            .with_label("given again here")
            .with_secondary(first.span, "first given here")
            .with_help("keep one of the two values"),
        );
    }
    let (rest, _) = cut(expr::closing(")", open)).parse(rest)?;
    Ok((rest, attributes))
}

/// `name = int_expr`, one kernel attribute.
fn kernel_attribute(input: Input) -> PResult<KernelAttribute> {
    let help = Some(ATTRIBUTE_HELP);
    let (rest, (word, name)) = cut(expect("an attribute name", help, lexeme::word)).parse(input)?;
    let Some(kind) = KernelAttributeKind::ALL
        .iter()
        .find_map(|(text, kind)| (*text == word).then_some(*kind))
    else {
        let known: Vec<String> = KernelAttributeKind::ALL
            .iter()
            .map(|(text, _)| format!("`{text}`"))
            .collect();
        return lexeme::fail(
            Diagnostic::error(
                codes::BAD_ATTRIBUTE,
                format!("unknown kernel attribute `{word}`"),
                name,
            )
            .with_label(format!("the attributes are {}", known.join(" and ")))
            .with_help(ATTRIBUTE_HELP),
        );
    };
    let (rest, _) = cut(expect("`=`", help, equals)).parse(rest)?;
    let (rest, value) = cut(expect("an integer expression", help, arith::int_expr)).parse(rest)?;
    Ok((
        rest,
        KernelAttribute {
            kind,
            name,
            span: name.join(value.span),
            value,
        },
    ))
}

#[cfg(test)]
mod tests;
