//! Runtime stage (feature `cuda`): the launch manifest's integer
//! expressions (`(M/128)*(N/256)`), evaluated with the dims bound — the
//! syntax `launch::manifest` writes, read here as `benches/harness.py`
//! reads it.

/// Binding strength of a binary operator (C's order; higher binds tighter).
fn strength(op: &str) -> Option<u8> {
    match op {
        "^" => Some(1),
        "&" => Some(2),
        "<<" | ">>" => Some(3),
        "+" | "-" => Some(4),
        "*" | "/" | "%" => Some(5),
        _ => None,
    }
}

fn tokens(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let mut word = String::new();
            while let Some(&c) = chars
                .peek()
                .filter(|c| c.is_ascii_alphanumeric() || **c == '_')
            {
                word.push(c);
                chars.next();
            }
            out.push(word);
        } else if c == '<' || c == '>' {
            chars.next();
            if chars.next() != Some(c) {
                return Err(format!("`{c}` alone is not an operator"));
            }
            out.push(format!("{c}{c}"));
        } else if "+-*/%&^()".contains(c) {
            out.push(c.to_string());
            chars.next();
        } else {
            return Err(format!("unexpected `{c}`"));
        }
    }
    Ok(out)
}

struct Reader<'a> {
    tokens: Vec<String>,
    at: usize,
    value_of: &'a dyn Fn(&str) -> Option<i64>,
}

impl Reader<'_> {
    fn binary(&mut self, least: u8) -> Result<i64, String> {
        let mut value = self.operand()?;
        while let Some(op) = self.tokens.get(self.at).cloned() {
            let Some(own) = strength(&op).filter(|&own| own >= least) else {
                break;
            };
            self.at += 1;
            let rhs = self.binary(own + 1)?;
            value = apply(&op, value, rhs)?;
        }
        Ok(value)
    }

    fn operand(&mut self) -> Result<i64, String> {
        let token = self
            .tokens
            .get(self.at)
            .cloned()
            .ok_or("the expression ends early")?;
        self.at += 1;
        match token.as_str() {
            "(" => {
                let value = self.binary(0)?;
                if self.tokens.get(self.at).map(String::as_str) != Some(")") {
                    return Err("a `(` is not closed".into());
                }
                self.at += 1;
                Ok(value)
            }
            "-" => self
                .operand()?
                .checked_neg()
                .ok_or_else(|| "overflow".to_string()),
            _ if token.starts_with(|c: char| c.is_ascii_digit()) => token
                .parse()
                .map_err(|_| format!("`{token}` is not a 64-bit integer")),
            _ if token.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') => {
                (self.value_of)(&token).ok_or_else(|| format!("`{token}` has no value"))
            }
            _ => Err(format!("`{token}` where a value belongs")),
        }
    }
}

fn apply(op: &str, a: i64, b: i64) -> Result<i64, String> {
    let overflow = || format!("overflow in {a} {op} {b}");
    let divisor = || {
        if b == 0 {
            Err(format!("division by zero in {a} {op} {b}"))
        } else {
            Ok(b)
        }
    };
    let shift = || {
        u32::try_from(b)
            .ok()
            .filter(|&s| s < 64)
            .ok_or_else(overflow)
    };
    match op {
        "+" => a.checked_add(b).ok_or_else(overflow),
        "-" => a.checked_sub(b).ok_or_else(overflow),
        "*" => a.checked_mul(b).ok_or_else(overflow),
        "/" => a.checked_div_euclid(divisor()?).ok_or_else(overflow),
        "%" => a.checked_rem_euclid(divisor()?).ok_or_else(overflow),
        "&" => Ok(a & b),
        "^" => Ok(a ^ b),
        "<<" => a
            .checked_shl(shift()?)
            .filter(|v| v >> b == a)
            .ok_or_else(overflow),
        _ => Ok(a >> shift()?),
    }
}

/// The value of a manifest expression (`(M/128)*(N/256)`), with names given
/// their values by `value_of`: integers, names, `+ - * / % & ^ << >>` with
/// C's precedence, parentheses, unary minus; `/` and `%` the floor division
/// and remainder. An error says why: an unknown name, a division by zero,
/// an overflow of 64 bits, text that is not an expression.
pub fn evaluate(text: &str, value_of: &dyn Fn(&str) -> Option<i64>) -> Result<i64, String> {
    let describe = |why: String| format!("`{text}`: {why}");
    let mut reader = Reader {
        tokens: tokens(text).map_err(describe)?,
        at: 0,
        value_of,
    };
    let value = reader.binary(0).map_err(describe)?;
    match reader.tokens.get(reader.at) {
        None => Ok(value),
        Some(extra) => Err(describe(format!("unexpected `{extra}`"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> Result<i64, String> {
        let dims = |name: &str| match name {
            "M" => Some(4096),
            "N" => Some(2048),
            "K_1" => Some(7),
            _ => None,
        };
        evaluate(text, &dims)
    }

    #[test]
    fn expressions_follow_the_precedence_the_printer_assumes() {
        assert_eq!(value("(M/128)*(N/256)"), Ok(32 * 8));
        assert_eq!(value("K_1 + K_1*(M - 1)"), Ok(7 * 4096));
        assert_eq!(value("2*M*N*K_1"), Ok(2 * 4096 * 2048 * 7));
        assert_eq!(value("1 + 2*3 << 1"), Ok(14));
        assert_eq!(value("K_1 ^ 3 & 1"), Ok(7 ^ (3 & 1)));
        assert_eq!(value("(M >> 4) % 10 - 2"), Ok(256 % 10 - 2));
        assert_eq!(value("M - N - 1"), Ok(2047));
        assert_eq!(value("K_1 / 2 * 2"), Ok(6));
        assert_eq!(value("-7/2"), Ok(-4), "floor division");
        assert_eq!(value("-7 % 2"), Ok(1));
        assert_eq!(value("  42 "), Ok(42));
    }

    #[test]
    fn expression_errors_say_why() {
        let error = |text: &str| value(text).unwrap_err();
        assert_eq!(error("M/Q"), "`M/Q`: `Q` has no value");
        assert_eq!(
            error("M/(N - 2048)"),
            "`M/(N - 2048)`: division by zero in 4096 / 0"
        );
        assert!(error("M*M*M*M*M*M").contains("overflow"));
        assert!(error("1 << 64").contains("overflow"));
        assert_eq!(error("(M + 1"), "`(M + 1`: a `(` is not closed");
        assert_eq!(error("M N"), "`M N`: unexpected `N`");
        assert_eq!(error("M < 2"), "`M < 2`: `<` alone is not an operator");
        assert_eq!(error("M +"), "`M +`: the expression ends early");
        assert_eq!(error("M.x"), "`M.x`: unexpected `.`");
    }
}
