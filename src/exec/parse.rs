//! CPU executor, first step: PTX text → one flat instruction list per
//! `.entry`, with its parameters, its registers numbered densely, its
//! shared-memory declarations (static, and the module's `.extern` dynamic
//! ones), its labels, and for each instruction the PTX line and the
//! `// line N: …` comment `ptxgen --annotate` writes above it.
//!
//! The parser reads the subset of PTX that `ptxgen` writes and that
//! hand-written kernels use (tests/gpu/*.ptx); what it does not understand
//! is an error naming the line, never skipped.

use std::collections::HashMap;

use super::ExecError;

/// A register or immediate operand, an address, a vector or a name.
#[derive(Clone, PartialEq, Debug)]
pub enum Operand {
    /// A virtual register, by its dense number in the kernel.
    Reg(u32),
    /// A special register: `%tid.x`, `%laneid`, …
    Special(Special),
    /// An integer immediate.
    Int(i64),
    /// A float immediate written `0fXXXXXXXX` (its bits).
    F32Bits(u32),
    /// `{a, b, …}`.
    Vector(Vec<Operand>),
    /// `[base+offset]`.
    Address {
        /// A register or a name (parameter, shared variable).
        base: Box<Operand>,
        /// The constant added.
        offset: i64,
    },
    /// `[map, {c0, c1, …}]`: a tensor map and the coordinates of a box in
    /// its tensor (`cp.async.bulk.tensor`), innermost first.
    TensorCoords {
        /// The map's address (a register, or the parameter's name).
        map: Box<Operand>,
        /// The coordinates.
        coords: Vec<Operand>,
    },
    /// A parameter, shared variable or label.
    Name(String),
}

/// The special registers the executor knows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Special {
    /// `%tid.x` (and `.y`, `.z`: always 0 in a 1-D launch).
    Tid(u8),
    /// `%ntid.x`.
    Ntid(u8),
    /// `%ctaid.x`.
    Ctaid(u8),
    /// `%nctaid.x`.
    Nctaid(u8),
    /// `%laneid`.
    LaneId,
    /// `%warpid`.
    WarpId,
}

/// One instruction as written.
#[derive(Clone, PartialEq, Debug)]
pub struct Instr {
    /// `@%p` (false) or `@!%p` (true): the predicate register and negation.
    pub guard: Option<(u32, bool)>,
    /// The opcode split at its dots: `["ld", "global", "v4", "f32"]`.
    pub opcode: Vec<String>,
    /// The operands, in order.
    pub operands: Vec<Operand>,
    /// The 1-based line in the PTX text.
    pub line: usize,
    /// The instruction text, trimmed (without the `;`).
    pub text: String,
    /// The nearest `// line N: …` annotation above it (the `.gph` line).
    pub source: Option<String>,
}

/// A `.shared` variable of a kernel, or a module-scope `.global` one.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct VariableDecl {
    /// Its name.
    pub name: String,
    /// Its alignment in bytes.
    pub align: u32,
    /// Its size in bytes; `None` for an `.extern` (dynamic) array.
    pub bytes: Option<u32>,
}

/// A kernel parameter.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ParamDecl {
    /// Its name.
    pub name: String,
    /// Its width in bytes: 4 or 8 for a scalar, the array's size for a
    /// `.b8` array (128 for a tensor map).
    pub bytes: u32,
}

/// One `.entry`, flattened.
#[derive(Clone, PartialEq, Debug)]
pub struct Entry {
    /// The kernel's name.
    pub name: String,
    /// Its parameters in ABI order.
    pub params: Vec<ParamDecl>,
    /// Its shared variables: static ones in declaration order, then the
    /// module's `.extern` ones (all at the start of the dynamic region).
    pub shared: Vec<VariableDecl>,
    /// The module's `.global` variables (zero at load).
    pub globals: Vec<VariableDecl>,
    /// Its instructions.
    pub body: Vec<Instr>,
    /// Label → index of the instruction that follows it.
    pub labels: HashMap<String, usize>,
    /// Register names by number.
    pub registers: Vec<String>,
}

