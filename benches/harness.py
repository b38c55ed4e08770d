#!/usr/bin/env python3
"""The one timing harness for our kernels and their PyTorch baselines.

Both sides are timed the same way, in one process, interleaved:

- each side gets its own rotating input sets, together larger than the L2
  cache (`ROTATION_BYTES`, as `ptxgen bench` rotates), the same shapes,
  layouts and output type;
- a *measurement* of a side is `warmup` untimed launches, then `launches`
  launches back to back with a CUDA event recorded between each two, each
  launch on the next input set; its time is the median of the per-launch
  times (exactly `ptxgen bench`'s method);
- the *graph* variant captures the same `launches` launches in a CUDA graph
  and replays it between two events (no host launch cost on either side);
- the sides alternate, ours then the baseline, `pairs` times (A B A B …), and
  each pair gives one ratio; the report is the median ratio with the lowest
  and highest of the pairs, so a drifting clock or a neighbour shows up as
  spread instead of bias.

Our kernel is launched from this process through the CUDA driver (`ctypes`
over libcuda), from the PTX and launch manifest that `ptxgen` wrote
(`ptxgen FILE --emit manifest`, docs/running.md): no Rust code runs while
timing, and both sides share PyTorch's context and stream. A kernel's TMA
tensor maps are encoded once per bound launch (`cuTensorMapEncodeTiled`)
over the tensors given, and passed by value after the dims.

Library only: benches/gemm_vs_cublas.py is the GEMM driver.
"""

import ast
import ctypes
import json
import operator
import os
import statistics

# More than the L2 of any current GPU (50-60 MB on H100/H200): what
# `ptxgen bench` rotates (src/launch/report.rs, ROTATION_BYTES).
ROTATION_BYTES = 256 << 20
MAX_SETS = 64

_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

# cuTensorMapEncodeTiled's enum values (CUDA 12 cuda.h), as
# src/runtime/driver.rs declares them.
_TENSOR_MAP_DATA_TYPES = {"fp16": 6, "bf16": 9, "fp32": 7, "i32": 3, "u32": 2}
_TENSOR_MAP_SWIZZLES = {0: 0, 32: 1, 64: 2, 128: 3}  # span in bytes -> CU_TENSOR_MAP_SWIZZLE_*
_TENSOR_MAP_INTERLEAVE_NONE = 0
# 128 B, as the Rust runtime chooses (src/runtime/tensor_map.rs says why).
_TENSOR_MAP_L2_PROMOTION_L2_128B = 2
# Elements of a box past the tensor's extents land as zero.
_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0
# A map is 128 bytes; the driver writes it, and the kernel's `.param` holds
# it, at a 64-byte boundary.
_TENSOR_MAP_BYTES = 128
_TENSOR_MAP_ALIGN = 64


