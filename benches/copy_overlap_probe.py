#!/usr/bin/env python3
"""What a copy running during the TMA GEMM costs the multiply: a probe.

Why it exists: 4095³ (odd K) reaches 0.9 of our 4096³ only if copying A
and B into aligned rows overlaps the multiply instead of preceding it
(docs/performance.md, "Any shape": padding first ends at 0.80, the copy
already at the device's copy rate). The design that overlaps it gives the
copying to the producer warpgroup's idle warps. Before building it (flags
between blocks, a persistent grid), this measures the one thing it rests
on: how much slower the multiply runs while those warps move that much
data.

The probe kernel is `gemm_f16_tma_sm90` (examples/gemm_f16_tma_sm90.gph,
its first kernel, the file's defaults) with four more fp16 tensors, RA
and RB (M×K and N×K, random) and SA and SB (their copies), and one more
statement: warps 1–3 of the producer warpgroup (warp 0's lane 0 issues the
bulk copies) copy `3·ROWS` rows of RA and of RB per block into SA and SB,
8 elements per lane and load, while the consumers multiply. At 4096³ the
512 blocks copy 1536·ROWS rows of each, `ROWS = 2`: 3072 rows, 101 MB
read and written. It is generated from the example's text, compiled by
ptxgen, checked (the copies exact, C against an f64 product of 64 rows),
and timed against the unchanged kernel, interleaved (benches/harness.py).

    python3 benches/copy_overlap_probe.py            # ROWS = 0 (nothing copied), 1, 2
    python3 benches/copy_overlap_probe.py 2 --swap   # the plain kernel timed first in each pair
    python3 benches/copy_overlap_probe.py --odd 132 264 512

With `--odd BLOCKS…` it measures the overlapped design's real copy
instead: the first BLOCKS blocks (one per SM: the first wave) pad the A
and B of a 4095³ problem (odd rows, 2-byte aligned, copied by masked
8-element moves) into rows 4096 elements apart while the 4096³ multiply
runs (odd_probe_source).

Needs PyTorch, an sm_90 GPU and a built ptxgen (`--ptxgen`).
"""

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

EXAMPLE = "examples/gemm_f16_tma_sm90.gph"
M = N = K = 4096

# The row of RA / RB (and SA / SB) that warp w (1..3) of block (bm, bn)
# copies in its turn r: blocks take 3·ROWS consecutive rows each.
ROW = "(@bm * ceil_div(N, BN) + @bn) * (3 * COPY_ROWS) + 3 * r + (@t / 32 + 3) % 4"


def piece(tensor):
    """Lane l's 8 elements of 256-element piece j of the warp's row."""
    return f"%{tensor}.tile_partial([1, 256])[{ROW}, j][0, _].tile([8])[@t % 32]"


def spliced(example_text, declarations, copies, constant):
    """The example's first kernel, renamed, with more `GL` tensors declared
    after C and a copying statement at the top of the producer's branch,
    preceded by one more constant (the probe's knob)."""
    start = example_text.index("kernel gemm_f16_tma_sm90 (")
    end = example_text.index("// The same kernel over a strided batch")
    constants = example_text[example_text.index("const BM") : start]
    kernel = example_text[start:end].replace("kernel gemm_f16_tma_sm90 (", "kernel copy_overlap_probe (")
    declared = "    %C:[M, N : N, 1].select(OUT_16 == 1, fp16, fp32).GL\n"
    producer = "            setmaxnreg(PRODUCER_REGISTERS)\n"
    if declared not in example_text or producer not in kernel:
        sys.exit(f"copy_overlap_probe.py: {EXAMPLE} no longer has the lines this probe extends")
    kernel = kernel.replace(declared, declared + declarations).replace(producer, producer + copies, 1)
    return f"const {constant}\n" + constants + kernel


def probe_source(example_text):
    """The example's first kernel with the copying statement."""
    copies = (
        "            if (@t >= 32) {\n"
        "                for (r = 0; r < COPY_ROWS; r += 1) {\n"
        "                    for (j = 0; j < ceil_div(K, 256); j += 1) {\n"
        "                        %va:[8].fp16.RF\n"
        f"                        %va <- Move<masked><<<#one, #me>>>({piece('RA')})\n"
        f"                        {piece('SA')} <- Move<masked><<<#one, #me>>>(%va)\n"
        "                        %vb:[8].fp16.RF\n"
        f"                        %vb <- Move<masked><<<#one, #me>>>({piece('RB')})\n"
        f"                        {piece('SB')} <- Move<masked><<<#one, #me>>>(%vb)\n"
        "                    }\n"
        "                }\n"
        "            }\n"
    )
    declarations = (
        "    %SA:[M, K : K, 1].fp16.GL\n    %SB:[N, K : K, 1].fp16.GL\n"
        "    %RA:[M, K : K, 1].fp16.GL\n    %RB:[N, K : K, 1].fp16.GL\n"
    )
    return spliced(example_text, declarations, copies, "COPY_ROWS = 0")


