//! Support code shared by the `simplify_*` integration tests: reading index
//! expressions and facts from text, so that cases read like the code they
//! stand for.
//!
//! Expressions use C's operators and precedence (`* / %` over `+ -` over
//! `<< >>` over `&` over `^`), decimal or `0x` literals and the variable
//! names `Expr` prints: `tid`, `bid`, `d0`, `k1`. Nodes are built exactly
//! as written (no folding), so a test sees the input it wrote.

#![allow(dead_code)] // each test file uses a different part

use graphene::expr::{Expr, Var};
use graphene::index::facts::{Facts, FactsBuilder};

/// Parses an expression; panics with the position on bad text (test input).
pub fn expr(text: &str) -> Expr {
    let tokens = tokenize(text);
    let mut parser = Parser { tokens, pos: 0 };
    let e = parser.level(0);
    assert!(
        parser.pos == parser.tokens.len(),
        "trailing input in `{text}` at token {}",
        parser.pos
    );
    e
}

#[derive(Clone, PartialEq, Debug)]
enum Token {
    Number(i64),
    Name(String),
    Op(&'static str),
    Open,
    Close,
}

fn tokenize(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_alphanumeric() {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let value = match word.strip_prefix("0x") {
                Some(hex) => i64::from_str_radix(hex, 16),
                None => word.parse(),
            };
            tokens.push(Token::Number(
                value.unwrap_or_else(|_| panic!("bad number `{word}`")),
            ));
        } else if c.is_ascii_alphabetic() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_alphanumeric() {
                i += 1;
            }
            tokens.push(Token::Name(chars[start..i].iter().collect()));
        } else if c == '(' || c == ')' {
            tokens.push(if c == '(' { Token::Open } else { Token::Close });
            i += 1;
        } else {
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            let op = ["<<", ">>"].into_iter().find(|op| *op == two);
            let op = op.or_else(|| {
                ["+", "-", "*", "/", "%", "&", "^"]
                    .into_iter()
                    .find(|op| op.starts_with(c))
            });
            let op = op.unwrap_or_else(|| panic!("unexpected `{c}` in `{text}`"));
            i += op.len();
            tokens.push(Token::Op(op));
        }
    }
    tokens
}

/// Operator levels, loosest first.
const LEVELS: [&[&str]; 5] = [&["^"], &["&"], &["<<", ">>"], &["+", "-"], &["*", "/", "%"]];

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn level(&mut self, depth: usize) -> Expr {
        if depth == LEVELS.len() {
            return self.atom();
        }
        let mut lhs = self.level(depth + 1);
        while let Some(Token::Op(op)) = self.tokens.get(self.pos).cloned() {
            if !LEVELS[depth].contains(&op) {
                break;
            }
            self.pos += 1;
            let rhs = Box::new(self.level(depth + 1));
            let lhs_box = Box::new(lhs);
            lhs = match op {
                "+" => Expr::Add(lhs_box, rhs),
                "-" => Expr::Sub(lhs_box, rhs),
                "*" => Expr::Mul(lhs_box, rhs),
                "/" => Expr::Div(lhs_box, rhs),
                "%" => Expr::Rem(lhs_box, rhs),
                "&" => Expr::And(lhs_box, rhs),
                "^" => Expr::Xor(lhs_box, rhs),
                "<<" => Expr::Shl(lhs_box, rhs),
                ">>" => Expr::Shr(lhs_box, rhs),
                other => panic!("unknown operator {other}"),
            };
        }
        lhs
    }

    fn atom(&mut self) -> Expr {
        let token = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        match token {
            Some(Token::Number(value)) => Expr::Const(value),
            Some(Token::Name(name)) => Expr::Var(var(&name)),
            Some(Token::Open) => {
                let inner = self.level(0);
                assert_eq!(
                    self.tokens.get(self.pos),
                    Some(&Token::Close),
                    "missing `)`"
                );
                self.pos += 1;
                inner
            }
            other => panic!("expected an operand, found {other:?}"),
        }
    }
}

/// `tid`, `bid`, `d<i>`, `k<i>`.
pub fn var(name: &str) -> Var {
    match name {
        "tid" => Var::ThreadId,
        "bid" => Var::BlockId,
        _ => {
            let index = |rest: &str| {
                rest.parse::<u32>()
                    .unwrap_or_else(|_| panic!("unknown variable `{name}`"))
            };
            match name.split_at(1) {
                ("d", rest) => Var::Dim(index(rest)),
                ("k", rest) => Var::Loop(index(rest)),
                _ => panic!("unknown variable `{name}`"),
            }
        }
    }
}

/// Parses facts, `;`-separated: `threads N`, `blocks N`, `loop I LO..HI
/// step S` (`HI` may be `?`, symbolic), `range VAR LO..HI` (inclusive, `HI`
/// may be `?`), `multiple VAR D`, `congruent VAR R mod M`.
pub fn facts(text: &str) -> Facts {
    let mut builder: FactsBuilder = Facts::builder();
    let number = |word: &str| {
        word.parse::<i64>()
            .unwrap_or_else(|_| panic!("bad number `{word}` in `{text}`"))
    };
    let bounds = |word: &str| {
        let (lo, hi) = word
            .split_once("..")
            .unwrap_or_else(|| panic!("expected LO..HI, got `{word}`"));
        (number(lo), (hi != "?").then(|| number(hi)))
    };
    for item in text
        .split(';')
        .map(str::trim)
        .filter(|item| !item.is_empty())
    {
        let words: Vec<&str> = item.split_whitespace().collect();
        builder = match words.as_slice() {
            ["threads", n] => builder.threads(number(n)),
            ["blocks", n] => builder.blocks(number(n)),
            ["loop", i, range, "step", step] => {
                let (lo, hi) = bounds(range);
                builder.counted_loop(number(i) as u32, lo, hi, number(step))
            }
            ["range", v, range] => {
                let (lo, hi) = bounds(range);
                builder.range(var(v), lo, hi)
            }
            ["multiple", v, d] => builder.multiple_of(var(v), number(d)),
            ["congruent", v, r, "mod", m] => builder.congruent(var(v), number(m), number(r)),
            _ => panic!("unknown fact `{item}`"),
        };
    }
    builder
        .build()
        .unwrap_or_else(|error| panic!("bad facts `{text}`: {error}"))
}