def rotation_sets(set_bytes, device_bytes):
    """Input sets to rotate: enough to fill ROTATION_BYTES, 2..MAX_SETS, and
    never more than three quarters of the device (as `ptxgen bench`)."""
    wanted = max(2, min(MAX_SETS, ROTATION_BYTES // max(set_bytes, 1)))
    fit = device_bytes // 4 * 3 // max(set_bytes, 1)
    return max(1, min(wanted, fit))


# --- the manifest's integer expressions ------------------------------------

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    # The IR's `/` is floor division of non-negative values.
    ast.Div: operator.floordiv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.BitAnd: operator.and_,
    ast.BitXor: operator.xor,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}


def evaluate(text, dims):
    """The value of a manifest expression (`(M/128)*(N/256)`) with `dims`
    bound; anything but integers, dim names and the IR's operators is an
    error."""

    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in dims:
                raise ValueError(f"`{text}` names `{node.id}`, which has no value")
            return dims[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](walk(node.left), walk(node.right))
        raise ValueError(f"`{text}` is not an expression of the manifest's form")

    return walk(ast.parse(text, mode="eval"))


# --- TMA tensor maps ---------------------------------------------------------


def tensor_map_arguments(entry, index, dims, address):
    """The arguments of cuTensorMapEncodeTiled for tensor map `index` of the
    manifest kernel `entry`, with `dims` bound, over the tensor at device
    `address`: a dict of the driver's values. What the driver would refuse
    is a ValueError first, in the Rust runtime's words
    (src/runtime/tensor_map.rs), naming the kernel and the tensor."""
    tmap = entry["tensor_maps"][index]
    tensor = tmap["tensor"]

    def refuse(why):
        raise ValueError(f"kernel `{entry['name']}`: tensor map of `{tensor}`: {why}")

    extents = [evaluate(text, dims) for text in tmap["extents"]]
    strides = [evaluate(text, dims) for text in tmap["strides_bytes"]]
    boxes = list(tmap["box"])
    span = tmap["swizzle_bytes"]
    element_bytes = tmap["element_bytes"]
    rank = len(extents)
    if not 1 <= rank <= 5:
        refuse(f"a tensor map has 1 to 5 dims; this one has {rank}")
    if len(boxes) != rank or len(strides) + 1 != rank:
        refuse(
            f"{rank} extents, {len(boxes)} box entries and {len(strides)} strides; a map has one "
            "box entry per dim and one stride per dim but the innermost"
        )
    if span not in _TENSOR_MAP_SWIZZLES:
        refuse(f"a swizzle span of {span} B; the driver knows none (0), 32, 64 and 128 B")
    for dim, (extent, elements) in enumerate(zip(extents, boxes)):
        if not 1 <= extent <= 1 << 32:
            refuse(f"dim {dim} has {extent} elements; the driver allows 1 to 2^32")
        if not 1 <= elements <= 256:
            refuse(f"box[{dim}] is {elements} elements; the driver allows 1 to 256")
    # Without interleave a box row moves in 16-byte chunks, and a swizzle
    # permutes chunks within one span.
    row = boxes[0] * element_bytes
    row_text = f"box[0] is {boxes[0]} {tmap['scalar']} elements = {row} B"
    if row % 16:
        refuse(f"{row_text}, not a multiple of 16 B")
    if span and row > span:
        refuse(f"{row_text}, wider than the {span} B swizzle span")
    for dim, stride in enumerate(strides, start=1):
        if stride % 16:
            refuse(f"the stride of dim {dim} is {stride} B, not a multiple of 16 B")
        if not 0 <= stride < 1 << 40:
            refuse(f"the stride of dim {dim} is {stride} B; the driver allows less than 2^40 B")
    if address % 16:
        refuse(f"the tensor's address {address:#x} is not a multiple of 16 bytes")
    return {
        "data_type": _TENSOR_MAP_DATA_TYPES[tmap["scalar"]],
        "rank": rank,
        "address": address,
        "extents": extents,
        "strides_bytes": strides,
        "boxes": boxes,
        "element_strides": [1] * rank,
        "interleave": _TENSOR_MAP_INTERLEAVE_NONE,
        "swizzle": _TENSOR_MAP_SWIZZLES[span],
        "l2_promotion": _TENSOR_MAP_L2_PROMOTION_L2_128B,
        "oob_fill": _TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    }


def aligned_tensor_map_storage():
    """Host memory for one tensor map: (the ctypes buffer that owns it, the
    address of its 128 bytes at a 64-byte boundary). ctypes aligns to 16
    at most, so the buffer is 64 bytes longer and the map starts inside."""
    storage = (ctypes.c_uint8 * (_TENSOR_MAP_BYTES + _TENSOR_MAP_ALIGN))()
    address = (ctypes.addressof(storage) + _TENSOR_MAP_ALIGN - 1) & ~(_TENSOR_MAP_ALIGN - 1)
    return storage, address


# --- our kernel, through the CUDA driver ------------------------------------


class Driver:
    """The few libcuda entry points a launch needs, with errors named."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")

    def check(self, result, what):
        """Raises for a failed call: the code's name, number and description."""
        if result != 0:
            name, text = ctypes.c_char_p(), ctypes.c_char_p()
            self.lib.cuGetErrorName(result, ctypes.byref(name))
            self.lib.cuGetErrorString(result, ctypes.byref(text))
            name = name.value.decode() if name.value else f"CUDA_ERROR_{result}"
            text = f": {text.value.decode()}" if text.value else ""
            raise RuntimeError(f"{what}: {name} ({result}){text}")

    def encode_tensor_map(self, arguments, what):
        """A tensor map encoded from `tensor_map_arguments`'s dict:
        (the buffer that owns it, the address of its 128 bytes)."""
        storage, address = aligned_tensor_map_storage()
        rank = arguments["rank"]

        def array(kind, values):
            # One entry at least: a rank-1 map has no stride to give.
            return (kind * max(len(values), 1))(*values)

        encode = self.lib.cuTensorMapEncodeTiled
        encode.restype = ctypes.c_int
        encode.argtypes = [
            ctypes.c_void_p,  # CUtensorMap *tensorMap (64-byte aligned)
            ctypes.c_int,  # CUtensorMapDataType
            ctypes.c_uint32,  # tensorRank
            ctypes.c_void_p,  # globalAddress
            ctypes.POINTER(ctypes.c_uint64),  # globalDim
            ctypes.POINTER(ctypes.c_uint64),  # globalStrides (rank - 1, bytes)
            ctypes.POINTER(ctypes.c_uint32),  # boxDim
            ctypes.POINTER(ctypes.c_uint32),  # elementStrides
            ctypes.c_int,  # CUtensorMapInterleave
            ctypes.c_int,  # CUtensorMapSwizzle
            ctypes.c_int,  # CUtensorMapL2promotion
            ctypes.c_int,  # CUtensorMapFloatOOBfill
        ]
        self.check(
            encode(
                address,
                arguments["data_type"],
                rank,
                arguments["address"],
                array(ctypes.c_uint64, arguments["extents"]),
                array(ctypes.c_uint64, arguments["strides_bytes"]),
                array(ctypes.c_uint32, arguments["boxes"]),
                array(ctypes.c_uint32, arguments["element_strides"]),
                arguments["interleave"],
                arguments["swizzle"],
                arguments["l2_promotion"],
                arguments["oob_fill"],
            ),
            what,
        )
        return storage, address


class Kernel:
    """One kernel of a PTX module, launched as its manifest says."""

    def __init__(self, torch, ptx_path, manifest_path, name):
        self.torch = torch
        with open(manifest_path) as f:
            manifest = json.load(f)
        if manifest.get("manifest") != 1:
            raise ValueError(f"{manifest_path}: not a version-1 launch manifest")
        entries = {k["name"]: k for k in manifest["kernels"]}
        if name not in entries:
            raise ValueError(f"{manifest_path}: no kernel `{name}` (has {', '.join(entries)})")
        self.entry = entries[name]
        torch.cuda.init()
        torch.empty(1, device="cuda")  # makes PyTorch's context current here
        self.driver = Driver()
        with open(ptx_path, "rb") as f:
            image = f.read() + b"\0"
        self.module = ctypes.c_void_p()
        self.driver.check(self.driver.lib.cuModuleLoadData(ctypes.byref(self.module), image), f"loading {ptx_path}")
        self.function = ctypes.c_void_p()
        self.driver.check(
            self.driver.lib.cuModuleGetFunction(ctypes.byref(self.function), self.module, name.encode()),
            f"finding `{name}`",
        )
        shared = self.entry["dynamic_shared_bytes"]
        if shared > 48 * 1024:
            self.driver.check(
                self.driver.lib.cuFuncSetAttribute(
                    self.function, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared
                ),
                f"allowing {shared} bytes of shared memory",
            )

    def check_requirements(self, dims):
        for requirement in self.entry["requirements"]:
            value = evaluate(requirement["value"], dims)
            if requirement["kind"] == "divisible":
                divisor = evaluate(requirement["divisor"], dims)
                if divisor == 0 or value % divisor:
                    raise ValueError(
                        f"{requirement['value']} = {value} is not a multiple of {divisor} "
                        f"(required at {requirement['written_at']})"
                    )
            elif value < 1:
                raise ValueError(f"{requirement['value']} = {value} is not at least 1")

    def check_co_resident(self, grid, block, shared):
        """A kernel with a grid barrier needs all its blocks resident at once."""
        per_sm = ctypes.c_int()
        threads = block[0] * block[1] * block[2]
        self.driver.check(
            self.driver.lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                ctypes.byref(per_sm), self.function, threads, ctypes.c_size_t(shared)
            ),
            "asking the occupancy",
        )
        sms = self.torch.cuda.get_device_properties(0).multi_processor_count
        blocks = grid[0] * grid[1] * grid[2]
        if blocks > per_sm.value * sms:
            raise ValueError(
                f"{self.entry['name']}: its grid barrier needs all {blocks} blocks resident at once, "
                f"but the device holds {per_sm.value} per SM x {sms} SMs"
            )

    def bind(self, tensors, dims):
        """A launch of the kernel on `tensors` (parameter name → tensor) with
        `dims`: a function that launches it on PyTorch's current stream.
        Its tensor maps are encoded here, over these tensors."""
        self.check_requirements(dims)
        # The driver reads each parameter's bytes from its address here:
        # a u64, a u32, or a tensor map's 128 bytes (64-byte aligned).
        addresses, keep = [], []

        def hold(value):
            keep.append(value)
            addresses.append(ctypes.addressof(value))

        for param in self.entry["params"]:
            if param.get("dim"):
                hold(ctypes.c_uint32(dims[param["name"]]))
                continue
            if param.get("type") == "tensor_map":
                index = param["tensor_map"]
                tensor = tensors[self.entry["tensor_maps"][index]["tensor"]]
                arguments = tensor_map_arguments(self.entry, index, dims, tensor.data_ptr())
                storage, address = self.driver.encode_tensor_map(
                    arguments, f"encoding {param['name']} of `{self.entry['name']}`"
                )
                keep.append(storage)
                addresses.append(address)
                continue
            tensor = tensors[param["name"]]
            elements = evaluate(param["elements"], dims)
            if tensor.numel() < elements or tensor.element_size() != param["element_bytes"]:
                raise ValueError(f"{param['name']}: needs {elements} elements of {param['points_to']}")
            hold(ctypes.c_uint64(tensor.data_ptr()))
            keep.append(tensor)
        pointers = (ctypes.c_void_p * len(addresses))(*addresses)
        grid = [evaluate(g, dims) for g in self.entry["grid"]]
        block = [evaluate(b, dims) for b in self.entry["block"]]
        shared = self.entry["dynamic_shared_bytes"]
        lib, function, torch = self.driver.lib, self.function, self.torch
        cooperative = self.entry.get("cooperative", False)
        if cooperative:
            self.check_co_resident(grid, block, shared)

        # The launch's host cost is ours to keep small: at 10–20 µs kernels
        # a back-to-back measurement is bound by it. The argument list is
        # built once, here; a launch only writes the stream into its slot,
        # read raw (PyTorch's current stream: the capturing one inside a
        # graph capture).
        launch_sizes = [ctypes.c_uint(v) for v in (*grid, *block)] + [ctypes.c_uint(shared)]
        current_stream = current_raw_stream(torch)
        launcher = lib.cuLaunchCooperativeKernel if cooperative else lib.cuLaunchKernel
        stream = ctypes.c_void_p(0)
        arguments = [function, *launch_sizes, stream, pointers] + ([] if cooperative else [None])

        def launch():
            stream.value = current_stream()
            result = launcher(*arguments)
            if result:
                self.driver.check(result, "launching")

        launch.keep = (addresses, pointers, keep)
        return launch


