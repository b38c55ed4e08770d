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
    python3 benches/copy_overlap_probe.py --odd 132 264 512 --unroll 1 2 [--aligned]
    python3 benches/copy_overlap_probe.py --staged 0 1 --blocks 132 264 512 [--box-rows 16 32 64 --fp32-out]
    python3 benches/copy_overlap_probe.py --async 2 4 --blocks 132 264 512 --fp32-out

With `--odd BLOCKS…` it measures the overlapped design's real copy
instead: the first BLOCKS blocks (one per SM: the first wave) pad the A
and B of a 4095³ problem (odd rows, 2-byte aligned, copied by masked
8-element moves) into rows 4096 elements apart while the 4096³ multiply
runs (odd_probe_source). With `--staged SKEW…` the same bytes move through
bulk tensor copies into shared stages instead, no register holding them
in flight (staged_probe_source).

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


# The example's last shared declaration: the probes' own buffers follow it.
BARRIERS = "        %empty:[STAGES].mbarrier.SH\n"


def after_line(text, line, addition):
    """`text` with `addition` after its first `line`."""
    if line not in text:
        sys.exit(f"copy_overlap_probe.py: {EXAMPLE} no longer has the lines this probe extends")
    return text.replace(line, line + addition, 1)


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


def odd_probe_source(example_text, aligned=False):
    """The example's first kernel with the first-wave padding copy (`--odd`).

    Warps 1–3 of the producer warpgroup of the first COPY_BLOCKS blocks
    (in launch order, bn·ceil_div(M, BM) + bm) copy the 2R×KC packed rows
    of PAB (A's rows, then B's; KC odd: rows 2-byte aligned) into rows LDP
    elements apart in QAB, 8 elements per lane and move: what the
    overlapped padding of a 4095³ problem moves, in the blocks that start
    first. Each warp takes UNROLL rows at once, loading all of them before
    storing any, so that as many loads are in flight."""
    block = "(@bn * ceil_div(M, BM) + @bm)"  # the launch order: bm varies fastest
    row = f"({block} * 3 + (@cw + 3) % 4 + 3 * COPY_BLOCKS * (i * UNROLL + u))"
    piece = f"tile_partial([1, 256])[{row}, j][0, _].tile([8])[@cl]"

    # Warps 9, 10, 11 of the block (1–3 of the producer warpgroup) copy;
    # `(@cw + 3) % 4` numbers them 0, 1, 2 (and the bulk-copy warp 3).
    copies = (
        "            @cw, @cl = #warps.indices()\n"
        f"            if ((@cw + 3) % 4 < 3 && {block} < COPY_BLOCKS) {{\n"
        "                for (i = 0; i < ceil_div(2 * R, 3 * COPY_BLOCKS * UNROLL); i += 1) {\n"
        "                    for (j = 0; j < ceil_div(KC, 256); j += 1) {\n"
        "                        %v:[UNROLL, 8 : 8, 1].fp16.RF\n"
        "                        for (u = 0; u < UNROLL; u += 1) {\n"
        f"                            if ({row} < 2 * R) {{\n"
        f"                                %v[u, _] <- Move<masked><<<#one, #me>>>(%PAB.{piece})\n"
        "                            }\n"
        "                        }\n"
        "                        for (u = 0; u < UNROLL; u += 1) {\n"
        f"                            if ({row} < 2 * R) {{\n"
        f"                                %QAB.{piece} <- Move<masked><<<#one, #me>>>(%v[u, _])\n"
        "                            }\n"
        "                        }\n"
        "                    }\n"
        "                }\n"
        "            }\n"
    )
    declarations = "    %PAB:[2 * R, KC : KC, 1].fp16.GL\n    %QAB:[2 * R, KC : LDP, 1].fp16.GL\n"
    if aligned:
        # Rows a multiple of 16 bytes: each lane's 8 elements one 16-byte load.
        declarations += "    require KC % 8 == 0\n    require LDP % 8 == 0\n"
    return spliced(example_text, declarations, copies, "COPY_BLOCKS = 132\nconst UNROLL = 4")


