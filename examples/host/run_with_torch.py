#!/usr/bin/env python3
"""Launches PTX that `ptxgen` wrote on PyTorch tensors, through its launch
manifest, and checks the result against PyTorch.

    target/release/ptxgen examples/vector_copy.gph -o vc.ptx
    target/release/ptxgen examples/vector_copy.gph --emit manifest -o vc.json
    python3 examples/host/run_with_torch.py vc.ptx vc.json [--dim B=4096] [--kernel NAME]

The loader is benches/harness.py's `Kernel` (the CUDA driver through
ctypes, on PyTorch's context and current stream): it evaluates the
manifest's expressions, checks its requirements and each tensor's size, and
launches. This script allocates the kernel's tensors as the manifest sizes
them (every dim 4096 unless `--dim` gives it), fills the input with random
values and the output with NaN, launches, and compares the output with
PyTorch's result: for a copy kernel (one input, one output of the same
size, such as `vector_copy`) the input itself, bit for bit.

Prints one line: PASS or FAIL with the kernel, dims and launch (exit 0 or
1), or `skipped: no CUDA device (...)` (exit 0) where PyTorch sees no GPU.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benches"))

import harness  # noqa: E402  (benches/ is put on the path just above)

DEFAULT_DIM = 4096

# The manifest's element types as PyTorch's.
DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "i32": "int32", "u32": "uint32"}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ptx", nargs="?", default="vector_copy.ptx")
    parser.add_argument("manifest", nargs="?", default="vector_copy.json")
    parser.add_argument("--kernel", help="the manifest's kernel to run (default: its first)")
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE")
    return parser.parse_args(argv)


def dims_of(entry, settings):
    """Each dim of the kernel with its value: DEFAULT_DIM unless set."""
    dims = {name: DEFAULT_DIM for name in entry["dims"]}
    for setting in settings:
        name, _, value = setting.partition("=")
        if name not in dims:
            raise SystemExit(f"error: `{name}` is not a dim of `{entry['name']}` (its dims: {', '.join(dims) or 'none'})")
        dims[name] = int(value.replace("_", ""))
    return dims


def main(argv):
    args = parse_args(argv)
    try:
        import torch
    except ImportError as error:
        print(f"skipped: no CUDA device (PyTorch is not installed: {error})")
        return 0
    if not torch.cuda.is_available():
        print("skipped: no CUDA device (torch.cuda.is_available() is False)")
        return 0

    import json

    with open(args.manifest) as f:
        manifest = json.load(f)
    name = args.kernel or manifest["kernels"][0]["name"]
    kernel = harness.Kernel(torch, args.ptx, args.manifest, name)
    entry = kernel.entry
    dims = dims_of(entry, args.dim)

    tensors, inputs, outputs = {}, [], []
    for param in entry["params"]:
        if param.get("dim") or param.get("type") == "tensor_map":
            continue  # dims are given; tensor maps are encoded by bind()
        dtype = getattr(torch, DTYPES[param["points_to"]])
        elements = harness.evaluate(param["elements"], dims)
        if param["role"] in ("input", "inout"):
            if dtype.is_floating_point:
                tensor = (torch.rand(elements, device="cuda") * 2 - 1).to(dtype)
            else:
                tensor = torch.randint(-1000, 1000, (elements,), device="cuda").to(dtype)
            inputs.append(param["name"])
        else:
            tensor = torch.full((elements,), float("nan") if dtype.is_floating_point else -1, dtype=dtype, device="cuda")
            outputs.append(param["name"])
        tensors[param["name"]] = tensor

    if len(inputs) != 1 or len(outputs) != 1 or tensors[inputs[0]].shape != tensors[outputs[0]].shape:
        print(f"FAIL  {name}: not a copy (one input, one output tensor of one size); this script checks copies")
        return 1
    source, destination = tensors[inputs[0]], tensors[outputs[0]]
    expected = source.clone()  # PyTorch's copy of the input

    launch = kernel.bind(tensors, dims)
    launch()
    torch.cuda.synchronize()

    wrong = int((destination.view(torch.uint8).view(-1, source.element_size()) != expected.view(torch.uint8).view(-1, source.element_size())).any(dim=1).sum())
    grid = [harness.evaluate(g, dims) for g in entry["grid"]]
    block = [harness.evaluate(b, dims) for b in entry["block"]]
    dims_text = " ".join(f"{k}={v}" for k, v in dims.items())
    verdict = "PASS" if wrong == 0 else "FAIL"
    print(
        f"{verdict}  {name} {dims_text}  <<<{grid}, {block}, {entry['dynamic_shared_bytes']} B>>>  "
        f"{wrong} of {destination.numel()} elements differ from torch (device: {torch.cuda.get_device_name()})"
    )
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
