//! Stage 2, check: the AST of a `.gph` file to the typed IR (`ir::Program`),
//! the only input the lowering accepts.
//!
//! The checker resolves every name, computes the type of every tensor and
//! thread-group expression with the layout algebra, computes every view's
//! buffer and base offset as an index expression, enforces the rules of
//! docs/language.md (memories, launch groups, spec kinds, register indices,
//! loops), and records what a launch must check about symbolic dimensions.
//! It keeps going after an error: a failed value is poisoned, and uses of a
//! poisoned value report nothing more, so one run lists every independent
//! error. The codes are in [`codes`] and `docs/diagnostics.md`.
//!
//! - [`check_file`], [`check_file_warned`]: a whole file, with `--define`
//!   overrides of its constants (the pipeline runs it from `crate::compile`).
//! - [`Session`]: the REPL's incremental checker, one line at a time.
//! - [`constant_layout`], [`expr_text`], [`tensor_type_text`],
//!   [`group_type_text`]: what a consumer needs to draw or print checked values.

mod barriers;
mod blockwide;
mod bounds;
mod broadcast;
pub mod codes;
mod contract;
mod coverage;
mod defs;
mod enumerate;
mod env;
mod groups;
mod ints;
mod landed;
mod lanes;
mod occupancy;
mod pending;
mod races;
mod ranges;
mod rules;
mod session;
mod stmts;
mod symbolic;
pub mod tma;
mod types;
mod unwritten;
mod views;
mod widths;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use crate::diag::{Diagnostic, Span};
use crate::ir::{self, Program};
use crate::ptx::identifier::is_reserved;
use crate::syntax::ast::{ConstDef, File, Item, Kernel, KernelVariant, Name, TuneValues};

use env::{Checker, ConstEntry};

pub use crate::ir::print::{Names, expr_text, group_type_text, level_text, tensor_type_text};
pub use blockwide::{WARP_THREADS, block_reduction_warps, is_block_reduction};
pub use groups::{MAX_BLOCK_SIZE, MAX_GRID_SIZE};
pub use occupancy::registers_per_thread;
pub use session::{Session, Shown};
pub use symbolic::constant_layout;

/// Checks a parsed file. `defines` override the file's constants of the
/// same names (`ptxgen --define BM=64`); a define that names no constant is
/// an error. Returns the checked program, or every error found.
///
/// ```
/// use graphene::check::check_file;
/// use graphene::syntax::parse_file;
/// let src = "%a:[64].fp32.GL\n#b:[1].block\n#t:[64].thread\n%a <- Init<0.0><<<#b, #t>>>()\n";
/// let file = parse_file("zero.gph", src).unwrap();
/// let program = check_file(&file, &[]).unwrap();
/// assert_eq!(program.kernels[0].name, "zero");
/// ```
pub fn check_file(file: &File, defines: &[(String, i64)]) -> Result<Program, Vec<Diagnostic>> {
    check_file_warned(file, defines).map(|(program, _warnings)| program)
}

/// [`check_file`], keeping the warnings of a file that checks (sorted by
/// position) beside its program.
pub fn check_file_warned(
    file: &File,
    defines: &[(String, i64)],
) -> Result<(Program, Vec<Diagnostic>), Vec<Diagnostic>> {
    check_file_selected(file, defines, &[])
}

