//! The rules, beyond the golden cases: what each rule accepts, the IR it
//! records (unrolled loops, requirements), and that poisoned values do not
//! cascade.

use pretty_assertions::assert_eq;

use super::{check, codes_of};
use crate::check::codes;
use crate::ir::Stmt;

/// A kernel with a 32-thread block whose spec body is `body`, after the
/// kernel-scope declarations `decls`.
fn kernel_with(decls: &str, body: &str) -> String {
    format!(
        "{decls}\n#b:[1].block\n#t:[32].thread\n%out:[32].fp32.GL\n%out <- Spec<<<#b, #t>>>() {{\n{body}\n}}\n"
    )
}

#[test]
fn accepted_programs() {
    for (what, decls, body) in [
        (
            "an asynchronous copy from global to shared memory",
            "%g:[256].fp16.GL\n%s:[256].fp16.SH",
            "@i = #t.indices()\n%s.tile(8)[@i, _] <- Move<async><<<#b, #t.scalar()>>>(%g.tile(8)[@i, _])",
        ),
        (
            "a shuffle by warps, a reduction, pointwise kinds",
            "%x:[2].fp32.RF\n%y:[1].fp32.RF",
            "%x <- Init<1.0><<<#b, #t.scalar()>>>()\n%y <- Reduction<max, [0]><<<#b, #t.scalar()>>>(%x)\n%y <- Shfl<bfly, 1><<<#b, #t.tile(32)>>>(%y)\n%x <- UnaryPointwise<exp2><<<#b, #t.scalar()>>>(%x)\n%x <- BinaryPointwise<mul><<<#b, #t.scalar()>>>(%x, %x)",
        ),
        (
            "a warp-wide move of a shared tile into per-thread registers",
            "%s:[16,16 : 16,1].fp16.SH\n%r:[2,4 : 4,1].fp16.RF",
            "%r <- Move<<<#b, #t>>>(%s) {}",
        ),
        (
            "a loop with a symbolic bound over shared memory",
            "%a:[K].fp32.GL\n%s:[32].fp32.SH",
            "for (k = 0; k < K/32; k += 1) {\n%s <- Move<<<#b, #t>>>(%a.tile(32)[k, _]) {}\n}",
        ),
        (
            "conditions over indices, loop variables and dims",
            "%a:[N].fp32.GL",
            "@i = #t.indices()\nfor (k = 0; k < 4; k += 1) {\nif (@i < 16 && k != 2 || N > 64) { async_wait(0) } else if (@i == 0) { async_commit } else { async_wait(1) }\n}",
        ),
        (
            "a decomposed MatMul on whole shared tiles",
            "%a:[32,16].fp16.SH\n%w:[16,8].fp16.SH\n%c:[32,8].fp32.SH",
            "%c <- MatMul<overwrite><<<#b, #t>>>(%a, %w) {}",
        ),
    ] {
        let src = kernel_with(decls, body);
        let result = check("accepted.gph", &src);
        assert!(result.is_ok(), "{what}: {:#?}", result.err());
    }
}

#[test]
fn register_indices_unroll_their_loops() {
    let src = kernel_with(
        "%r:[8].fp32.RF\n%g:[16, 32].fp32.GL",
        "@i = #t.indices()\nfor (k = 0; k < 8; k += 1) {\nfor (j = 0; j < 16; j += 1) {\n%r[k] <- Move<<<#b, #t.scalar()>>>(%g[j, @i])\n}\n}",
    );
    let program = check("unroll.gph", &src).unwrap_or_else(|d| panic!("{d:#?}"));
    let body = program.kernels[0].root.body.as_ref().unwrap();
    let Some(Stmt::For(outer)) = body.first() else {
        panic!("loop expected")
    };
    let Some(Stmt::For(inner)) = outer.body.first() else {
        panic!("inner loop expected")
    };
    assert!(outer.unroll, "k indexes registers");
    assert!(
        !inner.unroll,
        "j indexes global memory only, over more than the short-loop count"
    );
}