/// Parses every `.entry` of `text`.
pub fn parse_module(text: &str) -> Result<Vec<Entry>, ExecError> {
    let mut externs = Vec::new();
    let mut globals = Vec::new();
    let mut entries = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((index, raw)) = lines.next() {
        let line = strip_comment(raw).trim();
        if line.starts_with(".extern .shared") {
            externs.push(variable_decl(line, index + 1)?);
        } else if line.starts_with(".global") {
            globals.push(variable_decl(line, index + 1)?);
        } else if line.contains(".entry") {
            let mut header = line.to_string();
            while !header.contains(')') {
                let (_, next) = lines
                    .next()
                    .ok_or_else(|| syntax(index + 1, "unterminated parameter list"))?;
                header.push_str(strip_comment(next).trim());
            }
            let mut entry = entry_header(&header, index + 1)?;
            parse_body(&mut lines, &mut entry)?;
            entries.push(entry);
        }
    }
    for entry in &mut entries {
        entry.shared.extend(externs.iter().cloned());
        entry.globals.extend(globals.iter().cloned());
    }
    Ok(entries)
}

fn syntax(line: usize, message: &str) -> ExecError {
    ExecError::Syntax {
        line,
        message: message.to_string(),
    }
}

fn strip_comment(line: &str) -> &str {
    line.find("//").map_or(line, |at| &line[..at])
}

fn entry_header(header: &str, line: usize) -> Result<Entry, ExecError> {
    let open = header
        .find('(')
        .ok_or_else(|| syntax(line, "no `(` after .entry"))?;
    let name = header[..open]
        .split_whitespace()
        .last()
        .ok_or_else(|| syntax(line, "an .entry without a name"))?;
    let close = header.rfind(')').unwrap_or(header.len());
    let params = header[open + 1..close]
        .split(',')
        .filter(|param| !param.trim().is_empty())
        .map(|param| param_decl(param, line))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Entry {
        name: name.to_string(),
        params,
        shared: Vec::new(),
        globals: Vec::new(),
        body: Vec::new(),
        labels: HashMap::new(),
        registers: Vec::new(),
    })
}

/// `.param .u64 A`, `.param .u32 M`, or a byte array passed by value:
/// `.param .align 64 .b8 tmap0_A[128]` (a tensor map).
fn param_decl(param: &str, line: usize) -> Result<ParamDecl, ExecError> {
    let words: Vec<&str> = param.split_whitespace().collect();
    // The type is the first dotted word after `.param` that is not
    // `.align` (whose number follows it).
    let mut ty = None;
    let mut at = 1;
    while let Some(&word) = words.get(at) {
        if word == ".align" {
            at += 2;
            continue;
        }
        ty = Some(word);
        break;
    }
    let last = words.last().copied().unwrap_or_default();
    let (name, count) = match last.find('[') {
        Some(open) => (&last[..open], Some(last[open + 1..].trim_end_matches(']'))),
        None => (last, None),
    };
    let bytes = match (ty, count) {
        (Some(".u64" | ".b64" | ".s64"), None) => 8,
        (Some(".u32" | ".b32" | ".s32" | ".f32"), None) => 4,
        (Some(".b8"), Some(count)) => count
            .parse()
            .map_err(|_| syntax(line, &format!("parameter array size `{count}`")))?,
        (other, _) => return Err(syntax(line, &format!("parameter type {other:?}"))),
    };
    Ok(ParamDecl {
        name: name.to_string(),
        bytes,
    })
}

/// `.shared .align 128 .b8 smem_1[512];`, `.extern .shared … name[];` or
/// `.global .align 4 .b8 counter[4];`.
fn variable_decl(line: &str, number: usize) -> Result<VariableDecl, ExecError> {
    let words: Vec<&str> = line.trim_end_matches(';').split_whitespace().collect();
    let align = words
        .iter()
        .position(|w| *w == ".align")
        .and_then(|at| words.get(at + 1))
        .and_then(|w| w.parse().ok())
        .unwrap_or(1);
    let element: u32 = match words
        .iter()
        .find(|w| w.starts_with(".b") || w.starts_with(".f"))
    {
        Some(&".b8") => 1,
        Some(&".b16" | &".f16") => 2,
        Some(&".b32" | &".f32") => 4,
        Some(&".b64" | &".f64") => 8,
        other => return Err(syntax(number, &format!("array element type {other:?}"))),
    };
    let last = words.last().copied().unwrap_or_default();
    let (name, count) = match last.find('[') {
        Some(at) => (&last[..at], last[at + 1..].trim_end_matches(']')),
        None => (last, "1"),
    };
    let bytes = if count.is_empty() {
        None
    } else {
        let count: u32 = count
            .parse()
            .map_err(|_| syntax(number, "an array size that is not a number"))?;
        Some(count * element)
    };
    Ok(VariableDecl {
        name: name.to_string(),
        align,
        bytes,
    })
}

