//! Stage 2, check: declarations and definitions. A declaration (`%x : T`,
//! `%x : T = Allocate()`, `#g : G`) creates storage or a group with the
//! layout its type defines, under the memory rules (global tensors are the
//! kernel's parameters, shared and register allocations have constant
//! sizes). A definition (`%x (: T)? = e`, `#g (: G)? = e`) names a computed
//! value, after comparing it with the annotation if there is one.

use crate::diag::{Diagnostic, Span};
use crate::expr::Expr;
use crate::ir::{Buffer, BufferId, BufferKind, GroupType, Memory, TensorType, View};
use crate::layout::Swizzle;
use crate::ptx::target::SHARED_SLICE_BYTES;
use crate::syntax::ast::{ExprKind, GroupDef, TensorDef};

use super::codes;
use super::env::{Binding, Checked, Checker, GroupVal, Namespace, Origin, Poisoned};
use super::symbolic::cosize;
use super::types::{WrittenTensorType, defined_levels, levels_match};

impl Checker {
    /// `%x : T`, `%x : T = Allocate()`, `%x (: T)? = e`.
    pub(crate) fn tensor_def(&mut self, def: &TensorDef) {
        let written = def.ty.as_ref().map(|ty| self.written_tensor_type(ty));
        let allocate = def
            .value
            .as_ref()
            .filter(|e| matches!(e.kind, ExprKind::Allocate));
        let view = match (&def.value, allocate) {
            (None, _) => self.declare_tensor(def, written, false),
            (Some(_), Some(_)) => self.declare_tensor(def, written, true),
            (Some(value), None) => {
                let computed = self.tensor_value(value);
                match (computed, written) {
                    (Ok(view), Some(Ok(written))) => {
                        let matches = levels_match(&written.levels, &view.ty.levels)
                            && written.scalar == view.ty.scalar
                            && written.memory == view.ty.memory
                            && written.swizzle == view.ty.swizzle;
                        if matches {
                            Ok(view)
                        } else {
                            let declared = self.written_tensor_text(&written);
                            let computed = self.tensor_text(&view.ty);
                            Err(self.type_mismatch(declared, computed, written.span, value.span))
                        }
                    }
                    (Ok(view), None | Some(Err(Poisoned))) => Ok(view),
                    (Err(Poisoned), _) => Err(Poisoned),
                }
            }
        };
        let kernel_declaration = self.at_kernel_scope() && def.value.is_none();
        self.define(
            Namespace::Tensor,
            &def.name,
            Binding::Tensor(view.ok()),
            kernel_declaration,
        );
    }

    /// A declaration: a new buffer with the type's layout.
    fn declare_tensor(
        &mut self,
        def: &TensorDef,
        written: Option<Checked<WrittenTensorType>>,
        allocate: bool,
    ) -> Checked<View> {
        let Some(written) = written else {
            let span = def.value.as_ref().map_or(def.name.span, |e| e.span);
            return Err(self.fail(
                Diagnostic::error(
                    codes::BAD_OPERATION,
                    format!("`Allocate()` for `%{}` without a type", def.name.text),
                    span,
                )
                .with_label("what shape and memory?")
                .with_secondary(def.name.span, "this tensor")
                .with_help(format!(
                    "give the type: `%{}:[8,8].fp16.SH = Allocate()`",
                    def.name.text
                )),
            ));
        };
        let written = written?;
        let kind = match written.memory {
            Memory::Global => {
                let problem = if allocate {
                    Some("global tensors cannot be allocated by a kernel")
                } else if self.in_contract {
                    None
                } else if !self.at_kernel_scope() {
                    Some("a global tensor declared inside a spec body")
                } else {
                    None
                };
                if let Some(problem) = problem {
                    return Err(self.fail(
                        Diagnostic::error(codes::GLOBAL_NOT_PARAMETER, problem, def.name.span)
                            .with_label("global tensors are the kernel's parameters")
                            .with_secondary(written.span, "in global memory")
                            .with_note("the caller passes every global tensor; they are declared at kernel scope, in parameter order")
                            .with_help(format!(
                                "declare `%{}` at kernel scope, without `= Allocate()`; for scratch data use `.SH` or `.RF`",
                                def.name.text
                            )),
                    ));
                }
                if self.in_contract {
                    BufferKind::Temporary
                } else {
                    BufferKind::Param(self.kernel.params.len() as u32)
                }
            }
            Memory::Shared => BufferKind::Shared,
            Memory::Registers => BufferKind::Registers,
        };
        if self.in_contract && kind != BufferKind::Temporary {
            return Err(self.fail(
                Diagnostic::error(
                    codes::CONTRACT_FORM,
                    format!("a {} tensor declared in a contract", written.memory.name()),
                    written.span,
                )
                .with_label("a contract's temporaries are whole tensors")
                .with_note("a contract is evaluated over whole tensors on the host; it has no shared memory or registers")
                .with_help(format!("declare it `.GL`: `%{}:[…].fp32.GL`", def.name.text)),
            ));
        }
        let levels = defined_levels(&written.levels);
        if written.memory != Memory::Global {
            let symbolic = levels
                .iter()
                .flat_map(|l| l.shape.leaves().into_iter().chain(l.stride.leaves()))
                .find(|e| e.as_const().is_none())
                .cloned();
            if let Some(symbolic) = symbolic {
                let text = self.expr_text(&symbolic);
                let memory = if written.memory == Memory::Shared {
                    "shared"
                } else {
                    "register"
                };
                return Err(self.fail(
                    Diagnostic::error(
                        codes::ALLOCATION_NOT_CONSTANT,
                        format!(
                            "the {memory} tensor `%{}` has a size known only at launch",
                            def.name.text
                        ),
                        written.span,
                    )
                    .with_label(format!("depends on `{text}`"))
                    .with_note(format!(
                        "{memory} storage is reserved when the kernel is compiled"
                    ))
                    .with_help("use constants (`const BM = 128`) in shared and register types"),
                ));
            }
        }
        self.tensor_fits(&levels, written.span);
        if let (Some(swizzle), Some(elements)) = (written.swizzle, cosize(&levels).as_const()) {
            self.swizzle_stays_inside(swizzle, elements, written.scalar.bytes(), written.span);
        }
        let ty = TensorType {
            levels,
            scalar: written.scalar,
            memory: written.memory,
            swizzle: written.swizzle,
        };
        let id = BufferId(self.kernel.buffers.len() as u32);
        if matches!(kind, BufferKind::Param(_)) {
            self.kernel.params.push(id);
        }
        self.kernel.buffers.push(Buffer {
            name: def.name.text.clone(),
            span: def.name.span,
            kind,
            elements: cosize(&ty.levels),
            ty: ty.clone(),
        });
        Ok(View {
            buffer: id,
            base: Expr::Const(0),
            ty,
            bounds: Vec::new(),
            span: def.name.span,
        })
    }