#[test]
fn short_constant_loops_unroll_and_others_stay_loops() {
    let loop_over = |header: &str| {
        let src = kernel_with(
            "%g:[64, 32].fp32.GL\n%h:[64, 32].fp32.GL",
            &format!(
                "@i = #t.indices()\nfor ({header}) {{\n%h[j, @i] <- Move<<<#b, #t.scalar()>>>(%g[j, @i])\n}}"
            ),
        );
        let program = check("short.gph", &src).unwrap_or_else(|d| panic!("{header}: {d:#?}"));
        let body = program.kernels[0].root.body.as_ref().unwrap();
        let Some(Stmt::For(each)) = body.first() else {
            panic!("{header}: loop expected")
        };
        each.unroll
    };
    assert!(loop_over("j = 0; j < 8; j += 1"), "8 iterations");
    assert!(loop_over("j = 4; j < 64; j += 8"), "7 iterations");
    assert!(!loop_over("j = 0; j < 9; j += 1"), "9 iterations");
    assert!(!loop_over("j = 0; j < 64; j += 2"), "32 iterations");
    assert!(
        !loop_over("j = 3; j < 3; j += 1"),
        "no iteration: nothing to unroll"
    );
    assert!(
        !loop_over("j = 0; j < (@i + 1) % 8; j += 1"),
        "a runtime bound"
    );
}

#[test]
fn rejected_programs_and_their_codes() {
    for (what, decls, body, expected) in [
        (
            "registers counted per lane against a shared tile",
            "%s:[16,16].fp16.SH\n%r:[2,2].fp16.RF",
            "%r <- Move<<<#b, #t>>>(%s) {}",
            vec![codes::SIZE_MISMATCH],
        ),
        (
            "a reduction whose output keeps the wrong modes",
            "%x:[4,8].fp32.RF\n%y:[8].fp32.RF",
            "%y <- Reduction<add, [1]><<<#b, #t.scalar()>>>(%x)",
            vec![codes::SIZE_MISMATCH],
        ),
        (
            "a repeated reduction axis",
            "%x:[4,8].fp32.RF\n%y:[1].fp32.RF",
            "%y <- Reduction<add, [0, 0]><<<#b, #t.scalar()>>>(%x)",
            vec![codes::REDUCTION_AXES],
        ),
        (
            "a shuffle mask past the warp and on shared memory",
            "%s:[1].fp32.SH",
            "%s <- Shfl<bfly, 32><<<#b, #t>>>(%s)",
            vec![codes::SHFL, codes::SHFL, codes::SHFL],
        ),
        (
            "an atomic MatMul<overwrite>",
            "%c:[1].fp32.RF",
            "%c <- MatMul<overwrite><<<#b, #t.scalar()>>>(%c, %c)",
            vec![codes::MUST_DECOMPOSE],
        ),
        (
            "a MatMul operand that is not a matrix",
            "%a:[4,4,4].fp16.SH\n%c:[4,4].fp32.SH",
            "%c <- MatMul<<<#b, #t>>>(%a, %c) {}",
            vec![codes::MATMUL_SHAPES],
        ),
        (
            "a global allocation",
            "",
            "%g:[8].fp32.GL = Allocate()",
            vec![codes::GLOBAL_NOT_PARAMETER],
        ),
        (
            "an allocation without a type",
            "",
            "%g = Allocate()",
            vec![codes::BAD_OPERATION],
        ),
        (
            "an index in a type",
            "",
            "@i = #t.indices()\n%x:[@i].fp32.RF",
            vec![codes::WRONG_KIND],
        ),
        (
            "a loop variable in a type",
            "",
            "for (k = 1; k < 4; k += 1) {\n%x:[k].fp32.RF\n}",
            vec![codes::WRONG_KIND],
        ),
        (
            "a loop variable named like a constant",
            "const N = 4",
            "for (N = 0; N < 4; N += 1) { sync }",
            vec![codes::DUPLICATE],
        ),
        (
            "a constant coordinate out of range",
            "%s:[8].fp32.SH",
            "%e = %s[8]",
            vec![codes::OUT_OF_RANGE],
        ),
        (
            "a negative coordinate",
            "%s:[8].fp32.SH",
            "%e = %s[0 - 1]",
            vec![codes::OUT_OF_RANGE],
        ),
        (
            "`_` in a tile layout for another rank",
            "%s:[8].fp32.SH",
            "%e = %s.tile([4, _])",
            vec![codes::TILE_ARITY],
        ),
        (
            "a tuple coordinate on a flat mode",
            "%s:[8].fp32.SH",
            "%e = %s[(1, 2)]",
            vec![codes::BAD_COORDINATES],
        ),
        (
            "too many coordinates",
            "%s:[8].fp32.SH",
            "%e = %s[1, 2]",
            vec![codes::BAD_COORDINATES],
        ),
        (
            "a group annotation that differs",
            "",
            "#w:[4].[8 : 2].thread = #t.tile(8)",
            vec![codes::TYPE_MISMATCH],
        ),
        (
            "a group used as a tensor",
            "",
            "%x = #t.tile(8)",
            vec![codes::WRONG_KIND],
        ),
        (
            "`.scalar()` of a tensor",
            "%s:[8].fp32.SH",
            "%e = %s.scalar()",
            vec![codes::BAD_OPERATION],
        ),
        (
            "a reshape without a depth on a tiled group",
            "",
            "#w = #t.tile(8).reshape([2,2])",
            vec![codes::BAD_RESHAPE],
        ),
        (
            "a reshape of a missing level",
            "",
            "#w = #t.reshape(1, [4,8])",
            vec![codes::BAD_RESHAPE],
        ),
        (
            "a runtime shuffle mask",
            "%x:[1].fp32.RF",
            "for (k = 0; k < 2; k += 1) {\n%x <- Shfl<bfly, k><<<#b, #t>>>(%x)\n}",
            vec![codes::NOT_CONSTANT],
        ),
        (
            "a negative extent",
            "",
            "%x:[0 - 4].fp32.RF",
            vec![codes::BAD_LAYOUT],
        ),
        (
            "a negative stride",
            "",
            "%x:[4 : 0 - 1].fp32.RF",
            vec![codes::BAD_LAYOUT],
        ),
        (
            "an invalid swizzle",
            "",
            "%x:[64].fp16.SH.Swizzle<3,3,2>",
            vec![codes::BAD_LAYOUT],
        ),
        (
            "a tiler that cannot split a symbolic mode",
            "%a:[M].fp32.GL",
            "%e = %a.tile([2,2 : 1,1])",
            vec![codes::BAD_TILE],
        ),
        (
            "a symbolic hierarchical mode",
            "%a:[(M,2)].fp32.GL",
            "%e = %a.tile(2)",
            vec![codes::SYMBOLIC_UNSUPPORTED],
        ),
    ] {
        let src = kernel_with(decls, body);
        assert_eq!(codes_of(&src), expected, "{what}:\n{src}");
    }
}