def odd_probe_source(example_text):
    """The example's first kernel with the first-wave padding copy (`--odd`).

    Warps 1–3 of the producer warpgroup of the first COPY_BLOCKS blocks
    (in launch order, bn·ceil_div(M, BM) + bm) copy the R×KC packed rows of
    PA and PB (KC odd: rows 2-byte aligned) into rows LDP elements apart
    in QA and QB, one row per warp in turn, 8 elements per lane and
    load: what the overlapped padding of a 4095³ problem moves, in the
    blocks that start first."""
    block = "(@bn * ceil_div(M, BM) + @bm)"  # the launch order: bm varies fastest
    row = f"({block} * 3 + (@cw + 3) % 4 + 3 * COPY_BLOCKS * i)"

    def lane_piece(tensor, r):
        return f"%{tensor}.tile_partial([1, 256])[{r}, j][0, _].tile([8])[@cl]"

    def move(source, target, register):
        """One lane's 8 elements of a row piece, through a register."""
        return (
            f"%{register}:[8].fp16.RF\n"
            f"%{register} <- Move<masked><<<#one, #me>>>({lane_piece(*source)})\n"
            f"{lane_piece(*target)} <- Move<masked><<<#one, #me>>>(%{register})\n"
        )

    # Warps 9, 10, 11 of the block (1–3 of the producer warpgroup) copy;
    # `(@cw + 3) % 4` numbers them 0, 1, 2 (and the bulk-copy warp 3).
    copies = (
        "            @cw, @cl = #warps.indices()\n"
        f"            if ((@cw + 3) % 4 < 3 && {block} < COPY_BLOCKS) {{\n"
        "                for (i = 0; i < ceil_div(2 * R, 3 * COPY_BLOCKS); i += 1) {\n"
        f"                    if ({row} < R) {{\n"
        "                        for (j = 0; j < ceil_div(KC, 256); j += 1) {\n"
        f"{move(('PA', row), ('QA', row), 'va')}"
        "                        }\n"
        "                    } else {\n"
        f"                        if ({row} < 2 * R) {{\n"
        "                            for (j = 0; j < ceil_div(KC, 256); j += 1) {\n"
        f"{move(('PB', row + ' - R'), ('QB', row + ' - R'), 'vb')}"
        "                            }\n"
        "                        }\n"
        "                    }\n"
        "                }\n"
        "            }\n"
    )
    declarations = (
        "    %PA:[R, KC : KC, 1].fp16.GL\n    %PB:[R, KC : KC, 1].fp16.GL\n"
        "    %QA:[R, KC : LDP, 1].fp16.GL\n    %QB:[R, KC : LDP, 1].fp16.GL\n"
    )
    return spliced(example_text, declarations, copies, "COPY_BLOCKS = 132")


def build(ptxgen, source, kernel, defines, folder, torch):
    ptx, manifest = os.path.join(folder, kernel + ".ptx"), os.path.join(folder, kernel + ".json")
    flags = [arg for define in defines for arg in ("--define", define)] + ["--kernel", kernel]
    for emit, out in (("ptx", ptx), ("manifest", manifest)):
        subprocess.run([ptxgen, source, "--emit", emit, "-o", out, *flags], check=True)
    return harness.Kernel(torch, ptx, manifest, kernel)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", nargs="*", type=int, default=[0, 1, 2], help="ROWS per warp and block (default 0 1 2; at most 2 at 4096³)")
    parser.add_argument("--odd", type=int, nargs="*", metavar="BLOCKS", help="instead: the first BLOCKS blocks (default: one per SM) pad a 4095³ problem's A and B")
    parser.add_argument("--swap", action="store_true", help="time the plain kernel first in each pair")
    parser.add_argument("--ptxgen", default="target/release/ptxgen")
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    torch, facts = harness.start("copy_overlap_probe.py", args)
    print(f"# {facts['gpu']} ({facts['sms']} SMs), CUDA driver API {facts['cuda_driver_api']}, torch {facts['torch']}")
    dims = {"M": M, "N": N, "K": K}

    def rand(rows, columns):
        return torch.rand((rows, columns), device="cuda", dtype=torch.float16) * 2 - 1

    def empty(rows, columns):
        return torch.empty((rows, columns), device="cuda", dtype=torch.float16)

    if args.odd is not None:
        return odd_main(args, torch, facts, rand, empty, dims)

    with tempfile.TemporaryDirectory() as folder:
        source = os.path.join(folder, "probe.gph")
        with open(EXAMPLE) as f:
            text = probe_source(f.read())
        with open(source, "w") as f:
            f.write(text)
        plain = build(args.ptxgen, EXAMPLE, "gemm_f16_tma_sm90", [], folder, torch)
        for rows in args.rows:
            sub = os.path.join(folder, f"rows{rows}")
            os.makedirs(sub)
            probe = build(args.ptxgen, source, "copy_overlap_probe", [f"COPY_ROWS={rows}"], sub, torch)
            copied = min(M, 512 * 3 * rows)
            plain_sets, probe_sets, exact, error = [], [], True, 0.0
            for _ in range(3):
                plain_sets.append(plain.bind({"%A": rand(M, K), "%B": rand(N, K), "%C": empty(M, N)}, dims))
                a, b, c = rand(M, K), rand(N, K), empty(M, N)
                ra, rb, sa, sb = rand(M, K), rand(N, K), empty(M, K), empty(N, K)
                launch = probe.bind({"%A": a, "%B": b, "%C": c, "%RA": ra, "%RB": rb, "%SA": sa, "%SB": sb}, dims)
                launch()
                torch.cuda.synchronize()
                exact = exact and torch.equal(sa[:copied], ra[:copied]) and torch.equal(sb[:copied], rb[:copied])
                reference = a[:64].double() @ b.double().t()
                error = max(error, ((c[:64].double() - reference).norm() / reference.norm()).item())
                probe_sets.append(launch)
            if args.swap:
                timing = harness.compare(torch, plain_sets, probe_sets, pairs=args.pairs, graphs=False)
                plain_ms, probe_ms = timing["ours_ms"], timing["baseline_ms"]
            else:
                timing = harness.compare(torch, probe_sets, plain_sets, pairs=args.pairs, graphs=False)
                probe_ms, plain_ms = timing["ours_ms"], timing["baseline_ms"]
            flops = 2.0 * M * N * K
            probe_rate = flops / harness.summary(probe_ms)[0] / 1e9
            plain_rate = flops / harness.summary(plain_ms)[0] / 1e9
            moved = 4 * copied * K * 2 / 1e6
            print(
                f"ROWS={rows}: {copied} rows of each copied ({moved:.0f} MB moved): "
                f"{probe_rate:.1f} TFLOP/s against {plain_rate:.1f} plain, ratio {probe_rate / plain_rate:.3f}; "
                f"copies {'exact' if exact else 'WRONG'}, C relative error {error:.1e}",
                flush=True,
            )
            if not exact or error > 1e-2:
                sys.exit(1)


