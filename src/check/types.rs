//! Stage 2, check: written types — a tensor or group type as the source
//! gives it, resolved (dims folded, new symbolic dims named) and validated
//! as layouts; the layout a declaration defines from it (omitted strides
//! are column-major); and its comparison with a computed type.

use crate::diag::{Diagnostic, Span};
use crate::expr::Expr;
use crate::ir::{self, GroupKind, Level, Memory, Requirement, Scalar};
use crate::layout::{Layout, Swizzle, Tuple};
use crate::syntax::ast::{self, IntExpr};

use super::codes;
use super::env::{Checked, Checker, Poisoned};
use super::ints::IntContext;
use super::symbolic::{col_major, needs_positive_check, same_tuple, size};
use crate::ir::print::{self, Names};

/// One level as written: its dims and, if written, its strides.
///
/// Rule: `shape` (and `stride`) are `Tuple::Node` of the top-level modes;
/// when present, `stride` is congruent to `shape`.
#[derive(Clone, PartialEq, Debug)]
pub(crate) struct WrittenLevel {
    /// The dims.
    pub shape: Tuple<Expr>,
    /// The strides, if a `:` was written.
    pub stride: Option<Tuple<Expr>>,
}

/// A tensor type as written.
#[derive(Clone, PartialEq, Debug)]
pub(crate) struct WrittenTensorType {
    /// Outermost first.
    pub levels: Vec<WrittenLevel>,
    /// Element type.
    pub scalar: Scalar,
    /// Memory.
    pub memory: Memory,
    /// Storage permutation.
    pub swizzle: Option<Swizzle>,
    /// The whole type.
    pub span: Span,
}

/// A group type as written.
#[derive(Clone, PartialEq, Debug)]
pub(crate) struct WrittenGroupType {
    /// Outermost first.
    pub levels: Vec<WrittenLevel>,
    /// Threads or blocks.
    pub kind: GroupKind,
    /// The whole type.
    pub span: Span,
}

/// The levels a declaration defines: written strides are kept; omitted
/// ones are column-major, numbering the innermost level first and each
/// level further out after the ones inside it (so `[2,2].[8,8]` is
/// `[2,2 : 64,128].[8,8 : 1,8]`).
pub(crate) fn defined_levels(levels: &[WrittenLevel]) -> Vec<Level> {
    let mut start = Expr::Const(1);
    let mut out: Vec<Level> = levels
        .iter()
        .rev()
        .map(|level| {
            let stride = match &level.stride {
                Some(stride) => stride.clone(),
                None => col_major(&level.shape, start.clone()).0,
            };
            start = Expr::mul(start.clone(), size(&level.shape));
            Level {
                shape: level.shape.clone(),
                stride,
            }
        })
        .collect();
    out.reverse();
    out
}

/// Whether the computed levels satisfy the written ones: as many levels;
/// a level written with strides equals the computed one, a level written
/// without constrains its dims only.
pub(crate) fn levels_match(written: &[WrittenLevel], computed: &[Level]) -> bool {
    written.len() == computed.len()
        && written.iter().zip(computed).all(|(w, c)| {
            same_tuple(&w.shape, &c.shape)
                && w.stride.as_ref().is_none_or(|s| same_tuple(s, &c.stride))
        })
}

/// The written levels' text.
pub(crate) fn written_text(levels: &[WrittenLevel], names: &Names) -> String {
    print::written_levels_text(levels.iter().map(|l| (&l.shape, l.stride.as_ref())), names)
}