/// [`check_file_warned`] for the kernels named in `kernels` only (every
/// kernel if it is empty): the others are neither checked nor in the
/// program, so that one kernel builds where a variant's constants fail
/// (`ptxgen build --kernel`). A name that is no kernel of the file is an
/// error.
pub fn check_file_selected(
    file: &File,
    defines: &[(String, i64)],
    kernels: &[String],
) -> Result<(Program, Vec<Diagnostic>), Vec<Diagnostic>> {
    let selected = |name: &Name| kernels.is_empty() || kernels.contains(&name.text);
    let mut diags = Vec::new();
    let const_spans: Vec<(usize, &ConstDef)> = file
        .items
        .iter()
        .enumerate()
        .filter_map(|(index, item)| match item {
            Item::Const(def) => Some((index, def)),
            Item::Kernel(_) | Item::Variant(_) => None,
        })
        .collect();
    for (name, value) in defines {
        if !const_spans.iter().any(|(_, def)| def.name.text == *name) {
            diags.push(unknown_define(name, *value, &const_spans));
        }
    }
    let mut consts = ConstScope::new(file);
    let mut program = Vec::new();
    let mut kernel_names: BTreeMap<String, Span> = BTreeMap::new();
    // Each kernel's body by name: the item index of the kernel written with
    // it, and the constants its variant sets (none for the kernel itself).
    let mut bodies: BTreeMap<String, KernelBody> = BTreeMap::new();
    for (index, item) in file.items.iter().enumerate() {
        match item {
            Item::Const(def) => consts.define(def, defines, &mut diags),
            Item::Kernel(kernel) => {
                name_kernel(&kernel.name, &mut kernel_names, &mut diags);
                bodies.insert(
                    kernel.name.text.clone(),
                    KernelBody {
                        index,
                        kernel,
                        overrides: Vec::new(),
                    },
                );
                if !selected(&kernel.name) {
                    continue;
                }
                let mut checker = consts.checker();
                let checked = checker.kernel(kernel);
                diags.append(&mut checker.diags);
                consts.restore(checker);
                program.extend(checked.ok());
            }
            Item::Variant(variant) => {
                name_kernel(&variant.name, &mut kernel_names, &mut diags);
                let Some(body) = variant_body(file, variant, &bodies, &mut consts, &mut diags)
                else {
                    continue;
                };
                bodies.insert(variant.name.text.clone(), body.clone());
                if !selected(&variant.name) {
                    continue;
                }
                let mut settings = defines.to_vec();
                settings.extend(body.overrides.iter().cloned());
                let mut scope = ConstScope::new(file);
                let mut found = Vec::new();
                for item in &file.items[..body.index] {
                    if let Item::Const(def) = item {
                        scope.define(def, &settings, &mut found);
                    }
                }
                let renamed = Kernel {
                    name: variant.name.clone(),
                    ..body.kernel.clone()
                };
                let mut checker = scope.checker();
                let checked = checker.kernel(&renamed);
                found.append(&mut checker.diags);
                let set: Vec<String> = body
                    .overrides
                    .iter()
                    .map(|(name, value)| format!("{name} = {value}"))
                    .collect();
                let context = format!(
                    "in the variant `{}` of `{}` ({})",
                    variant.name.text,
                    body.kernel.name.text,
                    set.join(", ")
                );
                diags.extend(found.into_iter().map(|d| d.with_note(context.clone())));
                program.extend(checked.ok());
            }
        }
    }
    for name in kernels {
        if !kernel_names.contains_key(name) {
            let known: Vec<&str> = kernel_names.keys().map(String::as_str).collect();
            diags.push(
                Diagnostic::error(
                    codes::UNDEFINED,
                    format!("`--kernel {name}` names no kernel of this file"),
                    Span::at(0),
                )
                .with_label(if known.is_empty() {
                    "this file defines no kernel".to_string()
                } else {
                    format!("this file's kernels: {}", known.join(", "))
                })
                .with_help("name one of the file's kernels or variants"),
            );
        }
    }
    diags.sort_by_key(|d| d.primary.span.start);
    // A variant reports again what its base reports: keep the first.
    let mut seen = std::collections::BTreeSet::new();
    diags.retain(|d| {
        seen.insert((
            d.primary.span.start,
            d.primary.span.end,
            d.code,
            d.message.clone(),
        ))
    });
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    Ok((Program { kernels: program }, diags))
}

/// The value of every constant of `file` that evaluates, with `defines`
/// overriding (what a kernel of the file sees; a variant's own settings
/// are not applied). Diagnostics are dropped: checking reports them.
pub fn constant_values(file: &File, defines: &[(String, i64)]) -> BTreeMap<String, i64> {
    let mut scope = ConstScope::new(file);
    let mut ignored = Vec::new();
    for item in &file.items {
        if let Item::Const(def) = item {
            scope.define(def, defines, &mut ignored);
        }
    }
    scope
        .consts
        .into_iter()
        .filter_map(|(name, entry)| entry.value.map(|value| (name, value)))
        .collect()
}

/// A kernel body and the constants a variant sets for it.
#[derive(Clone)]
struct KernelBody<'f> {
    /// The item index of the kernel written with the body.
    index: usize,
    /// That kernel.
    kernel: &'f Kernel,
    /// The constants set, base variants' first.
    overrides: Vec<(String, i64)>,
}

/// The constants defined above the item being checked, and those below it:
/// each item moves them into its checker and takes them back (no checker
/// changes them), so a file of n constants costs O(n log n).
struct ConstScope {
    consts: BTreeMap<String, ConstEntry>,
    later: BTreeMap<String, Span>,
}

