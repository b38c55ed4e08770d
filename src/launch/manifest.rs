//! Launch stage: the launch manifest — what a program of one's own needs to
//! launch the PTX `ptxgen` wrote, as JSON: per kernel the parameters in ABI
//! order with their types and roles, the grid and block as expressions of
//! the dims, the dynamic shared memory, the run-time requirements
//! (divisibility, positivity, pointer alignment, CUDA's launch limits), the
//! TMA tensor maps the launch must encode and pass after the dims, and the
//! work one launch does, as `ptxgen bench` counts it for its rates.
//!
//! Its JSON Schema is `docs/manifest.schema.json`. Fields are only ever
//! added to version 1; a reader ignores the ones it does not know.
//!
//! The expressions are written in the IR's integer syntax (`M/128*(N/256)`):
//! integers, dim names, `+ - * / %` with `/` the floor division of
//! non-negative values, and parentheses; the launch plan evaluates the same
//! expressions when `ptxgen run` binds `--dim` values.

use serde_json::{Value, json};

use super::plan::{MAX_BLOCK_THREADS, MAX_GRID_BLOCKS, Role, Source, roles};
use crate::expr::{Expr, Var};
use crate::ir::print::{Names, expr_text};
use crate::ir::{BufferKind, GroupType, Kernel, Memory, Program, Requirement, SpecKind, View};

/// Version of the manifest's format; a reader refuses another.
pub const MANIFEST_VERSION: u32 = 1;

/// The alignment, in bytes, the lowering assumes of every global tensor's
/// address (docs/lowering.md, "Alignment of global tensors"): 16-byte
/// vector loads and stores are chosen on that assumption.
pub const PARAM_ALIGN_BYTES: u32 = 16;

/// Most blocks in a grid's y and z extents (the manifest's grids are
/// one-dimensional; the limit is stated for a reader's checks).
pub const MAX_GRID_YZ: i64 = 65535;

/// Dynamic shared memory a kernel may use before its limit must be raised
/// through `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
pub const DEFAULT_DYNAMIC_SHARED_BYTES: u32 = 48 * 1024;

/// The manifest of `program`, whose kernels were lowered into a module for
/// `target` (`sm_90a`) with `dynamic_shared_bytes[i]` for kernel `i`;
/// `source` is the `.gph` file, which requirements point into
/// (`file:line:col`).
pub fn manifest(
    program: &Program,
    source: Source,
    target: &str,
    dynamic_shared_bytes: &[u32],
) -> Value {
    let kernels: Vec<Value> = program
        .kernels
        .iter()
        .zip(dynamic_shared_bytes)
        .map(|(kernel, &shared)| kernel_entry(kernel, shared, source))
        .collect();
    json!({
        "manifest": MANIFEST_VERSION,
        "source": source.name,
        "target": target,
        "kernels": kernels,
    })
}

/// The product of a launch group's extents, as one expression.
fn group_size(group: &GroupType) -> Expr {
    group
        .levels
        .iter()
        .flat_map(|level| level.shape.leaves())
        .fold(Expr::from(1), |size, extent| {
            Expr::mul(size, extent.clone())
        })
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Input => "input",
        Role::InOut => "inout",
        Role::Output => "output",
        Role::Unused => "unused",
    }
}