#[test]
fn launch_groups_must_number_their_ids_once() {
    let src = "%a:[64].fp32.GL\n#b:[1].block\n#t:[32 : 2].thread\n%a <- Init<0.0><<<#b, #t>>>()\n";
    assert_eq!(codes_of(src), [codes::BAD_LAUNCH_SIZE]);
    let src = "%a:[64].fp32.GL\n#b:[1].block\n#t:[N].thread\n%a <- Init<0.0><<<#b, #t>>>()\n";
    assert_eq!(codes_of(src), [codes::BAD_LAUNCH_SIZE]);
    // A symbolic grid is fine when numbered column-major.
    let src =
        "%a:[M, N].fp32.GL\n#b:[M/64, N].block\n#t:[64].thread\n%a <- Init<0.0><<<#b, #t>>>()\n";
    assert_eq!(codes_of(src), Vec::<&str>::new());
    let src =
        "%a:[64].fp32.GL\n#b:[1].block\n#t:[64].thread\n#u = #t\n%a <- Init<0.0><<<#b, #u>>>()\n";
    assert_eq!(codes_of(src), [codes::LAUNCH_NOT_DECLARED]);
}

#[test]
fn poisoned_values_do_not_cascade() {
    // One undefined name, used by three later definitions and a spec.
    let src = kernel_with(
        "%s:[64].fp32.SH",
        "%x = %nowhere.tile(8)\n%y = %x[0, _]\n%z = %y.tile(2)\n%z <- Move<<<#b, #t.scalar()>>>(%s)",
    );
    assert_eq!(codes_of(&src), [codes::UNDEFINED]);
    // A wrong annotation is reported once; the name's later uses are quiet.
    let src = kernel_with(
        "%s:[64].fp32.SH",
        "%x:[4].[16].fp32.SH = %s.tile(8)\n%y = %x[0, _]\n%y.tile(3)[0, _] <- Init<0.0><<<#b, #t.scalar()>>>()",
    );
    assert_eq!(codes_of(&src), [codes::TYPE_MISMATCH]);
    // Failed indices poison every name of the pattern.
    let src = kernel_with(
        "%s:[64].fp32.SH",
        "@i, @j = #t.reshape(0, [4,8 : 8,0]).indices()\n%e = %s[@i]\n%f = %s[@j]",
    );
    assert_eq!(codes_of(&src), [codes::NOT_DECOMPOSABLE]);
}