def staged_probe_source(example_text, skew, box_rows=16):
    """The example's first kernel with a register-free first-wave copy
    (`--staged`): warps 1–3 of the producer warpgroup of the first
    COPY_BLOCKS blocks each keep a ring of two shared stages; lane 0 fills
    a stage with one bulk tensor copy of a BOX×72 box of PA or PB (the box a
    k-slice of an odd-K operand needs from a map whose boxes start
    16-byte aligned: 64 columns and up to 7 of skew before them, rows 8
    apart there, BOX apart here), and the lanes copy its BOX×64 elements
    from column `skew` on into QA or QB with 16-byte stores, BOX / 4 chunks
    per lane, then arrive at the stage's `empty` barrier. Skew 0 reads each
    chunk with one 16-byte load (what a realigned copy costs at best),
    skew 1 with eight 2-byte loads (at worst). The sources are aligned
    stand-ins (72-column boxes of 4608-wide rows): what is measured is the
    copy's bytes, barriers and instructions beside the multiply, not the
    realignment's exact instructions. Work is k-major: item i of the
    2·ceil_div(R, 16)·64 is k-slice i / (2·ceil_div(R, 16)), as the
    overlapped design would produce it."""
    block = "(@bn * ceil_div(M, BM) + @bm)"
    warp = f"({block} * 3 + (@cw + 3) % 4)"
    groups = "GROUPS"  # ceil_div(R, box_rows), a constant so that item arithmetic is shifts
    total = f"(2 * {groups} * 64)"
    item = f"({warp} + 3 * COPY_BLOCKS * (n))"

    def issue(n):
        i = item.replace("(n)", f"({n})")
        stage = f"(@cw + 3) % 4, ({n}) % 2"
        box = f"[{i} % {groups}, {i} / (2 * {groups})]"
        return (
            f"mbarrier_wait(%cempty[{stage}], ({n}) / 2 + 1)\n"
            f"if ({i} / {groups} % 2 == 0) {{\n"
            f"%stg[{stage}] <- Move<tma><<<#one, #me>>>(%PA.tile_partial([BOX, 72]){box}, %cfull[{stage}])\n"
            "} else {\n"
            f"%stg[{stage}] <- Move<tma><<<#one, #me>>>(%PB.tile_partial([BOX, 72]){box}, %cfull[{stage}])\n"
            "}\n"
        )

    i = item.replace("(n)", "(n)")
    stage = "(@cw + 3) % 4, n % 2"
    chunk = "(@cl + 32 * h)"
    target = f"[{i} % {groups}, {i} / (2 * {groups})].tile([1, 8])[{chunk} / 8, {chunk} % 8]"
    copies = (
        "            @cw, @cl = #warps.indices()\n"
        f"            if ((@cw + 3) % 4 < 3 && {block} < COPY_BLOCKS) {{\n"
        f"                if (@cl == 0 && {item.replace('(n)', '(0)')} < {total}) {{\n{issue(0)}                }}\n"
        f"                for (n = 0; n < ceil_div({total}, 3 * COPY_BLOCKS); n += 1) {{\n"
        f"                    if (@cl == 0 && {item.replace('(n)', '(n + 1)')} < {total}) {{\n{issue('n + 1')}                    }}\n"
        f"                    if ({i} < {total}) {{\n"
        f"                    mbarrier_wait(%cfull[{stage}], n / 2)\n"
        "                    for (h = 0; h < BOX / 4; h += 1) {\n"
        "                        %v:[1, 8].fp16.RF\n"
        + (
            f"                        %v <- Move<<<#one, #me>>>(%stg[{stage}].tile([1, 8])[{chunk} / 8, {chunk} % 8])\n"
            if skew == 0
            else "                        for (e = 0; e < 8; e += 1) {\n"
            f"                            %v[0, e] <- Move<<<#one, #me>>>(%stg[{stage}][{chunk} / 8, {skew} + {chunk} % 8 * 8 + e])\n"
            "                        }\n"
        )
        + 
        f"                        if ({i} / {groups} % 2 == 0) {{\n"
        f"                            %QA.tile_partial([BOX, 64]){target} <- Move<masked><<<#one, #me>>>(%v)\n"
        "                        } else {\n"
        f"                            %QB.tile_partial([BOX, 64]){target} <- Move<masked><<<#one, #me>>>(%v)\n"
        "                        }\n"
        "                    }\n"
        f"                    mbarrier_arrive(%cempty[{stage}])\n"
        "                    }\n"
        "                }\n"
        "            }\n"
    )
    declarations = (
        "    %PA:[R, KP : KP, 1].fp16.GL\n    %PB:[R, KP : KP, 1].fp16.GL\n"
        "    %QA:[R, KQ : KQ, 1].fp16.GL\n    %QB:[R, KQ : KQ, 1].fp16.GL\n"
    )
    knobs = f"COPY_BLOCKS = 132\nconst BOX = {box_rows}\nconst GROUPS = {-(-4095 // box_rows)}"
    text = spliced(example_text, declarations, copies, knobs)
    text = after_line(
        text,
        BARRIERS,
        "        %stg:[3, 2 : 144 * BOX, 72 * BOX].[BOX, 72 : 72, 1].fp16.SH\n"
        "        %cfull:[3, 2].mbarrier.SH\n        %cempty:[3, 2].mbarrier.SH\n",
    )
    return after_line(
        text,
        "            %empty <- Init<CONSUMER_WARPS><<<#one, #me>>>()\n",
        "            %cfull <- Init<1><<<#one, #me>>>()\n            %cempty <- Init<32><<<#one, #me>>>()\n",
    )