fn kernel_entry(kernel: &Kernel, dynamic_shared_bytes: u32, source: Source) -> Value {
    let names = Names::of(kernel);
    let text = |expr: &Expr| expr_text(expr, &names);
    let mut params = Vec::new();
    for (&id, role) in kernel.params.iter().zip(roles(kernel)) {
        let Some(buffer) = kernel.buffers.get(id.0 as usize) else {
            continue;
        };
        match buffer.kind {
            BufferKind::Param(_) => params.push(json!({
                "name": format!("%{}", buffer.name),
                "type": "u64",
                "points_to": buffer.ty.scalar.name(),
                "elements": text(&buffer.elements),
                "element_bytes": buffer.ty.scalar.bytes(),
                "align_bytes": PARAM_ALIGN_BYTES,
                "role": role_name(role),
            })),
            BufferKind::Shared | BufferKind::Registers | BufferKind::Temporary => {}
        }
    }
    for dim in &kernel.dims {
        params.push(json!({
            "name": dim.name,
            "type": "u32",
            "dim": true,
            "min": 1,
            "max": u32::MAX,
        }));
    }
    let tensor_maps = tensor_map_entries(kernel, &text);
    for (index, (param, _)) in tensor_maps.iter().enumerate() {
        params.push(json!({ "name": param, "type": "tensor_map", "tensor_map": index }));
    }
    let requirements: Vec<Value> = kernel
        .requirements
        .iter()
        .map(|requirement| match requirement {
            Requirement::Divisible {
                value,
                divisor,
                span,
            } => json!({
                "kind": "divisible",
                "value": text(value),
                "divisor": text(divisor),
                "written_at": source.location(*span),
            }),
            Requirement::Positive { value, span } => json!({
                "kind": "positive",
                "value": text(value),
                "written_at": source.location(*span),
            }),
        })
        .collect();
    json!({
        "name": kernel.name,
        "dims": kernel.dims.iter().map(|dim| dim.name.as_str()).collect::<Vec<_>>(),
        "params": params,
        "grid": [text(&group_size(&kernel.grid)), "1", "1"],
        "block": [text(&group_size(&kernel.block)), "1", "1"],
        "dynamic_shared_bytes": dynamic_shared_bytes,
        "cooperative": kernel.has_grid_barrier(),
        "tensor_maps": tensor_maps.into_iter().map(|(_, entry)| entry).collect::<Vec<_>>(),
        "requirements": requirements,
        "limits": {
            "grid": [MAX_GRID_BLOCKS, MAX_GRID_YZ, MAX_GRID_YZ],
            "block_threads": MAX_BLOCK_THREADS,
            "default_dynamic_shared_bytes": DEFAULT_DYNAMIC_SHARED_BYTES,
        },
        "work": work_entry(kernel, &text),
        "min_blocks_per_sm": kernel.occupancy.min_blocks_per_sm,
        "max_registers": kernel.occupancy.max_registers,
    })
}

/// The kernel's tensor maps (`ir::TensorMap`), each with the name of its
/// `.param` — `tmap<i>_<tensor>`, `i` its index among the kernel's maps —
/// and its entry: the tensor, its element type, the extents and the strides
/// of dims 1.. in bytes as expressions of the dims, the box and the
/// swizzle's span. A map of a buffer that does not exist (never made by
/// the checker) is left out.
fn tensor_map_entries(kernel: &Kernel, text: &dyn Fn(&Expr) -> String) -> Vec<(String, Value)> {
    let mut entries = Vec::with_capacity(kernel.tensor_maps.len());
    for (index, map) in kernel.tensor_maps.iter().enumerate() {
        let Some(buffer) = kernel.buffers.get(map.tensor.0 as usize) else {
            continue;
        };
        let scalar = buffer.ty.scalar;
        let bytes = Expr::from(i64::from(scalar.bytes()));
        let extents: Vec<String> = map.dims.iter().map(|dim| text(&dim.extent)).collect();
        let strides_bytes: Vec<String> = map
            .dims
            .iter()
            .skip(1)
            .map(|dim| text(&Expr::mul(dim.stride.clone(), bytes.clone())))
            .collect();
        let entry = json!({
            "tensor": format!("%{}", buffer.name),
            "scalar": scalar.name(),
            "element_bytes": scalar.bytes(),
            "extents": extents,
            "strides_bytes": strides_bytes,
            "box": map.boxes,
            "swizzle_bytes": map.swizzle.span_bytes(),
        });
        entries.push((format!("tmap{index}_{}", buffer.name), entry));
    }
    entries
}

/// Whether `expr` depends on the dims alone (no thread, block or loop
/// variable): a value the host can compute before the launch.
fn dims_only(expr: &Expr) -> bool {
    expr.vars().iter().all(|var| matches!(var, Var::Dim(_)))
}

/// Whether `view` is one whole tensor once the dims are bound: its base,
/// extents and strides depend on nothing else.
fn is_whole(view: &View) -> bool {
    dims_only(&view.base)
        && view.ty.levels.iter().all(|level| {
            level.shape.leaves().into_iter().all(dims_only)
                && level.stride.leaves().into_iter().all(dims_only)
        })
}

