//! Stage 1, syntax: statements and blocks, with error recovery. A block
//! parses its statements one by one; when one fails, its diagnostic is
//! recorded and parsing resumes at the next line that starts a statement at
//! the same brace depth, so one run reports several independent errors.

use nom::{Err, Input as _, Parser};

use super::arith::{at_wildcard, cond, int_expr};
use super::ast::{
    AsyncQueue, BarrierScope, Block, ExprKind, ForLoop, GroupDef, IfStmt, IndicesDef, Name,
    RequireKind, SPEC_KIND_NAMES, Stmt, StmtKind, TensorDef,
};
use super::error::{SyntaxError, codes, suggest};
use super::expr::{expr, pattern};
use super::lexeme::{
    Input, PResult, State, at, at_keyword, comma_list, commas_after, cut, equals, expect, fail,
    ident, is_name_char, keyword, offset, sigil_name, skip, span_to, sym, word,
};
use super::spec::spec_after_arrow;
use super::token::TokenKind;
use super::types::{group_type, tensor_type};
use crate::diag::{Diagnostic, Span};

const STATEMENT_HELP: &str = "statements start with a tensor `%x`, a group `#g`, indices `@i`, or `for`, `if`, `sync`, `grid_sync`, `async_commit`, `async_wait`, `mma_commit`, `mma_wait`, `mbarrier_arrive`, `mbarrier_wait`, `setmaxnreg`, `let`, `contract`";
/// The words that start an item (`kernel`, `const`) or a statement: the
/// parser's recovery points, the REPL's test for an IR line, and the
/// candidates of "did you mean" (with `else`).
pub const KEYWORDS: [&str; 17] = [
    "const",
    "kernel",
    "contract",
    "require",
    "specialize",
    "let",
    "for",
    "if",
    "sync",
    "grid_sync",
    "async_commit",
    "async_wait",
    "mma_commit",
    "mma_wait",
    "mbarrier_arrive",
    "mbarrier_wait",
    "setmaxnreg",
];
const FOR_HELP: &str = "a loop header reads `for (k = 0; k < N; k += 1)`";

/// `{ statements }`; an unclosed block is reported and ends at the input's
/// end.
pub(crate) fn block(input: Input) -> PResult<Block> {
    let (rest, open) = sym("{").parse(input)?;
    let (rest, (stmts, close)) = statements(rest, Some(open))?;
    Ok((
        rest,
        Block {
            stmts,
            span: open.join(close),
        },
    ))
}

/// Statements up to the `}` closing `open`, or to the end of the input when
/// `open` is `None` or the block is unclosed. Never fails: failed
/// statements are reported to the state and skipped.
pub(crate) fn statements(input: Input, open: Option<Span>) -> PResult<(Vec<Stmt>, Span)> {
    let state = input.extra;
    let mut rest = input;
    let mut stmts = Vec::new();
    loop {
        rest = skip(rest);
        let here = offset(&rest);
        if rest.fragment().is_empty() {
            if let Some(open) = open {
                state.report(SyntaxError::custom(
                    Diagnostic::error(codes::UNCLOSED, "unclosed `{`", open)
                        .with_label("this `{` is never closed")
                        .with_help("add `}` after the last statement of the block"),
                ));
            }
            return Ok((rest, (stmts, Span::at(here))));
        }
        if open.is_some() && at(&rest, "}") {
            let (after, close) = sym("}").parse(rest)?;
            return Ok((after, (stmts, close)));
        }
        match statement(rest) {
            Ok((after, stmt)) => {
                stmts.push(stmt);
                rest = after;
            }
            Err(Err::Error(error) | Err::Failure(error)) => {
                rest = skip_failed(rest, error);
            }
            Err(Err::Incomplete(_)) => {
                state.report(SyntaxError::expected(here, "a complete statement"));
                rest = rest.take_from(rest.fragment().len());
            }
        }
    }
}

