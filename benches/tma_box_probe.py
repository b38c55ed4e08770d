#!/usr/bin/env python3
"""Which TMA boxes the GPU copies: a probe of the bulk tensor copy's alignment rules.

Why it exists: a GEMM whose K is not a multiple of 8 (fp16) has rows that
start at 2-byte offsets, and whether the copy engine can fetch a box that
starts off a 16-byte boundary decides which designs can reach the aligned
kernel's speed (docs/performance.md, "Any shape"). The driver's encoder
accepts every map below; only running a copy says which ones the hardware
takes. Each case copies one 16×64 fp16 box with
`cp.async.bulk.tensor.2d` into shared memory and back to global memory, and
compares it with the box the map describes, element by element:

- `aligned`: a map whose base and row stride are multiples of 16 bytes, box at (0, 0);
- `start8` / `start1` / `start3`: the same map, box starting 8 / 1 / 3 elements
  into the rows (16 / 2 / 6 bytes);
- `odd-extent`: the innermost extent 4095 (not a multiple of 8), box at (0, 0);
- `class J`: rows J, J+8, J+16, … of a matrix with K columns (row stride 8·K
  elements, a multiple of 16 bytes for any K), the map's base row J's first
  element rounded down to 16 bytes and its box starting at the rounding
  remainder, so that box column 0 is element (J, 0).

A case the hardware refuses stops its kernel (CUDA_ERROR_ILLEGAL_INSTRUCTION
on an H200, driver 580) and poisons the context, so each runs in a process
of its own.

    python3 benches/tma_box_probe.py           # every case, one line each
    python3 benches/tma_box_probe.py start1    # one case (`class 3`: `class3`)

Needs PyTorch and an sm_90 GPU; the kernel is PTX in this file, loaded
through the driver as benches/harness.py loads ours.
"""

import ctypes
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

BOX_COLUMNS, BOX_ROWS = 64, 16
ROWS = 64
SHARED_BYTES = 65536 + 64  # the box at 0, its barrier at 65536

# One warp: lane 0 initialises the barrier and issues the copy, every lane
# waits for it and copies the box's bytes to `out`, four at a time.
PTX = r"""
.version 8.1
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 smem[];
.visible .entry probe(
    .param .u64 out,
    .param .u32 x,
    .param .u32 y,
    .param .u32 bytes,
    .param .align 64 .b8 tmap[128]
)
.maxntid 32, 1, 1
{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    mov.u32 %r1, %tid.x;
    ld.param.u32 %r2, [x];
    ld.param.u32 %r3, [y];
    ld.param.u32 %r4, [bytes];
    mov.u32 %r5, smem;
    add.u32 %r6, %r5, 65536;
    setp.eq.u32 %p1, %r1, 0;
    @!%p1 bra $init_done;
    mbarrier.init.shared::cta.b64 [%r6], 1;
    fence.mbarrier_init.release.cluster;
$init_done:
    bar.sync 0;
    @!%p1 bra $copy_issued;
    mov.b64 %rd1, tmap;
    cvta.param.u64 %rd2, %rd1;
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [%r6], %r4;
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r5], [%rd2, {%r2, %r3}], [%r6];
$copy_issued:
$wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r6], 0;
    @!%p2 bra $wait;
    ld.param.u64 %rd4, [out];
    cvta.to.global.u64 %rd5, %rd4;
    shr.u32 %r7, %r4, 2;
    mov.u32 %r8, %r1;
$loop:
    setp.lt.u32 %p3, %r8, %r7;
    @!%p3 bra $done;
    shl.b32 %r9, %r8, 2;
    add.u32 %r10, %r5, %r9;
    ld.shared.b32 %r11, [%r10];
    cvt.u64.u32 %rd6, %r9;
    add.u64 %rd7, %rd5, %rd6;
    st.global.b32 [%rd7], %r11;
    add.u32 %r8, %r8, 32;
    bra $loop;
$done:
    ret;
}
"""

CASES = ["aligned", "start8", "start1", "start3", "odd-extent"] + [f"class{j}" for j in (0, 1, 2, 4, 7)]


