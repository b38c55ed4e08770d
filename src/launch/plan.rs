//! Launch stage: the launch plan of one kernel — its dims bound and its
//! requirements checked, the grid and block from its launch groups, every
//! global parameter with its size and what the run does with it (fill,
//! poison), and the work the kernel does for rates (FLOPs or bytes).

use super::PlanError;
use crate::check::{Names, expr_text};
use crate::diag::Span;
use crate::expr::{Expr, Var};
use crate::ir::{BufferKind, GroupType, Kernel, Memory, Requirement, Scalar};
use crate::reference::{Contract, MatMulShape, ResolvedView};

/// Most blocks in the x dimension of a grid (the checker's bound).
pub const MAX_GRID_BLOCKS: i64 = crate::check::MAX_GRID_SIZE;
/// Most threads in one block.
pub const MAX_BLOCK_THREADS: i64 = 1024;

/// The source a kernel was checked from, to say where a requirement was
/// written (`gemm.gph:7:9`).
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    /// The name shown, usually the path as given.
    pub name: &'a str,
    /// The whole text.
    pub text: &'a str,
}

impl Source<'_> {
    /// `name:line:column` (one-based; the column counts characters).
    pub fn location(&self, span: Span) -> String {
        let mut offset = (span.start as usize).min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |at| at + 1);
        let column = before[line_start..].chars().count() + 1;
        format!("{}:{line}:{column}", self.name)
    }

    /// The text of `span` on its first line, shortened past 40 characters.
    pub fn snippet(&self, span: Span) -> Option<String> {
        let text = self.text.get(span.range())?;
        let first_line = text.lines().next()?.trim();
        if first_line.is_empty() {
            return None;
        }
        Some(if first_line.chars().count() > 40 {
            format!("{}…", first_line.chars().take(40).collect::<String>())
        } else {
            first_line.to_string()
        })
    }
}

/// What a run does with a parameter, from the outermost spec's operands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    /// Read, never written: filled with random values.
    Input,
    /// Written, never read: poisoned before the launch.
    Output,
    /// Read and written (an accumulating `MatMul`'s C, an in-place
    /// operation): filled with random values.
    InOut,
    /// Not an operand of the outermost spec (scratch): poisoned.
    Unused,
}

impl Role {
    /// Whether the run fills the parameter with random values (otherwise
    /// it writes the poison).
    pub fn is_filled(self) -> bool {
        match self {
            Role::Input | Role::InOut => true,
            Role::Output | Role::Unused => false,
        }
    }

    /// Whether the kernel is meant to write it.
    pub fn is_written(self) -> bool {
        match self {
            Role::Output | Role::InOut => true,
            Role::Input | Role::Unused => false,
        }
    }
}

/// One `GL` parameter of a launch.
///
/// Rule: `bytes = elements · scalar.bytes()`; `elements` is the declared
/// layout's cosize with the dims bound.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ParamPlan {
    /// `%name`.
    pub name: String,
    /// Position among the `.u64` parameters.
    pub position: u32,
    /// Element type.
    pub scalar: Scalar,
    /// Elements to allocate.
    pub elements: usize,
    /// Bytes to allocate.
    pub bytes: usize,
    /// What the run does with it.
    pub role: Role,
}

/// The work of one launch, for rates.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Work {
    /// A `MatMul` contract: 2·m·n·k floating-point operations.
    MatMul(MatMulShape),
    /// Any other kernel: bytes of its outermost spec's global inputs read
    /// plus outputs written, once each.
    Bytes(u128),
}

