//! PTX model: one instruction template of the catalogue, and the parser of
//! template files (`ptx-templates/*.ptxt`, format in `ptx-templates/README.md`).
//!
//! A template names an instruction form, types its operand slots, states the
//! target it needs and holds the PTX text with `$slot` placeholders. Parsing
//! expands `with:` variants, so every expanded entry is an ordinary template.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::error::{PtxError, TemplateError};
use super::module::Instruction;
use super::operand::{AddressBase, Guard, Operand, RegClass, Space};
use super::target::{PtxVersion, Requirement, Sm};

/// What one alternative of a slot accepts.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum SlotKind {
    /// A register of the class (`r`, `rd`, `f`, `h`, `rs`, `p`).
    Reg(RegClass),
    /// A brace-enclosed vector of exactly N registers of the class (`r*4`).
    Vector(RegClass, usize),
    /// An integer immediate (`imm`).
    Imm,
    /// An fp32 immediate (`fimm`).
    F32Imm,
    /// A label (`label`).
    Label,
    /// A global address: base is a `%rd` register (`gaddr`).
    GlobalAddress,
    /// A shared address: base is a `%r` or `%rd` register holding a shared
    /// window address, or a shared symbol (`saddr`).
    SharedAddress,
    /// A kernel parameter, `[name]` (`paddr`).
    ParamAddress,
    /// A shared symbol used as a value (`ssym`).
    SharedSymbol,
}

impl SlotKind {
    fn parse(text: &str) -> Option<SlotKind> {
        let fixed = match text {
            "imm" => Some(SlotKind::Imm),
            "fimm" => Some(SlotKind::F32Imm),
            "label" => Some(SlotKind::Label),
            "gaddr" => Some(SlotKind::GlobalAddress),
            "saddr" => Some(SlotKind::SharedAddress),
            "paddr" => Some(SlotKind::ParamAddress),
            "ssym" => Some(SlotKind::SharedSymbol),
            _ => None,
        };
        if fixed.is_some() {
            return fixed;
        }
        match text.split_once('*') {
            Some((class, count)) => {
                let class = RegClass::from_prefix(class)?;
                let count: usize = count.parse().ok()?;
                (1..=8)
                    .contains(&count)
                    .then_some(SlotKind::Vector(class, count))
            }
            None => RegClass::from_prefix(text).map(SlotKind::Reg),
        }
    }

    /// Whether `operand` fits this kind.
    pub fn accepts(self, operand: &Operand) -> bool {
        match (self, operand) {
            (SlotKind::Reg(class), Operand::Reg(reg)) => reg.class == class,
            (SlotKind::Vector(class, count), Operand::Vector(regs)) => {
                regs.len() == count && regs.iter().all(|reg| reg.class == class)
            }
            (SlotKind::Imm, Operand::Imm(_))
            | (SlotKind::F32Imm, Operand::F32Bits(_))
            | (SlotKind::Label, Operand::Label(_)) => true,
            (SlotKind::GlobalAddress, Operand::Address(address)) => {
                matches!(&address.base, AddressBase::Reg(reg) if reg.class == RegClass::B64)
            }
            (SlotKind::SharedAddress, Operand::Address(address)) => match &address.base {
                AddressBase::Reg(reg) => matches!(reg.class, RegClass::B32 | RegClass::B64),
                AddressBase::Symbol(symbol) => symbol.space == Space::Shared,
            },
            (SlotKind::ParamAddress, Operand::Address(address)) => {
                matches!(&address.base, AddressBase::Symbol(symbol) if symbol.space == Space::Param)
                    && address.offset == 0
            }
            (SlotKind::SharedSymbol, Operand::Symbol(symbol)) => symbol.space == Space::Shared,
            (
                SlotKind::Reg(_)
                | SlotKind::Vector(..)
                | SlotKind::Imm
                | SlotKind::F32Imm
                | SlotKind::Label
                | SlotKind::GlobalAddress
                | SlotKind::SharedAddress
                | SlotKind::ParamAddress
                | SlotKind::SharedSymbol,
                _,
            ) => false,
        }
    }