impl Checker {
    /// The names of this kernel's dims and loops, for printing.
    pub(crate) fn names(&self) -> Names<'_> {
        Names {
            dims: &self.kernel.dims,
            loops: &self.kernel.loops,
            buffers: &self.kernel.buffers,
        }
    }

    /// A written tensor type, resolved and validated.
    pub(crate) fn written_tensor_type(
        &mut self,
        ty: &ast::TensorType,
    ) -> Checked<WrittenTensorType> {
        let levels = self.written_levels(&ty.levels);
        let swizzle = match &ty.swizzle {
            None => Ok(None),
            Some(written) => self.swizzle(written, ty.memory).map(Some),
        };
        let scalar = self.scalar_choice(&ty.scalar);
        if let Ok(Scalar::Mbarrier) = scalar
            && ty.memory != Memory::Shared
        {
            return Err(self.fail(
                Diagnostic::error(
                    codes::MBARRIER_USE,
                    format!("barriers in {}", ty.memory.name()),
                    ty.span,
                )
                .with_label("an `mbarrier` lives in shared memory")
                .with_note("the copies and threads of one block arrive at it and wait on it there")
                .with_help("declare it `.SH`, e.g. `%full:[STAGES].mbarrier.SH`"),
            ));
        }
        let levels = levels?;
        if ty.memory == Memory::Global
            && let ([level], [written]) = (levels.as_slice(), ty.levels.as_slice())
        {
            self.require_disjoint_modes(level, written.span);
        }
        Ok(WrittenTensorType {
            levels,
            scalar: scalar?,
            memory: ty.memory,
            swizzle: swizzle?,
            span: ty.span,
        })
    }

    /// A written group type, resolved and validated.
    pub(crate) fn written_group_type(&mut self, ty: &ast::GroupType) -> Checked<WrittenGroupType> {
        Ok(WrittenGroupType {
            levels: self.written_levels(&ty.levels)?,
            kind: ty.kind,
            span: ty.span,
        })
    }

    fn written_levels(&mut self, levels: &[ast::Layout]) -> Checked<Vec<WrittenLevel>> {
        let resolved: Vec<Checked<WrittenLevel>> = levels
            .iter()
            .map(|level| self.written_level(level))
            .collect();
        resolved.into_iter().collect()
    }

    /// Resolves the integer leaves of a tuple, checking every leaf.
    pub(crate) fn int_tuple(
        &mut self,
        tuple: &Tuple<IntExpr>,
        cx: IntContext,
    ) -> Checked<Tuple<Expr>> {
        let resolved = tuple.map(&mut |leaf| self.int(leaf, cx));
        resolved.try_map(&mut |leaf: &Checked<Expr>| leaf.clone())
    }

    fn written_level(&mut self, layout: &ast::Layout) -> Checked<WrittenLevel> {
        let dims: Vec<Checked<Tuple<Expr>>> = layout
            .dims
            .iter()
            .map(|dim| self.int_tuple(dim, IntContext::Type))
            .collect();
        let strides: Option<Vec<Checked<Tuple<Expr>>>> = layout.strides.as_ref().map(|strides| {
            strides
                .iter()
                .map(|stride| self.int_tuple(stride, IntContext::Type))
                .collect()
        });
        let dims: Vec<Tuple<Expr>> = dims.into_iter().collect::<Checked<_>>()?;
        let strides: Option<Vec<Tuple<Expr>>> = strides
            .map(|strides| strides.into_iter().collect::<Checked<_>>())
            .transpose()?;
        let level = WrittenLevel {
            shape: Tuple::Node(dims),
            stride: strides.map(Tuple::Node),
        };
        self.validate_level(&level, layout)?;
        Ok(level)
    }

    /// Checks that a written level is a layout: dims and strides congruent,
    /// extents ≥ 1 (or, symbolic, recorded for the launch to check),
    /// strides ≥ 0, and a constant layout within 64 bits.
    fn validate_level(&mut self, level: &WrittenLevel, layout: &ast::Layout) -> Checked<()> {
        let names = self.names();
        let bad = |message: String, label: String| {
            Diagnostic::error(codes::BAD_LAYOUT, message, layout.span).with_label(label)
        };
        let incongruent = level
            .stride
            .as_ref()
            .filter(|stride| !level.shape.is_congruent(*stride));
        if let Some(stride) = incongruent {
            let shape_text = print::written_level_text(&level.shape, None, &names);
            let stride_text = print::written_level_text(stride, None, &names);
            return Err(self.fail(
                bad(
                    "dims and strides do not have the same form".to_string(),
                    format!("dims {shape_text} but strides {stride_text}"),
                )
                .with_help("give each dim one stride, nested the same way: `[4,(2,4) : 2,(1,8)]`"),
            ));
        }
        let extents: Vec<(Expr, Span)> = level_leaf_spans(layout, &level.shape, true);
        for (extent, span) in extents {
            match extent.as_const() {
                Some(value) if value < 1 => {
                    return Err(self.fail(
                        Diagnostic::error(
                            codes::BAD_LAYOUT,
                            format!("extent {value} in a layout"),
                            span,
                        )
                        .with_label("every extent must be at least 1")
                        .with_help("use a positive extent; a mode that is not there has extent 1"),
                    ));
                }
                Some(_) => {}
                None if needs_positive_check(&extent) => {
                    self.require(Requirement::Positive {
                        value: extent,
                        span,
                    });
                }
                None => {}
            }
        }
        if let Some(stride) = &level.stride {
            for (value, span) in level_leaf_spans(layout, stride, false) {
                if let Some(v) = value.as_const().filter(|&v| v < 0) {
                    return Err(self.fail(
                        Diagnostic::error(codes::BAD_LAYOUT, format!("negative stride {v}"), span)
                            .with_label("strides must be at least 0")
                            .with_note("offsets count up from the tensor's base")
                            .with_help("reorder the modes instead of walking backwards"),
                    ));
                }
            }
        }
        let constant = level.shape.try_map(&mut |e: &Expr| e.as_const().ok_or(()));
        if let Ok(shape) = constant {
            let layout = match &level.stride {
                Some(stride) => stride
                    .try_map(&mut |e: &Expr| e.as_const().ok_or(()))
                    .ok()
                    .map(|stride| Layout::new(shape, stride)),
                None => Some(Layout::col_major(shape)),
            };
            if let Some(Err(error)) = layout {
                return Err(self.fail(
                    bad("this layout is not valid".to_string(), error.to_string())
                        .with_help("use smaller extents or strides"),
                ));
            }
        }
        Ok(())
    }

    /// A global tensor whose strides depend on the dims (a row stride `LD`
    /// beside an extent `N`) has distinct coordinates at distinct elements
    /// only for some dims: its modes, ordered by stride (at sample dims),
    /// must each step past the whole of the one inside it,
    /// `stride_outer ≥ stride_inner · extent_inner`. Where that follows
    /// from the form it is proven; where it holds for no dims it is an error
    /// (`E0220`); otherwise it becomes a launch requirement (`LD - N + 1 ≥ 1`), the
    /// rule BLAS states as `lda ≥ max(1, k)`. Modes of extent 1 and of
    /// stride 0 (a broadcast, every coordinate one element on purpose) take
    /// no part; constant layouts are whatever they are written.
    fn require_disjoint_modes(&mut self, level: &WrittenLevel, span: Span) {
        let Some(stride) = &level.stride else {
            return;
        };
        let shapes = level.shape.leaves();
        let strides = stride.leaves();
        if strides.iter().all(|s| s.as_const().is_some()) || shapes.len() != strides.len() {
            return;
        }
        let sample = |e: &Expr| {
            e.eval(&|var| match var {
                crate::expr::Var::Dim(i) => Some(1000 + i64::from(i)),
                _ => None,
            })
        };
        let mut modes: Vec<(i64, &Expr, &Expr)> = Vec::new();
        for (extent, stride) in shapes.into_iter().zip(strides) {
            if extent.as_const() == Some(1) || stride.as_const() == Some(0) {
                continue;
            }
            let Ok(at_sample) = sample(stride) else {
                return;
            };
            modes.push((at_sample, extent, stride));
        }
        modes.sort_by_key(|mode| mode.0);
        for pair in modes.windows(2) {
            let (_, inner_extent, inner_stride) = pair[0];
            let (_, _, outer_stride) = pair[1];
            let slack = Expr::sub(
                outer_stride.clone(),
                Expr::mul(inner_stride.clone(), inner_extent.clone()),
            );
            match super::symbolic::sign(&slack) {
                super::symbolic::Sign::NonNegative => {}
                super::symbolic::Sign::Negative(_) => {
                    let inner = self.expr_text(&super::symbolic::normalize(&Expr::mul(
                        inner_stride.clone(),
                        inner_extent.clone(),
                    )));
                    let stride = self.expr_text(&super::symbolic::normalize(outer_stride));
                    self.report(
                        Diagnostic::error(
                            codes::BAD_LAYOUT,
                            "a stride shorter than the mode within it, for every value of the dims",
                            span,
                        )
                        .with_label(format!(
                            "a stride of {stride} steps inside the {inner} elements of the mode \
                             within it"
                        ))
                        .with_note(
                            "two coordinates would name one element (wherever the outer mode has \
                             more than one)",
                        )
                        .with_help(format!(
                            "make the stride at least {inner}: a row stride at least the row's length"
                        )),
                    );
                }
                super::symbolic::Sign::Unknown => self.require(Requirement::Positive {
                    value: super::symbolic::normalize(&Expr::add(slack, Expr::Const(1))),
                    span,
                }),
            }
        }
    }

    fn swizzle(&mut self, written: &ast::Swizzle, mem: Memory) -> Checked<Swizzle> {
        let what = "swizzle parameters";
        let bits = self.constant(&written.bits, what);
        let base = self.constant(&written.base, what);
        let shift = self.constant(&written.shift, what);
        let (bits, base, shift) = (bits?, base?, shift?);
        if mem != Memory::Shared {
            return Err(self.fail(
                Diagnostic::error(
                    codes::SWIZZLE_NOT_SHARED,
                    format!("a swizzle on a tensor in {}", mem.name()),
                    written.span,
                )
                .with_label("swizzles permute shared memory only")
                .with_note("a swizzle spreads the rows of a tile over the shared-memory banks")
                .with_help("remove the swizzle, or put the tensor in shared memory (`.SH`)"),
            ));
        }
        Swizzle::new(bits, base, shift).map_err(|error| {
            self.fail(
                Diagnostic::error(codes::BAD_LAYOUT, "this swizzle is not valid", written.span)
                    .with_label(error.to_string())
                    .with_help("`Swizzle<3,3,3>` is the usual choice for 8x64 fp16 tiles"),
            )
        })
    }

    /// The scalar a written choice names, its `select`s decided.
    fn scalar_choice(&mut self, choice: &ast::ScalarChoice) -> Checked<ast::Scalar> {
        match choice {
            ast::ScalarChoice::Named(scalar) => Ok(*scalar),
            ast::ScalarChoice::Select(cond, yes, no) => {
                if self.constant_cond(cond, "the condition of `select`")? {
                    self.scalar_choice(yes)
                } else {
                    self.scalar_choice(no)
                }
            }
        }
    }

    /// The full text of a written tensor type.
    pub(crate) fn written_tensor_text(&self, ty: &WrittenTensorType) -> String {
        format!(
            "{}.{}",
            written_text(&ty.levels, &self.names()),
            print::element_text(ty.scalar, ty.memory, ty.swizzle)
        )
    }

    /// The full text of a written group type.
    pub(crate) fn written_group_text(&self, ty: &WrittenGroupType) -> String {
        format!(
            "{}.{}",
            written_text(&ty.levels, &self.names()),
            ty.kind.name()
        )
    }

    /// The text of a computed tensor type.
    pub(crate) fn tensor_text(&self, ty: &ir::TensorType) -> String {
        print::tensor_type_text(ty, &self.names())
    }

    /// The text of a computed group type.
    pub(crate) fn group_text(&self, ty: &ir::GroupType) -> String {
        print::group_type_text(ty, &self.names())
    }

    /// The shape of computed levels, without strides: `[2,2].[8,8]`.
    pub(crate) fn shape_text(&self, levels: &[Level]) -> String {
        print::written_levels_text(
            levels.iter().map(|level| (&level.shape, None)),
            &self.names(),
        )
    }

    /// The text of a computed level.
    pub(crate) fn level_text(&self, level: &Level) -> String {
        print::level_text(level, &self.names())
    }

    /// The text of an expression.
    pub(crate) fn expr_text(&self, e: &Expr) -> String {
        print::expr_text(e, &self.names())
    }

    /// Reports a mismatch between a written and a computed type, showing
    /// both in full.
    pub(crate) fn type_mismatch(
        &mut self,
        declared: String,
        computed: String,
        annotation: Span,
        value: Span,
    ) -> Poisoned {
        self.fail(
            Diagnostic::error(
                codes::TYPE_MISMATCH,
                "the declared type differs from the computed type",
                annotation,
            )
            .with_label(format!("declared {declared}"))
            .with_secondary(value, format!("computed {computed}"))
            .with_note("a level written with strides must equal the computed level; without strides only its dims must")
            .with_help(format!("write the computed type: `{computed}`")),
        )
    }
}

