//! Stage 2, check: thread groups — `.indices()`, which binds index names to
//! the current thread's (or block's) coordinates, `(id / stride) % shape`
//! per mode; the launch groups named by a kernel's outermost spec; and the
//! groups that execute nested specs, which must be derived from the launch
//! groups and stay inside the block (docs/language.md §2, §5).

use crate::diag::{Diagnostic, Span};
use crate::expr::{Expr, Var};
use crate::ir::{GroupKind, Level};
use crate::layout::{Layout, Tuple, digit_decomposable};
use crate::syntax::ast::{self, ExprKind, IndexPattern, IndexPatternKind, IndicesDef};

use super::codes;
use super::env::{Binding, Checked, Checker, GroupVal, Launch, Namespace, Poisoned};
use super::symbolic::{constant_flat_layout, modes, same, size};

/// A mode of a group with the current id's digits, leaf for leaf.
type DigitMode = (Tuple<Expr>, Tuple<Expr>);

/// The largest number of threads in a block (`maxThreadsPerBlock`).
pub const MAX_BLOCK_SIZE: i64 = 1024;

/// The most blocks in a grid (`gridDim.x` is at most 2^31 − 1); block ids
/// are `.u32` values below it.
pub const MAX_GRID_SIZE: i64 = i32::MAX as i64;

/// Whether the levels number their ids column-major, innermost level
/// first — the numbering of a declaration written without strides, and
/// the only one the checker can verify when extents are symbolic.
fn numbered_column_major(levels: &[Level]) -> bool {
    let mut next = Expr::Const(1);
    for level in levels.iter().rev() {
        for (extent, stride) in level.shape.leaves().into_iter().zip(level.stride.leaves()) {
            if extent.as_const() != Some(1) && !same(stride, &next) {
                return false;
            }
            next = Expr::mul(next, extent.clone());
        }
    }
    true
}

/// Whether a constant layout numbers `0 … size-1` once each.
fn compact(layout: &Layout) -> bool {
    let mut leaves: Vec<(i64, i64)> = layout
        .leaves()
        .into_iter()
        .filter(|&(s, _)| s > 1)
        .collect();
    leaves.sort_by_key(|&(_, d)| d);
    let mut next = 1i64;
    for (s, d) in leaves {
        if d != next {
            return false;
        }
        match next.checked_mul(s) {
            Some(n) => next = n,
            None => return false,
        }
    }
    true
}

fn id_var(kind: GroupKind) -> Expr {
    Expr::var(match kind {
        GroupKind::Thread => Var::ThreadId,
        GroupKind::Block => Var::BlockId,
    })
}

/// The linear index of a mode from its digits: colexicographic.
fn linear_index(shape: &Tuple<Expr>, digits: &Tuple<Expr>) -> Expr {
    let mut prefix = Expr::Const(1);
    let mut index = Expr::Const(0);
    for (extent, digit) in shape.leaves().into_iter().zip(digits.leaves()) {
        index = Expr::add(index, Expr::mul(digit.clone(), prefix.clone()));
        prefix = Expr::mul(prefix, extent.clone());
    }
    index
}

impl Checker {
    /// `patterns = #g.indices()`: binds each name, or poisons them all if
    /// the group or the patterns are wrong.
    pub(crate) fn indices_def(&mut self, def: &IndicesDef) {
        let bound = match &def.value.kind {
            ExprKind::Indices(group) => self
                .group_value(group)
                .and_then(|g| self.bind_group_patterns(&def.patterns, &g, group.span)),
            ExprKind::Tensor(_)
            | ExprKind::Group(_)
            | ExprKind::Allocate
            | ExprKind::Tile(..)
            | ExprKind::Reshape(..)
            | ExprKind::Broadcast(..)
            | ExprKind::Scalar(_)
            | ExprKind::Index(..) => Err(self.fail(
                Diagnostic::error(
                    codes::BAD_OPERATION,
                    "index names are bound by `.indices()` only",
                    def.value.span,
                )
                .with_label("not `.indices()`")
                .with_help("write `@i, @j = #g.indices()`"),
            )),
        };
        if bound.is_err() {
            for pattern in &def.patterns {
                self.poison_pattern(pattern);
            }
        }
    }