impl ConstScope {
    /// Before the first item of `file`: every constant is later.
    fn new(file: &File) -> ConstScope {
        let mut later = BTreeMap::new();
        for item in &file.items {
            if let Item::Const(def) = item {
                later.insert(def.name.text.clone(), def.name.span);
            }
        }
        ConstScope {
            consts: BTreeMap::new(),
            later,
        }
    }

    /// Takes the definition `def`, its value overridden by the last of
    /// `defines` that names it.
    fn define(&mut self, def: &ConstDef, defines: &[(String, i64)], diags: &mut Vec<Diagnostic>) {
        // A constant defined twice is "later" until its last definition.
        if self.later.get(&def.name.text) == Some(&def.name.span) {
            self.later.remove(&def.name.text);
        }
        let mut checker = self.checker();
        let define = defines
            .iter()
            .rev()
            .find(|(name, _)| *name == def.name.text);
        let entry = checker.const_def(def, define.map(|(_, value)| *value));
        diags.append(&mut checker.diags);
        self.restore(checker);
        if let Some(entry) = entry {
            self.consts.insert(def.name.text.clone(), entry);
        }
    }

    /// A checker that sees these constants; give them back with `restore`.
    fn checker(&mut self) -> Checker {
        Checker::new(
            std::mem::take(&mut self.consts),
            std::mem::take(&mut self.later),
        )
    }

    fn restore(&mut self, checker: Checker) {
        (self.consts, self.later) = (checker.consts, checker.later_consts);
    }
}

/// The body a variant reuses, with its overrides added to its base's; `None`
/// after a diagnostic.
fn variant_body<'f>(
    file: &'f File,
    variant: &KernelVariant,
    bodies: &BTreeMap<String, KernelBody<'f>>,
    consts: &mut ConstScope,
    diags: &mut Vec<Diagnostic>,
) -> Option<KernelBody<'f>> {
    let mut checker = consts.checker();
    let values: Vec<Option<i64>> = variant
        .overrides
        .iter()
        .map(|def| checker.constant(&def.value, "a variant's constant").ok())
        .collect();
    diags.append(&mut checker.diags);
    consts.restore(checker);
    let Some(base) = bodies.get(&variant.base.text) else {
        let known: Vec<&str> = bodies.keys().map(String::as_str).collect();
        diags.push(
            Diagnostic::error(
                codes::UNDEFINED,
                format!("no kernel `{}` above this variant", variant.base.text),
                variant.base.span,
            )
            .with_label("not a kernel defined earlier in the file")
            .with_note(if known.is_empty() {
                "no kernel is defined above it".to_string()
            } else {
                format!("kernels above it: {}", known.join(", "))
            })
            .with_help(
                "a variant names a kernel written above it: move the variant below that kernel",
            ),
        );
        return None;
    };
    let mut body = base.clone();
    let mut complete = true;
    for (def, value) in variant.overrides.iter().zip(values) {
        let defined_above = file.items[..base.index].iter().any(|item| match item {
            Item::Const(constant) => constant.name.text == def.name.text,
            Item::Kernel(_) | Item::Variant(_) => false,
        });
        if !defined_above {
            diags.push(
                Diagnostic::error(
                    codes::UNKNOWN_DEFINE,
                    format!(
                        "`{}` names no constant above the kernel `{}`",
                        def.name.text, base.kernel.name.text
                    ),
                    def.name.span,
                )
                .with_label("not a constant that kernel's body sees")
                .with_note("a variant sets constants defined above its base kernel; it cannot introduce a new name")
                .with_help(format!(
                    "define `const {} = …` above `kernel {}`, or drop this setting",
                    def.name.text, base.kernel.name.text
                )),
            );
            complete = false;
            continue;
        }
        let Some(value) = value else {
            complete = false;
            continue;
        };
        body.overrides.retain(|(name, _)| *name != def.name.text);
        body.overrides.push((def.name.text.clone(), value));
    }
    complete.then_some(body)
}

/// Records a kernel's name, reporting one used before.
fn name_kernel(
    name: &Name,
    kernel_names: &mut BTreeMap<String, Span>,
    diags: &mut Vec<Diagnostic>,
) {
    if let Some(&first) = kernel_names.get(&name.text) {
        diags.push(
            Diagnostic::error(
                codes::DUPLICATE,
                format!("a second kernel named `{}`", name.text),
                name.span,
            )
            .with_label("defined again here")
            .with_secondary(first, "first defined here")
            .with_note("each kernel becomes a PTX entry of that name")
            .with_help(format!("rename one of them, e.g. `{}_2`", name.text)),
        );
    }
    if is_reserved(&name.text) {
        diags.push(reserved_kernel_name(name));
    }
    kernel_names.insert(name.text.clone(), name.span);
}