def async_probe_source(example_text, depth):
    """The example's first kernel with the first-wave copy through
    `cp.async` (`--async`): each lane of warps 1–3 copies its chunks of a
    16×64 box (4 of 16 bytes) into its own slots of a ring of `depth`
    shared stages, commits them as a group, and `depth - 1` boxes later,
    after `async_wait`, reads them back and stores them to QA or QB. No
    register holds a copy in flight and no bulk-copy unit is used; each
    lane reads only what it copied, so no barrier is needed. Sources are
    aligned stand-ins (rows of KQ), k-major as in staged_probe_source."""
    block = "(@bn * ceil_div(M, BM) + @bm)"
    warp = f"({block} * 3 + (@cw + 3) % 4)"
    groups = "GROUPS"
    total = f"(2 * {groups} * 64)"

    def item(n):
        return f"({warp} + 3 * COPY_BLOCKS * ({n}))"

    def chunks(n, body):
        """`body(tensor, box, slot)` for each of the lane's 4 chunks of item n."""
        i = item(n)
        chunk = "(@cl + 32 * h)"
        box = f"tile_partial([16, 64])[{i} % {groups}, {i} / (2 * {groups})].tile([1, 8])[{chunk} / 8, {chunk} % 8]"
        slot = f"%ast[(@cw + 3) % 4, ({n}) % DEPTH].tile([1, 8])[{chunk} / 8, {chunk} % 8]"
        return (
            "for (h = 0; h < 4; h += 1) {\n"
            f"if ({i} / {groups} % 2 == 0) {{\n{body('%PA', '%QA', box, slot)}}} else {{\n{body('%PB', '%QB', box, slot)}}}\n"
            "}\n"
        )

    def issue(source, _target, box, slot):
        return f"{slot} <- Move<async, masked><<<#one, #me>>>({source}.{box})\n"

    def drain(_source, target, box, slot):
        return f"%v:[1, 8].fp16.RF\n%v <- Move<<<#one, #me>>>({slot})\n{target}.{box} <- Move<masked><<<#one, #me>>>(%v)\n"

    items = f"ceil_div({total}, 3 * COPY_BLOCKS)"
    copies = (
        "            @cw, @cl = #warps.indices()\n"
        f"            if ((@cw + 3) % 4 < 3 && {block} < COPY_BLOCKS) {{\n"
        "                for (q = 0; q < DEPTH - 1; q += 1) {\n"
        f"                    if ({item('q')} < {total}) {{\n{chunks('q', issue)}                    }}\n"
        "                    async_commit\n"
        "                }\n"
        f"                for (n = 0; n < {items}; n += 1) {{\n"
        f"                    if ({item('n + DEPTH - 1')} < {total}) {{\n{chunks('n + DEPTH - 1', issue)}                    }}\n"
        "                    async_commit\n"
        "                    async_wait(DEPTH - 1)\n"
        f"                    if ({item('n')} < {total}) {{\n{chunks('n', drain)}                    }}\n"
        "                }\n"
        "            }\n"
    )
    declarations = (
        "    %PA:[R, KQ : KQ, 1].fp16.GL\n    %PB:[R, KQ : KQ, 1].fp16.GL\n"
        "    %QA:[R, KQ : KQ, 1].fp16.GL\n    %QB:[R, KQ : KQ, 1].fp16.GL\n    require KQ % 8 == 0\n"
    )
    knobs = f"COPY_BLOCKS = 132\nconst DEPTH = {depth}\nconst GROUPS = 256"
    text = spliced(example_text, declarations, copies, knobs)
    return after_line(text, BARRIERS, "        %ast:[3, DEPTH : 1024 * DEPTH, 1024].[16, 64 : 64, 1].fp16.SH\n")