    fn poison_pattern(&mut self, pattern: &IndexPattern) {
        match &pattern.kind {
            IndexPatternKind::Bind(name) => {
                if self.find(Namespace::Index, &name.text).is_none() {
                    self.define(Namespace::Index, name, Binding::Index(None), false);
                }
            }
            IndexPatternKind::Ignore => {}
            IndexPatternKind::Tuple(parts) => parts.iter().for_each(|p| self.poison_pattern(p)),
        }
    }

    fn bind_group_patterns(
        &mut self,
        patterns: &[IndexPattern],
        group: &GroupVal,
        group_span: Span,
    ) -> Checked<()> {
        let digits = self.group_digits(group, group_span)?;
        let targets: Vec<DigitMode> = match digits.as_slice() {
            [only] if patterns.len() == only.len() => only.clone(),
            [only] if patterns.len() == 1 => vec![whole_level(only)],
            levels if levels.len() > 1 && patterns.len() == levels.len() => levels
                .iter()
                .map(|level| match level.as_slice() {
                    [single] => single.clone(),
                    [] | [_, _, ..] => whole_level(level),
                })
                .collect(),
            levels => {
                let span = match (patterns.first(), patterns.last()) {
                    (Some(first), Some(last)) => first.span.join(last.span),
                    (None, _) | (_, None) => group_span,
                };
                let shape = self.group_text(&group.ty);
                let expected = match levels {
                    [only] => format!("{} (one per mode)", only.len()),
                    [] | [_, _, ..] => format!("{} (one per level)", levels.len()),
                };
                return Err(self.fail(
                    Diagnostic::error(
                        codes::PATTERN_MISMATCH,
                        format!("{} index patterns for a group that needs {expected}", patterns.len()),
                        span,
                    )
                    .with_label("these patterns")
                    .with_secondary(group_span, format!("of type {shape}"))
                    .with_help("a one-level group takes one pattern per mode (`@m, @n = #g.indices()`); a tiled group one per level (`(@m, @n), @i` for `[2,2].[8]`)"),
                ));
            }
        };
        let mut failed = false;
        for (pattern, (shape, digit)) in patterns.iter().zip(&targets) {
            failed |= self.bind_pattern(pattern, shape, digit).is_err();
        }
        if failed { Err(Poisoned) } else { Ok(()) }
    }

    fn bind_pattern(
        &mut self,
        pattern: &IndexPattern,
        shape: &Tuple<Expr>,
        digits: &Tuple<Expr>,
    ) -> Checked<()> {
        match &pattern.kind {
            IndexPatternKind::Ignore => Ok(()),
            IndexPatternKind::Bind(name) => {
                let value = match digits {
                    Tuple::Leaf(digit) => digit.clone(),
                    Tuple::Node(_) => linear_index(shape, digits),
                };
                self.define(Namespace::Index, name, Binding::Index(Some(value)), false);
                Ok(())
            }
            IndexPatternKind::Tuple(parts) => {
                let (Tuple::Node(shapes), Tuple::Node(sub_digits)) = (shape, digits) else {
                    let text = self.expr_text(&size(shape));
                    return Err(self.pattern_shape(
                        pattern,
                        parts.len(),
                        &format!("a single mode of extent {text}"),
                    ));
                };
                if shapes.len() != parts.len() {
                    let found = format!("a mode of {} sub-modes", shapes.len());
                    return Err(self.pattern_shape(pattern, parts.len(), &found));
                }
                let mut failed = false;
                for ((part, sub_shape), sub_digit) in parts.iter().zip(shapes).zip(sub_digits) {
                    failed |= self.bind_pattern(part, sub_shape, sub_digit).is_err();
                }
                if failed { Err(Poisoned) } else { Ok(()) }
            }
        }
    }