#[test]
fn kernels_and_constants_in_a_file() {
    let src = "const N = 32\nconst HALF = N/2\nkernel a {\n%x:[HALF].fp32.GL\n#b:[1].block\n#t:[N].thread\n%x <- Init<1.0><<<#b, #t>>>()\n}\nkernel a {\n%y:[N].fp32.GL\n#b:[1].block\n#t:[N].thread\n%y <- Init<1.0><<<#b, #t>>>()\n}\n";
    assert_eq!(codes_of(src), [codes::DUPLICATE]);
    let src = "const N = 32\nconst N = 64\n";
    assert_eq!(codes_of(src), [codes::DUPLICATE]);
    let program = check(
        "my-kernel.gph",
        "%x:[8].fp32.GL\n#b:[1].block\n#t:[8].thread\n%x <- Init<0.0><<<#b, #t>>>()\n",
    )
    .unwrap();
    assert_eq!(program.kernels[0].name, "my_kernel");
}

#[test]
fn defines_override_constants() {
    let src = "const BM = 64\n%x:[BM].fp32.GL\n#b:[1].block\n#t:[BM].thread\n%x <- Init<0.0><<<#b, #t>>>()\n";
    let file = crate::syntax::parse_file("define.gph", src).unwrap();
    let program = crate::check::check_file(&file, &[("BM".to_string(), 128)]).unwrap();
    let block = crate::check::constant_layout(&program.kernels[0].block.levels[0]).unwrap();
    assert_eq!(block.size(), 128);
    // 2048 threads is too many: the override is what is checked.
    let errors = crate::check::check_file(&file, &[("BM".to_string(), 2048)]).unwrap_err();
    assert_eq!(errors[0].code, codes::BAD_LAUNCH_SIZE);
    let errors = crate::check::check_file(&file, &[("BN".to_string(), 8)]).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].code, codes::UNKNOWN_DEFINE);
    assert!(errors[0].primary.message.contains("BM"), "{:?}", errors[0]);
}

