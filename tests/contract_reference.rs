//! Written contracts (`contract { … }`) on the CPU reference: each
//! composition's result against the same function computed directly in the
//! test, with no contract machinery — GEMM + bias + ReLU, LayerNorm and
//! softmax over small random tensors — and the refusals `--check` prints.

use graphene::compile::{Options, check};
use graphene::ir::Kernel;
use graphene::ir::Scalar;
use graphene::reference::{Contract, ReferenceError, round_to};

fn kernel(source: &str) -> Kernel {
    let checked = check("t.gph", source, &Options::default()).unwrap_or_else(|d| panic!("{d:#?}"));
    checked
        .program
        .kernels
        .into_iter()
        .next()
        .expect("one kernel")
}

/// Deterministic values in [-1, 1) that fp16 holds exactly (multiples of 2^-10).
fn values(len: usize, seed: u64) -> Vec<f64> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % 2048) as f64 / 1024.0 - 1.0
        })
        .collect()
}

/// The body every test kernel shares: one thread copies one row, so that
/// the kernel checks; the contract alone is under test here.
const BODY: &str = "    #rows:[M].block
    #t:[1].thread
    %y <- Spec<<<#rows, #t>>>(INPUTS) {
        #me:[].thread = #t.scalar()
        #one:[].block = #rows.scalar()
        @r = #rows.indices()
        for (c = 0; c < N; c += 1) {
            %y[c, @r] <- Move<<<#one, #me>>>(%x[c, @r])
        }
    }
}
";

fn with_body(head: &str, inputs: &str) -> String {
    format!("{head}{}", BODY.replace("INPUTS", inputs))
}

#[test]
fn gemm_bias_relu_is_the_product_then_the_epilogue() {
    // x is K×M here only to share the body: y[n, m] = relu(Σ_k a[k, m]·w[n, k] + bias[n]).
    let source = with_body(
        "const N = 8\nconst K = 8\nkernel gbr {
    %x:[N, M : 1, N].fp16.GL
    %w:[N, K : K, 1].fp16.GL
    %bias:[N].fp16.GL
    %y:[N, M : 1, N].fp16.GL
    contract {
        %acc:[N, M].fp32.GL
        %acc <- MatMul<overwrite>(%w, %x)
        %s:[N, M].fp32.GL
        %s <- BinaryPointwise<add>(%acc, %bias.broadcast(1, M))
        %y <- UnaryPointwise<relu>(%s)
    }
",
        "%x, %w, %bias",
    );
    let kernel = kernel(&source);
    let m = 5;
    let contract = Contract::of(&kernel, &[m as i64]).unwrap();
    let (x, w, bias) = (values(8 * m, 1), values(64, 2), values(8, 3));
    let expected = contract
        .evaluate(&[&x, &w, &bias, &vec![0.0; 8 * m]])
        .unwrap();
    for col in 0..m {
        for n in 0..8 {
            let dot: f64 = (0..8).map(|k| w[n * 8 + k] * x[col * 8 + k]).sum();
            let acc = round_to(Scalar::Fp32, dot);
            let s = round_to(Scalar::Fp32, acc + bias[n]);
            let want = round_to(Scalar::Fp16, s.max(0.0));
            assert_eq!(expected.values[col * 8 + n], want, "({n}, {col})");
        }
    }
    assert_eq!(
        contract.matmul().map(|shape| shape.flops()),
        Some(2 * 8 * 8 * m as u128)
    );
    assert_eq!(
        expected.tolerance.relative, 1e-2,
        "{:?}",
        expected.tolerance
    );
}

const LAYERNORM: &str = "const N = 16\nkernel ln {
    %x:[N, M : 1, N].fp16.GL
    %g:[N].fp16.GL
    %b:[N].fp16.GL
    %y:[N, M : 1, N].fp16.GL
    contract {
        %n:[M].fp32.GL
        %n <- Init<N>()
        %sum:[M].fp32.GL
        %sum <- Reduction<add, [0]>(%x)
        %mean:[M].fp32.GL
        %mean <- BinaryPointwise<div>(%sum, %n)
        %d:[N, M].fp32.GL
        %d <- BinaryPointwise<sub>(%x, %mean.broadcast(0, N))
        %d2:[N, M].fp32.GL
        %d2 <- BinaryPointwise<mul>(%d, %d)
        %ss:[M].fp32.GL
        %ss <- Reduction<add, [0]>(%d2)
        %var:[M].fp32.GL
        %var <- BinaryPointwise<div>(%ss, %n)
        %eps:[M].fp32.GL
        %eps <- Init<0.00001>()
        %ve:[M].fp32.GL
        %ve <- BinaryPointwise<add>(%var, %eps)
        %rs:[M].fp32.GL
        %rs <- UnaryPointwise<rsqrt>(%ve)
        %xh:[N, M].fp32.GL
        %xh <- BinaryPointwise<mul>(%d, %rs.broadcast(0, N))
        %y <- TernaryPointwise<fma>(%xh, %g.broadcast(1, M), %b.broadcast(1, M))
    }
";