/// The values of `var` allowed by `facts`, in order; an unbounded range is
/// cut off after `cap` values.
pub fn values(facts: &Facts, var: Var, cap: usize) -> Vec<i64> {
    let known = facts.of(var);
    let lo = known.range.lo().unwrap_or(0);
    let mut out = Vec::new();
    let mut v = lo;
    while out.len() < cap && known.range.hi().is_none_or(|hi| v <= hi) {
        if known.congruence.contains(v) {
            out.push(v);
        }
        v += 1;
    }
    out
}

/// Assignments of `vars` allowed by `facts`: every combination when there
/// are at most `limit`, otherwise the corners (each variable at its first
/// and last value) and `limit` pseudo-random combinations from `seed`.
pub fn assignments(vars: &[Var], facts: &Facts, limit: usize, seed: u64) -> Vec<Vec<(Var, i64)>> {
    let per_var: Vec<Vec<i64>> = vars.iter().map(|&v| values(facts, v, 4096)).collect();
    let total = per_var
        .iter()
        .try_fold(1usize, |acc, vs| acc.checked_mul(vs.len()));
    let mut out = Vec::new();
    if total.is_some_and(|t| t <= limit) {
        let mut index = vec![0usize; vars.len()];
        loop {
            out.push(
                vars.iter()
                    .zip(&index)
                    .zip(&per_var)
                    .map(|((&v, &i), vs)| (v, vs[i]))
                    .collect(),
            );
            let Some(digit) = (0..vars.len()).find(|&d| index[d] + 1 < per_var[d].len()) else {
                break;
            };
            index[digit] += 1;
            index[..digit].iter_mut().for_each(|i| *i = 0);
        }
        return out;
    }
    for corner in 0..(1usize << vars.len().min(10)) {
        out.push(
            vars.iter()
                .zip(&per_var)
                .enumerate()
                .map(|(i, (&v, vs))| {
                    (
                        v,
                        if corner >> i & 1 == 1 {
                            vs[vs.len() - 1]
                        } else {
                            vs[0]
                        },
                    )
                })
                .collect(),
        );
    }
    let mut state = seed | 1;
    let mut next = move || {
        // xorshift64: reproducible without a dependency.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..limit {
        out.push(
            vars.iter()
                .zip(&per_var)
                .map(|(&v, vs)| (v, vs[(next() % vs.len() as u64) as usize]))
                .collect(),
        );
    }
    out
}

/// An evaluation environment from an assignment.
pub fn env(assignment: &[(Var, i64)]) -> impl Fn(Var) -> Option<i64> + '_ {
    move |var| {
        assignment
            .iter()
            .find(|(v, _)| *v == var)
            .map(|&(_, value)| value)
    }
}

/// How divisions are evaluated by [`eval_machine`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Division {
    /// Floor division and the non-negative remainder, as [`Expr::eval`].
    Floor,
    /// As emitted code may divide: a negative dividend or a divisor below 1
    /// has no value (PTX divides by truncation; the IR promises
    /// non-negative operands, and simplification must keep that promise).
    NonNegativeOnly,
}

/// Evaluates in machine arithmetic: `+ - * <<` wrap modulo `2^64` (on
/// which the linear rules are exact identities, as in emitted code), `>>`
/// is arithmetic, and divisions follow `division`. `None` where there is no
/// value.
pub fn eval_machine(
    expr: &Expr,
    env: &dyn Fn(Var) -> Option<i64>,
    division: Division,
) -> Option<i64> {
    let both = |a: &Expr, b: &Expr| {
        Some((
            eval_machine(a, env, division)?,
            eval_machine(b, env, division)?,
        ))
    };
    let divide = |a: &Expr, b: &Expr, quotient: bool| {
        let (x, y) = both(a, b)?;
        match division {
            Division::Floor if quotient => x.checked_div_euclid(y),
            Division::Floor => x.checked_rem_euclid(y),
            Division::NonNegativeOnly if x < 0 || y < 1 => None,
            Division::NonNegativeOnly => Some(if quotient { x / y } else { x % y }),
        }
    };
    match expr {
        Expr::Const(value) => Some(*value),
        Expr::Var(var) => env(*var),
        Expr::Add(a, b) => both(a, b).map(|(x, y)| x.wrapping_add(y)),
        Expr::Sub(a, b) => both(a, b).map(|(x, y)| x.wrapping_sub(y)),
        Expr::Mul(a, b) => both(a, b).map(|(x, y)| x.wrapping_mul(y)),
        Expr::Div(a, b) => divide(a, b, true),
        Expr::Rem(a, b) => divide(a, b, false),
        Expr::And(a, b) => both(a, b).map(|(x, y)| x & y),
        Expr::Xor(a, b) => both(a, b).map(|(x, y)| x ^ y),
        Expr::Shr(a, b) => both(a, b).and_then(|(x, y)| x.checked_shr(u32::try_from(y).ok()?)),
        Expr::Shl(a, b) => both(a, b).and_then(|(x, y)| x.checked_shl(u32::try_from(y).ok()?)),
    }
}
