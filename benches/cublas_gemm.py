#!/usr/bin/env python3
"""cuBLAS baseline for the GEMM benchmarks, timed the way `ptxgen bench` times.

C = A·B with A M×K and B K×N in fp16 (fp32 accumulation inside cuBLAS), through
PyTorch's `torch.matmul`, which calls cuBLAS. Timing: warm-up launches, then
CUDA events around each launch, median over many repetitions, with several
input sets rotated so the L2 cache does not flatter the result.

    python3 benches/cublas_gemm.py                    # the sizes of docs/performance.md
    python3 benches/cublas_gemm.py 4096x4096x4096     # M x N x K
    python3 benches/cublas_gemm.py --json out.json    # machine-readable results

With `--ours FILE.json` (the output of `ptxgen bench --json`), prints both and
the ratio ours/cuBLAS per size. With `--isolate`, each size is timed in a
process of its own, as `ptxgen bench` times each: in one process, sizes timed
right after 8192³ ran up to 17 % slower than alone (H200, 2026-11), which
freeing PyTorch's cached memory between sizes did not change.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

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


def time_cublas(torch, m, n, k, reps, dtype_out):
    """Median, min and max milliseconds of one C = A·B launch."""
    # Enough input sets that together they exceed the L2 (50-60 MB on H100/H200).
    bytes_per_set = 2 * (m * k + k * n)
    sets = max(2, min(8, (256 << 20) // max(bytes_per_set, 1)))
    gen = torch.Generator(device="cuda").manual_seed(1234)
    inputs = [
        (
            torch.rand((m, k), device="cuda", dtype=torch.float16, generator=gen) * 2 - 1,
            # B is stored K-contiguous (the `row.col` form), like our kernels' B.
            (torch.rand((n, k), device="cuda", dtype=torch.float16, generator=gen) * 2 - 1).t(),
        )
        for _ in range(sets)
    ]
    out = torch.empty((m, n), device="cuda", dtype=dtype_out)
    for i in range(10):
        a, b = inputs[i % sets]
        torch.matmul(a, b, out=out)
    torch.cuda.synchronize()
    times = []
    for i in range(reps):
        a, b = inputs[i % sets]
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        torch.matmul(a, b, out=out)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times), min(times), max(times)


def time_in_own_process(m, n, k, reps):
    """`time_cublas` for one size, run by a fresh interpreter."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "row.json")
        command = [sys.executable, os.path.abspath(__file__), f"{m}x{n}x{k}", "--reps", str(reps), "--json", path]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        with open(path) as f:
            row = json.load(f)["results"][0]
    return row["median_ms"], row["min_ms"], row["max_ms"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sizes", nargs="*", type=parse_size, help="MxNxK (default: the standard list)")
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--json", help="write results to this file")
    parser.add_argument("--ours", help="JSON from `ptxgen bench --json` to compare with")
    parser.add_argument("--isolate", action="store_true", help="time each size in a process of its own")
    args = parser.parse_args()

    try:
        import torch
    except ImportError:
        sys.exit("cublas_gemm.py: PyTorch is not installed")
    if not torch.cuda.is_available():
        sys.exit("cublas_gemm.py: no CUDA device visible to PyTorch")

    ours = {}
    if args.ours:
        with open(args.ours) as f:
            for row in json.load(f):
                ours[(row["m"], row["n"], row["k"])] = row

    device = torch.cuda.get_device_name()
    print(f"# device: {device}, torch {torch.__version__}, cuBLAS via torch.matmul (fp16 in, fp16 out)")
    header = f"{'M':>6} {'N':>6} {'K':>6} {'cuBLAS ms':>10} {'TFLOP/s':>8}"
    if ours:
        header += f" {'ours ms':>9} {'TFLOP/s':>8} {'ratio':>6}"
    print(header)
    results = []
    for m, n, k in args.sizes or SIZES:
        if args.isolate:
            median, lo, hi = time_in_own_process(m, n, k, args.reps)
        else:
            median, lo, hi = time_cublas(torch, m, n, k, args.reps, torch.float16)
        tflops = 2 * m * n * k / (median * 1e-3) / 1e12
        row = {"m": m, "n": n, "k": k, "median_ms": median, "min_ms": lo, "max_ms": hi, "tflops": tflops}
        line = f"{m:>6} {n:>6} {k:>6} {median:>10.4f} {tflops:>8.1f}"
        mine = ours.get((m, n, k))
        if mine:
            line += f" {mine['median_ms']:>9.4f} {mine['tflops']:>8.1f} {mine['tflops'] / tflops:>6.2f}"
            row["ours"] = mine
        print(line)
        results.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