/// Reports `error` for the statement starting at `input` and returns the
/// input where parsing resumes.
pub(crate) fn skip_failed<'s>(input: Input<'s>, error: SyntaxError) -> Input<'s> {
    let state = input.extra;
    let here = offset(&input);
    let error_at = error.offset;
    state.report(error);
    let resume = recover(state, here, error_at);
    input.take_from((resume.max(here) - here) as usize)
}

/// Where to resume after a statement starting at `from` failed at
/// `error_at`: the first token after both that is at the statement's brace
/// depth and either closes the enclosing block or begins a line with a
/// statement's first token.
pub(crate) fn recover(state: &State, from: u32, error_at: u32) -> u32 {
    let src = state.src;
    let first = state
        .tokens
        .partition_point(|token| token.span.start < from);
    let mut depth = 0usize;
    for (at, token) in state.tokens.iter().enumerate().skip(first) {
        let start = token.span.start;
        let text = token.text(src);
        let past = start > from && start >= error_at;
        if past
            && depth == 0
            && (text == "}"
                || (starts_statement(token.kind, text) && starts_line(state, at, start)))
        {
            return start;
        }
        match text {
            "{" => depth += 1,
            "}" if depth > 0 => depth -= 1,
            "}" if start > from => return start,
            _ => {}
        }
    }
    src.len() as u32
}

/// Whether the token `at` (starting at `offset`) is the first of its line.
/// Only the gap after the token before it is read, never the whole line, so
/// that recovering on a megabyte-long line stays linear.
fn starts_line(state: &State, at: usize, offset: u32) -> bool {
    let gap_start = at
        .checked_sub(1)
        .map_or(0, |previous| state.tokens[previous].span.end as usize);
    let gap = &state.src[gap_start..offset as usize];
    match gap.rfind('\n') {
        Some(newline) => gap[newline + 1..].trim().is_empty(),
        None => at == 0 && gap.trim().is_empty(),
    }
}

fn starts_statement(kind: TokenKind, text: &str) -> bool {
    match kind {
        TokenKind::Tensor | TokenKind::Group | TokenKind::Index => true,
        TokenKind::Word => KEYWORDS.contains(&text),
        TokenKind::Int | TokenKind::Float | TokenKind::Punct | TokenKind::Unknown => false,
    }
}

/// `contract { … }`: its statements parse as any others, except that specs
/// take no launch groups; the checker says which statements may stand there.
fn contract(input: Input) -> PResult<StmtKind> {
    let state = input.extra;
    let (rest, _) = keyword("contract").parse(input)?;
    let rest = skip(rest);
    if !at(&rest, "{") {
        let mut error = SyntaxError::expected(offset(&rest), "`{`");
        error.help = Some("a contract is a block: `contract { %c <- MatMul<overwrite>(%a, %b) }`");
        return Err(Err::Failure(error));
    }
    let outer = state.in_contract.replace(true);
    let parsed = block(rest);
    state.in_contract.set(outer);
    let (rest, body) = parsed?;
    Ok((rest, StmtKind::Contract(body)))
}

