//! PTX model: the parser of template files (`ptx-templates/*.ptxt`; the
//! format is specified in `ptx-templates/README.md`).
//!
//! Parsing expands each entry's `with:` variants, so every expanded entry is
//! an ordinary [`Template`]; every error carries the file and line.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::error::TemplateError;
use super::target::{PtxVersion, Requirement, Sm, TargetName};
use super::template::{Family, Piece, Slot, SlotKind, Template};

struct RawField {
    key: String,
    value: String,
    line: usize,
}

struct RawEntry {
    name: String,
    line: usize,
    fields: Vec<RawField>,
}

/// Parses one template file. `file` is its name, used in errors and checked
/// against the `family` line (`int.ptxt` must say `family int`).
pub fn parse_family(file: &str, text: &str) -> Result<Family, TemplateError> {
    let error = |line: usize, message: String| TemplateError {
        file: file.to_string(),
        line,
        message,
    };
    let stem = file.strip_suffix(".ptxt").unwrap_or(file);
    let mut header: Option<(String, String)> = None;
    let mut raw_entries: Vec<RawEntry> = Vec::new();
    for (index, full_line) in text.lines().enumerate() {
        let line = index + 1;
        let trimmed = full_line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indented = full_line.starts_with(' ') || full_line.starts_with('\t');
        if let Some(rest) = trimmed.strip_prefix("family ").filter(|_| !indented) {
            if header.is_some() {
                return Err(error(line, "a second `family` line".into()));
            }
            let (name, description) = rest
                .split_once(':')
                .ok_or_else(|| error(line, "expected `family NAME: description`".into()))?;
            let name = name.trim();
            if name != stem {
                return Err(error(
                    line,
                    format!("family `{name}` must be named after its file, `{stem}`"),
                ));
            }
            header = Some((name.to_string(), description.trim().to_string()));
        } else if let Some(name) = trimmed.strip_prefix("entry ").filter(|_| !indented) {
            if header.is_none() {
                return Err(error(
                    line,
                    "the file must start with a `family` line".into(),
                ));
            }
            raw_entries.push(RawEntry {
                name: name.trim().to_string(),
                line,
                fields: Vec::new(),
            });
        } else if indented {
            let entry = raw_entries
                .last_mut()
                .ok_or_else(|| error(line, "a field outside any `entry`".into()))?;
            let (key, value) = trimmed
                .split_once(':')
                .ok_or_else(|| error(line, format!("expected `key: value`, found `{trimmed}`")))?;
            entry.fields.push(RawField {
                key: key.trim().to_string(),
                value: value.trim().to_string(),
                line,
            });
        } else {
            return Err(error(
                line,
                format!("expected `family`, `entry` or an indented field, found `{trimmed}`"),
            ));
        }
    }
    let (name, description) =
        header.ok_or_else(|| error(1, "the file has no `family` line".into()))?;
    let mut templates = Vec::new();
    for raw in &raw_entries {
        for variant in expand_variants(raw).map_err(|(line, message)| error(line, message))? {
            let template = build_template(raw, &variant, &name, file)
                .map_err(|(line, message)| error(line, message))?;
            templates.push(Arc::new(template));
        }
    }
    if templates.is_empty() {
        return Err(error(1, "the family has no entries".into()));
    }
    Ok(Family {
        name,
        description,
        templates,
    })
}

type Located<T> = Result<T, (usize, String)>;
type Bindings = BTreeMap<String, String>;

/// The cartesian product of the entry's `with:` lines, first line outermost.
fn expand_variants(raw: &RawEntry) -> Located<Vec<Bindings>> {
    let mut variants: Vec<Bindings> = vec![Bindings::new()];
    for field in raw.fields.iter().filter(|field| field.key == "with") {
        let mut alternatives: Vec<Bindings> = Vec::new();
        for alternative in field.value.split('|') {
            let mut bindings = Bindings::new();
            for binding in alternative.split_whitespace() {
                let (key, value) = binding.split_once('=').ok_or_else(|| {
                    (
                        field.line,
                        format!("expected `name=value`, found `{binding}`"),
                    )
                })?;
                if !is_identifier(key) {
                    return Err((field.line, format!("`{key}` is not a variable name")));
                }
                if bindings
                    .insert(key.to_string(), value.to_string())
                    .is_some()
                {
                    return Err((field.line, format!("variable `{key}` bound twice")));
                }
            }
            if bindings.is_empty() {
                return Err((field.line, "an empty `with` alternative".into()));
            }
            let differs = alternatives
                .first()
                .is_some_and(|first| !first.keys().eq(bindings.keys()));
            if differs {
                return Err((
                    field.line,
                    "every alternative of a `with` line must bind the same variables".into(),
                ));
            }
            alternatives.push(bindings);
        }
        let mut product = Vec::new();
        for outer in &variants {
            for inner in &alternatives {
                if let Some(key) = inner.keys().find(|key| outer.contains_key(*key)) {
                    return Err((
                        field.line,
                        format!("variable `{key}` bound on two `with` lines"),
                    ));
                }
                let mut both = outer.clone();
                both.extend(inner.iter().map(|(k, v)| (k.clone(), v.clone())));
                product.push(both);
            }
        }
        variants = product;
    }
    Ok(variants)
}