/// Coordinates whose largest value or extent is symbolic are compared by
/// their form: in range, out of range for every value of the dims, or in
/// range under a launch requirement; an enclosing `if` bounds what it guards.
#[test]
fn symbolic_coordinates_are_checked_against_their_extents() {
    let rejected = [
        (
            "a grid one block larger than the mode it indexes",
            "%a:[B].fp32.GL\n#g:[B + 1].block\n#t:[1].thread\n%a <- Init<0.0><<<#g, #t>>>() {\n@b = #g.indices()\n%a[@b] <- Init<0.0><<<#g.scalar(), #t>>>()\n}",
        ),
        (
            "the coordinate M in a mode of extent M",
            "%a:[M].fp32.GL\n#g:[1].block\n#t:[1].thread\n%a <- Init<0.0><<<#g, #t>>>() {\n%a[M] <- Init<0.0><<<#g, #t>>>()\n}",
        ),
        (
            "a loop one step past its mode",
            "%a:[M].fp32.GL\n#g:[1].block\n#t:[1].thread\n%a <- Init<0.0><<<#g, #t>>>() {\nfor (k = 0; k < M + 1; k += 1) {\n%a[k] <- Init<0.0><<<#g, #t>>>()\n}\n}",
        ),
        (
            "a constant minus an index whose guard is one too loose",
            "%a:[2].fp32.SH\n#g:[1].block\n#t:[4].thread\n%a <- Spec<<<#g, #t>>>() {\n@t = #t.indices()\nif (@t < 3) {\n%a[1 - @t] <- Init<0.0><<<#g.scalar(), #t.scalar()>>>()\n}\n}",
        ),
        (
            "a guard one too loose",
            "%a:[M].fp32.GL\n#g:[1].block\n#t:[1].thread\n%a <- Init<0.0><<<#g, #t>>>() {\nfor (k = 0; k < M; k += 1) {\nif (k + 1 <= M) {\n%a[k + 1] <- Init<0.0><<<#g, #t>>>()\n}\n}\n}",
        ),
    ];
    for (what, src) in rejected {
        let src = format!("kernel k {{\n{src}\n}}\n");
        assert_eq!(codes_of(&src), [codes::OUT_OF_RANGE], "{what}");
    }
    let accepted = [
        (
            "a guarded neighbour (`if (@t < 255) { … [@t + 1] }`)",
            "%a:[256].fp32.SH\n#g:[1].block\n#t:[256].thread\n%a <- Spec<<<#g, #t>>>() {\n@t = #t.indices()\nif (@t < 255) {\n%a[@t + 1] <- Init<0.0><<<#g.scalar(), #t.scalar()>>>()\n}\n}",
        ),
        (
            "a guarded tile ahead (`if (k + 2 < M) { … [k + 2] }`)",
            "%a:[M].fp32.GL\n#g:[1].block\n#t:[1].thread\n%a <- Spec<<<#g, #t>>>() {\nfor (k = 0; k < M; k += 1) {\nif (k + 2 < M) {\n%a[k + 2] <- Init<0.0><<<#g, #t>>>()\n}\n}\n}",
        ),
        (
            "a constant minus a guarded index (`if (@t < 2) { … [1 - @t] }`)",
            "%a:[2].fp32.SH\n#g:[1].block\n#t:[3].thread\n%a <- Spec<<<#g, #t>>>() {\n@t = #t.indices()\nif (@t < 2) {\n%a[1 - @t] <- Init<0.0><<<#g.scalar(), #t.scalar()>>>()\n}\n}",
        ),
        (
            "a symbolic grid over its own mode",
            "%a:[B].fp32.GL\n#g:[B].block\n#t:[1].thread\n%a <- Init<0.0><<<#g, #t>>>() {\n@b = #g.indices()\n%a[@b] <- Init<0.0><<<#g.scalar(), #t>>>()\n}",
        ),
    ];
    for (what, src) in accepted {
        let src = format!("kernel k {{\n{src}\n}}\n");
        let result = check("accepted.gph", &src);
        assert!(result.is_ok(), "{what}: {:#?}", result.err());
    }
}

/// A coordinate the form cannot place against its extent (`@b + M` in a
/// mode of `2*M`) becomes a launch requirement instead of silent code.
#[test]
fn an_undecided_symbolic_coordinate_becomes_a_launch_requirement() {
    let src = "kernel k {\n%a:[M*2].fp32.GL\n#g:[N].block\n#t:[1].thread\n%a <- Spec<<<#g, #t>>>() {\n@b = #g.indices()\n%a[@b + M] <- Init<0.0><<<#g.scalar(), #t>>>()\n}\n}\n";
    let program = check("requirement.gph", src).expect("accepted with a requirement");
    let requirements = &program.kernels[0].requirements;
    assert!(
        requirements
            .iter()
            .any(|r| matches!(r, crate::ir::Requirement::Positive { .. })),
        "{requirements:#?}"
    );
}