/// One statement.
pub(crate) fn statement(input: Input) -> PResult<Stmt> {
    let input = skip(input);
    let start = offset(&input);
    let text = *input.fragment();
    let first = text.chars().next();
    let named = text[first.map_or(0, char::len_utf8)..].starts_with(is_name_char);
    let (rest, kind) = match first {
        Some('%' | '#' | '@') if !named => return fail(bare_sigil(text, start)),
        Some('%') => tensor_statement(input)?,
        Some('#') => group_statement(input)?,
        Some('@' | '(') => indices_statement(input)?,
        _ if at_wildcard(&input) => indices_statement(input)?,
        _ if at_keyword(&input, "for") => for_loop(input)?,
        _ if at_keyword(&input, "if") => if_statement(input)?,
        _ if barrier_scope(&input).is_some() => barrier(input)?,
        _ if at_keyword(&input, "contract") => contract(input)?,
        _ if at_keyword(&input, "let") => {
            let (rest, _) = keyword("let").parse(input)?;
            let help = Some("a name for an integer expression reads `let bq = w % QT`");
            let (rest, name) = cut(expect("a name", help, ident)).parse(rest)?;
            let (rest, _) = cut(expect("`=`", help, equals)).parse(rest)?;
            let (rest, value) = cut(expect("an integer expression", help, int_expr)).parse(rest)?;
            (rest, StmtKind::Let(super::ast::LetDef { name, value }))
        }
        _ if at_keyword(&input, "require") => {
            let (rest, _) = keyword("require").parse(input)?;
            let help = Some("a requirement reads `require K % 8 == 0`");
            let (rest, cond) = cut(expect("a condition", help, cond)).parse(rest)?;
            (rest, StmtKind::Require(RequireKind::Launch, cond))
        }
        _ if at_keyword(&input, "specialize") => {
            let (rest, _) = keyword("specialize").parse(input)?;
            let help = Some("a specialization reads `specialize K % 8 == 0`");
            let (rest, cond) = cut(expect("a condition", help, cond)).parse(rest)?;
            (rest, StmtKind::Require(RequireKind::Specialize, cond))
        }
        _ if let Some(queue) = commit_queue(&input) => (
            keyword(queue.commit_keyword()).parse(input)?.0,
            StmtKind::Commit(queue),
        ),
        _ if let Some(queue) = wait_queue(&input) => wait(input, queue)?,
        _ if at_keyword(&input, "mbarrier_arrive") => arrive(input)?,
        _ if at_keyword(&input, "mbarrier_wait") => wait_phase(input)?,
        _ if at_keyword(&input, "setmaxnreg") => {
            let (rest, _) = keyword("setmaxnreg").parse(input)?;
            let help = Some(
                "write `setmaxnreg(N)`: the warpgroup's registers per thread become N (24 to 256, a multiple of 8)",
            );
            let (rest, open) = cut(expect("`(`", help, sym("("))).parse(rest)?;
            let (rest, count) = cut(expect("a number of registers", help, int_expr)).parse(rest)?;
            let (rest, _) = cut(super::expr::closing(")", open)).parse(rest)?;
            (rest, StmtKind::SetMaxRegisters(count))
        }
        _ => return fail(not_a_statement(input)),
    };
    Ok((
        rest,
        Stmt {
            kind,
            span: span_to(start, &rest),
        },
    ))
}

fn bare_sigil(text: &str, start: u32) -> Diagnostic {
    let sigil = &text[..1];
    let what = match sigil {
        "%" => "tensors",
        "#" => "thread groups",
        _ => "indices",
    };
    Diagnostic::error(
        codes::BAD_SIGIL,
        format!("`{sigil}` must be followed by a name"),
        Span::new(start, start + 1),
    )
    .with_label("a sigil without a name")
    .with_help(format!(
        "{what} are named right after the sigil, e.g. `{sigil}1` or `{sigil}acc`"
    ))
}

