#!/usr/bin/env bash
# The any-shape sweep of the GEMM examples on the GPU (docs/performance.md,
# "Any shape"): every kernel of each file, with `ptxgen run --backend gpu
# --check`, a fresh seed, and 20 (M, N, K) triples drawn from
# {1, 7, 64, 65, 127, 1000, 1009, 4095, 4096, …} — tile multiples, one past,
# one short, primes, and K not a multiple of 8 (run with `--define ALIGN=1`,
# the kernels' any-K path). Prints one line per run and a count per file;
# exits 1 when a run fails. A file with a batched kernel (`%A:[M, K, L …`)
# runs it with L = 2.
#
#   cargo build --release --features cuda
#   bash scripts/gemm-sweep.sh                          # the four GEMM examples
#   bash scripts/gemm-sweep.sh examples/gemm_f16.gph
#   PTXGEN=path/to/ptxgen bash scripts/gemm-sweep.sh
set -uo pipefail
cd "$(dirname "$0")/.."
ptxgen=${PTXGEN:-target/release/ptxgen}
if [ ! -x "$ptxgen" ]; then
    echo "gemm-sweep.sh: no ptxgen at $ptxgen (cargo build --release --features cuda)" >&2
    exit 2
fi
triples=(1,1,1 7,7,7 64,64,64 65,65,65 127,127,127 1000,1000,1000 1009,1009,1009
    4095,4095,4095 1,4095,7 4095,1,64 65,1000,1009 127,64,4095 1000,1009,1 7,127,1000
    64,65,127 1009,7,65 4096,4096,4096 128,256,8 4095,4095,64 256,128,1001)
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(examples/gemm_f16.gph examples/gemm_f16_sm90.gph
    examples/gemm_bias_relu.gph examples/gemm_bias_relu_sm90.gph)
status=0
for file in "${files[@]}"; do
    passed=0
    failed=0
    batch=()
    grep -q '%A:\[M, K, L' "$file" && batch=(--dim L=2)
    for triple in "${triples[@]}"; do
        IFS=, read -r m n k <<<"$triple"
        align=()
        [ $((k % 8)) -ne 0 ] && align=(--define ALIGN=1)
        seed=$(( (RANDOM << 15) | RANDOM ))
        out=$("$ptxgen" run --backend gpu --check --seed "$seed" --dim "M=$m" --dim "N=$n" \
            --dim "K=$k" "${batch[@]}" "${align[@]}" "$file" 2>&1)
        echo "$out" | grep -E '^(PASS|FAIL)|^error'
        passed=$((passed + $(echo "$out" | grep -c '^PASS')))
        failed=$((failed + $(echo "$out" | grep -c -E '^FAIL|^error')))
    done
    echo "sweep $file: $passed passed, $failed failed"
    [ "$failed" -eq 0 ] || status=1
done
exit $status