fn product<'a>(extents: impl IntoIterator<Item = &'a Expr>) -> Expr {
    extents.into_iter().fold(Expr::from(1), |size, extent| {
        Expr::mul(size, extent.clone())
    })
}

/// Elements of a view: the product of every extent.
fn view_elements(view: &View) -> Expr {
    product(view.ty.levels.iter().flat_map(|level| level.shape.leaves()))
}

/// A view read as a batch of matrices (`reference::ResolvedView::matrix`):
/// mode 0 of every level gives the rows, mode 1 the columns, a mode 2 the
/// batch (1 without one); `None` unless every level has two or three
/// modes (or none at all).
fn matrix(view: &View) -> Option<(Expr, Expr, Expr)> {
    let levels: Vec<Vec<_>> = view
        .ty
        .levels
        .iter()
        .map(|level| level.shape.modes())
        .collect();
    let rank = levels.first().map_or(0, Vec::len);
    if levels.iter().any(|modes| modes.len() != rank) {
        return None;
    }
    let mode = |i: usize| product(levels.iter().flat_map(|modes| modes[i].leaves()));
    match rank {
        0 => Some((Expr::from(1), Expr::from(1), Expr::from(1))),
        2 => Some((mode(0), mode(1), Expr::from(1))),
        3 => Some((mode(0), mode(1), mode(2))),
        _ => None,
    }
}