    /// `#g : G`, `#g (: G)? = e`.
    pub(crate) fn group_def(&mut self, def: &GroupDef) {
        let written = def.ty.as_ref().map(|ty| self.written_group_type(ty));
        let group = match (&def.value, written) {
            (None, Some(written)) => written.map(|written| GroupVal {
                ty: GroupType {
                    levels: defined_levels(&written.levels),
                    kind: written.kind,
                },
                origin: Origin {
                    name: def.name.text.clone(),
                    span: def.name.span,
                },
            }),
            // The parser gives a group at least a type or a value.
            (None, None) => Err(Poisoned),
            (Some(value), _) if matches!(value.kind, ExprKind::Allocate) => Err(self.fail(
                Diagnostic::error(
                    codes::BAD_OPERATION,
                    "`Allocate()` makes tensors, not thread groups",
                    value.span,
                )
                .with_label("allocates storage")
                .with_help(format!(
                    "declare the group by its type alone: `#{}:[32].thread`",
                    def.name.text
                )),
            )),
            (Some(value), written) => {
                let computed = self.group_value(value);
                match (computed, written) {
                    (Ok(group), Some(Ok(written))) => {
                        if levels_match(&written.levels, &group.ty.levels)
                            && written.kind == group.ty.kind
                        {
                            Ok(group)
                        } else {
                            let declared = self.written_group_text(&written);
                            let computed = self.group_text(&group.ty);
                            Err(self.type_mismatch(declared, computed, written.span, value.span))
                        }
                    }
                    (Ok(group), None | Some(Err(Poisoned))) => Ok(group),
                    (Err(Poisoned), _) => Err(Poisoned),
                }
            }
        };
        let kernel_declaration = self.at_kernel_scope() && def.value.is_none();
        self.define(
            Namespace::Group,
            &def.name,
            Binding::Group(group.ok()),
            kernel_declaration,
        );
    }
}

/// Most offsets whose swizzled image is checked one by one: more than any
/// shared tensor holds (227 KiB of bytes).
const SWIZZLE_CHECK_LIMIT: i64 = 1 << 18;

impl Checker {
    /// A swizzle must keep the offsets of its tensor inside the tensor's
    /// shared-memory slice (its elements rounded up to the slice
    /// granularity, [`SHARED_SLICE_BYTES`]): an offset `o < elements` whose
    /// image `swizzle(o)` lies past the slice would be read or written in
    /// another tensor's memory or past the allocation.
    fn swizzle_stays_inside(
        &mut self,
        swizzle: Swizzle,
        elements: i64,
        element_bytes: u32,
        span: Span,
    ) {
        let granule = i64::from(SHARED_SLICE_BYTES / element_bytes.max(1)).max(1);
        let slice = (elements + granule - 1) / granule * granule;
        let escaping = (0..elements.min(SWIZZLE_CHECK_LIMIT))
            .map(|offset| (offset, swizzle.apply(offset)))
            .find(|&(_, image)| !(0..slice).contains(&image));
        let Some((offset, image)) = escaping else {
            return;
        };
        self.report(
            Diagnostic::error(
                codes::SWIZZLE_OUTSIDE,
                format!(
                    "this swizzle moves element {offset} of a {elements}-element tensor to offset {image}, past its {slice}-element slice"
                ),
                span,
            )
            .with_label(format!(
                "Swizzle<{},{},{}> maps offsets of this tensor outside it",
                swizzle.bits(),
                swizzle.base(),
                swizzle.shift()
            ))
            .with_note(format!("shared tensors are reserved in slices of {SHARED_SLICE_BYTES} bytes; a swizzle must keep every offset inside its tensor's slice"))
            .with_help("use a swizzle whose bits lie below the tensor's size, e.g. `Swizzle<3,3,3>` on a tensor of a multiple of 512 elements"),
        );
    }
}
