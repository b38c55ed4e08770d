//! PTX model: the instruction catalogue — every template file of
//! `ptx-templates/`, compiled into the binary, parsed once, looked up by name.
//!
//! The lowering selects instructions by catalogue name; instantiation checks
//! operand classes, so a finished module only holds forms the catalogue
//! describes (and whose target needs it knows).

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use super::error::{PtxError, TemplateError};
use super::module::Instruction;
use super::operand::Operand;
use super::template::{Family, Template};
use super::template_file::parse_family;
use crate::diag::suggest;

/// The built-in template files: (file name, contents).
pub const BUILTIN_FILES: [(&str, &str); 13] = [
    ("int.ptxt", include_str!("../../ptx-templates/int.ptxt")),
    (
        "control.ptxt",
        include_str!("../../ptx-templates/control.ptxt"),
    ),
    ("sreg.ptxt", include_str!("../../ptx-templates/sreg.ptxt")),
    (
        "memory.ptxt",
        include_str!("../../ptx-templates/memory.ptxt"),
    ),
    ("async.ptxt", include_str!("../../ptx-templates/async.ptxt")),
    (
        "ldmatrix.ptxt",
        include_str!("../../ptx-templates/ldmatrix.ptxt"),
    ),
    ("mma.ptxt", include_str!("../../ptx-templates/mma.ptxt")),
    ("wgmma.ptxt", include_str!("../../ptx-templates/wgmma.ptxt")),
    ("float.ptxt", include_str!("../../ptx-templates/float.ptxt")),
    ("half.ptxt", include_str!("../../ptx-templates/half.ptxt")),
    ("warp.ptxt", include_str!("../../ptx-templates/warp.ptxt")),
    ("grid.ptxt", include_str!("../../ptx-templates/grid.ptxt")),
    ("tma.ptxt", include_str!("../../ptx-templates/tma.ptxt")),
];

/// All templates by name.
///
/// Rule: names are unique across families; families keep file order and
/// templates keep file order within a family.
#[derive(Clone, Debug)]
pub struct Catalogue {
    families: Vec<Family>,
    by_name: BTreeMap<String, Arc<Template>>,
}

impl Catalogue {
    /// Parses template files given as (file name, contents).
    pub fn parse(files: &[(&str, &str)]) -> Result<Catalogue, TemplateError> {
        let mut families = Vec::new();
        let mut by_name: BTreeMap<String, Arc<Template>> = BTreeMap::new();
        for (file, text) in files {
            let family = parse_family(file, text)?;
            for template in &family.templates {
                if let Some(earlier) = by_name.get(&template.name) {
                    return Err(TemplateError {
                        file: file.to_string(),
                        line: template.origin.1,
                        message: format!(
                            "entry `{}` is already defined at {}:{}",
                            template.name, earlier.origin.0, earlier.origin.1
                        ),
                    });
                }
                by_name.insert(template.name.clone(), Arc::clone(template));
            }
            families.push(family);
        }
        Ok(Catalogue { families, by_name })
    }

    /// The catalogue of the files in `ptx-templates/`, parsed on first use.
    pub fn builtin() -> Result<&'static Catalogue, PtxError> {
        static BUILTIN: OnceLock<Result<Catalogue, TemplateError>> = OnceLock::new();
        BUILTIN
            .get_or_init(|| Catalogue::parse(&BUILTIN_FILES))
            .as_ref()
            .map_err(|error| PtxError::Template(error.clone()))
    }

    /// The template called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Template>> {
        self.by_name.get(name)
    }

    /// Instantiates the template called `name`; an unknown name is an error
    /// listing similar names.
    pub fn instantiate(&self, name: &str, operands: Vec<Operand>) -> Result<Instruction, PtxError> {
        match self.get(name) {
            Some(template) => template.instantiate(operands),
            None => Err(PtxError::UnknownTemplate {
                name: name.to_string(),
                nearest: self.nearest(name, 4),
            }),
        }
    }

    /// The families, in file order.
    pub fn families(&self) -> &[Family] {
        &self.families
    }

    /// Every template, ordered by name.
    pub fn templates(&self) -> impl Iterator<Item = &Arc<Template>> {
        self.by_name.values()
    }

    /// Up to `limit` names closest to `name` by edit distance (ties by name).
    pub fn nearest(&self, name: &str, limit: usize) -> Vec<String> {
        let within = name.len().max(4) / 2;
        suggest::nearest(name, self.by_name.keys().map(String::as_str), within, limit)
            .into_iter()
            .map(str::to_string)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_names_across_files_are_errors() {
        let a = "family a: x\nentry nop\n  needs: sm_70 ptx 6.0\n  slots:\n  ptx: nop;\n";
        let b = "family b: y\n\nentry nop\n  needs: sm_70 ptx 6.0\n  slots:\n  ptx: nop;\n";
        let error = Catalogue::parse(&[("a.ptxt", a), ("b.ptxt", b)]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "b.ptxt:3: entry `nop` is already defined at a.ptxt:2"
        );
    }
}