/// An `if` that an unrolled loop never takes guards coordinates it never
/// evaluates: a pipeline's refill of k-tile `k + 2` under `k + 2 < KT` is
/// accepted with one k-tile (the branch is dead for k = 0), while a guard
/// that still lets the coordinate leave its mode is refused.
#[test]
fn a_branch_its_guard_never_takes_is_not_range_checked() {
    let refill = |kt: i64, extent: i64| {
        kernel_with(
            &format!("%g:[{extent}].fp32.GL\n%v:[1].fp32.RF"),
            &format!(
                "for (k = 0; k < {kt}; k += 1) {{\n    if (k + 2 < {kt}) {{\n        \
                 %v <- Move<<<#b, #t.scalar()>>>(%g[k + 2])\n    }}\n}}"
            ),
        )
    };
    assert_eq!(codes_of(&refill(1, 1)), Vec::<&str>::new());
    assert_eq!(codes_of(&refill(4, 4)), Vec::<&str>::new());
    assert_eq!(codes_of(&refill(4, 3)), [codes::OUT_OF_RANGE]);
}

/// A guard on a thread id (`@i == 0` also says `0 <= @i`) bounds no
/// constant: the launch requirement of a symbolic coordinate under it is
/// over the dims alone, which a launcher can evaluate.
#[test]
fn requirements_under_a_thread_guard_are_over_the_dims() {
    let src = "%a:[M, 8 : 8, 1].fp32.GL\n#b:[4].block\n#t:[32].thread\n\
               %out:[4].fp32.GL\n%out <- Spec<<<#b, #t>>>(%a) {\n\
               @g = #b.indices()\n@i = #t.indices()\n\
               #one:[].block = #b.scalar()\n#me:[].thread = #t.scalar()\n\
               if (@i == 0) {\n\
               for (k = 0; k < M; k += 1) {\n\
               %out[@g] <- Move<masked><<<#one, #me>>>(%a.tile_partial([2, 8])[k % ceil_div(M, 2), 0][0, 0])\n\
               }\n}\n}\n";
    let program = check("guard.gph", src).unwrap_or_else(|d| panic!("{d:#?}"));
    for requirement in &program.kernels[0].requirements {
        let value = match requirement {
            crate::ir::Requirement::Divisible { value, .. }
            | crate::ir::Requirement::Positive { value, .. } => value,
        };
        assert!(
            value
                .vars()
                .iter()
                .all(|var| matches!(var, crate::expr::Var::Dim(_))),
            "{requirement:?}"
        );
    }
}

/// A bulk copy lands its whole box: a destination of another shape is
/// refused, even one whose elements all sit where the box would put them.
#[test]
fn a_bulk_copy_needs_a_destination_of_the_box_shape() {
    let copy = |dst: &str| {
        format!(
            "%a:[M, K : K, 1].fp16.GL\n#b:[1].block\n#t:[32].thread\n\
             require K % 8 == 0\n%out:[1].fp32.GL\n%out <- Spec<<<#b, #t>>>(%a) {{\n\
             @i = #t.indices()\n#one:[].block = #b.scalar()\n#me:[].thread = #t.scalar()\n\
             %s:{dst}.fp16.SH.Swizzle<3, 3, 3>\n%bar:[1].mbarrier.SH\n\
             if (@i == 0) {{\n%bar <- Init<1><<<#one, #me>>>()\n}}\nsync\n\
             if (@i == 0) {{\n\
             %s <- Move<tma><<<#one, #me>>>(%a.tile_partial([128, 64])[0, 0], %bar[0])\n}}\n}}\n"
        )
    };
    assert_eq!(codes_of(&copy("[128, 64 : 64, 1]")), Vec::<&str>::new());
    assert_eq!(codes_of(&copy("[64, 64 : 64, 1]")), [codes::TMA_FORM]);
}