    /// Whether an instruction may write an operand of this kind.
    fn is_writable(self) -> bool {
        match self {
            SlotKind::Reg(_) | SlotKind::Vector(..) => true,
            SlotKind::Imm
            | SlotKind::F32Imm
            | SlotKind::Label
            | SlotKind::GlobalAddress
            | SlotKind::SharedAddress
            | SlotKind::ParamAddress
            | SlotKind::SharedSymbol => false,
        }
    }
}

/// The template-file spelling (`r*4`, `gaddr`).
impl fmt::Display for SlotKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SlotKind::Reg(class) => f.write_str(class.prefix()),
            SlotKind::Vector(class, count) => write!(f, "{}*{count}", class.prefix()),
            SlotKind::Imm => f.write_str("imm"),
            SlotKind::F32Imm => f.write_str("fimm"),
            SlotKind::Label => f.write_str("label"),
            SlotKind::GlobalAddress => f.write_str("gaddr"),
            SlotKind::SharedAddress => f.write_str("saddr"),
            SlotKind::ParamAddress => f.write_str("paddr"),
            SlotKind::SharedSymbol => f.write_str("ssym"),
        }
    }
}

/// One operand position of a template.
///
/// Rule: `kinds` is non-empty; a written slot has only register kinds.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Slot {
    /// Its name, used as `$name` in the text.
    pub name: String,
    /// What it accepts (any one of).
    pub kinds: Vec<SlotKind>,
    /// Whether the instruction writes it (listed under `writes:`).
    pub written: bool,
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.name)?;
        for (position, kind) in self.kinds.iter().enumerate() {
            if position > 0 {
                f.write_str("|")?;
            }
            kind.fmt(f)?;
        }
        Ok(())
    }
}

/// A piece of a template's text: literal PTX, or a slot's operand.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Piece {
    /// Text copied as is.
    Literal(String),
    /// The operand of the slot at this index.
    Slot(usize),
}

/// One catalogue entry: an instruction form and how to write it.
///
/// Rule: every slot appears in the text, the text ends with `;`, and the
/// name is unique in the catalogue.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Template {
    /// The catalogue name, e.g. `ld.global.v4.f32` or `mov.b32/pack`.
    pub name: String,
    /// The family (template file stem) it comes from.
    pub family: String,
    /// One line saying what it computes, possibly empty.
    pub doc: String,
    /// The lowest target it can be written for.
    pub requirement: Requirement,
    /// Its operands, in instantiation order.
    pub slots: Vec<Slot>,
    /// Its text.
    pub pieces: Vec<Piece>,
    /// SASS opcode mnemonics ptxas is expected to produce for it (`HMMA`);
    /// empty when the choice is ptxas's business. An item `I2F|I2FP` is met
    /// by either mnemonic (GPU generations name some opcodes differently).
    pub sass: Vec<String>,
    /// The capabilities on which `sass` holds; empty means every target from
    /// `requirement` up. (Later GPUs emulate some old forms in software.)
    pub sass_only_on: Vec<Sm>,
    /// The file and 1-based line of its `entry` line.
    pub origin: (String, usize),
}

impl Template {
    /// Checks `operands` against the slots and makes an unguarded
    /// instruction.
    pub fn instantiate(self: &Arc<Self>, operands: Vec<Operand>) -> Result<Instruction, PtxError> {
        self.check(&operands)?;
        Ok(Instruction {
            guard: None,
            template: Arc::clone(self),
            operands,
        })
    }

    /// Like [`Template::instantiate`], executed only under `guard`.
    pub fn instantiate_guarded(
        self: &Arc<Self>,
        guard: Guard,
        operands: Vec<Operand>,
    ) -> Result<Instruction, PtxError> {
        let mut instruction = self.instantiate(operands)?;
        instruction.guard = Some(guard);
        Ok(instruction)
    }

    fn check(&self, operands: &[Operand]) -> Result<(), PtxError> {
        if operands.len() != self.slots.len() {
            return Err(PtxError::OperandCount {
                template: self.name.clone(),
                expected: self.slots.len(),
                slots: self.signature(),
                found: operands.len(),
            });
        }
        for (slot, operand) in self.slots.iter().zip(operands) {
            if !slot.kinds.iter().any(|kind| kind.accepts(operand)) {
                return Err(PtxError::OperandMismatch {
                    template: self.name.clone(),
                    slot: slot.name.clone(),
                    expected: slot
                        .kinds
                        .iter()
                        .map(|kind| kind.to_string())
                        .collect::<Vec<_>>()
                        .join(" or "),
                    found: operand.describe(),
                });
            }
        }
        Ok(())
    }

