//! The CPU reference on checked kernels: each contract's result against an
//! independent computation — offsets through the layout algebra
//! (`check::constant_layout`), matrices and reductions by coordinates,
//! values worked out by hand.

use graphene::check::constant_layout;
use graphene::compile::{Options, check};
use graphene::ir::{Kernel, Scalar, View};
use graphene::reference::{Contract, ContractKind, ReferenceError, compare, round_to};

fn kernel(source: &str) -> Kernel {
    let checked = check("t.gph", source, &Options::default()).unwrap_or_else(|d| panic!("{d:#?}"));
    checked
        .program
        .kernels
        .into_iter()
        .next()
        .expect("one kernel")
}

/// The offset of every element of a constant view, in element order,
/// computed level by level with the layout algebra.
fn offsets_by_algebra(view: &View) -> Vec<i64> {
    let base = view.base.as_const().expect("constant base");
    let layouts: Vec<_> = view
        .ty
        .levels
        .iter()
        .map(|level| constant_layout(level).expect("constant level"))
        .collect();
    let total: i64 = layouts.iter().map(|l| l.size()).product();
    (0..total)
        .map(|mut i| {
            let mut offset = base;
            // Innermost level fastest.
            for layout in layouts.iter().rev() {
                offset += layout.eval(i % layout.size()).expect("in range");
                i /= layout.size();
            }
            match view.ty.swizzle {
                Some(swizzle) => swizzle.apply(offset),
                None => offset,
            }
        })
        .collect()
}

/// Host values where each element holds its own offset.
fn ramp(len: usize) -> Vec<f64> {
    (0..len).map(|o| o as f64).collect()
}

#[test]
fn moves_pair_elements_in_element_order_through_any_view() {
    // Each input view is a kernel-scope definition; the output is a plain
    // row-major tensor, so the move lays the view's elements out in order.
    for (input, elements) in [
        ("%x", 32),
        ("%x.tile([2, 4])", 32),
        ("%x.tile([2:2], [4:1])", 32),
        ("%x.tile([2:2], [2,2 : 1,4])", 32),
        ("%x.tile([2, 4])[1, _]", 16),
        ("%x.tile([4, 8])[0, 0].tile([1, 2])", 32),
    ] {
        let source = format!(
            "%x:[4, 8 : 1, 4].fp32.GL\n%y:[{elements}].fp32.GL\n#g:[1].block\n#t:[32].thread\n\
             %v = {input}\n%y <- Move<<<#g, #t>>>(%v)\n"
        );
        let kernel = kernel(&source);
        let contract = Contract::of(&kernel, &[]).unwrap();
        let x = ramp(32);
        let y = vec![0.0; elements];
        let expected = contract.evaluate(&[&x, &y]).unwrap();
        let by_algebra: Vec<f64> = offsets_by_algebra(&kernel.root.inputs[0])
            .into_iter()
            .map(|o| o as f64)
            .collect();
        assert_eq!(expected.values, by_algebra, "{input}");
        let placed: Vec<i64> = expected.index.offsets(0..elements).collect();
        assert_eq!(placed, (0..elements as i64).collect::<Vec<_>>(), "{input}");
    }
}

#[test]
fn a_move_into_a_transposed_output_places_by_its_layout() {
    let kernel = kernel(
        "%x:[8, 8 : 8, 1].fp16.GL\n%y:[8, 8 : 1, 8].fp32.GL\n#g:[1].block\n#t:[64].thread\n\
         %y <- Move<<<#g, #t>>>(%x)\n",
    );
    let contract = Contract::of(&kernel, &[]).unwrap();
    let x = ramp(64);
    let expected = contract.evaluate(&[&x, &[0.0; 64]]).unwrap();
    // Element (r, c) of both: x at 8r + c, y at r + 8c — a transpose.
    for r in 0..8 {
        for c in 0..8 {
            let element = r + 8 * c;
            assert_eq!(expected.values[element], (8 * r + c) as f64);
            assert_eq!(expected.index.offset(element), (r + 8 * c) as i64);
        }
    }
    assert_eq!(expected.tolerance.relative, 1e-5);
    assert_eq!(expected.tolerance.reason, "exact after rounding to fp32");
}