fn substitute(text: &str, bindings: &Bindings, line: usize) -> Located<String> {
    let mut out = text.to_string();
    for (key, value) in bindings {
        out = out.replace(&format!("<{key}>"), value);
    }
    let mut rest = out.as_str();
    while let Some(start) = rest.find('<') {
        rest = &rest[start + 1..];
        let name = rest.find('>').map(|end| &rest[..end]);
        if let Some(name) = name.filter(|name| is_identifier(name)) {
            return Err((line, format!("unbound variable `<{name}>`")));
        }
    }
    Ok(out)
}

fn build_template(
    raw: &RawEntry,
    bindings: &Bindings,
    family: &str,
    file: &str,
) -> Located<Template> {
    let name = substitute(&raw.name, bindings, raw.line)?;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | ':'))
    {
        return Err((raw.line, format!("`{name}` is not a valid entry name")));
    }
    let mut single: BTreeMap<&str, (String, usize)> = BTreeMap::new();
    for field in &raw.fields {
        match field.key.as_str() {
            "with" => continue,
            "doc" | "needs" | "slots" | "writes" | "ptx" | "sass" | "reserves" => {}
            other => return Err((field.line, format!("unknown field `{other}`"))),
        }
        let value = substitute(&field.value, bindings, field.line)?;
        if single
            .insert(field.key.as_str(), (value, field.line))
            .is_some()
        {
            return Err((field.line, format!("field `{}` given twice", field.key)));
        }
    }
    let required = |key: &str| {
        single
            .get(key)
            .cloned()
            .ok_or_else(|| (raw.line, format!("entry `{name}` has no `{key}:` field")))
    };
    let (needs_text, needs_line) = required("needs")?;
    let requirement = parse_needs(&needs_text).ok_or_else(|| {
        (
            needs_line,
            format!("expected `needs: sm_XX[a] ptx M.m`, found `{needs_text}`"),
        )
    })?;
    let (slots_text, slots_line) = required("slots")?;
    let mut slots = parse_slots(&slots_text, slots_line)?;
    if let Some((writes, writes_line)) = single.get("writes") {
        for written in writes.split_whitespace() {
            let slot = slots
                .iter_mut()
                .find(|slot| slot.name == written)
                .ok_or_else(|| (*writes_line, format!("`writes` names no slot `{written}`")))?;
            if !slot.kinds.iter().all(|kind| kind.is_writable()) {
                return Err((
                    *writes_line,
                    format!("slot `{written}` is written but is not a register"),
                ));
            }
            slot.written = true;
        }
    }
    let (ptx_text, ptx_line) = required("ptx")?;
    let pieces = parse_text(&ptx_text, &slots, ptx_line)?;
    let (sass, sass_only_on) = match single.get("sass") {
        Some((text, line)) => parse_sass(text, *line)?,
        None => (Vec::new(), Vec::new()),
    };
    let reserves = match single.get("reserves") {
        Some((text, line)) => text
            .parse()
            .map_err(|_| (*line, format!("expected `reserves: N`, found `{text}`")))?,
        None => 0,
    };
    let doc = single
        .get("doc")
        .map(|(text, _)| text.clone())
        .unwrap_or_default();
    Ok(Template {
        name,
        family: family.to_string(),
        doc,
        requirement,
        slots,
        pieces,
        sass,
        sass_only_on,
        reserves,
        origin: (file.to_string(), raw.line),
    })
}

fn parse_needs(text: &str) -> Option<Requirement> {
    let words: Vec<&str> = text.split_whitespace().collect();
    match words.as_slice() {
        [target, "ptx", version] => {
            let name = target.parse::<TargetName>().ok()?;
            Some(Requirement {
                sm: name.sm,
                ptx: version.parse::<PtxVersion>().ok()?,
                arch_specific: name.arch_specific,
            })
        }
        _ => None,
    }
}