#[test]
fn an_accumulating_store_adds_into_global_fp32_elements_only() {
    let decls = "%g:[32].fp32.GL\n%h:[32].fp16.GL\n%s:[32].fp32.SH\n%r:[1].fp32.RF";
    let add = |body: &str| {
        codes_of(&kernel_with(
            decls,
            &format!("@i = #t.indices()\n%r <- Init<1.0><<<#b, #t.scalar()>>>()\n{body}"),
        ))
    };
    assert_eq!(
        add("%g[@i] <- Move<add><<<#b, #t.scalar()>>>(%r)"),
        Vec::<&str>::new()
    );
    for (what, body) in [
        (
            "shared memory",
            "%s[@i] <- Move<add><<<#b, #t.scalar()>>>(%r)",
        ),
        ("registers", "%r <- Move<add><<<#b, #t.scalar()>>>(%g[@i])"),
        (
            "fp16 elements",
            "%h[@i] <- Move<add><<<#b, #t.scalar()>>>(%r)",
        ),
        ("a body", "%g <- Move<add><<<#b, #t>>>(%s) {}"),
    ] {
        assert_eq!(add(body), [codes::ADD_MOVE], "{what}");
    }
    // Nor is it a kernel's meaning, or a contract's step.
    let outermost = "%x:[32].fp32.GL\n%y:[32].fp32.GL\n#b:[1].block\n#t:[32].thread\n\
                     %y <- Move<add><<<#b, #t>>>(%x) {\n}\n";
    assert_eq!(codes_of(outermost), [codes::ADD_MOVE]);
    let contract = "%x:[32].fp32.GL\n%y:[32].fp32.GL\ncontract {\n%y <- Move<add>(%x)\n}\n\
                    #b:[1].block\n#t:[32].thread\n%y <- Spec<<<#b, #t>>>(%x) {\n}\n";
    assert_eq!(codes_of(contract), [codes::CONTRACT_FORM]);
}

/// A stage `(k + OFFSET) % 4` read in a loop of 8, under `GUARD`.
fn staged(offset: &str, guard: &str) -> String {
    format!(
        "%src:[64].fp32.GL\n%dst:[64].fp32.GL\n#b:[1].block\n#t:[64].thread\n\
         %dst <- Move<<<#b, #t>>>(%src) {{\n\
         @i = #t.indices()\n#one:[].block = #b.scalar()\n#me:[].thread = #t.scalar()\n\
         %tile:[4, 64].fp32.SH\n%tile[_, @i] <- Init<0.0><<<#one, #me>>>()\n\
         %acc:[1].fp32.RF\n%acc <- Init<0.0><<<#one, #me>>>()\n\
         for (k = 0; k < 8; k += 1) {{\n if ({guard}) {{\n\
         %acc <- BinaryPointwise<add><<<#one, #me>>>(%acc, %tile[(k {offset}) % 4, @i])\n}}\n}}\n\
         %dst[@i] <- Move<<<#one, #me>>>(%acc)\n}}\n"
    )
}

#[test]
fn a_run_time_division_needs_a_dividend_that_cannot_be_negative() {
    let ok = Vec::<&str>::new();
    assert_eq!(codes_of(&staged("+ 3", "k < 8")), ok);
    // k - 1 is -1 on the first iteration: the unsigned remainder is not 3.
    assert_eq!(codes_of(&staged("- 1", "k < 8")), [codes::BAD_ARITHMETIC]);
    // An enclosing `if` that keeps it at 0 or more.
    assert_eq!(codes_of(&staged("- 1", "k > 0")), ok);
    assert_eq!(codes_of(&staged("- 1", "k >= 1 && @i < 64")), ok);
    assert_eq!(codes_of(&staged("- 2", "k > 0")), [codes::BAD_ARITHMETIC]);
}