#[test]
fn a_converting_move_rounds_into_the_output_type() {
    let kernel = kernel(
        "%x:[4].fp32.GL\n%y:[4].fp16.GL\n#g:[1].block\n#t:[4].thread\n%y <- Move<<<#g, #t>>>(%x)\n",
    );
    let contract = Contract::of(&kernel, &[]).unwrap();
    let third = 1.0 / 3.0;
    let x = [third, 1.0 + 1.0 / 4096.0, 65504.0, 1e6];
    let expected = contract.evaluate(&[&x, &[0.0; 4]]).unwrap();
    assert_eq!(
        expected.values,
        [round_to(Scalar::Fp16, third), 1.0, 65504.0, f64::INFINITY]
    );
    let error = contract.evaluate(&[&x[..3], &[0.0; 4]]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "%x holds 4 elements but 3 host values were given"
    );
}

const MATMUL: &str = "%a:[2, 3 : 3, 1].fp32.GL\n%b:[3, 2 : 1, 3].fp32.GL\n%c:[2, 2 : 2, 1].fp32.GL\n\
                      #g:[1].block\n#t:[32].thread\n";

#[test]
fn matmul_accumulates_and_overwrite_does_not() {
    // A = [1 2 3; 4 5 6] row-major; B = [1 0; 0 1; 1 1] column-major.
    let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let b = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0];
    let c = [100.0, 200.0, 300.0, 400.0];
    // A·B = [4 5; 10 11].
    // `MatMul<overwrite>` has no instruction: its body zeroes C and adds
    // A·B into it, one row of C a thread.
    let overwrite = " {\n@t = #t.indices()\nif (@t < 2) {\n%row = %c.tile([1, 2])[@t, 0]\n\
                     %row <- Init<0.0><<<#g.scalar(), #t.scalar()>>>()\n\
                     %row <- MatMul<<<#g.scalar(), #t.scalar()>>>(%a.tile([1, 3])[@t, 0], %b)\n\
                     }\n}";
    for (kind, body, base) in [
        ("MatMul", "", c),
        ("MatMul<overwrite>", overwrite, [0.0; 4]),
    ] {
        let source = format!("{MATMUL}%c <- {kind}<<<#g, #t>>>(%a, %b){body}\n");
        let contract = Contract::of(&kernel(&source), &[]).unwrap();
        let expected = contract.evaluate(&[&a, &b, &c]).unwrap();
        let mut at_offsets = [0.0; 4];
        for (i, offset) in expected.index.offsets(0..4).enumerate() {
            at_offsets[offset as usize] = expected.values[i];
        }
        let product = [4.0, 5.0, 10.0, 11.0];
        let want: Vec<f64> = base.iter().zip(product).map(|(c, p)| c + p).collect();
        assert_eq!(at_offsets.to_vec(), want, "{kind}");
    }
}

#[test]
fn tiled_matmul_operands_read_as_the_same_matrices() {
    // Tiling views A, B and C does not change what the MatMul means.
    let plain =
        "%a:[8, 4].fp32.GL\n%b:[4, 8].fp32.GL\n%c:[8, 8].fp32.GL\n#g:[1].block\n#t:[32].thread\n";
    let a = ramp(32);
    let b: Vec<f64> = (0..32).map(|v| f64::from(v % 5) - 2.0).collect();
    let c: Vec<f64> = (0..64).map(|v| f64::from(v % 3)).collect();
    let placed = |source: String| {
        let contract = Contract::of(&kernel(&source), &[]).unwrap();
        let expected = contract.evaluate(&[&a, &b, &c]).unwrap();
        let mut out = vec![f64::NAN; 64];
        for (i, offset) in expected.index.offsets(0..64).enumerate() {
            out[offset as usize] = expected.values[i];
        }
        out
    };
    let whole = placed(format!("{plain}%c <- MatMul<<<#g, #t>>>(%a, %b)\n"));
    let tiled = placed(format!(
        "{plain}%at = %a.tile([2, 2])\n%bt = %b.tile([2, 4])\n%ct = %c.tile([4, 2])\n\
         %ct <- MatMul<<<#g, #t>>>(%at, %bt)\n"
    ));
    assert_eq!(whole, tiled);
    // And both are C + A·B by coordinates (column-major operands).
    for i in 0..8 {
        for j in 0..8 {
            let dot: f64 = (0..4).map(|t| a[i + 8 * t] * b[t + 4 * j]).sum();
            assert_eq!(whole[i + 8 * j], c[i + 8 * j] + dot, "({i}, {j})");
        }
    }
}

