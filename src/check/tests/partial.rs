//! Partial tiles: `.tile_partial` counts tiles with `ceil_div` and no launch
//! requirement, its views carry their bounds through later operations, an
//! atomic access past a bound must be masked or guarded, coverage counts
//! only the elements that exist, and `require` states a requirement.

use pretty_assertions::assert_eq;

use super::{check, codes_of};
use crate::check::codes;
use crate::expr::Expr;
use crate::ir::{Bound, Requirement, Stmt, View};

/// A copy kernel over `%X`, `%Y` of type `ty` whose body binds `@b`, `@t`
/// and runs `body`.
fn kernel(ty: &str, grid: &str, body: &str) -> String {
    format!(
        "kernel k {{\n    %X:{ty}.fp32.GL\n    %Y:{ty}.fp32.GL\n    #grid:[{grid}].block\n\
         #block:[256].thread\n    %Y <- Move<<<#grid, #block>>>(%X) {{\n\
         @b = #grid.indices()\n@t = #block.indices()\n\
         #one:[].block = #grid.scalar()\n#me:[].thread = #block.scalar()\n\
         %r:[1].fp32.RF\n{body}\n    }}\n}}\n"
    )
}

const MASKED_COPY: &str = "%x = %X.tile_partial([256])[@b].tile([1])[@t]
        %y = %Y.tile_partial([256])[@b].tile([1])[@t]
        %r <- Move<masked><<<#one, #me>>>(%x)
        %y <- Move<masked><<<#one, #me>>>(%r)";

/// The atomic specs' operands of the kernel's body, in order.
fn operands(src: &str) -> Vec<View> {
    let program = check("k.gph", src).unwrap_or_else(|d| panic!("{d:#?}"));
    let mut views = Vec::new();
    fn walk(stmts: &[Stmt], views: &mut Vec<View>) {
        for stmt in stmts {
            match stmt {
                Stmt::Spec(spec) => {
                    views.extend(spec.outputs.iter().cloned());
                    views.extend(spec.inputs.iter().cloned());
                }
                Stmt::For(each) => walk(&each.body, views),
                Stmt::If(branch) => {
                    walk(&branch.then_body, views);
                    walk(&branch.else_body, views);
                }
                Stmt::Sync { .. }
                | Stmt::Commit { .. }
                | Stmt::Wait { .. }
                | Stmt::Arrive { .. }
                | Stmt::WaitPhase { .. }
                | Stmt::SetMaxRegisters { .. } => {}
            }
        }
    }
    walk(
        program.kernels[0].root.body.as_deref().unwrap_or(&[]),
        &mut views,
    );
    views
}

fn evaluate(e: &Expr, n: i64, b: i64, t: i64) -> i64 {
    e.eval(&|var| match var {
        crate::expr::Var::Dim(0) => Some(n),
        crate::expr::Var::BlockId => Some(b),
        crate::expr::Var::ThreadId => Some(t),
        crate::expr::Var::Dim(_) | crate::expr::Var::Loop(_) => None,
    })
    .unwrap()
}

#[test]
fn a_partial_tile_counts_with_ceil_div_and_requires_nothing() {
    let src = kernel("[N]", "ceil_div(N, 256)", MASKED_COPY);
    let program = check("k.gph", &src).unwrap_or_else(|d| panic!("{d:#?}"));
    assert_eq!(program.kernels[0].requirements, Vec::<Requirement>::new());
    // The exact tile records N % 256 == 0.
    let exact = kernel(
        "[N]",
        "N/256",
        "%x = %X.tile([256])[@b].tile([1])[@t]\n%r <- Move<<<#one, #me>>>(%x)\n\
         %Y.tile([256])[@b].tile([1])[@t] <- Move<<<#one, #me>>>(%r)",
    );
    let program = check("k.gph", &exact).unwrap_or_else(|d| panic!("{d:#?}"));
    assert!(program.kernels[0].requirements.iter().any(
        |r| matches!(r, Requirement::Divisible { divisor, .. } if divisor.as_const() == Some(256))
    ));
}

#[test]
fn the_bound_locates_every_element_along_the_tiled_mode() {
    let views = operands(&kernel("[N]", "ceil_div(N, 256)", MASKED_COPY));
    let input = &views[1];
    assert_eq!(input.bounds.len(), 1);
    let Bound { extent, origin, .. } = &input.bounds[0];
    // Element 0 of thread t of block b is element 256·b + t of %X.
    for (n, b, t) in [(1000, 3, 7), (257, 1, 0), (5, 0, 255)] {
        assert_eq!(evaluate(extent, n, b, t), n);
        assert_eq!(evaluate(origin, n, b, t), 256 * b + t);
    }
}

#[test]
fn constant_modes_are_partial_only_when_the_tile_leaves_a_remainder() {
    let body = |ty: &str| {
        format!(
            "%s:{ty}.fp32.SH\nif (@t == 0) {{\n%s <- Init<0.0><<<#one, #me>>>()\n}}\nsync\n\
             %v = %s.tile_partial([4])[0]\n\
             %r <- Move<masked><<<#one, #me>>>(%v.tile([1])[0])\n\
             %Y[@t] <- Move<<<#one, #me>>>(%r)"
        )
    };
    // Operand 0 is the `Init`'s output, 1 and 2 the masked move's.
    let views = operands(&kernel("[256]", "1", &body("[10]")));
    assert_eq!(views[2].bounds.len(), 1);
    assert_eq!(views[2].bounds[0].extent, Expr::Const(10));
    let views = operands(&kernel("[256]", "1", &body("[12]")));
    assert!(views[2].bounds.is_empty());
}