    fn pattern_shape(&mut self, pattern: &IndexPattern, parts: usize, found: &str) -> Poisoned {
        self.fail(
            Diagnostic::error(
                codes::PATTERN_MISMATCH,
                format!("a pattern of {parts} parts for {found}"),
                pattern.span,
            )
            .with_label("this pattern")
            .with_help("bind a name for the whole mode (`@i`) or one pattern per sub-mode"),
        )
    }

    /// Per level, per mode: the current id's coordinate digits.
    fn group_digits(&mut self, group: &GroupVal, span: Span) -> Checked<Vec<Vec<DigitMode>>> {
        let levels = &group.ty.levels;
        let decomposable = match constant_flat_layout(levels) {
            Some(layout) => digit_decomposable(&layout).map_err(|e| e.to_string()),
            None if numbered_column_major(levels) => Ok(()),
            None => Err("its strides are symbolic and not the column-major numbering".to_string()),
        };
        if let Err(why) = decomposable {
            let text = self.group_text(&group.ty);
            return Err(self.fail(
                Diagnostic::error(
                    codes::NOT_DECOMPOSABLE,
                    "the coordinates of this group cannot be read off the id",
                    span,
                )
                .with_label(format!("of type {text}"))
                .with_note(why)
                .with_note("`.indices()` computes `(id / stride) % extent` per mode, which needs each stride to be a multiple of the extent·stride below it")
                .with_help("reshape the group so that its modes do not interleave, e.g. `.reshape(0, [2,2 : 2,1])`"),
            ));
        }
        let id = id_var(group.ty.kind);
        let digit = |extent: &Expr, stride: &Expr| {
            if extent.as_const() == Some(1) {
                Expr::Const(0)
            } else {
                Expr::rem(Expr::div(id.clone(), stride.clone()), extent.clone())
            }
        };
        Ok(levels
            .iter()
            .map(|level| {
                modes(level)
                    .into_iter()
                    .map(|(shape, stride)| {
                        let digits: Vec<Expr> = shape
                            .leaves()
                            .into_iter()
                            .zip(stride.leaves())
                            .map(|(e, s)| digit(e, s))
                            .collect();
                        let digits = shape
                            .rebuild_with(&mut digits.into_iter())
                            .unwrap_or(Tuple::Node(Vec::new()));
                        (shape, digits)
                    })
                    .collect()
            })
            .collect())
    }

    /// The launch of an outermost spec: its groups must be declared at
    /// kernel scope, of the right kinds, with a constant block of at most
    /// 1024 threads, each numbering its ids `0 … N-1` once.
    pub(crate) fn launch(
        &mut self,
        spec: &ast::LaunchGroups,
        blocks: &Checked<GroupVal>,
        threads: &Checked<GroupVal>,
    ) -> Checked<Launch> {
        let b = self.launch_group(&spec.blocks, blocks, GroupKind::Block);
        let t = self.launch_group(&spec.threads, threads, GroupKind::Thread);
        let (b, t) = (b?, t?);
        let Some(block_layout) = constant_flat_layout(&t.ty.levels) else {
            let text = self.group_text(&t.ty);
            return Err(self.fail(
                Diagnostic::error(
                    codes::BAD_LAUNCH_SIZE,
                    "the number of threads per block must be a compile-time constant",
                    spec.threads.span,
                )
                .with_label(format!("of type {text}"))
                .with_help("give the thread group constant extents, e.g. `#t:[128].thread`; scale the problem with the block group"),
            ));
        };
        let block_size = block_layout.size();
        if block_size > MAX_BLOCK_SIZE {
            return Err(self.fail(
                Diagnostic::error(
                    codes::BAD_LAUNCH_SIZE,
                    format!("a block of {block_size} threads"),
                    spec.threads.span,
                )
                .with_label(format!(
                    "more than the {MAX_BLOCK_SIZE} threads a block can have"
                ))
                .with_help("use at most 1024 threads per block and more blocks"),
            ));
        }
        let grid_layout = constant_flat_layout(&b.ty.levels);
        if let Some(grid_size) = grid_layout.as_ref().map(Layout::size)
            && grid_size > MAX_GRID_SIZE
        {
            return Err(self.fail(
                Diagnostic::error(
                    codes::BAD_LAUNCH_SIZE,
                    format!("a grid of {grid_size} blocks"),
                    spec.blocks.span,
                )
                .with_label(format!(
                    "more than the {MAX_GRID_SIZE} blocks a grid can have"
                ))
                .with_note("block ids are 32-bit values; a larger grid cannot be launched")
                .with_help("give each block more work, so that fewer blocks cover the problem"),
            ));
        }
        let threads_compact = compact(&block_layout);
        let blocks_compact = match &grid_layout {
            Some(layout) => compact(layout),
            None => numbered_column_major(&b.ty.levels),
        };
        for (ok, group, expr) in [
            (threads_compact, &t, &spec.threads),
            (blocks_compact, &b, &spec.blocks),
        ] {
            if !ok {
                let text = self.group_text(&group.ty);
                let what = group.ty.kind.name();
                self.report(
                    Diagnostic::error(
                        codes::BAD_LAUNCH_SIZE,
                        format!("a launch group must number every {what} once, from 0"),
                        expr.span,
                    )
                    .with_label(format!("of type {text}"))
                    .with_note(format!("the launch runs {what}s 0 to N-1; this group's ids leave gaps or repeat"))
                    .with_help("declare the launch group without strides (column-major), and rearrange it with `.reshape` inside the spec"),
                );
            }
        }
        if !(threads_compact && blocks_compact) {
            return Err(Poisoned);
        }
        Ok(Launch {
            grid_size: grid_layout.map(|layout| layout.size()),
            block_size,
            blocks_origin: b.origin.clone(),
            threads_origin: t.origin.clone(),
            grid: b.ty,
            block: t.ty,
        })
    }

