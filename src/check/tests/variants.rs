//! Choosing by constants: `select` picks an integer or a scalar type when
//! checking, an `if` of constants checks only its branch taken, and a
//! kernel variant re-checks a body with other constants.

use pretty_assertions::assert_eq;

use super::{check, codes_of};
use crate::check::codes;
use crate::ir::{Program, Stmt};
use crate::syntax::ast::Scalar;

/// A fill kernel of `%X` (declared `decl`, then `.GL`) after `consts`,
/// followed by `after`; a non-empty `body` runs before the fill itself.
fn fill(consts: &str, decl: &str, body: &str, after: &str) -> String {
    let spec = "%X <- Init<0.0><<<#grid, #block>>>()";
    let root = if body.is_empty() {
        spec.to_string()
    } else {
        format!("%X <- Init<0.0><<<#grid, #block>>>() {{\n{body}\n{spec}\n    }}")
    };
    format!(
        "{consts}\nkernel fill (min_blocks_per_sm = BLOCKS) {{\n    %X:{decl}.GL\n    #grid:[1].block\n    \
         #block:[THREADS].thread\n    {root}\n}}\n{after}"
    )
}

const CONSTS: &str = "const WIDE = 0\nconst BLOCKS = 1\nconst THREADS = select(WIDE == 1, 64, 32)";

/// The threads of a kernel's block (its levels' constant sizes).
fn threads(kernel: &crate::ir::Kernel) -> Option<i64> {
    kernel
        .block
        .levels
        .iter()
        .map(|level| crate::check::symbolic::size(&level.shape).as_const())
        .product()
}

fn program(src: &str) -> Program {
    check("v.gph", src).unwrap_or_else(|d| panic!("{d:#?}"))
}

#[test]
fn select_picks_strides_and_scalars_by_constants() {
    let src = fill(
        CONSTS,
        "[N, K : select(WIDE == 1, K, 1), select(WIDE == 1, 1, N)].select(WIDE == 1, fp16, fp32)",
        "",
        "kernel fill_wide = fill(WIDE = 1)",
    );
    let program = program(&src);
    let names: Vec<&str> = program.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["fill", "fill_wide"]);
    let [narrow, wide] = &program.kernels[..] else {
        panic!("two kernels")
    };
    let x = |k: &crate::ir::Kernel| k.buffers[k.params[0].0 as usize].ty.clone();
    assert_eq!(x(narrow).scalar, Scalar::Fp32);
    assert_eq!(x(wide).scalar, Scalar::Fp16);
    assert_ne!(x(narrow).levels, x(wide).levels, "the strides follow WIDE");
    // THREADS depends on WIDE: the variant's block follows it.
    assert_eq!(threads(narrow), Some(32));
    assert_eq!(threads(wide), Some(64));
}

#[test]
fn select_checks_only_the_operand_chosen() {
    // `UNDEFINED_NAME` in the operand not taken is never looked at.
    let src = fill(
        CONSTS,
        "[select(WIDE == 1, UNDEFINED_NAME, 8)].fp32",
        "",
        "",
    );
    assert_eq!(codes_of(&src), Vec::<&str>::new());
    let src = fill(CONSTS, "[8].fp32", "", "kernel w = fill(WIDE = 1)");
    assert_eq!(codes_of(&src), Vec::<&str>::new());
}

#[test]
fn a_select_on_a_dim_is_not_constant() {
    let src = fill(CONSTS, "[N, select(N == 4, 2, 3)].fp32", "", "");
    assert_eq!(codes_of(&src), [codes::NOT_CONSTANT]);
}

#[test]
fn an_if_of_constants_checks_only_its_branch_taken() {
    // The dead branch names a tensor that does not exist.
    let body =
        "if (WIDE == 1) {\n %nothing <- Init<0.0><<<#grid, #block>>>()\n } else {\n sync\n }";
    let src = fill(CONSTS, "[8].fp32", body, "");
    let program = program(&src);
    let Some(Stmt::If(branch)) = program.kernels[0]
        .root
        .body
        .as_ref()
        .and_then(|body| body.first())
    else {
        panic!("an if")
    };
    assert!(
        branch.then_body.is_empty(),
        "the branch not taken is dropped"
    );
    assert_eq!(branch.else_body.len(), 1);
    // Taken by the variant, the same branch is checked and fails.
    let src = fill(CONSTS, "[8].fp32", body, "kernel w = fill(WIDE = 1)");
    assert_eq!(codes_of(&src), [codes::UNDEFINED]);
}

#[test]
fn an_if_decided_at_run_time_checks_both_branches() {
    let body =
        "@t = #block.indices()\nif (@t == 1) {\n %nothing <- Init<0.0><<<#grid, #block>>>()\n }";
    assert_eq!(
        codes_of(&fill(CONSTS, "[8].fp32", body, "")),
        [codes::UNDEFINED]
    );
}

#[test]
fn variants_stack_and_win_over_defines() {
    let src = fill(
        CONSTS,
        "[8].fp32",
        "",
        "kernel wide = fill(WIDE = 1)\nkernel wide_two = wide(BLOCKS = 2)\nkernel narrow_two = wide_two(WIDE = 0)",
    );
    let file = crate::syntax::parse_file("v.gph", &src).unwrap();
    let program = crate::check::check_file(&file, &[("WIDE".into(), 1)]).unwrap();
    let summary: Vec<(String, Option<i64>, Option<u32>)> = program
        .kernels
        .iter()
        .map(|k| (k.name.clone(), threads(k), k.occupancy.min_blocks_per_sm))
        .collect();
    assert_eq!(
        summary,
        [
            ("fill".to_string(), Some(64), Some(1)),
            ("wide".to_string(), Some(64), Some(1)),
            ("wide_two".to_string(), Some(64), Some(2)),
            ("narrow_two".to_string(), Some(32), Some(2)),
        ]
    );
}