/// Everything needed to launch one kernel, checked on the host.
///
/// Rule: `dims` satisfy every `Requirement` of the kernel; `grid` and
/// `block` are the sizes of its launch groups (1 ≤ grid ≤ 2^31 − 1,
/// 1 ≤ block ≤ 1024); `params` are in ABI order, followed at launch by one
/// `.u32` per dim.
#[derive(Clone, PartialEq, Debug)]
pub struct LaunchPlan {
    /// The kernel (the `.entry` name).
    pub kernel: String,
    /// Each symbolic dimension's name and value, in ABI order.
    pub dims: Vec<(String, i64)>,
    /// Blocks.
    pub grid: u32,
    /// Threads per block.
    pub block: u32,
    /// Dynamic shared memory per block, in bytes.
    pub dynamic_shared_bytes: u32,
    /// Launched cooperatively: the kernel holds a `grid_sync`, so every
    /// block must be resident at once.
    pub cooperative: bool,
    /// The global tensors, in ABI order.
    pub params: Vec<ParamPlan>,
    /// The tensor maps, passed by value after the dims (`ir::TensorMap`).
    pub tensor_maps: Vec<TensorMapPlan>,
    /// The work of one launch.
    pub work: Work,
}

/// One tensor map of a launch, its dims bound: what
/// `cuTensorMapEncodeTiled` is given (the driver), or what the CPU
/// executor decodes (its own encoding).
///
/// Rule: `extents`, `boxes` innermost first, all of one length (1 to 5);
/// `strides_bytes` has one entry per dim but the innermost, each a
/// multiple of 16; `swizzle_bytes` is 0, 32, 64 or 128.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TensorMapPlan {
    /// `%name` of the tensor it describes.
    pub tensor: String,
    /// That tensor's position among the global parameters (`ParamPlan::position`).
    pub position: u32,
    /// Element type.
    pub scalar: Scalar,
    /// Elements per dim, innermost first.
    pub extents: Vec<u64>,
    /// Bytes between consecutive indices of dims 1, 2, ….
    pub strides_bytes: Vec<u64>,
    /// The box, elements per dim, innermost first.
    pub boxes: Vec<u32>,
    /// The shared-memory swizzle's span in bytes (0: none).
    pub swizzle_bytes: u32,
}

fn eval(kernel: &Kernel, expr: &Expr, dims: &[i64], what: &str) -> Result<i64, PlanError> {
    let env = |var: Var| match var {
        Var::Dim(i) => dims.get(i as usize).copied(),
        Var::ThreadId | Var::BlockId | Var::Loop(_) => None,
    };
    expr.eval(&env).map_err(|error| {
        PlanError::Eval(format!(
            "kernel `{}`: {what} `{}`: {error}",
            kernel.name,
            expr_text(expr, &Names::of(kernel))
        ))
    })
}

/// Threads or blocks of a launch group: the product of every extent.
fn group_size(kernel: &Kernel, group: &GroupType, dims: &[i64]) -> Result<i64, PlanError> {
    let mut size: i64 = 1;
    for level in &group.levels {
        for extent in level.shape.leaves() {
            let extent = eval(kernel, extent, dims, "the launch group extent")?;
            size = size.saturating_mul(extent);
        }
    }
    Ok(size)
}

/// `where` of a requirement's message: `required by `M/128` at gemm.gph:7:9`.
fn written_at(span: Span, source: Option<Source>) -> String {
    match source {
        Some(source) => match source.snippet(span) {
            Some(snippet) => format!("required by `{snippet}` at {}", source.location(span)),
            None => format!("required at {}", source.location(span)),
        },
        None => format!("required by a shape written at byte {}", span.start),
    }
}

/// Checks one requirement, with a message naming the dim, its value and the
/// condition.
fn check_requirement(
    kernel: &Kernel,
    requirement: &Requirement,
    dims: &[i64],
    source: Option<Source>,
) -> Result<(), PlanError> {
    let text = |expr: &Expr| expr_text(expr, &Names::of(kernel));
    let described = |expr: &Expr, value: i64| match expr.as_const() {
        Some(_) => value.to_string(),
        None => format!("{} = {value}", text(expr)),
    };
    match requirement {
        Requirement::Divisible {
            value,
            divisor,
            span,
        } => {
            let v = eval(kernel, value, dims, "the requirement on")?;
            let d = eval(kernel, divisor, dims, "the requirement on")?;
            if d != 0 && v % d == 0 {
                return Ok(());
            }
            Err(PlanError::Requirement(format!(
                "kernel `{}`: {} is not a multiple of {} ({})",
                kernel.name,
                described(value, v),
                described(divisor, d),
                written_at(*span, source)
            )))
        }
        Requirement::Positive { value, span } => {
            let v = eval(kernel, value, dims, "the requirement on")?;
            if v >= 1 {
                return Ok(());
            }
            Err(PlanError::Requirement(format!(
                "kernel `{}`: {} is not at least 1 ({})",
                kernel.name,
                described(value, v),
                written_at(*span, source)
            )))
        }
    }
}