#[test]
fn reductions_fold_the_listed_axes_and_keep_the_rest_in_order() {
    let x: Vec<f64> = (0..12).map(|v| f64::from((v * 7) % 12)).collect();
    // X is 4×3 row-major: X[r][c] = x[3r + c].
    for (axes, op, len) in [
        ("[1]", "add", 4),
        ("[0]", "add", 3),
        ("[1]", "max", 4),
        ("[0, 1]", "add", 1),
    ] {
        let source = format!(
            "%x:[4, 3 : 3, 1].fp32.GL\n%y:[{len}].fp32.GL\n#g:[1].block\n#t:[32].thread\n\
             %y <- Reduction<{op}, {axes}><<<#g, #t>>>(%x)\n"
        );
        let contract = Contract::of(&kernel(&source), &[]).unwrap();
        let expected = contract.evaluate(&[&x, &vec![0.0; len]]).unwrap();
        let cell = |r: usize, c: usize| x[3 * r + c];
        let want: Vec<f64> = match (axes, op) {
            ("[1]", "add") => (0..4).map(|r| (0..3).map(|c| cell(r, c)).sum()).collect(),
            ("[0]", "add") => (0..3).map(|c| (0..4).map(|r| cell(r, c)).sum()).collect(),
            ("[1]", "max") => (0..4)
                .map(|r| (0..3).map(|c| cell(r, c)).fold(f64::MIN, f64::max))
                .collect(),
            _ => vec![x.iter().sum()],
        };
        assert_eq!(expected.values, want, "{op} over {axes}");
    }
}

#[test]
fn pointwise_kinds_apply_their_operation() {
    let x = [-1.0, -0.25, 0.5, 0.75];
    let y = [0.5, -0.5, 0.25, 1.0];
    type Op = fn(f64, f64) -> f64;
    let cases: [(&str, Op); 7] = [
        ("UnaryPointwise<relu>", |x, _| x.max(0.0)),
        ("UnaryPointwise<neg>", |x, _| -x),
        ("UnaryPointwise<abs>", |x, _| x.abs()),
        ("UnaryPointwise<exp2>", |x, _| x.exp2()),
        ("BinaryPointwise<add>", |x, y| x + y),
        ("BinaryPointwise<mul>", |x, y| x * y),
        ("BinaryPointwise<min>", |x, y| x.min(y)),
    ];
    for (kind, op) in cases {
        let binary = kind.starts_with("Binary");
        let source = format!(
            "%x:[4].fp32.GL\n%y:[4].fp32.GL\n%z:[4].fp32.GL\n#g:[1].block\n#t:[4].thread\n\
             %z <- {kind}<<<#g, #t>>>({})\n",
            if binary { "%x, %y" } else { "%x" }
        );
        let contract = Contract::of(&kernel(&source), &[]).unwrap();
        let expected = contract.evaluate(&[&x, &y, &[0.0; 4]]).unwrap();
        let want: Vec<f64> = x
            .iter()
            .zip(y)
            .map(|(&x, y)| round_to(Scalar::Fp32, op(x, y)))
            .collect();
        assert_eq!(expected.values, want, "{kind}");
    }
}

#[test]
fn broadcast_operands_repeat_their_elements() {
    // A bias row over the 4 rows of a 4×3 matrix (element (i, j) at i + 4j),
    // and a value per row over its 3 columns.
    let x: Vec<f64> = (0..12).map(|v| f64::from(v) * 0.5).collect();
    let row = [10.0, 20.0, 30.0];
    let per_row = [-1.0, -2.0, -3.0, -4.0];
    for (vector, repeated, values, at) in [
        (
            "[3]",
            "%v.broadcast(0, 4)",
            &row[..],
            (|_, j| j) as fn(usize, usize) -> usize,
        ),
        ("[4]", "%v.broadcast(1, 3)", &per_row[..], |i, _| i),
    ] {
        for (kind, inputs) in [
            ("BinaryPointwise<add>", format!("%x, {repeated}")),
            ("Move", repeated.to_string()),
        ] {
            let source = format!(
                "%x:[4, 3].fp32.GL\n%v:{vector}.fp32.GL\n%z:[4, 3].fp32.GL\n#g:[1].block\n\
                 #t:[4].thread\n%z <- {kind}<<<#g, #t>>>({inputs})\n"
            );
            let contract = Contract::of(&kernel(&source), &[]).unwrap();
            // Every parameter's values, in declaration order: x, v, z.
            let expected = contract.evaluate(&[&x, values, &[0.0; 12]]).unwrap();
            let want: Vec<f64> = (0..12)
                .map(|e| {
                    let (i, j) = (e % 4, e / 4);
                    let v = values[at(i, j)];
                    if kind == "Move" { v } else { x[e] + v }
                })
                .collect();
            assert_eq!(expected.values, want, "{kind}({inputs})");
        }
    }
}

