#!/usr/bin/env python3
"""Our fused kernels against PyTorch, timed by benches/harness.py.

Six benchmarks (docs/performance.md, "Fused kernels"), each side checked for
correctness on its first input set before any timing, then timed interleaved
in this process (harness.compare), back to back and from CUDA graphs:

- `gemm`: C = relu(A·B + bias), fp16 in and out, 4096³ by default, ours
  (`gemm_bias_relu_sm90`, examples/gemm_bias_relu_sm90.gph) against PyTorch
  eager `relu(A @ B + bias)` (three kernels), against
  `torch._addmm_activation` (cuBLASLt's fused ReLU epilogue), and against our
  own plain GEMM (`gemm_f16_sm90_f16out`) on the same problem.
- `layernorm`: y = (x − mean)/sqrt(var + 1e-5)·γ + β over rows of N, fp16 in
  and out, ours (examples/layernorm.gph, built with `-D N=<N>`) against
  `F.layer_norm`, and against a device copy of the same bytes (`y.copy_(x)`:
  the bandwidth a kernel that reads x once and writes y once can reach).
- `softmax`: row softmax, fp16 in and out, ours (examples/softmax.gph,
  `-D N=<N>`) against `torch.softmax` and against the same copy.
- `attention`: O = softmax(Q·Kᵀ/√D)·V per (batch, head), fp16 [B, H, S, D]
  tensors, ours (examples/fmha_tma_sm90.gph, no mask or causal, and
  examples/fmha_sm90.gph on compute capability 9.0, and examples/fmha.gph,
  `-D D=<D>`) against `F.scaled_dot_product_attention`;
  TFLOP/s count 4·B·H·S²·D (half of it with `--mask causal`). `--mask`:
  `none` (default), `causal` (our `*_causal` variants, SDPA `is_causal`) or
  `padding` (BERT's key padding: each batch's length drawn in [S/2, S], our
  `*_padded` variants given a bias of 0 or −∞ per key, SDPA the boolean
  key mask broadcast over heads and queries).
- `mlp`: 20 layers of y ← relu(y·Wᵢᵀ + bᵢ), hidden 1024, fp16, batch 128 and
  4096 (`--batch`), ours in one cooperative launch (examples/mlp.gph, its
  grid as many blocks as the GPU has SMs) against a chain of
  `torch._addmm_activation` (cuBLASLt's fused epilogue, one call per layer)
  and eager `relu(y @ W.t() + b)`; W is drawn scaled by √(3/1024).
- `lstm`: one LSTM time step, hidden and input 1024, batch 64 and 256: the
  seed's cell relu(X·Wxᵀ + H·Whᵀ + b) (examples/lstm_cell.gph) against eager
  PyTorch, and the standard cell (examples/lstm.gph, gates i, f, g, o, fp32
  cell state) against eager PyTorch and `torch._VF.lstm_cell`.

B is stored N×K (K contiguous) as in benches/gemm_vs_cublas.py. With `gemm
--pad`, only the TMA pair runs, each of ours as three launches: A and B
copied into rows padded to a multiple of 8 elements (examples/pad_rows.gph),
then the kernel built with `-D LD=1` on the copies (how an odd K, 4095, is
multiplied; docs/performance.md, "Any shape").

    cargo build --release --features cuda      # only `ptxgen build` is used
    python3 benches/fused_vs_torch.py                  # everything, default sizes
    python3 benches/fused_vs_torch.py layernorm --rows 12288 --n 1024
    python3 benches/fused_vs_torch.py --json out.json

A ratio is baseline time / our time: above 1, ours is faster. For the copy
rows it is the fraction of the copy's bandwidth that our kernel reaches.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

GEMM_SIZES = [(4096, 4096, 4096)]
LAYERNORM_SIZES = [(12288, 768), (12288, 1024), (12288, 4096), (65536, 1024), (65536, 4096)]
SOFTMAX_SIZES = [(196608, 384), (65536, 1024)]
ATTENTION_SHAPES = [(32, 16, 384, 64), (8, 16, 2048, 64), (4, 16, 4096, 128)]
EPS = 1e-5


def build(ptxgen, source, defines, kernel, folder, tag):
    """PTX and manifest of `kernel` of `source` with `defines`, from `ptxgen build`."""
    ptx, manifest = os.path.join(folder, f"{tag}.ptx"), os.path.join(folder, f"{tag}.json")
    flags = [arg for define in defines for arg in ("--define", define)] + ["--kernel", kernel]
    for emit, out in (("ptx", ptx), ("manifest", manifest)):
        subprocess.run([ptxgen, source, "--emit", emit, "-o", out, *flags], check=True)
    return ptx, manifest


def load(torch, args, folder, source, kernel, defines=()):
    ptx, manifest = build(args.ptxgen, source, list(defines) + args.define, kernel, folder, f"{kernel}-{len(os.listdir(folder))}")
    return harness.Kernel(torch, ptx, manifest, kernel)


def sets_for(torch, set_bytes):
    free, _total = torch.cuda.mem_get_info()
    return harness.rotation_sets(set_bytes, free // 4)


def error_of(torch, got, reference):
    """‖got − reference‖ / ‖reference‖ in f64, and the count of NaN in got."""
    got64, ref64 = got.double(), reference.double()
    nan = torch.isnan(got64).sum().item()
    return (torch.linalg.norm(got64 - ref64) / torch.linalg.norm(ref64)).item(), nan


def timed(torch, name, ours, baseline, args, extra):
    timing = harness.compare(torch, ours, baseline, pairs=args.pairs, launches=args.launches, warmup=args.warmup)
    ratio, lo, hi, spread = harness.summary(timing["ratio"])
    graph_ratio, glo, ghi, _ = harness.summary(timing["graph_ratio"])
    ours_ms = harness.summary(timing["ours_ms"])[0]
    base_ms = harness.summary(timing["baseline_ms"])[0]
    row = {"against": name, **extra, **timing}
    print(
        f"  vs {name:<28} ours {ours_ms * 1e3:9.1f} us  base {base_ms * 1e3:9.1f} us  ratio {ratio:6.3f}"
        f" ({lo:.3f}-{hi:.3f})  graphs {graph_ratio:6.3f} ({glo:.3f}-{ghi:.3f})",
        flush=True,
    )
    return row


# (fused source, its kernel, the plain GEMM's source, its kernel, the compute
# capability the pair needs): the wgmma kernels run on 9.0 only.
GEMM_PAIRS = [
    ("examples/gemm_bias_relu_tma_sm90.gph", "gemm_bias_relu_tma_sm90", "examples/gemm_f16_tma_sm90.gph", "gemm_f16_tma_sm90", (9, 0)),
    ("examples/gemm_bias_relu_sm90.gph", "gemm_bias_relu_sm90", "examples/gemm_f16_sm90.gph", "gemm_f16_sm90_f16out", (9, 0)),
    ("examples/gemm_bias_relu.gph", "gemm_bias_relu", "examples/gemm_f16.gph", "gemm_f16_f16out", (8, 0)),
]


def bench_gemm(torch, args, folder):
    rows = []
    capability = torch.cuda.get_device_capability()
    pairs = GEMM_PAIRS[:1] if args.pad else GEMM_PAIRS
    for fused_source, fused_kernel, plain_source, plain_kernel, needs in pairs:
        if capability < needs or (needs == (9, 0) and capability != (9, 0)):
            print(f"{fused_kernel}: not run (needs compute capability {needs[0]}.{needs[1]})")
            continue
        defines = ["LD=1"] if args.pad else []
        fused = load(torch, args, folder, fused_source, fused_kernel, defines)
        plain = load(torch, args, folder, plain_source, plain_kernel, defines)
        pad = load(torch, args, folder, "examples/pad_rows.gph", "pad_rows") if args.pad else None
        rows += gemm_rows(torch, args, fused, plain, fused_kernel, pad)
    return rows


def padded(launch, pad, a, bt, dims):
    """With `--pad`: A and B copied into rows padded to a multiple of 8
    elements (pad_rows), then `launch(a, bt, dims)` on the copies (a kernel
    built with `-D LD=1`); one callable for the three launches."""
    both, padded_dims, ap, bp = harness.padded_operands(pad, a, bt, dims)
    then = launch(ap, bp, padded_dims)

    def all_three():
        both()
        then()

    return all_three


def gemm_rows(torch, args, fused, plain, name, pad=None):
    rows = []
    for m, n, k in GEMM_SIZES if not args.size else [args.size]:
        dims = {"M": m, "N": n, "K": k}
        sets = sets_for(torch, 2 * (m * k + n * k + m * n + n))
        gen = torch.Generator(device="cuda").manual_seed(args.seed)

        def new_set():
            a = torch.rand((m, k), device="cuda", dtype=torch.float16, generator=gen) * 2 - 1
            bt = torch.rand((n, k), device="cuda", dtype=torch.float16, generator=gen) * 2 - 1
            bias = torch.rand((n,), device="cuda", dtype=torch.float16, generator=gen) * 2 - 1
            return a, bt, bias, torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)

        ours_sets = [new_set() for _ in range(sets)]
        base_sets = [new_set() for _ in range(sets)]
        def fused_launch(a, bt, b, c):
            return lambda ap, bp, d: fused.bind({"%A": ap, "%B": bp, "%bias": b, "%C": c}, d)

        def plain_launch(c):
            return lambda ap, bp, d: plain.bind({"%A": ap, "%B": bp, "%C": c}, d)

        if pad:
            ours = [padded(fused_launch(a, bt, b, c), pad, a, bt, dims) for a, bt, b, c in ours_sets]
            ours_plain = [padded(plain_launch(c), pad, a, bt, dims) for a, bt, _b, c in base_sets]
        else:
            ours = [fused_launch(a, bt, b, c)(a, bt, dims) for a, bt, b, c in ours_sets]
            ours_plain = [plain_launch(c)(a, bt, dims) for a, bt, _b, c in base_sets]
        eager = [(lambda a=a, bt=bt, b=b: torch.relu(a @ bt.t() + b)) for a, bt, b, _c in base_sets]
        # cuBLASLt's fused epilogue allocates its output: timed as PyTorch calls it.
        lt = [(lambda a=a, bt=bt, b=b: torch._addmm_activation(b, a, bt.t(), use_gelu=False)) for a, bt, b, _c in base_sets]

        ours[0]()
        torch.cuda.synchronize()
        a, bt, b, c = ours_sets[0]
        sample = torch.randperm(m, generator=gen, device="cuda")[: min(m, 256)]
        reference = torch.relu(a[sample].double() @ bt.double().t() + b.double())
        error, nan = error_of(torch, c[sample], reference)
        a, bt, b, _c = base_sets[0]
        lt_error, _ = error_of(torch, lt[0]()[sample], torch.relu(a[sample].double() @ bt.double().t() + b.double()))
        ok = nan == 0 and error < 1e-2 and lt_error < 1e-2
        print(f"{name} {m}x{n}x{k}: {sets} sets/side, error {error:.1e} (cuBLASLt {lt_error:.1e}), NaN {nan}: {'ok' if ok else 'FAIL'}")
        extra = {"kernel": name, "m": m, "n": n, "k": k, "error": error, "nan": nan, "correct": ok}
        for name, baseline in (("eager relu(A@B+b)", eager), ("_addmm_activation", lt), ("our plain GEMM", ours_plain)):
            rows.append({"bench": "gemm_bias_relu", **timed(torch, name, ours, baseline, args, extra)})
    return rows


def row_bench(torch, args, folder, bench, source, kernel, sizes, reference_of, baseline_of, params_of):
    rows = []
    for r, n in sizes:
        op = load(torch, args, folder, source, kernel, [f"N={n}"])
        dims = {"R": r}
        sets = sets_for(torch, 2 * 2 * r * n)
        gen = torch.Generator(device="cuda").manual_seed(args.seed)

        def new_set():
            x = (torch.rand((r, n), device="cuda", dtype=torch.float16, generator=gen) * 4 - 2).to(torch.float16)
            gamma = (torch.rand((n,), device="cuda", dtype=torch.float16, generator=gen) + 0.5).to(torch.float16)
            beta = (torch.rand((n,), device="cuda", dtype=torch.float16, generator=gen) - 0.5).to(torch.float16)
            return x, gamma, beta, torch.full((r, n), float("nan"), device="cuda", dtype=torch.float16)

        ours_sets = [new_set() for _ in range(sets)]
        base_sets = [new_set() for _ in range(sets)]
        ours = [op.bind(params_of(*s), dims) for s in ours_sets]
        baseline = [(lambda s=s: baseline_of(*s)) for s in base_sets]
        copy = [(lambda s=s: s[3].copy_(s[0])) for s in base_sets]

        ours[0]()
        torch.cuda.synchronize()
        x, gamma, beta, y = ours_sets[0]
        sample = torch.randperm(r, generator=gen, device="cuda")[: min(r, 512)]
        reference = reference_of(x[sample].double(), gamma.double(), beta.double())
        error, nan = error_of(torch, y[sample], reference)
        got = baseline_of(*base_sets[0])
        torch.cuda.synchronize()
        xb, gb, bb, _ = base_sets[0]
        base_error, _ = error_of(torch, got[sample], reference_of(xb[sample].double(), gb.double(), bb.double()))
        ok = nan == 0 and error < 1e-2 and base_error < 1e-2
        print(f"{bench} {r}x{n}: {sets} sets/side, error {error:.1e} (PyTorch {base_error:.1e}), NaN {nan}: {'ok' if ok else 'FAIL'}")
        extra = {"rows": r, "n": n, "error": error, "nan": nan, "correct": ok, "bytes": 2 * 2 * r * n}
        for name, base in ((f"torch {bench}", baseline), ("copy of the same bytes", copy)):
            rows.append({"bench": bench, **timed(torch, name, ours, base, args, extra)})
        del ours_sets, base_sets, ours, baseline, copy
        torch.cuda.empty_cache()
    return rows


def bench_layernorm(torch, args, folder):
    import torch.nn.functional as F

    def reference(x, gamma, beta):
        mean = x.mean(dim=1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=1, keepdim=True)
        return (x - mean) / torch.sqrt(var + EPS) * gamma + beta

    sizes = LAYERNORM_SIZES if not args.rows else [(args.rows, args.n)]
    return row_bench(
        torch, args, folder, "layernorm", "examples/layernorm.gph", "layernorm", sizes, reference,
        lambda x, g, b, _y: F.layer_norm(x, (x.shape[1],), g, b, EPS),
        lambda x, g, b, y: {"%X": x, "%gamma": g, "%beta": b, "%Y": y},
    )


def bench_softmax(torch, args, folder):
    def reference(x, _gamma, _beta):
        return torch.softmax(x, dim=1)

    sizes = SOFTMAX_SIZES if not args.rows else [(args.rows, args.n)]
    return row_bench(
        torch, args, folder, "softmax", "examples/softmax.gph", "softmax", sizes, reference,
        lambda x, _g, _b, _y: torch.softmax(x, dim=1),
        lambda x, _g, _b, y: {"%X": x, "%Y": y},
    )


def bench_attention(torch, args, folder):
    import torch.nn.functional as F

    rows = []
    shapes = ATTENTION_SHAPES if not args.attention else [args.attention]
    kernels = [("examples/fmha.gph", "fmha")]
    if torch.cuda.get_device_capability() == (9, 0):
        kernels.insert(0, ("examples/fmha_sm90.gph", "fmha_sm90"))
        if args.mask != "padding":
            kernels.insert(0, ("examples/fmha_tma_sm90.gph", "fmha_tma_sm90"))
    if args.kernels:
        kernels = [k for k in kernels if k[1] in args.kernels.split(",")]
    suffix = {"none": "", "causal": "_causal", "padding": "_padded"}[args.mask]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for (b, h, s, d), (source, kernel) in ((shape, k) for shape in shapes for k in kernels):
        kernel += suffix
        # The persistent kernel's blocks: one per SM of this GPU.
        grid = [f"GRID={sms}"] if kernel.startswith("fmha_tma_sm90") else []
        op = load(torch, args, folder, source, kernel, [f"D={d}"] + grid)
        dims = {"S": s, "BH": b * h}
        sets = sets_for(torch, 2 * 4 * b * h * s * d)
        gen = torch.Generator(device="cuda").manual_seed(args.seed)

        # Key padding: one length per batch, the keys past it masked.
        lengths = torch.randint(s // 2, s + 1, (b,), device="cuda", generator=gen)
        keep = torch.arange(s, device="cuda")[None, :] < lengths[:, None]  # [B, S]
        bias = torch.zeros((b, h, s), device="cuda", dtype=torch.float32)
        bias.masked_fill_(~keep[:, None, :], float("-inf"))
        sdpa_mask = keep[:, None, None, :]  # True: attend; broadcast over heads and queries

        def new_set():
            q, k, v = (torch.rand((b, h, s, d), device="cuda", dtype=torch.float16, generator=gen) * 2 - 1 for _ in range(3))
            return q, k, v, torch.full((b, h, s, d), float("nan"), device="cuda", dtype=torch.float16)

        def sdpa_of(q, k, v):
            if args.mask == "causal":
                return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
            if args.mask == "padding":
                return lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=sdpa_mask)
            return lambda: F.scaled_dot_product_attention(q, k, v)

        def bind(q, k, v, o):
            tensors = {"%Q": q, "%K": k, "%V": v, "%O": o}
            if args.mask == "padding":
                tensors["%bias"] = bias
            return op.bind(tensors, dims)

        ours_sets = [new_set() for _ in range(sets)]
        base_sets = [new_set() for _ in range(sets)]
        ours = [bind(*t) for t in ours_sets]
        sdpa = [sdpa_of(q, k, v) for q, k, v, _o in base_sets]

        ours[0]()
        torch.cuda.synchronize()

        def reference(q, k, v):
            # A few heads in f64: softmax(q·kᵀ/√d + mask)·v.
            q, k, v = (t.reshape(b * h, s, d)[:4].double() for t in (q, k, v))
            scores = q @ k.transpose(1, 2) / d**0.5
            if args.mask == "causal":
                later = torch.ones((s, s), device="cuda", dtype=torch.bool).triu(1)
                scores = scores.masked_fill(later, float("-inf"))
            if args.mask == "padding":
                scores = scores + bias.reshape(b * h, 1, s)[:4].double()
            return torch.softmax(scores, dim=2) @ v

        q, k, v, o = ours_sets[0]
        error, nan = error_of(torch, o.reshape(b * h, s, d)[:4], reference(q, k, v))
        q, k, v, _o = base_sets[0]
        base_error, _ = error_of(torch, sdpa[0]().reshape(b * h, s, d)[:4], reference(q, k, v))
        nan = torch.isnan(o).sum().item()
        ok = nan == 0 and error < 1e-2 and base_error < 1e-2
        print(f"{kernel} {b}x{h}x{s}x{d} mask {args.mask}: {sets} sets/side, error {error:.1e} (SDPA {base_error:.1e}), NaN {nan}: {'ok' if ok else 'FAIL'}")
        flops = 4 * b * h * s * s * d // (2 if args.mask == "causal" else 1)
        extra = {"kernel": kernel, "mask": args.mask, "b": b, "h": h, "s": s, "d": d, "flops": flops, "error": error, "nan": nan, "correct": ok}
        row = {"bench": "attention", **timed(torch, "F.scaled_dot_product_attention", ours, sdpa, args, extra)}
        ours_ms = harness.summary(row["ours_ms"])[0]
        base_ms = harness.summary(row["baseline_ms"])[0]
        print(f"  TFLOP/s: ours {flops / ours_ms / 1e9:7.1f}  SDPA {flops / base_ms / 1e9:7.1f}")
        rows.append(row)
        del ours_sets, base_sets, ours, sdpa
        torch.cuda.empty_cache()
    return rows


# (batch, our tile defines): narrow tiles for small batches, the GEMM's for large ones.
MLP_SHAPES = [(128, []), (4096, ["BM=128", "BN=256", "STAGES=4", "SPLIT=1"])]
MLP_LAYERS, MLP_HIDDEN = 20, 1024


def bench_mlp(torch, args, folder):
    """A 20-layer MLP, relu(y·Wᵢᵀ + bᵢ), hidden 1024: ours in one launch
    against a chain of cuBLASLt's fused `torch._addmm_activation` and eager
    PyTorch, both one call per layer."""
    if torch.cuda.get_device_capability() != (9, 0):
        print("mlp: not run (needs compute capability 9.0)")
        return []
    rows = []
    layers, hidden = MLP_LAYERS, MLP_HIDDEN
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    shapes = MLP_SHAPES if not args.batch else [s for s in MLP_SHAPES if s[0] == args.batch] or [(args.batch, [])]
    for batch, defines in shapes:
        op = load(torch, args, folder, "examples/mlp.gph", "mlp", defines + [f"GRID={sms}", f"LAYERS={layers}", f"HIDDEN={hidden}"])
        dims = {"M": batch}
        sets = sets_for(torch, 2 * (layers * hidden * hidden + layers * hidden + 4 * batch * hidden))
        gen = torch.Generator(device="cuda").manual_seed(args.seed)
        scale = (3.0 / hidden) ** 0.5

        def uniform(*shape, s=1.0):
            return ((torch.rand(shape, device="cuda", dtype=torch.float32, generator=gen) * 2 - 1) * s).half()

        def new_set():
            x, w, b = uniform(batch, hidden), uniform(layers, hidden, hidden, s=scale), uniform(layers, hidden)
            y = torch.full((batch, hidden), float("nan"), device="cuda", dtype=torch.float16)
            t = torch.full((2, batch, hidden), float("nan"), device="cuda", dtype=torch.float16)
            return x, w, b, y, t

        ours_sets = [new_set() for _ in range(sets)]
        base_sets = [new_set() for _ in range(sets)]
        ours = [op.bind({"%X": x, "%W": w, "%b": b, "%Y": y, "%T": t}, dims) for x, w, b, y, t in ours_sets]

        def addmm_chain(x, w, b):
            y = x
            for layer in range(layers):
                y = torch._addmm_activation(b[layer], y, w[layer].t())
            return y

        def eager_chain(x, w, b):
            y = x
            for layer in range(layers):
                y = torch.relu(y @ w[layer].t() + b[layer])
            return y

        def reference(x, w, b):
            y = x.double()
            for layer in range(layers):
                y = torch.relu(y @ w[layer].double().t() + b[layer].double()).half().double()
            return y

        ours[0]()
        torch.cuda.synchronize()
        x, w, b, y, _t = ours_sets[0]
        error, nan = error_of(torch, y, reference(x, w, b))
        bx, bw, bb, _y, _t = base_sets[0]
        base_error, _ = error_of(torch, addmm_chain(bx, bw, bb), reference(bx, bw, bb))
        ok = nan == 0 and error < 1e-2 and base_error < 1e-2
        print(f"mlp M={batch} ({' '.join(defines) or 'defaults'}): {sets} sets/side, error {error:.1e} (addmm {base_error:.1e}), NaN {nan}: {'ok' if ok else 'FAIL'}")
        flops = 2 * layers * batch * hidden * hidden
        extra = {"kernel": "mlp", "m": batch, "layers": layers, "hidden": hidden, "flops": flops, "error": error, "nan": nan, "correct": ok}
        for name, chain in (("torch._addmm_activation chain", addmm_chain), ("eager relu(y@W.t()+b) chain", eager_chain)):
            base = [(lambda x=x, w=w, b=b, chain=chain: chain(x, w, b)) for x, w, b, _y, _t in base_sets]
            row = {"bench": "mlp", **timed(torch, name, ours, base, args, extra)}
            rows.append(row)
        ours_ms = harness.summary(rows[-1]["ours_ms"])[0]
        print(f"  TFLOP/s ours {flops / ours_ms / 1e9:7.1f}")
        del ours_sets, base_sets, ours
        torch.cuda.empty_cache()
    return rows


LSTM_BATCHES, LSTM_HIDDEN = [64, 256], 1024


def bench_lstm(torch, args, folder):
    """One LSTM time step, hidden (and input) 1024: the seed's cell
    relu(X·Wxᵀ + H·Whᵀ + b) (examples/lstm_cell.gph) and the standard cell
    with gates i, f, g, o (examples/lstm.gph), each in one launch, against
    PyTorch eager (two GEMMs and the pointwise tail as separate kernels) and,
    for the standard cell, `torch._VF.lstm_cell` (nn.LSTMCell's fused
    pointwise kernel after its GEMMs)."""
    if torch.cuda.get_device_capability() != (9, 0):
        print("lstm: not run (needs compute capability 9.0)")
        return []
    rows = []
    hidden = LSTM_HIDDEN
    batches = LSTM_BATCHES if not args.batch else [args.batch]
    gen = torch.Generator(device="cuda").manual_seed(args.seed)

    def uniform(*shape, dtype=torch.float16):
        return (torch.rand(shape, device="cuda", dtype=torch.float32, generator=gen) * 2 - 1).to(dtype)

    def nan(*shape, dtype=torch.float16):
        return torch.full(shape, float("nan"), device="cuda", dtype=dtype)

    for batch in batches:
        dims = {"B": batch}
        # The seed's cell.
        op = load(torch, args, folder, "examples/lstm_cell.gph", "lstm_cell", [f"HIDDEN={hidden}"])
        sets = sets_for(torch, 2 * (2 * hidden * hidden + 3 * batch * hidden))

        def cell_set():
            return uniform(batch, hidden), uniform(batch, hidden), uniform(hidden, hidden), uniform(hidden, hidden), uniform(hidden), nan(batch, hidden)

        ours_sets = [cell_set() for _ in range(sets)]
        base_sets = [cell_set() for _ in range(sets)]
        ours = [op.bind({"%X": x, "%H": h, "%Wx": wx, "%Wh": wh, "%bias": b, "%Hn": hn}, dims) for x, h, wx, wh, b, hn in ours_sets]

        def cell_eager(x, h, wx, wh, b):
            return torch.relu(x @ wx.t() + h @ wh.t() + b)

        def cell_reference(x, h, wx, wh, b):
            return torch.relu(x.double() @ wx.double().t() + h.double() @ wh.double().t() + b.double())

        ours[0]()
        torch.cuda.synchronize()
        x, h, wx, wh, b, hn = ours_sets[0]
        error, bad = error_of(torch, hn, cell_reference(x, h, wx, wh, b))
        base_error, _ = error_of(torch, cell_eager(*base_sets[0][:5]), cell_reference(*base_sets[0][:5]))
        ok = bad == 0 and error < 1e-2 and base_error < 1e-2
        print(f"lstm_cell B={batch}: {sets} sets/side, error {error:.1e} (eager {base_error:.1e}), NaN {bad}: {'ok' if ok else 'FAIL'}")
        flops = 2 * 2 * batch * hidden * hidden
        extra = {"kernel": "lstm_cell", "b": batch, "hidden": hidden, "flops": flops, "error": error, "nan": bad, "correct": ok}
        base = [(lambda s=s: cell_eager(*s[:5])) for s in base_sets]
        rows.append({"bench": "lstm", **timed(torch, "eager relu(X@Wx.t()+H@Wh.t()+b)", ours, base, args, extra)})
        del ours_sets, base_sets, ours

        # The standard cell.
        op = load(torch, args, folder, "examples/lstm.gph", "lstm", [f"HIDDEN={hidden}"])
        sets = sets_for(torch, 2 * (8 * hidden * hidden + 6 * batch * hidden))

        def lstm_set():
            return (
                uniform(batch, hidden), uniform(batch, hidden), uniform(batch, hidden, dtype=torch.float32),
                uniform(4 * hidden, hidden), uniform(4 * hidden, hidden), uniform(4 * hidden),
                nan(batch, hidden), nan(batch, hidden, dtype=torch.float32),
            )

        ours_sets = [lstm_set() for _ in range(sets)]
        base_sets = [lstm_set() for _ in range(sets)]
        names = ["%X", "%H", "%C", "%Wx", "%Wh", "%bias", "%Hn", "%Cn"]
        ours = [op.bind(dict(zip(names, s)), dims) for s in ours_sets]

        def lstm_eager(x, h, c, wx, wh, b):
            gates = x @ wx.t() + h @ wh.t() + b
            i, f, g, o = gates.float().chunk(4, dim=1)
            c2 = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            return (torch.sigmoid(o) * torch.tanh(c2)).half(), c2

        def lstm_fused(x, h, c, wx, wh, b):
            zero = torch.zeros_like(b)
            return torch._VF.lstm_cell(x, (h, c.half()), wx, wh, b, zero)

        def lstm_reference(x, h, c, wx, wh, b):
            gates = x.double() @ wx.double().t() + h.double() @ wh.double().t() + b.double()
            i, f, g, o = gates.chunk(4, dim=1)
            c2 = torch.sigmoid(f) * c.double() + torch.sigmoid(i) * torch.tanh(g)
            return torch.sigmoid(o) * torch.tanh(c2), c2

        ours[0]()
        torch.cuda.synchronize()
        s = ours_sets[0]
        ref_h, ref_c = lstm_reference(*s[:6])
        error_h, bad_h = error_of(torch, s[6], ref_h)
        error_c, bad_c = error_of(torch, s[7], ref_c)
        base_h, _ = lstm_eager(*base_sets[0][:6])
        base_error, _ = error_of(torch, base_h, lstm_reference(*base_sets[0][:6])[0])
        error, bad = max(error_h, error_c), bad_h + bad_c
        ok = bad == 0 and error < 1e-2 and base_error < 1e-2
        print(f"lstm B={batch}: {sets} sets/side, error H' {error_h:.1e} C' {error_c:.1e} (eager {base_error:.1e}), NaN {bad}: {'ok' if ok else 'FAIL'}")
        flops = 2 * 2 * batch * hidden * 4 * hidden
        extra = {"kernel": "lstm", "b": batch, "hidden": hidden, "flops": flops, "error": error, "nan": bad, "correct": ok}
        for name, cell in (("eager LSTM cell (fp32 tail)", lstm_eager), ("torch._VF.lstm_cell", lstm_fused)):
            base = [(lambda s=s, cell=cell: cell(*s[:6])) for s in base_sets]
            rows.append({"bench": "lstm", **timed(torch, name, ours, base, args, extra)})
        del ours_sets, base_sets, ours
        torch.cuda.empty_cache()
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("benches", nargs="*", default=[], help="gemm, layernorm, softmax, attention, mlp, lstm (default: all)")
    parser.add_argument("--size", type=lambda t: tuple(int(p) for p in t.lower().split("x")), help="MxNxK for gemm")
    parser.add_argument(
        "--pad",
        action="store_true",
        help="gemm: the TMA pair only, each preceded by copies of A and B into padded rows (pad_rows) and built with -D LD=1: any K",
    )
    parser.add_argument("--rows", type=int, help="rows for layernorm/softmax (with --n)")
    parser.add_argument("--n", type=int, default=1024, help="row length for layernorm/softmax (with --rows)")
    parser.add_argument("--kernels", help="attention: only these of our kernels (fmha_tma_sm90,fmha_sm90,fmha)")
    parser.add_argument("--attention", type=lambda t: tuple(int(p) for p in t.lower().split("x")), help="BxHxSxD for attention")
    parser.add_argument("--mask", choices=["none", "causal", "padding"], default="none", help="attention: the mask (default none)")
    parser.add_argument("--batch", type=int, help="mlp, lstm: only this batch")
    harness.add_run_arguments(parser)
    args = parser.parse_args()

    torch, facts = harness.start("fused_vs_torch.py", args)
    print(f"# {facts['gpu']} ({facts['sms']} SMs), CUDA driver API {facts['cuda_driver_api']}, torch {facts['torch']}")
    print(f"# {args.pairs} interleaved pairs of {args.launches} back-to-back launches; ratio = baseline time / ours")
    benches = {
        "gemm": bench_gemm,
        "layernorm": bench_layernorm,
        "softmax": bench_softmax,
        "attention": bench_attention,
        "mlp": bench_mlp,
        "lstm": bench_lstm,
    }
    chosen = args.benches or list(benches)
    unknown = [b for b in chosen if b not in benches]
    if unknown:
        sys.exit(f"fused_vs_torch.py: unknown benchmark {unknown[0]!r} ({', '.join(benches)})")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for bench in chosen:
            rows += benches[bench](torch, args, folder)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": facts, "results": rows}, f, indent=1)
    if not all(row["correct"] for row in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