/// A kernel is the PTX entry of its name, its public name for launchers, so
/// a name `ptxas` refuses is an error rather than a silent rename.
fn reserved_kernel_name(name: &Name) -> Diagnostic {
    Diagnostic::error(
        codes::RESERVED_NAME,
        format!("a kernel named `{}`, a name PTX reserves", name.text),
        name.span,
    )
    .with_label("ptxas refuses this as an entry name")
    .with_note("each kernel becomes a PTX entry of that name")
    .with_help(format!("rename the kernel, e.g. `{}_kernel`", name.text))
}

fn unknown_define(name: &str, value: i64, consts: &[(usize, &ConstDef)]) -> Diagnostic {
    let known: Vec<&str> = consts
        .iter()
        .map(|(_, def)| def.name.text.as_str())
        .collect();
    let label = if known.is_empty() {
        "this file defines no constants".to_string()
    } else {
        format!("this file's constants: {}", known.join(", "))
    };
    Diagnostic::error(
        codes::UNKNOWN_DEFINE,
        format!("`--define {name}={value}` names no constant of this file"),
        Span::at(0),
    )
    .with_label(label)
    .with_note("a define overrides a `const` of the file; it cannot introduce a new name")
    .with_help(format!(
        "add `const {name} = {value}` to the file, or drop the define"
    ))
}

/// Whether `run --check` can compare a kernel with this outermost kind:
/// every built-in kind has a contract; the generic `Spec` has none.
pub fn has_checkable_contract(kind: &ir::SpecKind) -> bool {
    match kind {
        ir::SpecKind::Move { .. }
        | ir::SpecKind::MatMul { .. }
        | ir::SpecKind::Unary(_)
        | ir::SpecKind::Binary(_)
        | ir::SpecKind::Ternary(_)
        | ir::SpecKind::Select(_)
        | ir::SpecKind::Reduction { .. }
        | ir::SpecKind::Shfl { .. }
        | ir::SpecKind::Init { .. } => true,
        ir::SpecKind::Generic => false,
    }
}

impl Checker {
    /// `const NAME = value`: its entry (the define's value if one is
    /// given), or `None` for a duplicate.
    pub(crate) fn const_def(&mut self, def: &ConstDef, define: Option<i64>) -> Option<ConstEntry> {
        let value = self.constant(&def.value, "a constant's value").ok();
        if let Some(first) = self.consts.get(&def.name.text) {
            let first = first.span;
            self.report(
                Diagnostic::error(
                    codes::DUPLICATE,
                    format!("`{}` is already defined", def.name.text),
                    def.name.span,
                )
                .with_label("defined again here")
                .with_secondary(first, "first defined here")
                .with_help(format!(
                    "give this constant a new name, e.g. `{}_2`",
                    def.name.text
                )),
            );
            return None;
        }
        if let Some(tune) = &def.tune {
            self.tune_values(def, tune, value);
        }
        Some(ConstEntry {
            value: define.or(value),
            span: def.name.span,
        })
    }

    /// A tunable constant's list: no value twice, the written value in it.
    fn tune_values(&mut self, def: &ConstDef, tune: &TuneValues, value: Option<i64>) {
        for (index, (repeated, span)) in tune.values.iter().enumerate() {
            if let Some((_, first)) = tune.values[..index].iter().find(|(v, _)| v == repeated) {
                self.report(
                    Diagnostic::error(
                        codes::BAD_TUNE_VALUES,
                        format!("`{}` lists the value {repeated} twice", def.name.text),
                        *span,
                    )
                    .with_label("listed again here")
                    .with_secondary(*first, "first listed here")
                    .with_help("list each legal value once"),
                );
                return;
            }
        }
        let Some(value) = value else { return };
        if !tune.values.iter().any(|(v, _)| *v == value) {
            let listed: Vec<String> = tune.values.iter().map(|(v, _)| v.to_string()).collect();
            self.report(
                Diagnostic::error(
                    codes::BAD_TUNE_VALUES,
                    format!(
                        "`{}` is {value}, which is not one of its tunable values",
                        def.name.text
                    ),
                    def.value.span,
                )
                .with_label(format!("{value} is not in [{}]", listed.join(", ")))
                .with_secondary(tune.span, "the values a tuner may choose")
                .with_help(format!(
                    "add {value} to the list, or write one of its values as the default"
                )),
            );
        }
    }
}