/// `OPCODE... [on sm_XX...]`: opcodes are upper-case SASS mnemonics, or
/// a mnemonic with its leading modifiers (`WARPGROUP.ARRIVE`,
/// `HGMMA.64x8x16.F32`: modifiers may hold lower-case letters).
fn parse_sass(text: &str, line: usize) -> Located<(Vec<String>, Vec<Sm>)> {
    let (opcodes, targets) = match text.split_once(" on ") {
        Some((opcodes, targets)) => (opcodes, Some(targets)),
        None => (text, None),
    };
    let opcodes: Vec<String> = opcodes.split_whitespace().map(str::to_string).collect();
    let valid = |opcode: &String| {
        opcode.split('|').all(|alternative| {
            let mut parts = alternative.split('.');
            let mnemonic = parts.next().unwrap_or_default();
            let upper = |c: char| c.is_ascii_uppercase() || c.is_ascii_digit();
            !mnemonic.is_empty()
                && mnemonic.chars().all(upper)
                && parts
                    .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric()))
        })
    };
    if opcodes.is_empty() || !opcodes.iter().all(valid) {
        return Err((
            line,
            format!("expected `sass: OPCODE... [on sm_XX...]`, found `{text}`"),
        ));
    }
    let targets = match targets {
        Some(targets) => targets
            .split_whitespace()
            .map(|target| {
                target
                    .parse::<Sm>()
                    .map_err(|_| (line, format!("`{target}` is not sm_XX")))
            })
            .collect::<Located<Vec<Sm>>>()?,
        None => Vec::new(),
    };
    Ok((opcodes, targets))
}

fn parse_slots(text: &str, line: usize) -> Located<Vec<Slot>> {
    let mut slots: Vec<Slot> = Vec::new();
    for word in text.split_whitespace() {
        let (name, kinds) = word
            .split_once(':')
            .ok_or_else(|| (line, format!("expected `name:kind`, found `{word}`")))?;
        if !is_identifier(name) {
            return Err((line, format!("`{name}` is not a slot name")));
        }
        if slots.iter().any(|slot| slot.name == name) {
            return Err((line, format!("slot `{name}` declared twice")));
        }
        let mut unique: Vec<SlotKind> = Vec::new();
        for kind in kinds.split('|') {
            let kind = SlotKind::parse(kind).ok_or_else(|| {
                let hint = if kind.contains('*') {
                    format!(
                        ": a vector is CLASS*N with N from 1 to {}",
                        SlotKind::MAX_VECTOR
                    )
                } else {
                    String::new()
                };
                (
                    line,
                    format!("`{kind}` is not a slot kind (slot `{name}`){hint}"),
                )
            })?;
            // Variants may spell the same kind twice (`r*2|r*2`); keep one.
            if !unique.contains(&kind) {
                unique.push(kind);
            }
        }
        let kinds = unique;
        slots.push(Slot {
            name: name.to_string(),
            kinds,
            written: false,
        });
    }
    Ok(slots)
}

fn parse_text(text: &str, slots: &[Slot], line: usize) -> Located<Vec<Piece>> {
    if !text.ends_with(';') {
        return Err((line, "the PTX text must end with `;`".into()));
    }
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut used = vec![false; slots.len()];
    let mut rest = text;
    while let Some(dollar) = rest.find('$') {
        literal.push_str(&rest[..dollar]);
        let after = &rest[dollar + 1..];
        let length = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..length];
        let index = slots
            .iter()
            .position(|slot| slot.name == name)
            .ok_or_else(|| (line, format!("`${name}` names no slot")))?;
        used[index] = true;
        if !literal.is_empty() {
            pieces.push(Piece::Literal(std::mem::take(&mut literal)));
        }
        pieces.push(Piece::Slot(index));
        rest = &after[length..];
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        pieces.push(Piece::Literal(literal));
    }
    if let Some(unused) = used.iter().position(|used| !used) {
        return Err((
            line,
            format!("slot `{}` does not appear in the text", slots[unused].name),
        ));
    }
    Ok(pieces)
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::operand::{Reg, RegClass, imm};

    const GOOD: &str = "\
# a comment
family int: integer arithmetic

entry add.<t>
  doc: wrapping add
  with: t=u32 c=r | t=u64 c=rd
  needs: sm_70 ptx 6.0
  slots: d:<c> a:<c> b:<c>|imm
  writes: d
  ptx: add.<t> $d, $a, $b;