    fn launch_group(
        &mut self,
        e: &ast::Expr,
        value: &Checked<GroupVal>,
        kind: GroupKind,
    ) -> Checked<GroupVal> {
        let value = value.clone()?;
        let declaration = match &e.kind {
            ExprKind::Group(name) => self
                .find(Namespace::Group, &name.text)
                .map(|entry| (entry.kernel_declaration, entry.span)),
            ExprKind::Tensor(_)
            | ExprKind::Allocate
            | ExprKind::Tile(..)
            | ExprKind::Reshape(..)
            | ExprKind::Broadcast(..)
            | ExprKind::Indices(_)
            | ExprKind::Scalar(_)
            | ExprKind::Index(..) => None,
        };
        if declaration.is_none_or(|(declared, _)| !declared) {
            let what = kind.name();
            let mut diagnostic = Diagnostic::error(
                codes::LAUNCH_NOT_DECLARED,
                format!("the outermost spec must name a {what} group declared at kernel scope"),
                e.span,
            )
            .with_label("not a kernel-scope declaration")
            .with_note("the outermost spec's groups are the kernel's launch: grid and block")
            .with_help(format!(
                "declare it at kernel scope, e.g. `#{}:[128].{what}`, and name it here",
                if kind == GroupKind::Block { "b" } else { "t" }
            ));
            if let Some((_, span)) = declaration {
                diagnostic = diagnostic.with_secondary(span, "defined here from an expression");
            }
            return Err(self.fail(diagnostic));
        }
        self.group_kind(e, &value, kind)?;
        Ok(value)
    }

    /// Checks that a launch position holds a group of the right kind.
    fn group_kind(&mut self, e: &ast::Expr, value: &GroupVal, kind: GroupKind) -> Checked<()> {
        if value.ty.kind == kind {
            return Ok(());
        }
        let (expected, found) = (kind.name(), value.ty.kind.name());
        let position = match kind {
            GroupKind::Block => "first",
            GroupKind::Thread => "second",
        };
        Err(self.fail(
            Diagnostic::error(
                codes::GROUP_KIND,
                format!("expected a {expected} group, found a {found} group"),
                e.span,
            )
            .with_label(format!("a group of {found}s"))
            .with_note(format!(
                "the {position} group of `<<<#blocks, #threads>>>` enumerates {expected}s"
            ))
            .with_help("write the block group first and the thread group second"),
        ))
    }