#[test]
fn a_variant_names_a_kernel_above_and_its_constants() {
    let src = fill(CONSTS, "[8].fp32", "", "kernel w = nothing(WIDE = 1)");
    assert_eq!(codes_of(&src), [codes::UNDEFINED]);
    let src = fill(
        CONSTS,
        "[8].fp32",
        "",
        "const LATER = 1\nkernel w = fill(LATER = 2)",
    );
    assert_eq!(codes_of(&src), [codes::UNKNOWN_DEFINE]);
    let src = fill(CONSTS, "[8].fp32", "", "kernel fill = fill(WIDE = 1)");
    assert_eq!(codes_of(&src), [codes::DUPLICATE]);
    // A value that is not a constant where the variant stands.
    let src = fill(CONSTS, "[8].fp32", "", "kernel w = fill(WIDE = M)");
    assert_eq!(codes_of(&src), [codes::UNDEFINED]);
}

#[test]
fn a_base_error_is_reported_once() {
    let body = "%nothing <- Init<0.0><<<#grid, #block>>>()";
    let src = fill(CONSTS, "[8].fp32", body, "kernel w = fill(WIDE = 1)");
    assert_eq!(codes_of(&src), [codes::UNDEFINED]);
}

/// An optional parameter: `bias_add` reads `%b` only where `BIAS = 1`.
const OPTIONAL_PARAMETER: &str = "const BIAS = 1
kernel bias_add {
    %x:[N].fp32.GL
    if (BIAS == 1) {
        %b:[N].fp32.GL
    }
    %y:[N].fp32.GL
    contract {
        if (BIAS == 1) {
            %y <- BinaryPointwise<add>(%x, %b)
        } else {
            %y <- Move(%x)
        }
    }
    #g:[ceil_div(N, 64)].block
    #t:[64].thread
    %y <- Spec<<<#g, #t>>>(%x) {
        @i = #g.indices()
        @j = #t.indices()
        #one:[].block = #g.scalar()
        #me:[].thread = #t.scalar()
        %v:[1].fp32.RF
        if (64 * @i + @j < N) {
            %v <- Move<<<#one, #me>>>(%x[64 * @i + @j])
            if (BIAS == 1) {
                %w:[1].fp32.RF
                %w <- Move<<<#one, #me>>>(%b[64 * @i + @j])
                %v <- BinaryPointwise<add><<<#one, #me>>>(%v, %w)
            }
            %y[64 * @i + @j] <- Move<<<#one, #me>>>(%v)
        }
    }
}
kernel plain_copy = bias_add(BIAS = 0)
";

#[test]
fn a_kernel_scope_if_of_constants_declares_a_parameter_some_variants_have() {
    let program = program(OPTIONAL_PARAMETER);
    let params = |k: &crate::ir::Kernel| -> Vec<String> {
        k.params
            .iter()
            .map(|p| k.buffers[p.0 as usize].name.clone())
            .collect()
    };
    let [with_bias, without] = &program.kernels[..] else {
        panic!("two kernels")
    };
    assert_eq!(params(with_bias), ["x", "b", "y"]);
    assert_eq!(params(without), ["x", "y"]);
    // The contract took the branch its constants chose: one step each.
    let contract_kinds = |k: &crate::ir::Kernel| -> Vec<String> {
        let contract = k.contract.as_ref().expect("a contract");
        contract
            .steps
            .iter()
            .map(|s| format!("{:?}", s.kind))
            .collect()
    };
    assert_eq!(contract_kinds(with_bias).len(), 1);
    assert!(
        contract_kinds(with_bias)[0].contains("Binary"),
        "{:?}",
        contract_kinds(with_bias)
    );
    assert!(
        contract_kinds(without)[0].contains("Move"),
        "{:?}",
        contract_kinds(without)
    );
}

#[test]
fn a_kernel_scope_if_on_a_dim_is_refused() {
    let src = OPTIONAL_PARAMETER.replacen(
        "    if (BIAS == 1) {\n        %b",
        "    if (N == 1) {\n        %b",
        1,
    );
    let codes = codes_of(&src);
    assert!(codes.contains(&codes::KERNEL_SCOPE), "{codes:?}");
    let src = OPTIONAL_PARAMETER.replacen(
        "        if (BIAS == 1) {\n            %y",
        "        if (N == 1) {\n            %y",
        1,
    );
    // Refused (E0268), the `if` leaves the output unwritten as well.
    let codes = codes_of(&src);
    assert!(codes.contains(&codes::CONTRACT_FORM), "{codes:?}");
}

#[test]
fn a_tunable_constant_lists_each_value_once_and_includes_its_default() {
    let accepted = fill(
        "const WIDE = 0 tune [0, 1]\nconst BLOCKS = 1\nconst THREADS = select(WIDE == 1, 64, 32)",
        "[THREADS].fp32",
        "",
        "",
    );
    assert_eq!(codes_of(&accepted), Vec::<&str>::new());
    let twice = accepted.replacen("tune [0, 1]", "tune [0, 1, 0]", 1);
    assert_eq!(codes_of(&twice), [codes::BAD_TUNE_VALUES]);
    let outside = accepted.replacen("tune [0, 1]", "tune [1, 2]", 1);
    assert_eq!(codes_of(&outside), [codes::BAD_TUNE_VALUES]);
    // A define may choose a value off the list: the list is the tuner's.
    let file = crate::syntax::parse_file("v.gph", &accepted).expect("parses");
    assert!(crate::check::check_file(&file, &[("WIDE".to_string(), 2)]).is_ok());
}
