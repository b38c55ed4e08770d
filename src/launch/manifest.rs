//! Launch stage: the launch manifest — what a program of one's own needs to
//! launch the PTX `ptxgen` wrote, as JSON: per kernel the parameters in ABI
//! order with their types and roles, the grid and block as expressions of
//! the dims, the dynamic shared memory and the run-time requirements.
//!
//! The expressions are written in the IR's integer syntax (`M/128*(N/256)`):
//! integers, dim names, `+ - * / %` with `/` the floor division of
//! non-negative values, and parentheses; the launch plan evaluates the same
//! expressions when `ptxgen run` binds `--dim` values.

use serde_json::{Value, json};

use super::plan::{Role, Source, roles};
use crate::expr::Expr;
use crate::ir::print::{Names, expr_text};
use crate::ir::{BufferKind, GroupType, Kernel, Program, Requirement};

/// Version of the manifest's format; a reader refuses another.
pub const MANIFEST_VERSION: u32 = 1;

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
                "role": role_name(role),
            })),
            BufferKind::Shared | BufferKind::Registers | BufferKind::Temporary => {}
        }
    }
    for dim in &kernel.dims {
        params.push(json!({ "name": dim.name, "type": "u32", "dim": true }));
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
        "requirements": requirements,
        "min_blocks_per_sm": kernel.occupancy.min_blocks_per_sm,
        "max_registers": kernel.occupancy.max_registers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
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
        assert_eq!(
            kernel["params"][2],
            json!({ "name": "N", "type": "u32", "dim": true })
        );
        assert_eq!(kernel["grid"][0], "N/256");
        assert_eq!(kernel["block"][0], "256");
        assert_eq!(kernel["requirements"][0]["kind"], "divisible");
        assert_eq!(kernel["requirements"][0]["divisor"], "256");
        assert_eq!(kernel["requirements"][0]["written_at"], "scale.gph:4:12");
    }
}