    /// The groups that execute a spec inside a body: of the right kinds,
    /// derived from the launch groups, and within the launch.
    pub(crate) fn executing_groups(
        &mut self,
        spec: &ast::LaunchGroups,
        blocks: &Checked<GroupVal>,
        threads: &Checked<GroupVal>,
    ) -> Checked<()> {
        let mut failed = false;
        for (e, value, kind) in [
            (&spec.blocks, blocks, GroupKind::Block),
            (&spec.threads, threads, GroupKind::Thread),
        ] {
            let Ok(value) = value else {
                failed = true;
                continue;
            };
            failed |= self.executing_group(e, value, kind).is_err();
        }
        if failed { Err(Poisoned) } else { Ok(()) }
    }

    fn executing_group(&mut self, e: &ast::Expr, value: &GroupVal, kind: GroupKind) -> Checked<()> {
        self.group_kind(e, value, kind)?;
        let Some(launch) = &self.launch else {
            return Ok(());
        };
        let (origin, limit) = match kind {
            GroupKind::Block => (launch.blocks_origin.clone(), launch.grid_size),
            GroupKind::Thread => (launch.threads_origin.clone(), Some(launch.block_size)),
        };
        let what = kind.name();
        if value.origin != origin {
            return Err(self.fail(
                Diagnostic::error(
                    codes::NOT_DERIVED,
                    format!("this {what} group is not derived from the launch"),
                    e.span,
                )
                .with_label(format!("derived from `#{}`", value.origin.name))
                .with_secondary(value.origin.span, "declared here")
                .with_secondary(origin.span, format!("the launch {what} group"))
                .with_note(
                    "a spec inside a body runs on the launched threads and blocks, rearranged",
                )
                .with_help(format!(
                    "derive the group from `#{}` with `.tile`, `.reshape` or `.scalar()`",
                    origin.name
                )),
            ));
        }
        let (Some(layout), Some(limit)) = (constant_flat_layout(&value.ty.levels), limit) else {
            return Ok(());
        };
        let last = layout.cosize() - 1;
        if last >= limit {
            let text = self.group_text(&value.ty);
            let whole = if kind == GroupKind::Thread {
                "the block"
            } else {
                "the grid"
            };
            return Err(self.fail(
                Diagnostic::error(
                    codes::EXCEEDS_LAUNCH,
                    format!("this group reaches {what} {last}, past {whole} of {limit}"),
                    e.span,
                )
                .with_label(format!("of type {text}"))
                .with_note(format!("every id of an executing group must be a {what} of the launch"))
                .with_help("rearrange the group with a layout whose ids stay below the launch size, e.g. a compact `.reshape`"),
            ));
        }
        Ok(())
    }
}

/// A whole level as one mode: its modes gathered into a tuple.
fn whole_level(modes: &[DigitMode]) -> DigitMode {
    let (shapes, digits): (Vec<_>, Vec<_>) = modes.iter().cloned().unzip();
    (Tuple::Node(shapes), Tuple::Node(digits))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::symbolic::level_of;

    #[test]
    fn compact_layouts_number_each_id_once() {
        for (text, expected) in [
            ("[32 : 1]", true),
            ("[16,16 : 1,16]", true),
            ("[2,2 : 2,1]", true),
            ("[32 : 2]", false),
            ("[4,4 : 1,2]", false),
            ("[4,1 : 1,0]", true),
        ] {
            let layout: Layout = text.parse().unwrap();
            assert_eq!(compact(&layout), expected, "{text}");
        }
    }

    #[test]
    fn column_major_numbering_across_levels() {
        let levels = [
            level_of(&"[4 : 8]".parse().unwrap()),
            level_of(&"[8 : 1]".parse().unwrap()),
        ];
        assert!(numbered_column_major(&levels));
        let swapped = [
            level_of(&"[4 : 1]".parse().unwrap()),
            level_of(&"[8 : 4]".parse().unwrap()),
        ];
        assert!(!numbered_column_major(&swapped));
    }
}