    /// The slots as written in the template file: `d:r a:r b:r|imm`.
    pub fn signature(&self) -> String {
        let slots: Vec<String> = self.slots.iter().map(Slot::to_string).collect();
        slots.join(" ")
    }

    /// The SASS opcodes expected when assembling for `sm` (empty when none
    /// are, or when `sm` is not one of `sass_only_on`).
    pub fn expected_sass(&self, sm: Sm) -> &[String] {
        if self.sass_only_on.is_empty() || self.sass_only_on.contains(&sm) {
            &self.sass
        } else {
            &[]
        }
    }

    /// Writes the text with `operands` in place of the slots.
    pub fn render(&self, operands: &[Operand], out: &mut impl fmt::Write) -> fmt::Result {
        for piece in &self.pieces {
            match piece {
                Piece::Literal(text) => out.write_str(text)?,
                Piece::Slot(index) => match operands.get(*index) {
                    Some(operand) => write!(out, "{operand}")?,
                    None => return Err(fmt::Error),
                },
            }
        }
        Ok(())
    }
}

/// One template file: a family of related instructions.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Family {
    /// The family name (the file stem).
    pub name: String,
    /// What the family is for.
    pub description: String,
    /// Its templates, in file order after expansion.
    pub templates: Vec<Arc<Template>>,
}

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
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/'))
    {
        return Err((raw.line, format!("`{name}` is not a valid entry name")));
    }
    let mut single: BTreeMap<&str, (String, usize)> = BTreeMap::new();
    for field in &raw.fields {
        match field.key.as_str() {
            "with" => continue,
            "doc" | "needs" | "slots" | "writes" | "ptx" | "sass" => {}
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
            format!("expected `needs: sm_XX ptx M.m`, found `{needs_text}`"),
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
        origin: (file.to_string(), raw.line),
    })
}

fn parse_needs(text: &str) -> Option<Requirement> {
    let words: Vec<&str> = text.split_whitespace().collect();
    match words.as_slice() {
        [sm, "ptx", version] => Some(Requirement {
            sm: sm.parse::<Sm>().ok()?,
            ptx: version.parse::<PtxVersion>().ok()?,
        }),
        _ => None,
    }
}

/// `OPCODE... [on sm_XX...]`: opcodes are upper-case SASS mnemonics.
fn parse_sass(text: &str, line: usize) -> Located<(Vec<String>, Vec<Sm>)> {
    let (opcodes, targets) = match text.split_once(" on ") {
        Some((opcodes, targets)) => (opcodes, Some(targets)),
        None => (text, None),
    };
    let opcodes: Vec<String> = opcodes.split_whitespace().map(str::to_string).collect();
    let valid = |opcode: &String| {
        opcode.split('|').all(|name| {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
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
            let kind = SlotKind::parse(kind)
                .ok_or_else(|| (line, format!("`{kind}` is not a slot kind (slot `{name}`)")))?;
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
    use crate::ptx::operand::{Reg, imm};

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
        let cases: [(&str, &str); 10] = [
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
                "int.ptxt:3: expected `needs: sm_XX ptx M.m`",
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
    fn with_alternatives_must_bind_the_same_variables() {
        let text = "family int: x\nentry a.<t>\n  with: t=u32 c=r | t=u64\n  needs: sm_70 ptx 6.0\n  slots:\n  ptx: a;\n";
        assert!(parse_error(text).contains("must bind the same variables"));
        let text = "family int: x\nentry a.<t>\n  with: t=u32\n  with: t=u64\n  needs: sm_70 ptx 6.0\n  slots:\n  ptx: a;\n";
        assert!(parse_error(text).contains("bound on two `with` lines"));
    }

    #[test]
    fn slot_kinds_round_trip_through_their_spelling() {
        for text in [
            "r", "rd", "f", "h", "rs", "p", "r*1", "f*8", "imm", "fimm", "label", "gaddr", "saddr",
            "paddr", "ssym",
        ] {
            assert_eq!(SlotKind::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(SlotKind::parse("r*0"), None);
        assert_eq!(SlotKind::parse("r*9"), None);
    }
}