/// Which parameters the outermost spec reads and writes. A parameter the
/// spec does not write but its contract reads is an input too: that is how
/// a parameter only some variants declare (under a kernel-scope `if` of
/// constants) is read without a place in the spec's operand list.
pub(super) fn roles(kernel: &Kernel) -> Vec<Role> {
    let root = &kernel.root;
    let accumulates = root.kind.accumulates();
    let contract_reads = |buffer| {
        kernel.contract.as_ref().is_some_and(|contract| {
            contract
                .steps
                .iter()
                .flat_map(|step| &step.inputs)
                .any(|view| view.buffer == buffer)
        })
    };
    kernel
        .params
        .iter()
        .map(|&buffer| {
            let written = root.outputs.iter().any(|view| view.buffer == buffer);
            let read = root.inputs.iter().any(|view| view.buffer == buffer)
                || (accumulates && written)
                || (!written && contract_reads(buffer));
            match (read, written) {
                (true, true) => Role::InOut,
                (true, false) => Role::Input,
                (false, true) => Role::Output,
                (false, false) => Role::Unused,
            }
        })
        .collect()
}

/// FLOPs of a `MatMul` contract, else the bytes of the outermost spec's
/// global operands (views that are not whole global tensors count 0).
fn work(kernel: &Kernel, dims: &[i64]) -> Work {
    if let Some(shape) = Contract::of(kernel, dims)
        .ok()
        .and_then(|contract| contract.matmul())
    {
        return Work::MatMul(shape);
    }
    let root = &kernel.root;
    let bytes = root
        .inputs
        .iter()
        .chain(&root.outputs)
        .filter_map(|view| ResolvedView::resolve(kernel, view, dims).ok())
        .filter(|view| view.memory == Memory::Global)
        .map(|view| view.bytes())
        .sum();
    Work::Bytes(bytes)
}

/// The kernel's tensor maps with `dims` bound; a stride that is not a
/// multiple of 16 bytes is refused here, naming the tensor, before the
/// driver would.
fn tensor_maps(
    kernel: &Kernel,
    dims: &[i64],
    params: &[ParamPlan],
) -> Result<Vec<TensorMapPlan>, PlanError> {
    let mut plans = Vec::with_capacity(kernel.tensor_maps.len());
    for map in &kernel.tensor_maps {
        let buffer = kernel.buffers.get(map.tensor.0 as usize);
        let param = buffer.and_then(|buffer| {
            params
                .iter()
                .find(|param| param.name == format!("%{}", buffer.name))
        });
        let (Some(buffer), Some(param)) = (buffer, param) else {
            return Err(PlanError::Eval(format!(
                "kernel `{}`: a tensor map of buffer {} that is no global parameter",
                kernel.name, map.tensor.0
            )));
        };
        let bytes = u64::from(buffer.ty.scalar.bytes());
        let mut extents = Vec::with_capacity(map.dims.len());
        let mut strides_bytes = Vec::with_capacity(map.dims.len());
        for (i, dim) in map.dims.iter().enumerate() {
            let what = format!("the extent of %{}'s mode {}", buffer.name, dim.mode);
            extents.push(eval(kernel, &dim.extent, dims, &what)? as u64);
            if i > 0 {
                let what = format!("the stride of %{}'s mode {}", buffer.name, dim.mode);
                let stride = eval(kernel, &dim.stride, dims, &what)? as u64 * bytes;
                if stride % 16 != 0 {
                    return Err(PlanError::Launch(format!(
                        "kernel `{}`: the tensor map of %{} needs every stride but the \
                         innermost to be a multiple of 16 bytes; mode {} has {stride} bytes",
                        kernel.name, buffer.name, dim.mode
                    )));
                }
                strides_bytes.push(stride);
            }
        }
        plans.push(TensorMapPlan {
            tensor: param.name.clone(),
            position: param.position,
            scalar: buffer.ty.scalar,
            extents,
            strides_bytes,
            boxes: map.boxes.clone(),
            swizzle_bytes: map.swizzle.span_bytes(),
        });
    }
    Ok(plans)
}

