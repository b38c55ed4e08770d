#!/usr/bin/env python3
"""Our GEMM against cuBLAS (PyTorch's `torch.matmul`), timed by benches/harness.py.

C = A·B with A M×K row-major, B stored N×K (K contiguous: the `row.col` form
our kernels read) and C M×N row-major, fp16 in and fp16 out on both sides
(fp32 accumulation inside). The kernel defaults to `gemm_f16_sm90_f16out`
(examples/gemm_f16_sm90.gph); any kernel with parameters %A, %B, %C of those
layouts works (`--file examples/gemm_f16.gph --kernel gemm_f16_f16out`).

    cargo build --release --features cuda     # only `ptxgen build` is used: any build works
    python3 benches/gemm_vs_cublas.py                         # the sizes of docs/performance.md
    python3 benches/gemm_vs_cublas.py 4096x4096x4096 -D STAGES=4
    python3 benches/gemm_vs_cublas.py --json out.json
    python3 benches/gemm_vs_cublas.py --batch 32 512x512x64 --kernel gemm_f16_sm90_batched

With `--layout rr` (or `cr`, `cc`; the default `rc` is A row-major, B
column-major), A is stored row- (r) or column-major (c), and so is B: the
kernel must read that layout (`--file examples/gemm_f16.gph --kernel
gemm_f16_rr`); cuBLAS gets the same storage as transposed views.

With `--pad` (layout rc, fp16, no batch), our side is three launches: A
and B are copied by examples/pad_rows.gph into buffers whose rows are
padded to a multiple of 8 elements, and the kernel, built with `-D LD=1`
(`--kernel gemm_f16_tma_sm90 --file examples/gemm_f16_tma_sm90.gph -D
LD=1`), multiplies the padded copies: how an odd K (4095) is multiplied
with whole tensor-map boxes. The time is all three; the copies' own time is
reported beside it, and beside that PyTorch's for the same bytes copied
whole (`copy_` into tensors of A's and B's own shapes): the device's rate.

With `--dtype bf16`, A, B and C are bfloat16 on both sides
(`--kernel gemm_bf16_sm90`). With `--batch L`, A, B and C are L matrices each, stored one after another
(a strided batched GEMM: our kernel's `%A:[M, K, L : K, 1, M*K]`), against
`torch.bmm`.

For each size: both outputs are checked against an f64 product of sampled
rows (and ours for unwritten elements), then the two sides are timed
interleaved in this process (harness.compare), back to back and from CUDA
graphs. TFLOP/s = 2·M·N·K / median time.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

SIZES = [
    (1024, 1024, 1024),
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (5120, 5120, 2048),
    (5376, 5376, 2048),
]


def parse_size(text):
    parts = text.lower().split("x")
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"expected MxNxK, got {text!r}")
    return tuple(int(p) for p in parts)


def build(ptxgen, source, defines, kernel, folder):
    """PTX and manifest of `kernel` of `source`, from `ptxgen build` (only that
    kernel: another variant of the file may not take the defines)."""
    ptx, manifest = os.path.join(folder, "kernel.ptx"), os.path.join(folder, "kernel.json")
    flags = [arg for define in defines for arg in ("--define", define)] + ["--kernel", kernel]
    for emit, out in (("ptx", ptx), ("manifest", manifest)):
        subprocess.run([ptxgen, source, "--emit", emit, "-o", out, *flags], check=True)
    return ptx, manifest


def relative_error(torch, out, a, b, rows):
    """‖out − A·B‖ / ‖A·B‖ over the sampled rows (of every matrix of a batch), in f64."""
    reference = a[..., rows, :].double() @ b.double()
    got = out[..., rows, :].double()
    return (torch.linalg.norm(got - reference) / torch.linalg.norm(reference)).item()


def padded_launches(kernel, pad, sets, dims):
    """Our side with `--pad`: per input set, A and B copied into rows padded
    to a multiple of 8 elements, then the kernel (`LD = 1`) on the copies.
    Returns (whole launches, the copies' launches alone)."""
    whole, copies = [], []
    for _, _, c, sa, sb in sets:
        both, padded_dims, ap, bp = harness.padded_operands(pad, sa, sb, dims)
        gemm = kernel.bind({"%A": ap, "%B": bp, "%C": c}, padded_dims)

        def all_three(both=both, gemm=gemm):
            both()
            gemm()

        whole.append(all_three)
        copies.append(both)
    return whole, copies


def one_size(torch, kernel, m, n, k, args, pad=None):
    batch = args.batch
    dims = {"M": m, "N": n, "K": k}
    if batch:
        dims["L"] = batch
    lead = (batch,) if batch else ()
    set_bytes = 2 * (m * k + n * k + m * n) * (batch or 1)
    free, _total = torch.cuda.mem_get_info()
    sets = harness.rotation_sets(set_bytes, free // 2)
    gen = torch.Generator(device="cuda").manual_seed(args.seed)

    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[args.dtype]

    def operand(rows, cols, row_major):
        """A rows×cols matrix (or batch of them) stored row- or column-major:
        (the logical view, the storage our kernel reads)."""
        shape = (*lead, rows, cols) if row_major else (*lead, cols, rows)
        stored = torch.rand(shape, device="cuda", dtype=dtype, generator=gen) * 2 - 1
        return (stored if row_major else stored.transpose(-1, -2)), stored

    def new_set():
        a, a_stored = operand(m, k, args.layout[0] == "r")
        b, b_stored = operand(k, n, args.layout[1] == "r")
        c = torch.full((*lead, m, n), float("nan"), device="cuda", dtype=dtype)
        return a, b, c, a_stored, b_stored

    ours_sets = [new_set() for _ in range(sets)]
    base_sets = [new_set() for _ in range(sets)]
    if pad:
        ours, copies = padded_launches(kernel, pad, ours_sets, dims)
    else:
        ours = [kernel.bind({"%A": sa, "%B": sb, "%C": c}, dims) for _, _, c, sa, sb in ours_sets]
    if batch:
        baseline = [(lambda a=a, b=b, c=c: torch.bmm(a, b, out=c)) for a, b, c, _, _ in base_sets]
    else:
        baseline = [(lambda a=a, b=b, c=c: torch.matmul(a, b, out=c)) for a, b, c, _, _ in base_sets]

    # Correctness of both sides on their first set, before any timing.
    ours[0]()
    baseline[0]()
    torch.cuda.synchronize()
    rows = torch.randperm(m, generator=gen, device="cuda")[: min(m, 256)]
    a, b, c, _, _ = ours_sets[0]
    unwritten = torch.isnan(c).sum().item()
    ours_error = relative_error(torch, c, a, b, rows)
    a, b, c, _, _ = base_sets[0]
    base_error = relative_error(torch, c, a, b, rows)
    ok = unwritten == 0 and ours_error < 1e-2 and base_error < 1e-2

    timing = harness.compare(torch, ours, baseline, pairs=args.pairs, launches=args.launches, warmup=args.warmup)
    if pad:
        cycle = [copies[i % len(copies)] for i in range(args.launches)]
        timing["copies_ms"] = [harness.time_back_to_back(torch, cycle, args.warmup) for _ in range(args.pairs)]
        # The device's own rate for the same bytes: PyTorch copying A and B
        # whole into buffers of their shape (contiguous, nothing realigned).
        plain = []
        for _, _, _, sa, sb in ours_sets:
            da, db = torch.empty_like(sa), torch.empty_like(sb)

            def both(sa=sa, sb=sb, da=da, db=db):
                da.copy_(sa)
                db.copy_(sb)

            plain.append(both)
        cycle = [plain[i % len(plain)] for i in range(args.launches)]
        timing["torch_copies_ms"] = [harness.time_back_to_back(torch, cycle, args.warmup) for _ in range(args.pairs)]
    flops = 2.0 * m * n * k * (batch or 1)
    row = {
        "m": m,
        "n": n,
        "k": k,
        "batch": batch or 1,
        "sets_per_side": sets,
        "ours_relative_error": ours_error,
        "cublas_relative_error": base_error,
        "ours_unwritten": unwritten,
        "correct": ok,
        **timing,
    }
    for key in ("ours_ms", "baseline_ms", "graph_ours_ms", "graph_baseline_ms"):
        if key in timing:
            row[key.replace("_ms", "_tflops")] = flops / (harness.summary(timing[key])[0] * 1e-3) / 1e12
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sizes", nargs="*", type=parse_size, help="MxNxK (default: the standard list)")
    parser.add_argument("--file", default="examples/gemm_f16_sm90.gph")
    parser.add_argument("--kernel", default="gemm_f16_sm90_f16out")
    parser.add_argument("--batch", type=int, default=0, help="L: a strided batch of L problems (torch.bmm)")
    parser.add_argument("--pad", action="store_true", help="ours: A and B copied into padded rows (pad_rows.gph), then the kernel with -D LD=1")
    parser.add_argument("--pad-file", default="examples/pad_rows.gph", help="with --pad: the copy's source file")
    parser.add_argument("--pad-kernel", default="pad_rows", help="with --pad: the copy kernel")
    parser.add_argument("--pad-define", action="append", default=[], metavar="NAME=VALUE", help="with --pad: passed to ptxgen for the copy")
    parser.add_argument("--dtype", choices=["fp16", "bf16"], default="fp16", help="element type of A, B and C on both sides")
    parser.add_argument(
        "--layout", choices=["rc", "rr", "cr", "cc"], default="rc", help="A and B each row- (r) or column-major (c); default rc"
    )
    harness.add_run_arguments(parser)
    args = parser.parse_args()

    torch, facts = harness.start("gemm_vs_cublas.py", args)
    with tempfile.TemporaryDirectory() as folder:
        ptx, manifest = build(args.ptxgen, args.file, args.define, args.kernel, folder)
        kernel = harness.Kernel(torch, ptx, manifest, args.kernel)
        pad = None
        if args.pad:
            if args.layout != "rc" or args.dtype != "fp16" or args.batch:
                sys.exit("--pad takes layout rc, fp16 and no batch")
            pad_folder = os.path.join(folder, "pad")
            os.makedirs(pad_folder)
            pad_ptx, pad_manifest = build(args.ptxgen, args.pad_file, args.pad_define, args.pad_kernel, pad_folder)
            pad = harness.Kernel(torch, pad_ptx, pad_manifest, args.pad_kernel)
            print(
                f"# ours: A and B copied into padded rows by {args.pad_kernel} ({args.pad_file}"
                f"{''.join(' -D ' + d for d in args.pad_define)}), then the kernel; all three timed"
            )
        print(f"# {facts['gpu']} ({facts['sms']} SMs), CUDA driver API {facts['cuda_driver_api']}, torch {facts['torch']}")
        print(f"# ours: {args.kernel} from {args.file} {' '.join('-D ' + d for d in args.define)}")
        if args.layout != "rc":
            print(f"# A {'row' if args.layout[0] == 'r' else 'column'}-major, B {'row' if args.layout[1] == 'r' else 'column'}-major on both sides")
        if args.dtype != "fp16":
            print(f"# A, B and C in {args.dtype} on both sides")
        if args.batch:
            print(f"# a batch of {args.batch} problems of each size (ours strided batched, torch.bmm)")
        print(f"# {args.pairs} interleaved pairs of {args.launches} back-to-back launches; ratio = cuBLAS time / ours")
        print(
            f"{'M':>6} {'N':>6} {'K':>6} {'ours TF/s':>9} {'cuBLAS':>8} {'ratio':>6} {'(lo-hi)':>13}"
            f" {'graph ours':>10} {'cuBLAS':>8} {'ratio':>6}  check"
        )
        rows = []
        for m, n, k in args.sizes or SIZES:
            row = one_size(torch, kernel, m, n, k, args, pad)
            ratio, lo, hi, _ = harness.summary(row["ratio"])
            graph_ratio = harness.summary(row["graph_ratio"])[0]
            check = "ok" if row["correct"] else "FAIL"
            print(
                f"{m:>6} {n:>6} {k:>6} {row['ours_tflops']:>9.1f} {row['baseline_tflops']:>8.1f} {ratio:>6.3f}"
                f" {f'({lo:.3f}-{hi:.3f})':>13} {row['graph_ours_tflops']:>10.1f} {row['graph_baseline_tflops']:>8.1f}"
                f" {graph_ratio:>6.3f}  {check} (err {row['ours_relative_error']:.1e} / {row['cublas_relative_error']:.1e},"
                f" unwritten {row['ours_unwritten']})"
                + (
                    f" copies {harness.summary(row['copies_ms'])[0] * 1e3:.1f} us"
                    f" (torch, contiguous: {harness.summary(row['torch_copies_ms'])[0] * 1e3:.1f} us)"
                    if pad
                    else ""
                ),
                flush=True,
            )
            rows.append(row)
            torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": facts, "kernel": args.kernel, "file": args.file, "defines": args.define, "layout": args.layout, "results": rows}, f, indent=1)
    if not all(row["correct"] for row in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