/// The diagnostic for input that starts no statement.
fn not_a_statement(input: Input) -> Diagnostic {
    let state = input.extra;
    let start = offset(&input);
    let text = *input.fragment();
    let (found, span) = super::error::found_at(state.src, &state.tokens, start);
    if text.starts_with("<-") {
        return Diagnostic::error(codes::SPEC_OPERAND, "missing the outputs of a spec", span)
            .with_label("nothing before `<-`")
            .with_help(
                "write the output tensors before `<-`, e.g. `%out <- Move<<<#b, #t>>>(%in)`",
            );
    }
    if let Ok((_, (word, word_span))) = word(input) {
        if SPEC_KIND_NAMES.contains(&word) {
            return Diagnostic::error(
                codes::SPEC_OPERAND,
                format!("`{word}` without outputs"),
                word_span,
            )
            .with_label("a spec needs its outputs and `<-`")
            .with_help(format!(
                "write the outputs first: `%out <- {word}<<<#b, #t>>>(…)`"
            ));
        }
        if word == "kernel" || word == "const" {
            return Diagnostic::error(
                codes::MISPLACED,
                format!("`{word}` inside a block"),
                word_span,
            )
            .with_label("only allowed at the top of a file")
            .with_help(format!("move the `{word}` out of the enclosing block"));
        }
        let candidates: Vec<&str> = KEYWORDS.iter().copied().chain(["else"]).collect();
        let help = match suggest(word, &candidates) {
            Some(keyword) => format!("did you mean `{keyword}`?"),
            None => STATEMENT_HELP.to_string(),
        };
        return Diagnostic::error(
            codes::UNEXPECTED,
            format!("expected a statement, found `{word}`"),
            word_span,
        )
        .with_label("not a statement")
        .with_help(help);
    }
    match text.chars().next() {
        Some(closer @ (')' | ']' | '}')) => {
            Diagnostic::error(codes::UNOPENED, format!("unexpected `{closer}`"), span)
                .with_label("nothing to close here")
                .with_help(format!(
                    "remove this `{closer}`, or add its opening partner before it"
                ))
        }
        Some('$' | '&' | '!' | '^' | '~' | '?' | '\\' | '\'' | '"' | '`') => {
            Diagnostic::error(codes::BAD_SIGIL, format!("{found} is not a sigil"), span)
                .with_label("unknown sigil")
                .with_help("tensors are named `%x`, thread groups `#g`, indices `@i`")
        }
        Some(c) if !c.is_ascii_graphic() => {
            Diagnostic::error(codes::BAD_SIGIL, format!("unexpected {found}"), span)
                .with_label("not part of the language")
                .with_help("remove it: programs are written in ASCII outside comments")
        }
        _ => Diagnostic::error(
            codes::UNEXPECTED,
            format!("expected a statement, found {found}"),
            span,
        )
        .with_label("not a statement")
        .with_help(STATEMENT_HELP),
    }
}

/// `%x : T (= e)?`, `%x = e`, or a spec `outs <- …`.
fn tensor_statement(input: Input) -> PResult<StmtKind> {
    let (rest, first) = expr(input)?;
    if let ExprKind::Tensor(name) = &first.kind {
        if at(&rest, ":") {
            let (rest, _) = sym(":").parse(rest)?;
            let (rest, ty) = cut(tensor_type).parse(rest)?;
            let (rest, value) = optional_value(rest)?;
            return Ok((
                rest,
                StmtKind::Tensor(TensorDef {
                    name: name.clone(),
                    ty: Some(ty),
                    value,
                }),
            ));
        }
        if equals(rest).is_ok() {
            let (rest, value) = optional_value(rest)?;
            return Ok((
                rest,
                StmtKind::Tensor(TensorDef {
                    name: name.clone(),
                    ty: None,
                    value,
                }),
            ));
        }
    }
    let plain_name = match &first.kind {
        ExprKind::Tensor(name) => Some(name.span),
        _ => None,
    };
    let (rest, outputs) = commas_after(rest, first, expect("an output tensor `%x`", None, expr))?;
    if !at(&rest, "<-") {
        let found = offset(&skip(rest));
        let error = if let (Some(name_span), 1) = (plain_name, outputs.len()) {
            let mut error = SyntaxError::expected(found, "`:`");
            error.related = Some((name_span, "named here, with nothing done to it"));
            error.expected.push(super::error::Expected::Token("="));
            error.expected.push(super::error::Expected::Token("<-"));
            error.help = Some(
                "declare the tensor with a type (`%x:[16].fp32.RF`), define it (`%x = …`), or compute it with a spec (`%x <- …`)",
            );
            error.code_override(codes::BARE_NAME)
        } else {
            let mut error = SyntaxError::expected(found, "`<-`");
            error.help = Some(
                "a statement that starts with tensors is a spec computing them: `%a, %b <- Kind<<<#b, #t>>>(…)`",
            );
            error.code_override(codes::SPEC_OPERAND)
        };
        return Err(Err::Failure(error));
    }
    let (rest, arrow) = sym("<-").parse(rest)?;
    let (rest, spec) = spec_after_arrow(rest, outputs, arrow)?;
    Ok((rest, StmtKind::Spec(spec)))
}