def report(label, probe_ms, plain_ms, exact, error):
    """One line: both sides' rates at 4096³ and the ratio, which is the
    median of the interleaved pairs' ratios (the GPU's clock drifts within
    a call, so the ratio of the two sides' medians is not compared); the
    script's exit where the copies or C were wrong."""
    flops = 2.0 * M * N * K
    probe_rate = flops / harness.summary(probe_ms)[0] / 1e9
    plain_rate = flops / harness.summary(plain_ms)[0] / 1e9
    pairs = [p / q for p, q in zip(plain_ms, probe_ms)]
    print(
        f"{label}: {probe_rate:.1f} TFLOP/s against {plain_rate:.1f} plain, ratio {harness.summary(pairs)[0]:.3f} "
        f"(each pair: {', '.join(f'{r:.3f}' for r in pairs)}); "
        f"copies {'exact' if exact else 'WRONG'}, C relative error {error:.1e}",
        flush=True,
    )
    if not exact or error > 1e-2:
        sys.exit(1)


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
    parser.add_argument("--staged", type=int, nargs="*", metavar="SKEW", help="instead: the same copy through bulk copies into shared stages, read from column SKEW (default 0 1)")
    parser.add_argument("--aligned", action="store_true", help="with --odd: rows of 4096 elements (16-byte loads, nothing to realign) in place of 4095")
    parser.add_argument("--unroll", type=int, nargs="*", default=[4], help="with --odd: rows each warp copies at once (default 4)")
    parser.add_argument("--async", dest="async_depth", type=int, nargs="*", metavar="DEPTH", help="instead: the same copy through cp.async into DEPTH-stage rings (default 2 4)")
    parser.add_argument("--box-rows", type=int, nargs="*", default=[16], help="with --staged: rows per bulk copy (16, 32, 64; more than 16 needs --fp32-out for room)")
    parser.add_argument("--fp32-out", action="store_true", help="both kernels with C in fp32 (-D OUT_16=0 -D STAGES=3): the fp16 C tile's shared memory freed for stages")
    parser.add_argument("--blocks", type=int, nargs="*", help="with --staged: the copying blocks (default: one per SM)")
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

    if args.odd is not None or args.staged is not None or args.async_depth is not None:
        return first_wave_main(args, torch, facts, rand, empty, dims)

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
            moved = 4 * copied * K * 2 / 1e6
            report(f"ROWS={rows}: {copied} rows of each copied ({moved:.0f} MB moved)", probe_ms, plain_ms, exact, error)


