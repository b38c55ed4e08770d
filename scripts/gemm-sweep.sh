#!/usr/bin/env bash
# The any-shape sweep of the GEMM examples on the GPU (docs/performance.md,
# "Any shape"): every kernel of each file (variants included: every
# majorness, bf16), with `ptxgen run --backend gpu --check`, a fresh seed,
# and 40 (M, N, K) triples drawn from {1, 7, 64, 65, 127, 1000, 1009, 4095,
# 4096, …} — tile multiples, one past, one short, primes, and contiguous
# dims that are not multiples of 8. Each kernel runs with its default
# ALIGN = 8 where its launch requirement holds, and with `--define ALIGN=1`
# (the any-size path) where the launch refuses. Prints one line per run and
# a count per file; exits 1 when a run fails. A batched kernel (its name
# says `batched`) runs with L = 2. With LEADING=1 every run takes
# `--define LD=1` and rows a leading dimension apart: LDA = K rounded up to
# a multiple of 8, LDB 8 more (gemm_f16_tma_sm90's any-K form).
#
#   cargo build --release --features cuda
#   bash scripts/gemm-sweep.sh                          # the four GEMM examples
#   bash scripts/gemm-sweep.sh examples/gemm_f16.gph
#   PTXGEN=path/to/ptxgen bash scripts/gemm-sweep.sh
#   KERNELS="gemm_f16_rr gemm_f16_cc" bash scripts/gemm-sweep.sh examples/gemm_f16.gph
#   LEADING=1 KERNELS=gemm_f16_tma_sm90 bash scripts/gemm-sweep.sh examples/gemm_f16_tma_sm90.gph
set -uo pipefail
cd "$(dirname "$0")/.."
ptxgen=${PTXGEN:-target/release/ptxgen}
if [ ! -x "$ptxgen" ]; then
    echo "gemm-sweep.sh: no ptxgen at $ptxgen (cargo build --release --features cuda)" >&2
    exit 2
fi
triples=(1,1,1 7,7,7 64,64,64 65,65,65 127,127,127 1000,1000,1000 1009,1009,1009
    4095,4095,4095 1,4095,7 4095,1,64 65,1000,1009 127,64,4095 1000,1009,1 7,127,1000
    64,65,127 1009,7,65 4096,4096,4096 128,256,8 4095,4095,64 256,128,1001
    1,64,65 7,1000,127 64,1009,7 65,4095,1 127,1,1000 1000,7,4095 1009,65,64
    4095,127,1009 1,1009,4095 7,65,1000 64,127,1009 65,7,4095 127,1000,64 1000,64,65
    1009,4095,127 4095,1000,7 1000,4095,1009 64,1,1 8,8,8 136,264,72)
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(examples/gemm_f16.gph examples/gemm_f16_sm90.gph
    examples/gemm_bias_relu.gph examples/gemm_bias_relu_sm90.gph)
status=0
for file in "${files[@]}"; do
    passed=0
    failed=0
    kernels=${KERNELS:-$(sed -n 's/^kernel \([A-Za-z0-9_]*\).*/\1/p' "$file")}
    for triple in "${triples[@]}"; do
        IFS=, read -r m n k <<<"$triple"
        for kernel in $kernels; do
            batch=()
            [[ $kernel == *batched* ]] && batch=(--dim L=2)
            if [ "${LEADING:-0}" = 1 ]; then
                lda=$(( (k + 7) / 8 * 8 ))
                batch+=(--define LD=1 --dim "LDA=$lda" --dim "LDB=$((lda + 8))")
            fi
            seed=$(( (RANDOM << 15) | RANDOM ))
            run=("$ptxgen" run --backend gpu --check --seed "$seed" --kernel "$kernel"
                --dim "M=$m" --dim "N=$n" --dim "K=$k" "${batch[@]}" "$file")
            out=$("${run[@]}" 2>&1)
            if echo "$out" | grep -q 'is not a multiple of'; then
                out=$("${run[@]}" --define ALIGN=1 2>&1)
            fi
            echo "$out" | grep -E '^(PASS|FAIL)|^error'
            passed=$((passed + $(echo "$out" | grep -c '^PASS')))
            failed=$((failed + $(echo "$out" | grep -c -E '^FAIL|^error')))
        done
    done
    echo "sweep $file: $passed passed, $failed failed"
    [ "$failed" -eq 0 ] || status=1
done
exit $status
