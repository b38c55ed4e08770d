//! Contracts: a fused kernel's `contract { … }` checks as built-in specs
//! over whole tensors, keeps its temporaries out of the kernel's
//! parameters and body, and refuses what is not a whole-tensor meaning.

use pretty_assertions::assert_eq;

use super::{check, codes_of};
use crate::check::codes;
use crate::ir::{BufferKind, InitValue, SpecKind};

/// A kernel `k` with `%x`, `%b` (a bias row) and `%y` over `[64, M]`,
/// the given contract lines, and a body that writes `%y` from `%x`.
fn kernel(contract: &str) -> String {
    format!(
        "kernel k {{\n    %x:[64, M].fp32.GL\n    %b:[64].fp32.GL\n    %y:[64, M].fp32.GL\n\
         {contract}\n    #rows:[M].block\n    #t:[64].thread\n\
         %y <- Spec<<<#rows, #t>>>(%x, %b) {{\n\
         #me:[].thread = #t.scalar()\n#one:[].block = #rows.scalar()\n\
         @i = #t.indices()\n@r = #rows.indices()\n\
         %y[@i, @r] <- Move<<<#one, #me>>>(%x[@i, @r])\n}}\n}}\n"
    )
}

const BIAS_RELU: &str = "contract {
        %s:[64, M].fp32.GL
        %s <- BinaryPointwise<add>(%x, %b.broadcast(1, M))
        %y <- UnaryPointwise<relu>(%s)
    }";

#[test]
fn steps_and_temporaries_are_checked_into_the_kernel() {
    let program = check("k.gph", &kernel(BIAS_RELU)).unwrap_or_else(|d| panic!("{d:#?}"));
    let kernel = &program.kernels[0];
    let contract = kernel.contract.as_ref().expect("a contract");
    let kinds: Vec<&SpecKind> = contract.steps.iter().map(|step| &step.kind).collect();
    assert_eq!(kinds.len(), 2);
    assert!(matches!(kinds[0], SpecKind::Binary(_)));
    assert!(matches!(kinds[1], SpecKind::Unary(_)));
    // The temporary is no parameter: the ABI is still %x, %b, %y.
    let temporaries: Vec<&str> = kernel
        .buffers
        .iter()
        .filter(|buffer| buffer.kind == BufferKind::Temporary)
        .map(|buffer| buffer.name.as_str())
        .collect();
    assert_eq!(temporaries, ["s"]);
    assert_eq!(kernel.params.len(), 3);
    // The broadcast reaches the step as a stride-0 view.
    let bias = &contract.steps[0].inputs[1];
    assert_eq!(bias.ty.levels[0].stride.leaves()[1].as_const(), Some(0));
}

#[test]
fn init_takes_a_constant_expression() {
    let source = "const N = 64\n".to_string()
        + &kernel(
            "contract {
        %n:[64, M].fp32.GL
        %n <- Init<N * 2>()
        %y <- BinaryPointwise<mul>(%x, %n)
    }",
        );
    let program = check("k.gph", &source).unwrap_or_else(|d| panic!("{d:#?}"));
    let contract = program.kernels[0].contract.as_ref().expect("a contract");
    assert_eq!(
        contract.steps[0].kind,
        SpecKind::Init {
            value: InitValue::Number(128.0)
        }
    );
    // A run-time dim is no constant.
    let codes = codes_of(&kernel(
        "contract {\n%n:[64, M].fp32.GL\n%n <- Init<M>()\n%y <- Move(%n)\n}",
    ));
    assert_eq!(codes, [codes::NOT_CONSTANT]);
}

#[test]
fn init_index_names_a_mode_of_its_output() {
    // Each element's row: a position vector, broadcast across the columns.
    let source = kernel(
        "contract {
        %pos:[64].fp32.GL
        %pos <- Init<index(0)>()
        %y <- BinaryPointwise<add>(%x, %pos.broadcast(1, M))
    }",
    );
    let program = check("k.gph", &source).unwrap_or_else(|d| panic!("{d:#?}"));
    let contract = program.kernels[0].contract.as_ref().expect("a contract");
    assert_eq!(
        contract.steps[0].kind,
        SpecKind::Init {
            value: InitValue::Index(0)
        }
    );
    // A one-mode output has no mode 1.
    let codes = codes_of(&kernel(
        "contract {\n%pos:[64].fp32.GL\n%pos <- Init<index(1)>()\n%y <- Move(%x)\n}",
    ));
    assert_eq!(codes, [codes::INIT_OUT_OF_RANGE]);
}