/// `= e` if present.
fn optional_value(input: Input) -> PResult<Option<super::ast::Expr>> {
    if equals(input).is_err() {
        return Ok((input, None));
    }
    let (rest, _) = equals(input)?;
    let (rest, value) = cut(expect(
        "a value (`%x…`, `#g…` or `Allocate()`)",
        Some("a definition names an existing tensor or group and its operations, e.g. `%7 = %1.tile([8,8])`"),
        expr,
    ))
    .parse(rest)?;
    Ok((rest, Some(value)))
}

/// `#g : G (= e)?` or `#g = e`.
fn group_statement(input: Input) -> PResult<StmtKind> {
    let (rest, name) = sigil_name('#', "a thread group `#g`").parse(input)?;
    let (rest, ty) = if at(&rest, ":") {
        let (rest, _) = sym(":").parse(rest)?;
        let (rest, ty) = cut(group_type).parse(rest)?;
        (rest, Some(ty))
    } else {
        (rest, None)
    };
    let (rest, value) = optional_value(rest)?;
    if ty.is_none() && value.is_none() {
        let mut error = SyntaxError::expected(offset(&skip(rest)), "`:`");
        error.expected.push(super::error::Expected::Token("="));
        error.help = Some(
            "declare the group with a type (`#t:[32].thread`) or define it (`#g = #t.tile(8)`)",
        );
        return Err(Err::Failure(error.code_override(codes::BARE_NAME)));
    }
    Ok((rest, StmtKind::Group(GroupDef { name, ty, value })))
}

/// `p, q, … = #g.indices()`.
fn indices_statement(input: Input) -> PResult<StmtKind> {
    let (rest, patterns) = comma_list(pattern).parse(input)?;
    let help = Some("index names are bound to a group's coordinates: `@m, @n = #g.indices()`");
    let (rest, _) = cut(expect("`,` or `=`", help, equals)).parse(rest)?;
    let (rest, value) = cut(expect("`#g.indices()`", help, expr)).parse(rest)?;
    if !matches!(value.kind, ExprKind::Indices(_)) {
        return fail(
            Diagnostic::error(
                codes::BAD_PATTERN,
                "index names must be bound to `.indices()`",
                value.span,
            )
            .with_label("this is not a group's indices")
            .with_help("call `.indices()` on a thread group: `@m, @n = #g.indices()`"),
        );
    }
    Ok((rest, StmtKind::Indices(IndicesDef { patterns, value })))
}

fn for_code(error: Err<SyntaxError>) -> Err<SyntaxError> {
    error.map(|error| error.code_override(codes::BAD_FOR))
}