#[test]
fn init_fills_and_symbolic_sizes_follow_the_dims() {
    let kernel =
        kernel("%x:[N, 4].bf16.GL\n#g:[N].block\n#t:[4].thread\n%x <- Init<0.1><<<#g, #t>>>()\n");
    let contract = Contract::of(&kernel, &[6]).unwrap();
    let expected = contract.evaluate(&[&[0.0; 24]]).unwrap();
    assert_eq!(expected.values, vec![round_to(Scalar::Bf16, 0.1); 24]);
    assert_eq!(expected.index.len(), 24);
    assert!(Contract::of(&kernel, &[]).is_err(), "N needs a value");
}

#[test]
fn a_kernel_checks_against_its_own_reference_and_fails_on_a_wrong_element() {
    let kernel = kernel(
        "%a:[M, 16].fp16.GL\n%b:[16, 8].fp16.GL\n%c:[M, 8].fp32.GL\n#g:[1].block\n#t:[32].thread\n\
         %c <- MatMul<<<#g, #t>>>(%a, %b)\n",
    );
    let contract = Contract::of(&kernel, &[32]).unwrap();
    let ContractKind::MatMul(shape) = contract.steps[0].kind else {
        panic!("a MatMul")
    };
    assert_eq!((shape.m, shape.n, shape.k), (32, 8, 16));
    let a: Vec<f64> = (0..512).map(|v| f64::from(v % 9) / 8.0 - 0.5).collect();
    let b: Vec<f64> = (0..128).map(|v| f64::from(v % 5) / 4.0 - 0.5).collect();
    let c: Vec<f64> = (0..256).map(|v| f64::from(v % 3)).collect();
    let expected = contract.evaluate(&[&a, &b, &c]).unwrap();
    let mut out = vec![0.0; 256];
    for (i, offset) in expected.index.offsets(0..256).enumerate() {
        out[offset as usize] = expected.values[i];
    }
    let mut unwritten = vec![false; 256];
    let same = compare(&expected, &out, &unwritten).unwrap();
    assert!(same.passed(), "{same}");
    assert_eq!(same.tolerance.reason, "fp16 operands");

    // Leaving C as it was (an accumulating kernel that never ran) fails.
    let untouched = compare(&expected, &c, &unwritten).unwrap();
    assert!(
        !untouched.passed() && untouched.relative_error > 0.1,
        "{untouched}"
    );

    out[77] = f64::NAN;
    unwritten[78] = true;
    let broken = compare(&expected, &out, &unwritten).unwrap();
    assert_eq!((broken.non_finite, broken.unwritten), (1, 1));
    assert!(!broken.passed());
}

#[test]
fn the_examples_have_contracts_or_say_why_not() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "gph"))
        .collect();
    names.sort();
    assert!(!names.is_empty());
    for path in names {
        let text = std::fs::read_to_string(&path).unwrap();
        let checked = check(&path.display().to_string(), &text, &Options::default())
            .unwrap_or_else(|d| panic!("{d:#?}"));
        for kernel in &checked.program.kernels {
            // Symbolic dims get a small value that satisfies divisibility.
            let dims = vec![128; kernel.dims.len()];
            match Contract::of(kernel, &dims) {
                Ok(contract) => assert!(contract.outputs.iter().all(|o| o.elements() > 0)),
                Err(error @ ReferenceError::NotGlobal { .. }) => {
                    // Only a kernel whose outermost operands live on chip.
                    assert!(error.to_string().contains("only global (GL) tensors"));
                }
                Err(error) => panic!("{}: {error}", kernel.name),
            }
        }
    }
}