fn parse_body<'t>(
    lines: &mut impl Iterator<Item = (usize, &'t str)>,
    entry: &mut Entry,
) -> Result<(), ExecError> {
    let mut registers: HashMap<String, u32> = HashMap::new();
    let mut annotation: Option<String> = None;
    let mut opened = false;
    for (index, raw) in lines {
        let number = index + 1;
        let trimmed = raw.trim();
        if let Some(comment) = trimmed.strip_prefix("// line ") {
            annotation = Some(format!("line {comment}"));
            continue;
        }
        let line = strip_comment(trimmed).trim();
        if line.is_empty() {
            continue;
        }
        if line == "{" {
            opened = true;
            continue;
        }
        if !opened {
            // .maxntid, .minnctapersm and similar performance directives.
            continue;
        }
        if line == "}" {
            entry.registers = sorted_names(&registers);
            return Ok(());
        }
        if line.starts_with(".reg") {
            continue;
        }
        if line.starts_with(".shared") {
            entry.shared.push(variable_decl(line, number)?);
            continue;
        }
        let mut rest = line;
        while let Some(colon) = label_end(rest) {
            entry
                .labels
                .insert(rest[..colon].trim().to_string(), entry.body.len());
            rest = rest[colon + 1..].trim();
        }
        if rest.is_empty() {
            continue;
        }
        for statement in rest.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let instr = instruction(statement, number, annotation.clone(), &mut registers)?;
            entry.body.push(instr);
        }
    }
    Err(syntax(
        0,
        &format!("`.entry {}` has no closing brace", entry.name),
    ))
}

fn sorted_names(registers: &HashMap<String, u32>) -> Vec<String> {
    let mut names = vec![String::new(); registers.len()];
    for (name, &id) in registers {
        names[id as usize] = name.clone();
    }
    names
}

/// The end of a leading `LABEL:` (a label has no spaces or brackets).
fn label_end(text: &str) -> Option<usize> {
    let colon = text.find(':')?;
    let head = &text[..colon];
    // Not `shared::cta`: a label is an identifier (no dots) before one colon.
    let is_label = !head.is_empty()
        && !text[colon + 1..].starts_with(':')
        && head
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$');
    is_label.then_some(colon)
}

fn instruction(
    text: &str,
    line: usize,
    source: Option<String>,
    registers: &mut HashMap<String, u32>,
) -> Result<Instr, ExecError> {
    let mut rest = text;
    let mut guard = None;
    if let Some(predicated) = rest.strip_prefix('@') {
        let end = predicated
            .find(char::is_whitespace)
            .ok_or_else(|| syntax(line, "a guard without an instruction"))?;
        let (negated, name) = match predicated[..end].strip_prefix('!') {
            Some(name) => (true, name),
            None => (false, &predicated[..end]),
        };
        guard = Some((register(name, registers), negated));
        rest = predicated[end..].trim();
    }
    let (opcode, operands) = match rest.find(char::is_whitespace) {
        Some(at) => (&rest[..at], rest[at..].trim()),
        None => (rest, ""),
    };
    let operands = split_operands(operands)
        .into_iter()
        .map(|o| operand(o, line, registers))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Instr {
        guard,
        opcode: opcode.split('.').map(str::to_string).collect(),
        operands,
        line,
        text: text.to_string(),
        source,
    })
}

fn register(name: &str, registers: &mut HashMap<String, u32>) -> u32 {
    let next = registers.len() as u32;
    *registers.entry(name.to_string()).or_insert(next)
}

/// Splits at the commas outside braces and brackets.
fn split_operands(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (at, c) in text.char_indices() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(text[start..at].trim());
                start = at + 1;
            }
            _ => {}
        }
    }
    if !text[start..].trim().is_empty() {
        parts.push(text[start..].trim());
    }
    parts
}

