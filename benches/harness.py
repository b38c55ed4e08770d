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
timing, and both sides share PyTorch's context and stream.

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


# --- our kernel, through the CUDA driver ------------------------------------


class Driver:
    """The few libcuda entry points a launch needs, with errors named."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")

    def check(self, result, what):
        if result != 0:
            text = ctypes.c_char_p()
            self.lib.cuGetErrorString(result, ctypes.byref(text))
            name = text.value.decode() if text.value else f"error {result}"
            raise RuntimeError(f"{what}: {name}")


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
        `dims`: a function that launches it on PyTorch's current stream."""
        self.check_requirements(dims)
        values, keep = [], []
        for param in self.entry["params"]:
            if param.get("dim"):
                values.append(ctypes.c_uint32(dims[param["name"]]))
                continue
            tensor = tensors[param["name"]]
            elements = evaluate(param["elements"], dims)
            if tensor.numel() < elements or tensor.element_size() != param["element_bytes"]:
                raise ValueError(f"{param['name']}: needs {elements} elements of {param['points_to']}")
            values.append(ctypes.c_uint64(tensor.data_ptr()))
            keep.append(tensor)
        pointers = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
        grid = [evaluate(g, dims) for g in self.entry["grid"]]
        block = [evaluate(b, dims) for b in self.entry["block"]]
        shared = self.entry["dynamic_shared_bytes"]
        lib, function, torch = self.driver.lib, self.function, self.torch
        cooperative = self.entry.get("cooperative", False)
        if cooperative:
            self.check_co_resident(grid, block, shared)

        def launch():
            stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
            if cooperative:
                result = lib.cuLaunchCooperativeKernel(function, *grid, *block, shared, stream, pointers)
            else:
                result = lib.cuLaunchKernel(function, *grid, *block, shared, stream, pointers, None)
            if result:
                self.driver.check(result, "launching")

        launch.keep = (values, pointers, keep)
        return launch


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