#[test]
fn the_body_cannot_name_a_temporary() {
    let source = kernel(BIAS_RELU).replace(
        "Move<<<#one, #me>>>(%x[@i, @r])",
        "Move<<<#one, #me>>>(%s[@i, @r])",
    );
    assert_eq!(codes_of(&source), [codes::UNDEFINED]);
}

#[test]
fn what_a_contract_refuses() {
    for (contract, expected) in [
        (
            "contract {\n%s:[64].fp32.SH\n%y <- Move(%x)\n}",
            codes::CONTRACT_FORM,
        ),
        (
            "contract {\n#g:[1].block\n%y <- Move(%x)\n}",
            codes::CONTRACT_FORM,
        ),
        (
            "contract {\n%y <- Shfl<bfly, 1>(%x)\n}",
            codes::CONTRACT_FORM,
        ),
        ("contract {\n%y <- Move<async>(%x)\n}", codes::CONTRACT_FORM),
        (
            "contract {\n%y <- Move(%x) {\nsync\n}\n}",
            codes::CONTRACT_FORM,
        ),
        (
            "contract {\n%y <- Move(%x)\n}\ncontract {\n%y <- Move(%x)\n}",
            codes::CONTRACT_FORM,
        ),
        // A bias row needs its broadcast.
        (
            "contract {\n%y <- BinaryPointwise<add>(%x, %b)\n}",
            codes::SIZE_MISMATCH,
        ),
        // The contract must write the kernel's output.
        (
            "contract {\n%s:[64, M].fp32.GL\n%s <- Move(%x)\n}",
            codes::CONTRACT_DATAFLOW,
        ),
    ] {
        assert_eq!(codes_of(&kernel(contract)), [expected], "{contract}");
    }
}

#[test]
fn a_built_in_outermost_spec_needs_no_contract_and_takes_none() {
    let source = kernel("contract {\n%y <- Move(%x)\n}").replace(
        "%y <- Spec<<<#rows, #t>>>(%x, %b)",
        "%y <- Move<<<#rows, #t>>>(%x)",
    );
    assert_eq!(codes_of(&source), [codes::CONTRACT_DATAFLOW]);
}

#[test]
fn a_contract_stands_at_kernel_scope_only() {
    let source = kernel("").replace(
        "@i = #t.indices()",
        "@i = #t.indices()\ncontract {\n%y <- Move(%x)\n}",
    );
    assert_eq!(codes_of(&source), [codes::CONTRACT_FORM]);
}

/// A contract's `for` unrolls when checking: one copy of its body per
/// value, the variable a constant in each (`%w[l, _]` names row l).
#[test]
fn a_contract_loop_unrolls_its_steps() {
    let source = "const L = 3
kernel k {
    %x:[64].fp32.GL
    %w:[L, 64].fp32.GL
    %y:[64].fp32.GL
    contract {
        %y <- Move(%x)
        for (l = 0; l < L; l += 1) {
            %y <- BinaryPointwise<mul>(%y, %w[l, _])
        }
    }
    #b:[1].block
    #t:[64].thread
    %y <- Spec<<<#b, #t>>>(%x, %w) {
        #me:[].thread = #t.scalar()
        #one:[].block = #b.scalar()
        @i = #t.indices()
        %y[@i] <- Move<<<#one, #me>>>(%x[@i])
    }
}
";
    let program = check("k.gph", source).unwrap_or_else(|d| panic!("{d:#?}"));
    let contract = program.kernels[0].contract.as_ref().expect("a contract");
    assert_eq!(contract.steps.len(), 1 + 3);
    let rows: Vec<Option<i64>> = contract.steps[1..]
        .iter()
        .map(|step| step.inputs[1].base.as_const())
        .collect();
    // `[L, 64]` is column-major: row l starts at offset l.
    assert_eq!(rows, [Some(0), Some(1), Some(2)]);
}

#[test]
fn a_contract_loop_needs_constant_bounds() {
    let source = kernel(
        "contract {
        for (l = 0; l < M; l += 1) {
            %y <- Move(%x)
        }
    }",
    );
    // The loop is not unrolled, so `%y` is never written either.
    assert_eq!(
        codes_of(&source),
        [codes::CONTRACT_DATAFLOW, codes::NOT_CONSTANT]
    );
}