def first_wave_main(args, torch, facts, rand, empty, dims):
    """`--odd` and `--staged`: a first-wave copy of a 4095³ problem's A and
    B beside the 4096³ multiply (odd_probe_source, staged_probe_source)."""
    rows = 4095
    nan = float("nan")

    def poisoned(rows, columns):
        return torch.full((rows, columns), nan, device="cuda", dtype=torch.float16)

    if args.async_depth is not None:
        # cp.async into each lane's own slots of a ring of DEPTH stages.
        variants = [(f"cp.async, {depth} stages", async_probe_source, depth) for depth in args.async_depth or [2, 4]]
        source_columns, probe_dims = 4096, dict(dims, R=rows, KQ=4096)

        def copied(q, p, _):
            return torch.equal(q, p)

    elif args.staged is not None:
        # 72-column boxes of 4608-wide stand-ins; a k-slice's 64 columns from `skew` on.
        variants = [
            (f"staged, skew {skew}, {box}-row boxes", lambda text, skew, box=box: staged_probe_source(text, skew, box), skew)
            for skew in args.staged or [0, 1]
            for box in args.box_rows
        ]
        source_columns, probe_dims = 64 * 72, dict(dims, R=rows, KP=64 * 72, KQ=4096)

        def copied(q, p, skew):
            return torch.equal(q, p.view(2 * rows, 64, 72)[:, :, skew : skew + 64].reshape(2 * rows, 4096))

    else:
        # Rows of 4095 (or, --aligned, of 4096: nothing to realign).
        columns = 4096 if args.aligned else rows
        name = "aligned rows" if args.aligned else "element moves"
        variants = [(f"{name}, {unroll} rows at once", lambda text, _: odd_probe_source(text, args.aligned), unroll) for unroll in args.unroll]
        source_columns, probe_dims = columns, dict(dims, R=rows, KC=columns, LDP=4096)

        def copied(q, p, _):
            return torch.equal(q[:, :columns], p)

    with tempfile.TemporaryDirectory() as folder:
        with open(EXAMPLE) as f:
            example = f.read()
        # fp32 C: no fp16 C tile in shared memory, the ring kept at 3 stages.
        output = ["OUT_16=0", "STAGES=3"] if args.fp32_out else []
        c_type = torch.float32 if args.fp32_out else torch.float16
        plain = build(args.ptxgen, EXAMPLE, "gemm_f16_tma_sm90", output, folder, torch)
        for name, generate, knob in variants:
            source = os.path.join(folder, f"probe_{len(os.listdir(folder))}.gph")
            with open(source, "w") as f:
                f.write(generate(example, knob))
            for blocks in args.odd or args.blocks or [facts["sms"]]:
                if blocks < 1:
                    sys.exit("copy_overlap_probe.py: block counts are at least 1")
                sub = tempfile.mkdtemp(dir=folder)
                unrolled = args.staged is None and args.async_depth is None
                defines = output + [f"COPY_BLOCKS={blocks}"] + ([f"UNROLL={knob}"] if unrolled else [])
                probe = build(args.ptxgen, source, "copy_overlap_probe", defines, sub, torch)
                plain_sets, probe_sets, exact, error = [], [], True, 0.0
                for _ in range(3):
                    plain_c = torch.empty((M, N), device="cuda", dtype=c_type)
                    plain_sets.append(plain.bind({"%A": rand(M, K), "%B": rand(N, K), "%C": plain_c}, dims))
                    a, b, c = rand(M, K), rand(N, K), torch.empty((M, N), device="cuda", dtype=c_type)
                    # A's rows, then B's: one tensor for the element moves, two views for the stages.
                    pab, qab = rand(2 * rows, source_columns), poisoned(2 * rows, 4096)
                    if args.staged is not None or args.async_depth is not None:
                        copying = {"%PA": pab[:rows], "%PB": pab[rows:], "%QA": qab[:rows], "%QB": qab[rows:]}
                    else:
                        copying = {"%PAB": pab, "%QAB": qab}
                    launch = probe.bind({"%A": a, "%B": b, "%C": c, **copying}, probe_dims)
                    launch()
                    torch.cuda.synchronize()
                    exact = exact and copied(qab, pab, knob)
                    reference = a[:64].double() @ b.double().t()
                    error = max(error, ((c[:64].double() - reference).norm() / reference.norm()).item())
                    probe_sets.append(launch)
                timing = harness.compare(torch, probe_sets, plain_sets, pairs=args.pairs, graphs=False)
                probe_ms, plain_ms = timing["ours_ms"], timing["baseline_ms"]
                label = f"{name}, first {blocks} blocks pad 2 x {rows}x{rows} (134 MB moved)"
                report(label, probe_ms, plain_ms, exact, error)


if __name__ == "__main__":
    main()