impl LaunchPlan {
    /// The plan of `kernel` with `dims` (its dims' values, in order, from
    /// [`DimValues::bind`](super::DimValues::bind)) and the dynamic shared
    /// memory its lowering reported. Every requirement is checked first.
    pub fn new(
        kernel: &Kernel,
        dims: &[i64],
        dynamic_shared_bytes: u32,
        source: Option<Source>,
    ) -> Result<LaunchPlan, PlanError> {
        if dims.len() != kernel.dims.len() {
            return Err(PlanError::Eval(format!(
                "kernel `{}` has {} symbolic dimensions; {} values given",
                kernel.name,
                kernel.dims.len(),
                dims.len()
            )));
        }
        for requirement in &kernel.requirements {
            check_requirement(kernel, requirement, dims, source)?;
        }
        let grid = group_size(kernel, &kernel.grid, dims)?;
        let block = group_size(kernel, &kernel.block, dims)?;
        if !(1..=MAX_GRID_BLOCKS).contains(&grid) {
            return Err(PlanError::Launch(format!(
                "kernel `{}`: a grid of {grid} blocks; CUDA allows 1 to {MAX_GRID_BLOCKS}",
                kernel.name
            )));
        }
        if !(1..=MAX_BLOCK_THREADS).contains(&block) {
            return Err(PlanError::Launch(format!(
                "kernel `{}`: a block of {block} threads; CUDA allows 1 to {MAX_BLOCK_THREADS}",
                kernel.name
            )));
        }
        let roles = roles(kernel);
        let mut params = Vec::with_capacity(kernel.params.len());
        for (&id, role) in kernel.params.iter().zip(roles) {
            let buffer = kernel.buffers.get(id.0 as usize).ok_or_else(|| {
                PlanError::Eval(format!(
                    "kernel `{}`: parameter buffer {} does not exist",
                    kernel.name, id.0
                ))
            })?;
            let position = match buffer.kind {
                BufferKind::Param(position) => position,
                BufferKind::Shared | BufferKind::Registers | BufferKind::Temporary => {
                    return Err(PlanError::Eval(format!(
                        "kernel `{}`: parameter %{} is not a global buffer",
                        kernel.name, buffer.name
                    )));
                }
            };
            let what = format!("the size of %{}", buffer.name);
            let elements = eval(kernel, &buffer.elements, dims, &what)?;
            let scalar = buffer.ty.scalar;
            let too_large = || {
                PlanError::Launch(format!(
                    "kernel `{}`: %{} holds {elements} {} elements, more than this machine can address",
                    kernel.name,
                    buffer.name,
                    scalar.name()
                ))
            };
            let elements = usize::try_from(elements).map_err(|_| too_large())?;
            let bytes = elements
                .checked_mul(scalar.bytes() as usize)
                .ok_or_else(too_large)?;
            params.push(ParamPlan {
                name: format!("%{}", buffer.name),
                position,
                scalar,
                elements,
                bytes,
                role,
            });
        }
        Ok(LaunchPlan {
            kernel: kernel.name.clone(),
            dims: kernel
                .dims
                .iter()
                .zip(dims)
                .map(|(dim, &value)| (dim.name.clone(), value))
                .collect(),
            grid: grid as u32,
            block: block as u32,
            dynamic_shared_bytes,
            cooperative: kernel.has_grid_barrier(),
            tensor_maps: tensor_maps(kernel, dims, &params)?,
            params,
            work: work(kernel, dims),
        })
    }

    /// The dims' values, in ABI order.
    pub fn dim_values(&self) -> Vec<i64> {
        self.dims.iter().map(|(_, value)| *value).collect()
    }

