//! 32-bit index arithmetic never wraps silently: a grid of more than
//! 2^31 − 1 blocks, a constant tensor of 2^32 elements or more and a loop
//! counter whose last step passes 2^32 are refused; a symbolic tensor's
//! size, and a loop bound over the dims or over enclosing loops (bounded
//! through theirs), become launch requirements (docs/lowering.md, "Index
//! arithmetic").

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
    // (The tensor's own size is required to fit, below.)
    let body = "for (k = 0; k < M; k += 1) {\n sync\n }\n";
    let text = kernel("[4, M]", "[1]", body);
    let checked = graphene::compile::check("width.gph", &text, &Options::default()).unwrap();
    let requirements = &checked.program.kernels[0].requirements;
    let tensor = Expr::sub(
        Expr::Const(1 << 32),
        Expr::mul(Expr::Const(4), Expr::var(Var::Dim(0))),
    );
    assert_eq!(requirements.len(), 1, "{requirements:?}");
    assert!(requires(requirements, &tensor), "{requirements:?}");
}

/// Whether `requirements` holds `value ≥ 1` for a value equal to `wanted`:
/// equal at several values of the dims (the forms may differ).
fn requires(requirements: &[Requirement], wanted: &Expr) -> bool {
    let samples: [&[i64]; 3] = [&[3, 5], &[7, 11], &[1024, 3]];
    let at = |e: &Expr, dims: &[i64]| {
        e.eval(&|var| match var {
            Var::Dim(i) => dims.get(i as usize).copied(),
            Var::ThreadId | Var::BlockId | Var::Loop(_) => None,
        })
        .ok()
    };
    requirements.iter().any(|requirement| match requirement {
        Requirement::Positive { value, .. } => samples
            .iter()
            .all(|dims| at(value, dims).is_some() && at(value, dims) == at(wanted, dims)),
        Requirement::Divisible { .. } => false,
    })
}

#[test]
fn a_symbolic_tensor_must_span_fewer_than_two_to_the_32_elements() {
    // [M, N] spans M·N elements: the launch must keep that below 2^32.
    let text = kernel("[M, N]", "[1]", "");
    let checked = graphene::compile::check("width.gph", &text, &Options::default()).unwrap();
    let (m, n) = (Expr::var(Var::Dim(0)), Expr::var(Var::Dim(1)));
    let wanted = Expr::sub(Expr::Const(1 << 32), Expr::mul(m, n));
    let requirements = &checked.program.kernels[0].requirements;
    assert!(requires(requirements, &wanted), "{requirements:?}");
}

#[test]
fn a_loop_bound_over_an_enclosing_loop_is_bounded_through_it() {
    // j < k + M with k < M: the counter reaches at most (M − 1) + M − 1 +
    // 2^30 after its last step, which the launch must keep below 2^32.
    let body =
        "for (k = 0; k < M; k += 1) {\n for (j = k; j < k + M; j += 1073741824) {\n sync\n }\n }\n";
    let text = kernel("[4, M]", "[1]", body);
    let checked = graphene::compile::check("width.gph", &text, &Options::default()).unwrap();
    let m = Expr::var(Var::Dim(0));
    let reached = Expr::add(
        Expr::add(
            Expr::sub(m.clone(), Expr::Const(1)),
            Expr::sub(m, Expr::Const(1)),
        ),
        Expr::Const(1 << 30),
    );
    let wanted = Expr::sub(Expr::Const(1 << 32), reached);
    let requirements = &checked.program.kernels[0].requirements;
    assert!(requires(requirements, &wanted), "{requirements:?}");
}