/// `for (k = lo; k < hi; k += step) { … }`.
fn for_loop(input: Input) -> PResult<StmtKind> {
    let (rest, _) = keyword("for").parse(input)?;
    let help = Some(FOR_HELP);
    let (rest, _) = cut(expect("`(`", help, sym("(")))
        .parse(rest)
        .map_err(for_code)?;
    let (rest, var_name) = cut(expect("the loop variable", help, ident))
        .parse(rest)
        .map_err(for_code)?;
    let (rest, _) = cut(expect("`=`", help, equals))
        .parse(rest)
        .map_err(for_code)?;
    let (rest, init) = cut(expect("the first value", help, int_expr))
        .parse(rest)
        .map_err(for_code)?;
    let (rest, _) = cut(expect("`;`", help, sym(";")))
        .parse(rest)
        .map_err(for_code)?;
    let (rest, tested) = cut(expect("the loop variable", help, ident))
        .parse(rest)
        .map_err(for_code)?;
    same_variable(&var_name, &tested)?;
    if !at(&rest, "<") || at(&rest, "<=") || at(&rest, "<-") {
        let here = skip(rest);
        let (found, span) =
            super::error::found_at(here.extra.src, &here.extra.tokens, offset(&here));
        return fail(
            Diagnostic::error(
                codes::BAD_FOR,
                format!("expected `<` in the loop's test, found {found}"),
                span,
            )
            .with_label("loops test an exclusive bound with `<`")
            .with_help(format!(
                "write `{0} < N` (for `{0} <= N`, write `{0} < N+1`)",
                var_name.text
            )),
        );
    }
    let (rest, _) = sym("<").parse(rest)?;
    let (rest, bound) = cut(expect("the bound", help, int_expr))
        .parse(rest)
        .map_err(for_code)?;
    let (rest, _) = cut(expect("`;`", help, sym(";")))
        .parse(rest)
        .map_err(for_code)?;
    let (rest, stepped) = cut(expect("the loop variable", help, ident))
        .parse(rest)
        .map_err(for_code)?;
    same_variable(&var_name, &stepped)?;
    if at(&rest, "++") {
        let here = skip(rest);
        let start = offset(&here);
        return fail(
            Diagnostic::error(
                codes::BAD_FOR,
                "`++` is not an operator here",
                Span::new(start, start + 2),
            )
            .with_label("expected `+=`")
            .with_help(format!("write `{} += 1`", var_name.text)),
        );
    }
    let (rest, _) = cut(expect("`+=`", help, sym("+=")))
        .parse(rest)
        .map_err(for_code)?;
    let (rest, step) = cut(expect("the step", help, int_expr))
        .parse(rest)
        .map_err(for_code)?;
    let (rest, _) = cut(expect("`)`", help, sym(")")))
        .parse(rest)
        .map_err(for_code)?;
    let (rest, body) = cut(expect(
        "`{` and the loop body",
        Some("a loop body is a block: `for (…) { … }`"),
        block,
    ))
    .parse(rest)
    .map_err(for_code)?;
    Ok((
        rest,
        StmtKind::For(ForLoop {
            var: var_name,
            init,
            bound,
            step,
            body,
        }),
    ))
}

fn same_variable(declared: &Name, used: &Name) -> Result<(), Err<SyntaxError>> {
    if declared.text == used.text {
        return Ok(());
    }
    fail(
        Diagnostic::error(
            codes::BAD_FOR,
            format!(
                "the loop declares `{}` but this part uses `{}`",
                declared.text, used.text
            ),
            used.span,
        )
        .with_label("a different variable")
        .with_secondary(declared.span, "the loop variable")
        .with_help(format!(
            "use `{}` in all three parts of the header",
            declared.text
        )),
    )
}

/// `if (c) { … } (else if (c) { … })* (else { … })?`.
fn if_statement(input: Input) -> PResult<StmtKind> {
    let mut branches = Vec::new();
    let mut rest = input;
    loop {
        let (after, _) = keyword("if").parse(rest)?;
        let help = Some("write `if (@i < 4) { … }`");
        let (after, _) = cut(expect("`(`", help, sym("("))).parse(after)?;
        let (after, condition) = cut(expect("a condition", help, cond)).parse(after)?;
        let (after, _) = cut(expect("`)`", help, sym(")"))).parse(after)?;
        let (after, body) = cut(expect("`{`", help, block)).parse(after)?;
        branches.push((condition, body));
        rest = after;
        if !at_keyword(&rest, "else") {
            return Ok((
                rest,
                StmtKind::If(IfStmt {
                    branches,
                    otherwise: None,
                }),
            ));
        }
        let (after, _) = keyword("else").parse(rest)?;
        if at_keyword(&after, "if") {
            rest = after;
            continue;
        }
        let (after, otherwise) = cut(expect(
            "`{` or `if`",
            Some("write `else { … }` or `else if (…) { … }`"),
            block,
        ))
        .parse(after)?;
        return Ok((
            after,
            StmtKind::If(IfStmt {
                branches,
                otherwise: Some(otherwise),
            }),
        ));
    }
}