def odd_main(args, torch, facts, rand, empty, dims):
    """`--odd`: the first-wave padding copy of a 4095³ problem (odd_probe_source)."""
    rows = 4095
    with tempfile.TemporaryDirectory() as folder:
        source = os.path.join(folder, "probe.gph")
        with open(EXAMPLE) as f:
            text = odd_probe_source(f.read())
        with open(source, "w") as f:
            f.write(text)
        plain = build(args.ptxgen, EXAMPLE, "gemm_f16_tma_sm90", [], folder, torch)
        for blocks in args.odd or [facts["sms"]]:
            if blocks < 1:
                sys.exit("copy_overlap_probe.py: --odd takes block counts of at least 1")
            sub = os.path.join(folder, f"blocks{blocks}")
            os.makedirs(sub)
            probe = build(args.ptxgen, source, "copy_overlap_probe", [f"COPY_BLOCKS={blocks}"], sub, torch)
            probe_dims = dict(dims, R=rows, KC=rows, LDP=4096)
            plain_sets, probe_sets, exact, error = [], [], True, 0.0
            for _ in range(3):
                plain_sets.append(plain.bind({"%A": rand(M, K), "%B": rand(N, K), "%C": empty(M, N)}, dims))
                a, b, c = rand(M, K), rand(N, K), empty(M, N)
                pa, pb = rand(rows, rows), rand(rows, rows)
                qa, qb = torch.full((rows, 4096), float("nan"), device="cuda", dtype=torch.float16), empty(rows, 4096)
                qb.fill_(float("nan"))
                tensors = {"%A": a, "%B": b, "%C": c, "%PA": pa, "%PB": pb, "%QA": qa, "%QB": qb}
                launch = probe.bind(tensors, probe_dims)
                launch()
                torch.cuda.synchronize()
                exact = exact and torch.equal(qa[:, :rows], pa) and torch.equal(qb[:, :rows], pb)
                reference = a[:64].double() @ b.double().t()
                error = max(error, ((c[:64].double() - reference).norm() / reference.norm()).item())
                probe_sets.append(launch)
            timing = harness.compare(torch, probe_sets, plain_sets, pairs=args.pairs, graphs=False)
            probe_ms, plain_ms = timing["ours_ms"], timing["baseline_ms"]
            flops = 2.0 * M * N * K
            probe_rate = flops / harness.summary(probe_ms)[0] / 1e9
            plain_rate = flops / harness.summary(plain_ms)[0] / 1e9
            print(
                f"first {blocks} blocks pad 2 x {rows}x{rows} (134 MB moved): "
                f"{probe_rate:.1f} TFLOP/s against {plain_rate:.1f} plain, ratio {probe_rate / plain_rate:.3f} "
                f"(each pair: {', '.join(f'{p / q:.3f}' for p, q in zip(plain_ms, probe_ms))}); "
                f"copies {'exact' if exact else 'WRONG'}, C relative error {error:.1e}",
                flush=True,
            )
            if not exact or error > 1e-2:
                sys.exit(1)


if __name__ == "__main__":
    main()