fn special(name: &str) -> Option<Special> {
    let axis = |suffix: &str| match suffix {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if name == "%laneid" {
        return Some(Special::LaneId);
    }
    if name == "%warpid" {
        return Some(Special::WarpId);
    }
    let (base, suffix) = name.rsplit_once('.')?;
    let axis = axis(suffix)?;
    match base {
        "%tid" => Some(Special::Tid(axis)),
        "%ntid" => Some(Special::Ntid(axis)),
        "%ctaid" => Some(Special::Ctaid(axis)),
        "%nctaid" => Some(Special::Nctaid(axis)),
        _ => None,
    }
}

fn operand(
    text: &str,
    line: usize,
    registers: &mut HashMap<String, u32>,
) -> Result<Operand, ExecError> {
    if let Some(inner) = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
        let items = split_operands(inner)
            .into_iter()
            .map(|o| operand(o, line, registers))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Operand::Vector(items));
    }
    if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        if let [map, coords] = split_operands(inner).as_slice() {
            let map = Box::new(operand(map, line, registers)?);
            let Operand::Vector(coords) = operand(coords, line, registers)? else {
                return Err(syntax(line, &format!("tensor coordinates in `{text}`")));
            };
            return Ok(Operand::TensorCoords { map, coords });
        }
        let (base, offset) = match inner.find(['+', '-']) {
            Some(at) if at > 0 => {
                let offset: i64 = inner[at..]
                    .trim()
                    .trim_start_matches('+')
                    .parse()
                    .map_err(|_| syntax(line, &format!("address offset in `{text}`")))?;
                (inner[..at].trim(), offset)
            }
            _ => (inner.trim(), 0),
        };
        return Ok(Operand::Address {
            base: Box::new(operand(base, line, registers)?),
            offset,
        });
    }
    if let Some(name) = text.strip_prefix('%').map(|_| text) {
        return Ok(match special(name) {
            Some(special) => Operand::Special(special),
            None => Operand::Reg(register(name, registers)),
        });
    }
    if let Some(hex) = text.strip_prefix("0f").or_else(|| text.strip_prefix("0F")) {
        let bits = u32::from_str_radix(hex, 16)
            .map_err(|_| syntax(line, &format!("float immediate `{text}`")))?;
        return Ok(Operand::F32Bits(bits));
    }
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        let value = u64::from_str_radix(hex.trim_end_matches('U'), 16)
            .map_err(|_| syntax(line, &format!("hex immediate `{text}`")))?;
        return Ok(Operand::Int(value as i64));
    }
    let first = text.chars().next().unwrap_or(' ');
    if first.is_ascii_digit() || first == '-' {
        let digits = text.trim_end_matches('U');
        return match digits.parse::<i64>() {
            Ok(value) => Ok(Operand::Int(value)),
            // Large unsigned constants (descriptor fields) above i64::MAX.
            Err(_) => digits
                .parse::<u64>()
                .map(|v| Operand::Int(v as i64))
                .map_err(|_| syntax(line, &format!("immediate `{text}`"))),
        };
    }
    Ok(Operand::Name(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_hand_written_kernel() {
        let text = include_str!("../../tests/gpu/reverse_through_shared.ptx");
        let entries = parse_module(text).unwrap();
        let entry = &entries[0];
        assert_eq!(entry.name, "reverse_through_shared");
        assert_eq!(entry.params.len(), 3);
        assert_eq!(entry.shared[0].bytes, None);
        let store = entry.labels["STORED"];
        assert_eq!(entry.body[store].opcode, ["bar", "sync"]);
        let guarded = entry.body.iter().find(|i| i.guard.is_some()).unwrap();
        assert_eq!(guarded.opcode, ["bra"]);
    }

    #[test]
    fn reads_vectors_addresses_and_float_immediates() {
        let mut registers = HashMap::new();
        let i = instruction(
            "ld.global.v2.f32 {%f1, %f2}, [%rd3+-8]",
            7,
            None,
            &mut registers,
        )
        .unwrap();
        assert_eq!(i.operands.len(), 2);
        assert!(matches!(
            &i.operands[1],
            Operand::Address { offset: -8, .. }
        ));
        let m = instruction("mov.f32 %f1, 0f3F800000", 8, None, &mut registers).unwrap();
        assert_eq!(m.operands[1], Operand::F32Bits(0x3F80_0000));
        assert_eq!(m.operands[0], Operand::Reg(0));
    }

    #[test]
    fn reads_tensor_map_parameters_and_tensor_coordinates() {
        let header = ".visible .entry k(.param .u64 A,.param .u32 M,\
                      .param .align 64 .b8 tmap0_A[128])";
        let entry = entry_header(header, 1).unwrap();
        let widths: Vec<(&str, u32)> = entry
            .params
            .iter()
            .map(|p| (p.name.as_str(), p.bytes))
            .collect();
        assert_eq!(widths, [("A", 8), ("M", 4), ("tmap0_A", 128)]);
        assert!(entry_header(".entry k(.param .align 8 .b8 x[y])", 1).is_err());
        let mut registers = HashMap::new();
        let copy = instruction(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes \
             [%r11], [%rd6, {%r12, -3}], [%r14+8]",
            9,
            None,
            &mut registers,
        )
        .unwrap();
        assert_eq!(copy.operands.len(), 3);
        let Operand::TensorCoords { map, coords } = &copy.operands[1] else {
            panic!("{:?}", copy.operands[1]);
        };
        assert_eq!(**map, Operand::Reg(1));
        assert_eq!(coords[1], Operand::Int(-3));
        assert!(matches!(
            copy.operands[2],
            Operand::Address { offset: 8, .. }
        ));
    }
}