/// The queue whose commit keyword starts `input`, if any.
/// `sync` or `grid_sync`.
fn barrier(input: Input) -> PResult<StmtKind> {
    let scope = barrier_scope(&input).unwrap_or(BarrierScope::Block);
    let (rest, _) = keyword(scope.keyword()).parse(input)?;
    Ok((rest, StmtKind::Sync(scope)))
}

fn barrier_scope(input: &Input) -> Option<BarrierScope> {
    BarrierScope::ALL
        .into_iter()
        .find(|scope| at_keyword(input, scope.keyword()))
}

fn commit_queue(input: &Input) -> Option<AsyncQueue> {
    AsyncQueue::ALL
        .into_iter()
        .find(|queue| at_keyword(input, queue.commit_keyword()))
}

/// The queue whose wait keyword starts `input`, if any.
fn wait_queue(input: &Input) -> Option<AsyncQueue> {
    AsyncQueue::ALL
        .into_iter()
        .find(|queue| at_keyword(input, queue.wait_keyword()))
}

/// `mbarrier_arrive(%bar[s])`.
fn arrive(input: Input) -> PResult<StmtKind> {
    let (rest, _) = keyword("mbarrier_arrive").parse(input)?;
    let help = Some("write `mbarrier_arrive(%bar[s])`: arrive once on one barrier");
    let (rest, open) = cut(expect("`(`", help, sym("("))).parse(rest)?;
    let (rest, barrier) = cut(expect("a barrier such as `%bar[s]`", help, expr)).parse(rest)?;
    let (rest, _) = cut(super::expr::closing(")", open)).parse(rest)?;
    Ok((rest, StmtKind::Arrive(barrier)))
}

/// `mbarrier_wait(%bar[s], P)`.
fn wait_phase(input: Input) -> PResult<StmtKind> {
    let (rest, _) = keyword("mbarrier_wait").parse(input)?;
    let help = Some(
        "write `mbarrier_wait(%bar[s], P)`: wait until the barrier's phase of parity P (0 or 1) has completed",
    );
    let (rest, open) = cut(expect("`(`", help, sym("("))).parse(rest)?;
    let (rest, barrier) = cut(expect("a barrier such as `%bar[s]`", help, expr)).parse(rest)?;
    let (rest, _) = cut(expect("`,` and a phase parity", help, sym(","))).parse(rest)?;
    let (rest, parity) = cut(expect("a phase parity", help, int_expr)).parse(rest)?;
    let (rest, _) = cut(super::expr::closing(")", open)).parse(rest)?;
    Ok((rest, StmtKind::WaitPhase(barrier, parity)))
}

/// `async_wait(N)` or `mma_wait(N)`.
fn wait(input: Input, queue: AsyncQueue) -> PResult<StmtKind> {
    let (rest, _) = keyword(queue.wait_keyword()).parse(input)?;
    let help = match queue {
        AsyncQueue::Copies => "write `async_wait(N)`: wait until at most N copy groups are pending",
        AsyncQueue::Mma => {
            "write `mma_wait(N)`: wait until at most N groups of warpgroup matrix multiplies are pending"
        }
    };
    let help = Some(help);
    let (rest, open) = cut(expect("`(`", help, sym("("))).parse(rest)?;
    let (rest, count) = cut(expect("a number of groups", help, int_expr)).parse(rest)?;
    let (rest, _) = cut(super::expr::closing(")", open)).parse(rest)?;
    Ok((rest, StmtKind::Wait(queue, count)))
}