/// The leaves of a resolved tuple list paired with the spans of the
/// expressions they came from (dims if `dims`, else strides).
fn level_leaf_spans(layout: &ast::Layout, resolved: &Tuple<Expr>, dims: bool) -> Vec<(Expr, Span)> {
    let written: Vec<&Tuple<IntExpr>> = if dims {
        layout.dims.iter().collect()
    } else {
        layout.strides.iter().flatten().collect()
    };
    let spans: Vec<Span> = written
        .iter()
        .flat_map(|tuple| tuple.leaves())
        .map(|leaf| leaf.span)
        .collect();
    resolved
        .leaves()
        .into_iter()
        .cloned()
        .zip(spans.into_iter().chain(std::iter::repeat(layout.span)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::symbolic::level_of;

    fn leaf(v: i64) -> Tuple<Expr> {
        Tuple::Leaf(Expr::Const(v))
    }

    fn written(shape: &[i64], stride: Option<&[i64]>) -> WrittenLevel {
        WrittenLevel {
            shape: Tuple::Node(shape.iter().map(|&v| leaf(v)).collect()),
            stride: stride.map(|s| Tuple::Node(s.iter().map(|&v| leaf(v)).collect())),
        }
    }

    #[test]
    fn omitted_strides_number_the_innermost_level_first() {
        let levels = defined_levels(&[written(&[2, 2], None), written(&[8, 8], None)]);
        let text: Vec<String> = levels
            .iter()
            .map(|l| print::level_text(l, &Names::NONE))
            .collect();
        assert_eq!(text, ["[2,2 : 64,128]", "[8,8 : 1,8]"]);
        let one = defined_levels(&[written(&[4, 1], None)]);
        assert_eq!(print::level_text(&one[0], &Names::NONE), "[4,1 : 1,4]");
    }

    #[test]
    fn annotations_without_strides_constrain_dims_only() {
        let computed = [
            level_of(&"[2,2 : 8,128]".parse().unwrap()),
            level_of(&"[8,8 : 1,16]".parse().unwrap()),
        ];
        assert!(levels_match(
            &[written(&[2, 2], None), written(&[8, 8], None)],
            &computed
        ));
        assert!(levels_match(
            &[written(&[2, 2], Some(&[8, 128])), written(&[8, 8], None)],
            &computed
        ));
        assert!(!levels_match(
            &[written(&[2, 2], None), written(&[8, 8], Some(&[1, 8]))],
            &computed
        ));
        assert!(!levels_match(&[written(&[4, 8], None)], &computed[..1]));
        assert!(!levels_match(&[written(&[2, 2], None)], &computed));
    }
}