#[test]
fn unmasked_accesses_past_a_bound_are_refused_and_guards_admit_them() {
    let unmasked = MASKED_COPY.replace(
        "%y <- Move<masked><<<#one, #me>>>(%r)",
        "%y <- Move<<<#one, #me>>>(%r)",
    );
    assert_eq!(
        codes_of(&kernel("[N]", "ceil_div(N, 256)", &unmasked)),
        [codes::ACCESS_PAST_END]
    );
    let guarded = MASKED_COPY.replace(
        "%y <- Move<masked><<<#one, #me>>>(%r)",
        "if (@t + 256*@b < N) {\n%y <- Move<<<#one, #me>>>(%r)\n}",
    );
    assert_eq!(
        codes_of(&kernel("[N]", "ceil_div(N, 256)", &guarded)),
        Vec::<&str>::new()
    );
    // A guard one element too loose does not.
    let loose = guarded.replace("< N)", "< N + 1)");
    assert_eq!(
        codes_of(&kernel("[N]", "ceil_div(N, 256)", &loose)),
        [codes::ACCESS_PAST_END]
    );
}

#[test]
fn bounds_follow_broadcasts_and_reshapes() {
    let src = kernel(
        "[N]",
        "ceil_div(N, 256)",
        "%x = %X.tile_partial([256])[@b].reshape([16, 16])[@t % 16, @t / 16]
        %r <- Move<masked><<<#one, #me>>>(%x)
        %w = %X.tile_partial([256])[@b].tile([1])[@t].broadcast(0, 1)
        %y = %Y.tile_partial([256])[@b].tile([1])[@t]
        %y <- Move<masked><<<#one, #me>>>(%r)",
    );
    let views = operands(&src);
    let origin = &views[1].bounds[0].origin;
    for (b, t) in [(0, 17), (2, 255)] {
        assert_eq!(evaluate(origin, 1000, b, t), 256 * b + t);
    }
}

#[test]
fn coverage_counts_only_the_elements_that_exist() {
    // A 2-D partial tile whose rows run past K would write the next row's
    // elements if coverage counted them.
    let src = "kernel k {
    %X:[M, K : K, 1].fp32.GL
    %Y:[M, K : K, 1].fp32.GL
    #grid:[ceil_div(M, 8), ceil_div(K, 32)].block
    #block:[8, 32].thread
    %Y <- Move<<<#grid, #block>>>(%X) {
        @bm, @bk = #grid.indices()
        @r, @c = #block.indices()
        #one:[].block = #grid.scalar()
        #me:[].thread = #block.scalar()
        %r:[].fp32.RF
        %r <- Move<masked><<<#one, #me>>>(%X.tile_partial([8, 32])[@bm, @bk][@r, @c])
        %Y.tile_partial([8, 32])[@bm, @bk][@r, @c] <- Move<masked><<<#one, #me>>>(%r)
    }
}
";
    assert_eq!(codes_of(src), Vec::<&str>::new());
}

#[test]
fn require_states_a_divisibility() {
    let src = kernel("[N]", "ceil_div(N, 256)", MASKED_COPY)
        .replace("    #grid:", "    require N % 8 == 0\n    #grid:");
    let program = check("k.gph", &src).unwrap_or_else(|d| panic!("{d:#?}"));
    assert!(matches!(
        &program.kernels[0].requirements[..],
        [Requirement::Divisible { divisor, .. }] if divisor.as_const() == Some(8)
    ));
    for bad in ["require N > 8", "require N % 0 == 0", "require 12 % 8 == 0"] {
        let bad = src.replace("require N % 8 == 0", bad);
        assert_eq!(codes_of(&bad), [codes::BAD_REQUIREMENT], "{bad}");
    }
    let inside = src.replace("    require N % 8 == 0\n", "").replace(
        "@b = #grid.indices()",
        "require N % 2 == 0\n@b = #grid.indices()",
    );
    assert_eq!(codes_of(&inside), [codes::BAD_REQUIREMENT]);
}

#[test]
fn specialize_states_a_divisibility_and_requires_nothing() {
    let src = kernel("[N]", "ceil_div(N, 256)", MASKED_COPY).replace(
        "    #grid:",
        "    specialize N % 8 == 0\n    specialize N % 8 == 0\n    #grid:",
    );
    let program = check("k.gph", &src).unwrap_or_else(|d| panic!("{d:#?}"));
    let kernel = &program.kernels[0];
    assert_eq!(kernel.requirements, Vec::<Requirement>::new());
    // Stated twice, kept once.
    assert!(matches!(
        &kernel.specializations[..],
        [Requirement::Divisible { divisor, .. }] if divisor.as_const() == Some(8)
    ));
    for bad in [
        "specialize N > 8",
        "specialize N % 0 == 0",
        "specialize 12 % 8 == 0",
    ] {
        let bad = src.replacen("specialize N % 8 == 0", bad, 2);
        assert_eq!(
            codes_of(&bad),
            [codes::BAD_REQUIREMENT, codes::BAD_REQUIREMENT],
            "{bad}"
        );
    }
    let inside = src.replace("    specialize N % 8 == 0\n", "").replace(
        "@b = #grid.indices()",
        "specialize N % 2 == 0\n@b = #grid.indices()",
    );
    assert_eq!(codes_of(&inside), [codes::BAD_REQUIREMENT]);
}