";

    fn parse_error(text: &str) -> String {
        parse_family("int.ptxt", text).unwrap_err().to_string()
    }

    #[test]
    fn with_lines_expand_into_one_template_per_variant() {
        let family = parse_family("int.ptxt", GOOD).unwrap();
        let names: Vec<&str> = family.templates.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["add.u32", "add.u64"]);
        let add64 = &family.templates[1];
        assert_eq!(add64.signature(), "d:rd a:rd b:rd|imm");
        assert!(add64.slots[0].written && !add64.slots[1].written);
        assert_eq!(add64.origin, ("int.ptxt".to_string(), 4));
    }

    #[test]
    fn instantiation_checks_classes_and_renders_text() {
        let family = parse_family("int.ptxt", GOOD).unwrap();
        let add = &family.templates[0];
        let r = |number| Reg {
            class: RegClass::B32,
            number,
        };
        let inst = add
            .instantiate(vec![r(1).into(), r(2).into(), imm(4)])
            .unwrap();
        let mut text = String::new();
        add.render(&inst.operands, &mut text).unwrap();
        assert_eq!(text, "add.u32 %r1, %r2, 4;");
        let wrong = Reg {
            class: RegClass::F32,
            number: 1,
        };
        let message = add
            .instantiate(vec![wrong.into(), r(2).into(), imm(4)])
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("operand `d` of `add.u32` must be r"),
            "{message}"
        );
        let message = add.instantiate(vec![r(1).into()]).unwrap_err().to_string();
        assert!(message.contains("takes 3 operands"), "{message}");
    }

    #[test]
    fn malformed_files_are_errors_with_a_line() {
        let cases: [(&str, &str); 12] = [
            (
                "entry x\n  needs: sm_70 ptx 6.0\n  slots:\n  ptx: x;\n",
                "int.ptxt:1: the file must start with a `family` line",
            ),
            ("family other: x\nentry a\n", "must be named after its file"),
            (
                "family int: x\nentry a\n  slots:\n  ptx: a;\n",
                "has no `needs:` field",
            ),
            (
                "family int: x\nentry a\n  needs: sm_70 ptx 6\n  slots:\n  ptx: a;\n",
                "int.ptxt:3: expected `needs: sm_XX[a] ptx M.m`",
            ),
            (
                "family int: x\nentry a\n  needs: sm_90b ptx 8.0\n  slots:\n  ptx: a;\n",
                "int.ptxt:3: expected `needs: sm_XX[a] ptx M.m`, found `sm_90b ptx 8.0`",
            ),
            (
                "family int: x\nentry a\n  needs: sm_70 ptx 6.0\n  slots: d:f*129\n  ptx: a $d;\n",
                "`f*129` is not a slot kind (slot `d`): a vector is CLASS*N with N from 1 to 128",
            ),
            (
                "family int: x\nentry a\n  needs: sm_70 ptx 6.0\n  slots: d:q\n  ptx: a $d;\n",
                "`q` is not a slot kind",
            ),
            (
                "family int: x\nentry a\n  needs: sm_70 ptx 6.0\n  slots: d:r\n  ptx: a;\n",
                "slot `d` does not appear",
            ),
            (
                "family int: x\nentry a\n  needs: sm_70 ptx 6.0\n  slots: d:r\n  ptx: a $e;\n",
                "`$e` names no slot",
            ),
            (
                "family int: x\nentry a.<t>\n  needs: sm_70 ptx 6.0\n  slots:\n  ptx: a;\n",
                "unbound variable `<t>`",
            ),
            (
                "family int: x\nentry a\n  needs: sm_70 ptx 6.0\n  slots: d:imm\n  writes: d\n  ptx: a $d;\n",
                "is written but is not a register",
            ),
            (
                "family int: x\nentry a\n  needs: sm_70 ptx 6.0\n  slots:\n  ptx: a\n",
                "must end with `;`",
            ),
        ];
        for (text, expected) in cases {
            let message = parse_error(text);
            assert!(message.contains(expected), "{text:?}\n gave: {message}");
        }
    }

    #[test]
    fn an_arch_specific_need_and_a_128_register_vector_parse() {
        let text = "family int: x\nentry wide\n  needs: sm_90a ptx 8.0\n  slots: d:f*128 \
                    s:p|imm\n  writes: d\n  ptx: wide $d, $s;\n";
        let family = parse_family("int.ptxt", text).unwrap();
        let wide = &family.templates[0];
        assert_eq!(wide.requirement.to_string(), "sm_90a and PTX ISA 8.0");
        assert!(wide.requirement.arch_specific);
        assert_eq!(wide.signature(), "d:f*128 s:p|imm");
        let plain = parse_family("int.ptxt", GOOD).unwrap();
        assert!(!plain.templates[0].requirement.arch_specific);
    }

    #[test]
    fn with_alternatives_must_bind_the_same_variables() {
        let text = "family int: x\nentry a.<t>\n  with: t=u32 c=r | t=u64\n  needs: sm_70 ptx 6.0\n  slots:\n  ptx: a;\n";
        assert!(parse_error(text).contains("must bind the same variables"));
        let text = "family int: x\nentry a.<t>\n  with: t=u32\n  with: t=u64\n  needs: sm_70 ptx 6.0\n  slots:\n  ptx: a;\n";
        assert!(parse_error(text).contains("bound on two `with` lines"));
    }
}
