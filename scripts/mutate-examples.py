#!/usr/bin/env python3
"""Mutate the examples and look for what the compiler promised could not happen.

Two modes, both deterministic for a given --seed:

  run      (default) change one or two numbers of an example (a constant, an
           index offset, a loop bound), and where the checker accepts the
           result, run it on the CPU executor with one of the example's
           `// cpu:` lines and --check. An executor finding (a read of what
           nothing wrote, an out-of-bounds access, a race, a read before a
           copy landed, a divergent uniform branch) is a kernel the checker
           should have refused: each distinct one is kept.
  compile  change one to three tokens anywhere (delete, replace by a number
           or a piece of syntax, duplicate) and compile the result. A panic,
           an internal error, an exit status other than 0 and 1, or a
           compile past 60 s is kept.

    cargo build --release
    python3 scripts/mutate-examples.py --seed 1 --count 400
    python3 scripts/mutate-examples.py compile --seed 2 --count 600 --out /tmp/mutants
    python3 scripts/mutate-examples.py --example pad_rows --count 50

Each kept mutant is written to OUT/find_N.gph with its command line in
OUT/find_N.args; the report prints one line per finding. The exit status is
0 either way: a finding is for a person to read (most are checker rules
still to write; docs/running.md, "Mutation runs", lists what runs found).
Not part of the test suite: a run takes minutes to hours, and what it finds
becomes a rule and a test.
"""

import argparse
import glob
import os
import random
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMBER = re.compile(r"(?<![A-Za-z_0-9.])\d+(?![A-Za-z_0-9.])")
TOKEN = re.compile(r"[A-Za-z_%#@][A-Za-z0-9_]*|\d+|\S")
SYNTAX = ["(", ")", "[", "]", "{", "}", ",", ":", ".", "_", "0", "@t", "%A", "#block", "K", "M", "<", ">",
          "==", "%", "/", "*", "+", "-", "tile([2])", ".tile_partial([3, 5])", "[0]", ".reshape(0, [2, 16])",
          "fp32", "bf16", "SH", "RF", "GL"]
NUMBERS = ["0", "1", "3", "7", "8", "16", "17", "255", "256", "4096", "65537", "-1", "99999999999"]


def cpu_cases():
    """(example path, its `// cpu:` arguments) for every such line."""
    cases = []
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.gph"))):
        with open(path) as f:
            for line in f:
                if line.startswith("// cpu:"):
                    cases.append((path, shlex.split(line[len("// cpu:"):])))
    return cases


def mutate_numbers(rng, text):
    """One or two numbers past the header comments changed to a neighbour."""
    body = text.index("\nconst ") if "\nconst " in text else 0
    for _ in range(rng.randint(1, 2)):
        numbers = [m for m in NUMBER.finditer(text) if m.start() > body]
        if not numbers:
            return None
        m = rng.choice(numbers)
        v = int(m.group())
        new = str(rng.choice([max(v - 1, 0), v + 1, v * 2, max(v // 2, 1), 0, 1]))
        text = text[: m.start()] + new + text[m.end():]
    return text


def mutate_tokens(rng, text):
    """One to three tokens deleted, replaced or doubled."""
    for _ in range(rng.randint(1, 3)):
        spans = [(m.start(), m.end()) for m in TOKEN.finditer(text)]
        a, b = rng.choice(spans)
        token = text[a:b]
        r = rng.random()
        if r < 0.25:
            new = ""
        elif r < 0.5 and token.isdigit():
            new = rng.choice(NUMBERS)
        elif r < 0.7:
            c, d = rng.choice(spans)
            new = text[c:d]
        elif r < 0.85:
            new = rng.choice(SYNTAX)
        else:
            new = token + token
        text = text[:a] + new + text[b:]
    return text


def findings_of_run(output):
    """The lines of a run's report that say the checker missed something."""
    return [line for line in output.splitlines()
            if "finding" in line or "bra.uni" in line or "panicked" in line or "lowering bug" in line]


def findings_of_compile(result, output):
    found = []
    if result.returncode not in (0, 1):
        found.append(f"exit status {result.returncode}")
    found += [line for line in output.splitlines()
              if "panicked" in line or "lowering bug" in line or "internal" in line.lower()]
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", choices=["run", "compile"], default="run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=200, help="mutants to try")
    parser.add_argument("--ptxgen", default=os.path.join(ROOT, "target", "release", "ptxgen"))
    parser.add_argument("--out", default="/tmp/graphene-mutants", help="where kept mutants go")
    parser.add_argument("--example", action="append", default=[], metavar="NAME",
                        help="mutate only this example (e.g. pad_rows; repeatable; default: every one)")
    args = parser.parse_args()
    if not os.access(args.ptxgen, os.X_OK):
        sys.exit(f"no ptxgen at {args.ptxgen}: `cargo build --release` first, or give --ptxgen")
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    cases = [case for case in cpu_cases()
             if not args.example or os.path.basename(case[0])[: -len(".gph")] in args.example]
    if not cases:
        sys.exit(f"no example with a `// cpu:` line among {', '.join(args.example)}")
    scratch = os.path.join(args.out, f"mutant-{os.getpid()}.gph")
    kept = set()
    for _ in range(args.count):
        path, cpu_args = rng.choice(cases)
        with open(path) as f:
            source = f.read()
        if args.mode == "run":
            text = mutate_numbers(rng, source)
            command = [args.ptxgen, "run", scratch, "--check"] + cpu_args
        else:
            text = mutate_tokens(rng, source)
            command = [args.ptxgen, scratch, "-o", os.path.join(args.out, "mutant.ptx")]
            cpu_args = []
        if text is None:
            continue
        with open(scratch, "w") as f:
            f.write(text)
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=90 if args.mode == "run" else 60)
        except subprocess.TimeoutExpired:
            found = [] if args.mode == "run" else ["compile past 60 s"]
        else:
            output = result.stdout + result.stderr
            found = findings_of_run(output) if args.mode == "run" else findings_of_compile(result, output)
        if not found:
            continue
        # One finding per example and kind (numbers and registers blanked).
        key = (os.path.basename(path), tuple(sorted({re.sub(r"%\w+|\d+", "N", line)[:90] for line in found}))[:2])
        if key in kept:
            continue
        kept.add(key)
        n = len(kept)
        with open(os.path.join(args.out, f"find_{n}.gph"), "w") as f:
            f.write(text)
        with open(os.path.join(args.out, f"find_{n}.args"), "w") as f:
            f.write(" ".join(shlex.quote(a) for a in cpu_args) + "\n")
        print(f"find {n}: {os.path.basename(path)} {' '.join(cpu_args)}: {found[0][:200]}", flush=True)
    if os.path.exists(scratch):
        os.remove(scratch)
    print(f"{args.count} mutants, {len(kept)} kept in {args.out}")


if __name__ == "__main__":
    main()