    /// `M=4096 N=4096 K=4096`, or empty for a kernel without dims.
    pub fn dims_text(&self) -> String {
        self.dims
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// `<<<64, 256, 96 KiB>>>`: grid, block and dynamic shared memory.
    pub fn config_text(&self) -> String {
        let shared = self.dynamic_shared_bytes;
        let shared = if shared >= 1024 && shared % 1024 == 0 {
            format!("{} KiB", shared / 1024)
        } else {
            format!("{shared} B")
        };
        format!("<<<{}, {}, {shared}>>>", self.grid, self.block)
    }

    /// Bytes of all parameters: one input set.
    pub fn set_bytes(&self) -> usize {
        self.params.iter().map(|p| p.bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::{Options, check};

    /// A GEMM whose body tiles A (recording `K % 32 == 0`) and gives each
    /// thread a 1×32 strip of its block's 128×64 tile of C, so that C is
    /// written once, as the checker asks of a decomposed `MatMul`.
    const GEMM: &str = "kernel gemm {\n\
        %a:[M, K].fp16.GL\n\
        %b:[K, N].fp16.GL\n\
        %c:[M, N].fp32.GL\n\
        %scratch:[64].fp32.GL\n\
        #g:[M/128, N/64].block\n\
        #t:[256].thread\n\
        %c <- MatMul<<<#g, #t>>>(%a, %b) {\n\
        %r = %a.tile([128, 32])\n\
        @bm, @bn = #g.indices()\n\
        @t = #t.indices()\n\
        #block:[].block = #g.scalar()\n\
        #me:[].thread = #t.scalar()\n\
        %row = %a.tile([128, _])[@bm, 0].tile([1, _])[@t % 128, 0]\n\
        %cols = %b.tile([_, 64])[0, @bn].tile([_, 32])[0, @t / 128]\n\
        %c.tile([128, 64])[@bm, @bn].tile([1, 32])[@t % 128, @t / 128] <- MatMul<<<#block, #me>>>(%row, %cols)\n\
        }\n}\n";

    fn kernel(source: &str) -> Kernel {
        let checked =
            check("gemm.gph", source, &Options::default()).unwrap_or_else(|d| panic!("{d:#?}"));
        checked
            .program
            .kernels
            .into_iter()
            .next()
            .expect("one kernel")
    }

    fn source() -> Source<'static> {
        Source {
            name: "gemm.gph",
            text: GEMM,
        }
    }

    #[test]
    fn a_plan_sizes_grid_block_and_buffers_from_the_dims() {
        let kernel = kernel(GEMM);
        let plan = LaunchPlan::new(&kernel, &[256, 64, 128], 0, Some(source())).unwrap();
        assert_eq!((plan.grid, plan.block), (4, 256));
        assert_eq!(plan.dims_text(), "M=256 K=64 N=128");
        assert_eq!(plan.config_text(), "<<<4, 256, 0 B>>>");
        let params: Vec<(&str, usize, Role)> = plan
            .params
            .iter()
            .map(|p| (p.name.as_str(), p.bytes, p.role))
            .collect();
        assert_eq!(
            params,
            [
                ("%a", 256 * 64 * 2, Role::Input),
                ("%b", 64 * 128 * 2, Role::Input),
                ("%c", 256 * 128 * 4, Role::InOut),
                ("%scratch", 256, Role::Unused),
            ]
        );
        let Work::MatMul(shape) = plan.work else {
            panic!("{:?}", plan.work)
        };
        assert_eq!(shape.flops(), 2 * 256 * 128 * 64);
    }

    #[test]
    fn a_violated_division_names_the_dim_its_value_and_where() {
        let kernel = kernel(GEMM);
        let error = LaunchPlan::new(&kernel, &[1000, 64, 128], 0, Some(source())).unwrap_err();
        assert_eq!(
            error.to_string(),
            "kernel `gemm`: M = 1000 is not a multiple of 128 (required by `M/128` at gemm.gph:6:5)"
        );
        // The tiling inside the body records K % 32 == 0 at its tile.
        let error = LaunchPlan::new(&kernel, &[256, 48, 128], 0, Some(source())).unwrap_err();
        assert_eq!(
            error.to_string(),
            "kernel `gemm`: K = 48 is not a multiple of 32 (required by `32` at gemm.gph:9:20)"
        );
    }

    #[test]
    fn a_non_positive_extent_and_oversized_launches_are_refused() {
        let kernel = kernel(
            "%a:[N - 1].fp32.GL\n#b:[1].block\n#t:[32].thread\n%a <- Init<1.0><<<#b, #t>>>()\n",
        );
        let source = Source {
            name: "gemm.gph",
            text: "%a:[N - 1].fp32.GL\n",
        };
        let error = LaunchPlan::new(&kernel, &[1], 0, Some(source)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "kernel `gemm`: N - 1 = 0 is not at least 1 (required by `N - 1` at gemm.gph:1:5)"
        );
        let big = kernel_with_grid("[G, 65536]");
        let error = LaunchPlan::new(&big, &[65536], 0, None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "kernel `t`: a grid of 4294967296 blocks; CUDA allows 1 to 2147483647"
        );
    }

    fn kernel_with_grid(grid: &str) -> Kernel {
        let source = format!(
            "%a:[4].fp32.GL\n#b:{grid}.block\n#t:[32].thread\n%a <- Init<1.0><<<#b, #t>>>()\n"
        );
        check("t.gph", &source, &Options::default())
            .unwrap()
            .program
            .kernels
            .remove(0)
    }

    #[test]
    fn roles_and_bytes_of_other_kinds() {
        let kernel = kernel(
            "%x:[64].fp16.GL\n%y:[64].fp32.GL\n#b:[1].block\n#t:[64].thread\n\
             %y <- BinaryPointwise<add><<<#b, #t>>>(%x, %y)\n",
        );
        let plan = LaunchPlan::new(&kernel, &[], 49152, None).unwrap();
        let roles: Vec<Role> = plan.params.iter().map(|p| p.role).collect();
        assert_eq!(roles, [Role::Input, Role::InOut]);
        // x (128 B) and y (256 B) read, y (256 B) written.
        assert_eq!(plan.work, Work::Bytes(128 + 256 + 256));
        assert_eq!(plan.config_text(), "<<<1, 64, 48 KiB>>>");
        assert_eq!(plan.set_bytes(), 128 + 256);
    }

    /// `%b` is no operand of the spec, but the contract reads it: an input,
    /// filled like one; `%s`, read by neither, stays scratch.
    #[test]
    fn a_parameter_the_contract_reads_is_an_input() {
        let kernel = kernel(
            "%x:[64].fp32.GL\n%b:[64].fp32.GL\n%s:[64].fp32.GL\n%y:[64].fp32.GL\n\
             contract {\n%y <- BinaryPointwise<add>(%x, %b)\n}\n#g:[1].block\n#t:[64].thread\n\
             %y <- Spec<<<#g, #t>>>(%x) {\n@i = #t.indices()\n#one:[].block = #g.scalar()\n\
             #me:[].thread = #t.scalar()\n%v:[1].fp32.RF\n%w:[1].fp32.RF\n\
             %v <- Move<<<#one, #me>>>(%x[@i])\n%w <- Move<<<#one, #me>>>(%b[@i])\n\
             %v <- BinaryPointwise<add><<<#one, #me>>>(%v, %w)\n%y[@i] <- Move<<<#one, #me>>>(%v)\n}\n",
        );
        let plan = LaunchPlan::new(&kernel, &[], 49152, None).unwrap();
        let roles: Vec<Role> = plan.params.iter().map(|p| p.role).collect();
        assert_eq!(
            roles,
            [Role::Input, Role::Input, Role::Unused, Role::Output]
        );
    }

    #[test]
    fn locations_count_lines_and_characters() {
        let source = Source {
            name: "x.gph",
            text: "ab\nçd M/2\n",
        };
        assert_eq!(source.location(Span::new(7, 10)), "x.gph:2:4");
        assert_eq!(source.snippet(Span::new(7, 10)).as_deref(), Some("M/2"));
        assert_eq!(source.location(Span::new(100, 100)), "x.gph:3:1");
    }
}