/// A producer thread fills a two-stage ring with bulk copies for a consumer
/// warp; `WAIT` is the consumer's wait before it reads a stage.
fn ring(wait: &str) -> String {
    format!(
        "%A:[M, 64 : 64, 1].fp16.GL\n%C:[M, 64 : 64, 1].fp16.GL\n#b:[1].block\n#t:[64].thread\n\
         require M % 32 == 0\n%C <- Move<<<#b, #t>>>(%A) {{\n\
         #one:[].block = #b.scalar()\n#me:[].thread = #t.scalar()\n\
         #warps = #t.tile(32)\n@w, @l = #warps.indices()\n\
         %ring:[2 : 2048].[32, 64 : 64, 1].fp16.SH\n%full:[2].mbarrier.SH\n%empty:[2].mbarrier.SH\n\
         if (@w == 0 && @l == 0) {{\n%full <- Init<1><<<#one, #me>>>()\n\
         %empty <- Init<32><<<#one, #me>>>()\n}}\nsync\n\
         if (@w == 0) {{\nif (@l == 0) {{\nfor (k = 0; k < M / 32; k += 1) {{\n\
         mbarrier_wait(%empty[k % 2], k / 2 + 1)\n\
         %ring[k % 2] <- Move<tma><<<#one, #me>>>(%A.tile([32, 64])[k, 0], %full[k % 2])\n}}\n}}\n\
         }} else {{\nfor (k = 0; k < M / 32; k += 1) {{\n{wait}\n\
         for (j = 0; j < 8; j += 1) {{\n\
         %C.tile([32, 64])[k, 0][@l, _].tile([8])[j] <- Move<<<#one, #me>>>(%ring[k % 2][@l, _].tile([8])[j])\n}}\n\
         mbarrier_arrive(%empty[k % 2])\n}}\n}}\n}}\n"
    )
}

/// The read-before-wait rule across warps: a bulk copy another thread
/// issues keeps its tile in flight for every thread until that thread
/// waits on the copy's barrier, again in each turn of the loop that waits;
/// and a first wait for parity 1 on a fresh barrier element passes at once
/// (the producer's waits on `empty` may, since it reads no tile; the
/// consumer's on `full` may not), followed turn by turn for the first
/// turns of a loop.
#[test]
fn a_tile_another_thread_copies_is_read_only_after_a_wait_that_waits() {
    assert_eq!(
        codes_of(&ring("mbarrier_wait(%full[k % 2], k / 2)")),
        Vec::<&str>::new()
    );
    assert_eq!(codes_of(&ring("")), [codes::TMA_EARLY_READ]);
    assert_eq!(
        codes_of(&ring("mbarrier_wait(%full[k % 2], k / 2 + 1)")),
        [codes::TMA_EARLY_READ]
    );
    // Stage 1's first use is turn 1: a parity that counts turns, not uses,
    // waits for parity 1 there; one off by two waits for the same phases.
    assert_eq!(
        codes_of(&ring("mbarrier_wait(%full[k % 2], k % 2)")),
        [codes::TMA_EARLY_READ]
    );
    assert_eq!(
        codes_of(&ring("mbarrier_wait(%full[k % 2], k / 2 + 2)")),
        Vec::<&str>::new()
    );
    // A wait in the loop's first turn only leaves the later turns unordered.
    assert_eq!(
        codes_of(&ring("if (k == 0) {\nmbarrier_wait(%full[0], 0)\n}")),
        [codes::TMA_EARLY_READ]
    );
}

/// A tile copied once and waited for once, in the first turn of the loop
/// that reads it, stays landed: only tiles a loop refills are waited for
/// again in each turn.
#[test]
fn a_tile_copied_once_stays_landed_after_its_one_wait() {
    let src = "%A:[64, 64 : 64, 1].fp16.GL\n%C:[4, 64 : 64, 1].fp16.GL\n#b:[1].block\n#t:[64].thread\n\
               %C <- Spec<<<#b, #t>>>(%A) {\n\
               #one:[].block = #b.scalar()\n#me:[].thread = #t.scalar()\n@i = #t.indices()\n\
               %q:[64, 64 : 64, 1].fp16.SH\n%bar:[1].mbarrier.SH\n\
               if (@i == 0) {\n%bar <- Init<1><<<#one, #me>>>()\n}\nsync\n\
               if (@i == 0) {\n%q <- Move<tma><<<#one, #me>>>(%A.tile([64, 64])[0, 0], %bar[0])\n}\n\
               for (k = 0; k < 4; k += 1) {\nif (k == 0) {\nmbarrier_wait(%bar[0], 0)\n}\n\
               %C[k, @i] <- Move<<<#one, #me>>>(%q[@i, k])\n}\n}\n";
    assert_eq!(codes_of(src), Vec::<&str>::new());
}