#[test]
fn layernorm_normalises_each_row_then_scales_and_shifts() {
    let kernel = kernel(&with_body(LAYERNORM, "%x, %g, %b"));
    let m = 3;
    let contract = Contract::of(&kernel, &[m as i64]).unwrap();
    let (x, g, b) = (values(16 * m, 4), values(16, 5), values(16, 6));
    let expected = contract.evaluate(&[&x, &g, &b, &[]]).unwrap();
    for row in 0..m {
        let xs = &x[row * 16..(row + 1) * 16];
        let mean = xs.iter().sum::<f64>() / 16.0;
        let var = xs.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / 16.0;
        for c in 0..16 {
            let want = (xs[c] - mean) / (var + 1e-5).sqrt() * g[c] + b[c];
            let got = expected.values[row * 16 + c];
            // The steps round to fp32 on the way and to fp16 at the end.
            assert!(
                (got - want).abs() <= 4e-3 * want.abs().max(1.0),
                "({c}, {row}): {got} vs {want}"
            );
        }
    }
}

#[test]
fn softmax_subtracts_the_row_maximum() {
    let source = with_body(
        "const N = 16\nkernel softmax {
    %x:[N, M : 1, N].fp16.GL
    %y:[N, M : 1, N].fp16.GL
    contract {
        %mx:[M].fp32.GL
        %mx <- Reduction<max, [0]>(%x)
        %s:[N, M].fp32.GL
        %s <- BinaryPointwise<sub>(%x, %mx.broadcast(0, N))
        %e:[N, M].fp32.GL
        %e <- UnaryPointwise<exp>(%s)
        %sum:[M].fp32.GL
        %sum <- Reduction<add, [0]>(%e)
        %y <- BinaryPointwise<div>(%e, %sum.broadcast(0, N))
    }
",
        "%x",
    );
    let kernel = kernel(&source);
    let m = 4;
    let contract = Contract::of(&kernel, &[m as i64]).unwrap();
    // Large values: without the maximum subtracted, exp would overflow.
    let x: Vec<f64> = values(16 * m, 7)
        .iter()
        .map(|v| v * 60000.0)
        .map(|v| round_to(Scalar::Fp16, v))
        .collect();
    let expected = contract.evaluate(&[&x, &[]]).unwrap();
    for row in 0..m {
        let xs = &x[row * 16..(row + 1) * 16];
        let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let total: f64 = xs.iter().map(|v| (v - max).exp()).sum();
        let mut row_sum = 0.0;
        for (c, &value) in xs.iter().enumerate() {
            let want = (value - max).exp() / total;
            let got = expected.values[row * 16 + c];
            assert!(got.is_finite());
            assert!((got - want).abs() <= 1e-3, "({c}, {row}): {got} vs {want}");
            row_sum += got;
        }
        assert!((row_sum - 1.0).abs() < 1e-2, "row {row} sums to {row_sum}");
    }
}

#[test]
fn a_generic_spec_without_a_contract_is_refused_in_one_line() {
    let source = with_body(
        "const N = 4\nkernel fused {\n    %x:[N, M : 1, N].fp32.GL\n    %y:[N, M : 1, N].fp32.GL\n",
        "%x",
    );
    let error = Contract::of(&kernel(&source), &[2]).unwrap_err();
    assert!(
        matches!(error, ReferenceError::NoContract { .. }),
        "{error}"
    );
    let text = error.to_string();
    assert!(!text.contains('\n'), "{text}");
    assert!(text.contains("no `contract { … }` block"), "{text}");
}

/// A MatMul over operands of three modes multiplies matrix by matrix:
/// C[:, :, l] = A[:, :, l]·B[:, :, l], A stored `[M, K, L : K, 1, M*K]`.
#[test]
fn a_batched_matmul_multiplies_each_matrix_of_the_batch() {
    let source = "const M = 3\nconst N = 2\nconst K = 4\nkernel batched {
    %a:[M, K, L : K, 1, M*K].fp32.GL
    %b:[K, N, L : 1, K, N*K].fp32.GL
    %c:[M, N, L : N, 1, M*N].fp32.GL
    contract {
        %c <- MatMul<overwrite>(%a, %b)
    }
    #blocks:[L].block
    #t:[1].thread
    %c <- Spec<<<#blocks, #t>>>(%a, %b) {
        #me:[].thread = #t.scalar()
        #one:[].block = #blocks.scalar()
        @l = #blocks.indices()
        for (i = 0; i < M; i += 1) {
            for (j = 0; j < N; j += 1) {
                %c[i, j, @l] <- Init<0.0><<<#one, #me>>>()
                for (k = 0; k < K; k += 1) {
                    %c[i, j, @l] <- MatMul<<<#one, #me>>>(%a[i, k, @l], %b[k, j, @l])
                }
            }
        }
    }
}
";
    let kernel = kernel(source);
    let l = 3;
    let contract = Contract::of(&kernel, &[l as i64]).unwrap();
    let (m, n, k) = (3, 2, 4);
    let (a, b) = (values(m * k * l, 4), values(k * n * l, 5));
    let result = contract.evaluate(&[&a, &b, &vec![0.0; m * n * l]]).unwrap();
    // Each value goes to C's buffer at its index's offset.
    let mut c = vec![f64::NAN; m * n * l];
    for (i, value) in result.values.iter().enumerate() {
        c[result.index.offset(i) as usize] = *value;
    }
    for batch in 0..l {
        for i in 0..m {
            for j in 0..n {
                let dot: f64 = (0..k)
                    .map(|p| a[batch * m * k + i * k + p] * b[batch * n * k + j * k + p])
                    .sum();
                let want = round_to(Scalar::Fp32, dot);
                assert_eq!(
                    c[batch * m * n + i * n + j],
                    want,
                    "({i}, {j}) of matrix {batch}"
                );
            }
        }
    }
    assert_eq!(
        contract.matmul().map(|shape| shape.flops()),
        Some(2 * (m * n * k * l) as u128)
    );
}