def padded_operands(pad, a, b, dims):
    """A (M×K) and B (N×K) copied by `pad` (examples/pad_rows.gph) into rows
    padded to a multiple of 8 elements: (a launch of both copies, the
    kernel's dims with LDA and LDB, the padded A, the padded B). A kernel
    built with `-D LD=1` multiplies the copies at any K with whole tensor-map
    boxes (docs/performance.md, "Padding first")."""
    m, n, k = dims["M"], dims["N"], dims["K"]
    ld = (k + 7) // 8 * 8
    ap, bp = a.new_empty((m, ld)), b.new_empty((n, ld))
    pad_a = pad.bind({"%src": a, "%dst": ap}, {"R": m, "N": k, "LD": ld})
    pad_b = pad.bind({"%src": b, "%dst": bp}, {"R": n, "N": k, "LD": ld})

    def both():
        pad_a()
        pad_b()

    return both, {**dims, "LDA": ld, "LDB": ld}, ap, bp


def current_raw_stream(torch):
    """A function returning PyTorch's current CUDA stream as a raw handle:
    `torch._C._cuda_getCurrentRawStream` where this PyTorch has it (a few
    hundred nanoseconds), else through `torch.cuda.current_stream()`."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is None:
        return lambda: torch.cuda.current_stream().cuda_stream
    device = torch.cuda.current_device()
    return lambda: raw(device)


# --- timing -----------------------------------------------------------------


def time_back_to_back(torch, launches, warmup):
    """Median milliseconds of one launch: `launches` is a list of callables
    (one per rotated input set use), run back to back with an event between
    each two, after `warmup` untimed ones."""
    for i in range(warmup):
        launches[i % len(launches)]()
    torch.cuda.synchronize()
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(len(launches) + 1)]
    marks[0].record()
    for launch, mark in zip(launches, marks[1:]):
        launch()
        mark.record()
    marks[-1].synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in zip(marks, marks[1:]))


def capture(torch, launches):
    """A CUDA graph of the launches, in order."""
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        launches[0]()  # warm on the capturing stream (libraries pick algorithms here)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    with torch.cuda.graph(graph):
        for launch in launches:
            launch()
    torch.cuda.synchronize()
    return graph


def time_graph(torch, graph, count, replays=3):
    """Milliseconds per launch of a captured graph of `count` launches: the
    median over `replays` replays, each between two events."""
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / count)
    return statistics.median(times)


def compare(torch, ours, baseline, pairs=5, launches=50, warmup=10, graphs=True):
    """Times two sides interleaved. `ours` and `baseline` are lists of
    launch callables, one per input set; each side's measurement cycles
    through its own list. Returns per-side medians and the per-pair ratios
    baseline_ms / ours_ms (above 1: ours is faster)."""

    def cycle(sides):
        return [sides[i % len(sides)] for i in range(launches)]

    result = {"ours_ms": [], "baseline_ms": [], "ratio": []}
    for _ in range(pairs):
        a = time_back_to_back(torch, cycle(ours), warmup)
        b = time_back_to_back(torch, cycle(baseline), warmup)
        result["ours_ms"].append(a)
        result["baseline_ms"].append(b)
        result["ratio"].append(b / a)
    if graphs:
        graph_a, graph_b = capture(torch, cycle(ours)), capture(torch, cycle(baseline))
        result["graph_ours_ms"], result["graph_baseline_ms"], result["graph_ratio"] = [], [], []
        for _ in range(pairs):
            a = time_graph(torch, graph_a, launches)
            b = time_graph(torch, graph_b, launches)
            result["graph_ours_ms"].append(a)
            result["graph_baseline_ms"].append(b)
            result["graph_ratio"].append(b / a)
        del graph_a, graph_b
    return result


def summary(values):
    """(median, lowest, highest, spread in % of the median)."""
    median = statistics.median(values)
    lo, hi = min(values), max(values)
    return median, lo, hi, 100.0 * (hi - lo) / median if median else 0.0


def device_facts(torch):
    """GPU name, SM count, driver and PyTorch versions, for the report."""
    props = torch.cuda.get_device_properties(0)
    version = ctypes.c_int()
    Driver().lib.cuDriverGetVersion(ctypes.byref(version))
    return {
        "gpu": props.name,
        "sms": props.multi_processor_count,
        "memory_bytes": props.total_memory,
        "cuda_driver_api": f"{version.value // 1000}.{version.value % 1000 // 10}",
        "torch": torch.__version__,
    }


def add_run_arguments(parser):
    """The flags every comparison script takes: where ptxgen is, defines
    passed to it, and how the harness times (pairs, launches, warm-up), the
    seed of the inputs and a JSON file for the results."""
    parser.add_argument("--ptxgen", default="target/release/ptxgen")
    parser.add_argument("-D", "--define", action="append", default=[], help="NAME=VALUE, passed to ptxgen")
    parser.add_argument("--pairs", type=int, default=5, help="ours/baseline measurement pairs per size")
    parser.add_argument("--launches", type=int, default=50, help="timed launches per measurement")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="write the results to this file")


def start(script, args):
    """PyTorch with a CUDA device, and `args.ptxgen` runnable, or the
    script's exit with one line saying what is missing; then the device's
    facts for the report."""
    import sys

    try:
        import torch
    except ImportError:
        sys.exit(f"{script}: PyTorch is not installed")
    if not torch.cuda.is_available():
        sys.exit(f"{script}: no CUDA device visible to PyTorch")
    if not os.access(args.ptxgen, os.X_OK):
        sys.exit(f"{script}: no ptxgen at {args.ptxgen} (cargo build --release, or --ptxgen PATH)")
    return torch, device_facts(torch)