def describe(case, columns):
    """The map and box of `case` over a matrix of ROWS × `columns` fp16
    elements whose element (r, k) sits at flat index r·columns + k:
    (base offset in bytes, extents, row stride in bytes, box start (x, y),
    the element a box position (row, column) should hold as (r, k), or None
    where the box lies past the map and must read 0)."""
    padded = 4096  # rows of 8192 bytes over the same memory: every stride aligned
    if case in ("aligned", "start8", "start1", "start3", "odd-extent"):
        x = {"aligned": 0, "start8": 8, "start1": 1, "start3": 3, "odd-extent": 0}[case]
        width = 4095 if case == "odd-extent" else padded
        rows = ROWS * columns // padded

        def element(row, column):
            k = x + column
            return (row, k) if row < rows and k < width else None

        return 0, [width, rows], padded * 2, (x, 0), element, padded
    if case.startswith("class"):
        j = int(case[len("class"):])
        offset = j * columns * 2
        skew = offset % 16 // 2
        rows = (ROWS - j + 7) // 8

        def element(row, column):
            return (8 * row + j, column) if row < rows else None

        return offset - offset % 16, [columns + skew, rows], 16 * columns, (skew, 0), element, columns
    raise SystemExit(f"unknown case `{case}`; the cases: {', '.join(CASES)}")


def run_case(case, columns):
    """One case in this process: prints `case: OK`, `case: N wrong` or `case: refused (…)`."""
    import torch
    import harness

    torch.cuda.init()
    torch.empty(1, device="cuda")
    driver = harness.Driver()
    base_offset, extents, stride, (x, y), element, pitch = describe(case, columns)
    flat = (torch.arange(ROWS * 4096 + 64, device="cuda") % 2048).to(torch.float16)
    arguments = {
        "data_type": 6,  # fp16
        "rank": 2,
        "address": flat.data_ptr() + base_offset,
        "extents": extents,
        "strides_bytes": [stride],
        "boxes": [BOX_COLUMNS, BOX_ROWS],
        "element_strides": [1, 1],
        "interleave": 0,
        "swizzle": 0,
        "l2_promotion": 2,
        "oob_fill": 0,
    }
    _storage, tensor_map = driver.encode_tensor_map(arguments, case)
    out = torch.full((BOX_ROWS * BOX_COLUMNS,), float("nan"), device="cuda", dtype=torch.float16)
    module, function = ctypes.c_void_p(), ctypes.c_void_p()
    driver.check(driver.lib.cuModuleLoadData(ctypes.byref(module), PTX.encode() + b"\0"), "loading the probe")
    driver.check(driver.lib.cuModuleGetFunction(ctypes.byref(function), module, b"probe"), "finding `probe`")
    driver.check(driver.lib.cuFuncSetAttribute(function, 8, SHARED_BYTES), "allowing its shared memory")
    values = [
        ctypes.c_uint64(out.data_ptr()),
        ctypes.c_uint32(x),
        ctypes.c_uint32(y),
        ctypes.c_uint32(BOX_ROWS * BOX_COLUMNS * 2),
    ]
    pointers = (ctypes.c_void_p * 5)(*[ctypes.addressof(v) for v in values], tensor_map)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    try:
        driver.check(
            driver.lib.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, SHARED_BYTES, stream, pointers, None), "launch"
        )
        torch.cuda.synchronize()
    except Exception as error:  # the copy faulted: the context is gone
        print(f"{case}: refused ({str(error).splitlines()[0][:80]})")
        return
    got = out.view(BOX_ROWS, BOX_COLUMNS).float().cpu().tolist()
    wrong = 0
    for row in range(BOX_ROWS):
        for column in range(BOX_COLUMNS):
            place = element(row, column)
            want = 0 if place is None else (place[0] * pitch + place[1]) % 2048
            wrong += got[row][column] != want
    print(f"{case}: {'OK' if wrong == 0 else f'{wrong} of {BOX_ROWS * BOX_COLUMNS} wrong'}")


def main():
    columns = 4095  # K of the matrix the class maps read: odd, so rows start at every 2-byte offset
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        run_case(sys.argv[2], columns)
        return
    for case in sys.argv[1:] or CASES:
        result = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--one", case], capture_output=True, text=True, timeout=120
        )
        lines = [line for line in result.stdout.splitlines() if line.startswith(case + ":")]
        print(lines[-1] if lines else f"{case}: no result (exit {result.returncode}) {result.stderr.strip()[-200:]}")


if __name__ == "__main__":
    main()