/// An LSTM cell's contract in miniature (examples/lstm.gph): one product
/// gives all four gates, `.tile(_, [N])[0, q]` takes gate q's columns, and
/// the contract has two outputs, each evaluated.
const LSTM: &str = "const N = 4
kernel cell {
    %x:[M, N : N, 1].fp16.GL
    %c:[M, N : N, 1].fp32.GL
    %w:[N, 4*N : 1, N].fp16.GL
    %h2:[M, N : N, 1].fp16.GL
    %c2:[M, N : N, 1].fp32.GL
    contract {
        %pre:[M, 4*N].fp32.GL
        %pre <- MatMul<overwrite>(%x, %w)
        %i:[M, N].fp32.GL
        %i <- UnaryPointwise<sigmoid>(%pre.tile(_, [N])[0, 0])
        %f:[M, N].fp32.GL
        %f <- UnaryPointwise<sigmoid>(%pre.tile(_, [N])[0, 1])
        %g:[M, N].fp32.GL
        %g <- UnaryPointwise<tanh>(%pre.tile(_, [N])[0, 2])
        %o:[M, N].fp32.GL
        %o <- UnaryPointwise<sigmoid>(%pre.tile(_, [N])[0, 3])
        %fc:[M, N].fp32.GL
        %fc <- BinaryPointwise<mul>(%f, %c)
        %ig:[M, N].fp32.GL
        %ig <- BinaryPointwise<mul>(%i, %g)
        %c2 <- BinaryPointwise<add>(%fc, %ig)
        %tc:[M, N].fp32.GL
        %tc <- UnaryPointwise<tanh>(%c2)
        %h2 <- BinaryPointwise<mul>(%o, %tc)
    }
    #rows:[M].block
    #t:[1].thread
    %h2, %c2 <- Spec<<<#rows, #t>>>(%x, %c, %w) {
        #me:[].thread = #t.scalar()
        #one:[].block = #rows.scalar()
        @r = #rows.indices()
        for (col = 0; col < N; col += 1) {
            %h2[@r, col] <- Move<<<#one, #me>>>(%x[@r, col])
            %c2[@r, col] <- Move<<<#one, #me>>>(%c[@r, col])
        }
    }
}
";

#[test]
fn an_lstm_cell_contract_splits_the_gates_and_gives_both_outputs() {
    let kernel = kernel(LSTM);
    let m = 3;
    let contract = Contract::of(&kernel, &[m as i64]).unwrap();
    let (x, c, w) = (values(4 * m, 8), values(4 * m, 9), values(64, 10));
    let params: [&[f64]; 5] = [&x, &c, &w, &[], &[]];
    let outputs = contract.evaluate_outputs(&params).unwrap();
    let names: Vec<&str> = outputs.iter().map(|e| e.output.as_str()).collect();
    assert_eq!(names, ["%h2", "%c2"]);
    let sigmoid = |v: f64| 1.0 / (1.0 + (-v).exp());
    for row in 0..m {
        for col in 0..4 {
            // Gate q of column col is row q·N + col of the PyTorch weight.
            let gate = |q: usize| -> f64 {
                let dot: f64 = (0..4)
                    .map(|k| x[row * 4 + k] * w[(q * 4 + col) * 4 + k])
                    .sum();
                round_to(Scalar::Fp32, dot)
            };
            let (i, f, g, o) = (
                sigmoid(gate(0)),
                sigmoid(gate(1)),
                gate(2).tanh(),
                sigmoid(gate(3)),
            );
            let c2 = f * c[row * 4 + col] + i * g;
            let h2 = o * c2.tanh();
            // Values come in element order: the first mode (rows) fastest.
            let at = row + col * m;
            // Each step rounds to fp32 on the way; H' ends in fp16.
            assert!(
                (outputs[1].values[at] - c2).abs() <= 1e-6,
                "c' ({row}, {col})"
            );
            assert!(
                (outputs[0].values[at] - h2).abs() <= 1e-3,
                "h' ({row}, {col})"
            );
        }
    }
    let single = contract.evaluate(&params).unwrap_err();
    assert!(single.to_string().contains("2 outputs"), "{single}");
}
