//! 32-bit index arithmetic never wraps silently: a grid of more than
//! 2^31 − 1 blocks, a constant tensor of 2^32 elements or more and a loop
//! counter whose last step passes 2^32 are refused; a loop bound over the
//! dims becomes a launch requirement (docs/lowering.md, "Index arithmetic").

use graphene::compile::{Options, compile};
use graphene::diag::Diagnostic;
use graphene::expr::{Expr, Var};
use graphene::ir::Requirement;

fn errors(text: &str) -> Vec<Diagnostic> {
    match compile("width.gph", text, &Options::default()) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(diagnostics) => diagnostics,
    }
}

/// A kernel over `%a:{tensor}` launched on `#b:{grid}`, with `body`.
fn kernel(tensor: &str, grid: &str, body: &str) -> String {
    format!(
        "kernel w {{\n%a:{tensor}.fp32.GL\n#b:{grid}.block\n#t:[32].thread\n\
         %a <- Spec<<<#b, #t>>>() {{\n{body}}}\n}}\n"
    )
}

#[test]
fn a_grid_past_two_to_the_31_blocks_is_refused() {
    let found = errors(&kernel("[4]", "[65536, 32768]", ""));
    assert_eq!(found[0].code, "E0234", "{found:?}");
    assert_eq!(found[0].message, "a grid of 2147483648 blocks");
    // One block fewer than the limit's successor is a grid CUDA can launch.
    let text = kernel("[4]", "[2147483647]", "");
    assert!(
        graphene::compile::check("width.gph", &text, &Options::default()).is_ok(),
        "a grid of 2^31 - 1 blocks is valid"
    );
}

#[test]
fn a_constant_tensor_of_two_to_the_32_elements_is_refused() {
    let found = errors(&kernel("[65536, 65536]", "[1]", ""));
    assert_eq!(found[0].code, "E0265", "{found:?}");
    assert!(found[0].message.contains("4294967296"), "{found:?}");
    // Its largest offset counts, not its element count: strides spread it.
    let found = errors(&kernel("[2, 2 : 1, 4294967295]", "[1]", ""));
    assert_eq!(found[0].code, "E0265", "{found:?}");
    let text = kernel("[65536, 65535]", "[1]", "");
    assert!(graphene::compile::check("width.gph", &text, &Options::default()).is_ok());
}

#[test]
fn a_step_that_wraps_the_counter_is_refused_or_required() {
    // Constant bounds: the last step provably passes 2^32.
    let body = "for (k = 0; k < 4294967295; k += 2147483648) {\n sync\n }\n";
    let found = errors(&kernel("[4]", "[1]", body));
    assert_eq!(found[0].code, "E0265", "{found:?}");
    assert!(found[0].message.contains("loop counter"), "{found:?}");

    // A bound over a dim: the launch must keep M − 1 + 2^31 below 2^32.
    let body = "for (k = 0; k < M; k += 2147483648) {\n sync\n }\n";
    let text = kernel("[4, M]", "[1]", body);
    let checked = graphene::compile::check("width.gph", &text, &Options::default()).unwrap();
    let requirements = &checked.program.kernels[0].requirements;
    let wanted = Expr::sub(Expr::Const(2147483649), Expr::var(Var::Dim(0)));
    assert!(
        requirements.iter().any(|requirement| matches!(
            requirement,
            Requirement::Positive { value, .. } if graphene::index::simplify::simplify(&Expr::sub(value.clone(), wanted.clone()), &graphene::index::facts::Facts::none()) == Expr::Const(0)
        )),
        "{requirements:?}"
    );

    // A step of 1 under a dim never wraps: the dim is a `.u32` below 2^32.
    let body = "for (k = 0; k < M; k += 1) {\n sync\n }\n";
    let text = kernel("[4, M]", "[1]", body);
    let checked = graphene::compile::check("width.gph", &text, &Options::default()).unwrap();
    assert!(checked.program.kernels[0].requirements.is_empty());
}