/// The work of one launch as `ptxgen bench` counts it (`launch::Work`),
/// with the dims left symbolic: `2*m*n*k` FLOPs (times the batch) for a contract with one
/// `MatMul` of whole tensors, else the bytes of the outermost spec's whole
/// global operands, each read or written once.
fn work_entry(kernel: &Kernel, text: &dyn Fn(&Expr) -> String) -> Value {
    let steps: Vec<_> = match &kernel.contract {
        Some(contract) => contract.steps.iter().collect(),
        None => vec![&kernel.root],
    };
    let checkable = steps.iter().all(|step| {
        !matches!(step.kind, SpecKind::Generic | SpecKind::Shfl { .. })
            && step.inputs.iter().chain(&step.outputs).all(is_whole)
    });
    let matmuls: Vec<_> = steps
        .iter()
        .filter(|step| matches!(step.kind, SpecKind::MatMul { .. }))
        .collect();
    let shape = match (matmuls.as_slice(), checkable) {
        ([step], true) => match step.inputs.as_slice() {
            [a, b] => matrix(a).zip(matrix(b)),
            _ => None,
        },
        _ => None,
    };
    if let Some(((m, k, batch), (_, n, _))) = shape {
        let flops = Expr::mul(
            Expr::mul(
                Expr::mul(Expr::mul(Expr::from(2), m.clone()), n.clone()),
                k.clone(),
            ),
            batch.clone(),
        );
        let mut entry = json!({
            "kind": "flops",
            "value": text(&flops),
            "m": text(&m),
            "n": text(&n),
            "k": text(&k),
        });
        if batch.as_const() != Some(1) {
            entry["batch"] = json!(text(&batch));
        }
        return entry;
    }
    let root = &kernel.root;
    let bytes = root
        .inputs
        .iter()
        .chain(&root.outputs)
        .filter(|view| view.ty.memory == Memory::Global && is_whole(view))
        .fold(Expr::from(0), |sum, view| {
            let bytes = Expr::mul(
                view_elements(view),
                Expr::from(i64::from(view.ty.scalar.bytes())),
            );
            Expr::add(sum, bytes)
        });
    json!({ "kind": "bytes", "value": text(&bytes) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{MapDim, TensorMap, TmaSwizzle};
    use crate::{check, syntax};

    const SOURCE: &str = "kernel scale {
    %x:[N].fp32.GL
    %y:[N].fp32.GL
    #grid:[N/256].block
    #block:[256].thread
    %y <- Move<<<#grid, #block>>>(%x) {
        @b = #grid.indices()
        @t = #block.indices()
        %y.tile([256])[@b, @t] <- Move<<<#grid.scalar(), #block.scalar()>>>(%x.tile([256])[@b, @t])
    }
}
";

    #[test]
    fn a_manifest_lists_params_launch_and_requirements() {
        let ast = syntax::parse_file("scale.gph", SOURCE).expect("parses");
        let program = check::check_file(&ast, &[]).expect("checks");
        let source = Source {
            name: "scale.gph",
            text: SOURCE,
        };
        let value = manifest(&program, source, "sm_80", &[0]);
        let kernel = &value["kernels"][0];
        assert_eq!(value["manifest"], MANIFEST_VERSION);
        assert_eq!(kernel["name"], "scale");
        assert_eq!(kernel["dims"], json!(["N"]));
        assert_eq!(kernel["params"][0]["name"], "%x");
        assert_eq!(kernel["params"][0]["role"], "input");
        assert_eq!(kernel["params"][1]["role"], "output");
        assert_eq!(kernel["params"][1]["elements"], "N");
        assert_eq!(kernel["params"][0]["align_bytes"], PARAM_ALIGN_BYTES);
        assert_eq!(
            kernel["params"][2],
            json!({ "name": "N", "type": "u32", "dim": true, "min": 1, "max": u32::MAX })
        );
        assert_eq!(kernel["limits"]["block_threads"], 1024);
        assert_eq!(
            kernel["work"],
            json!({ "kind": "bytes", "value": "N*4 + N*4" })
        );
        assert_eq!(kernel["grid"][0], "N/256");
        assert_eq!(kernel["block"][0], "256");
        assert_eq!(kernel["requirements"][0]["kind"], "divisible");
        assert_eq!(kernel["requirements"][0]["divisor"], "256");
        assert_eq!(kernel["requirements"][0]["written_at"], "scale.gph:4:12");
        assert_eq!(kernel["tensor_maps"], json!([]));
    }

    #[test]
    fn tensor_maps_follow_the_dims_as_params_and_state_their_expressions() {
        let ast = syntax::parse_file("scale.gph", SOURCE).expect("parses");
        let mut program = check::check_file(&ast, &[]).expect("checks");
        let kernel = &mut program.kernels[0];
        let n = Expr::var(Var::Dim(0));
        // %y seen as N/64 rows of 64: a map of two dims over one mode.
        let y = kernel.params[1];
        kernel.tensor_maps.push(TensorMap {
            tensor: y,
            dims: vec![
                MapDim {
                    mode: 0,
                    extent: Expr::from(64),
                    stride: Expr::from(1),
                },
                MapDim {
                    mode: 0,
                    extent: Expr::div(n.clone(), Expr::from(64)),
                    stride: Expr::from(64),
                },
            ],
            boxes: vec![64, 8],
            swizzle: TmaSwizzle::Span128,
        });
        kernel.tensor_maps.push(TensorMap {
            tensor: kernel.params[0],
            dims: vec![MapDim {
                mode: 0,
                extent: n,
                stride: Expr::from(1),
            }],
            boxes: vec![256],
            swizzle: TmaSwizzle::None,
        });
        let source = Source {
            name: "scale.gph",
            text: SOURCE,
        };
        let value = manifest(&program, source, "sm_90a", &[0]);
        let kernel = &value["kernels"][0];
        let params = kernel["params"].as_array().unwrap();
        assert_eq!(params.len(), 2 + 1 + 2);
        assert_eq!(
            params[3],
            json!({ "name": "tmap0_y", "type": "tensor_map", "tensor_map": 0 })
        );
        assert_eq!(
            params[4],
            json!({ "name": "tmap1_x", "type": "tensor_map", "tensor_map": 1 })
        );
        assert_eq!(
            kernel["tensor_maps"],
            json!([
                {
                    "tensor": "%y", "scalar": "fp32", "element_bytes": 4,
                    "extents": ["64", "N/64"], "strides_bytes": ["256"],
                    "box": [64, 8], "swizzle_bytes": 128,
                },
                {
                    "tensor": "%x", "scalar": "fp32", "element_bytes": 4,
                    "extents": ["N"], "strides_bytes": [],
                    "box": [256], "swizzle_bytes": 0,
                },
            ])
        );
    }
}
