#!/usr/bin/env bash
# Times examples/gemm_f16.gph with `ptxgen bench` and cuBLAS (PyTorch's torch.matmul)
# in the same run, on the sizes of docs/performance.md, and prints one table with the
# ratio. Needs a GPU, PyTorch, and a `ptxgen` built with the `cuda` feature:
#
#   cargo build --release --features cuda
#   bash benches/gemm_vs_cublas.sh                        # default tile sizes
#   bash benches/gemm_vs_cublas.sh -D STAGES=4            # extra flags go to ptxgen bench
#   PTXGEN=path/to/ptxgen KERNEL=gemm_f16_f16out bash benches/gemm_vs_cublas.sh
#   FILE=examples/gemm_f16_sm90.gph KERNEL=gemm_f16_sm90 bash benches/gemm_vs_cublas.sh
#
# Both sides use the same method: warm-up, CUDA events around each launch, the median
# of REPS launches, input sets rotated so the L2 cache does not flatter the result,
# one process per size.
set -euo pipefail
cd "$(dirname "$0")/.."

ptxgen=${PTXGEN:-target/release/ptxgen}
kernel=${KERNEL:-gemm_f16}
file=${FILE:-examples/gemm_f16.gph}
reps=${REPS:-100}
sizes=${SIZES:-"1024x1024x1024 2048x2048x2048 4096x4096x4096 8192x8192x8192 5120x5120x2048 5376x5376x2048"}

if [[ ! -x $ptxgen ]]; then
    echo "gemm_vs_cublas.sh: no ptxgen at $ptxgen (build with --features cuda, or set PTXGEN)" >&2
    exit 2
fi

rows=$(mktemp)
trap 'rm -f "$rows" "$rows.json"' EXIT
for size in $sizes; do
    IFS=x read -r m n k <<<"$size"
    "$ptxgen" bench "$file" --kernel "$kernel" --dim "M=$m" --dim "N=$n" --dim "K=$k" \
        --reps "$reps" --json --color never "$@" >>"$rows"
done
# Each bench printed a JSON array; join them into one for the comparison script.
python3 - "$rows" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
decoder, rows, i = json.JSONDecoder(), [], 0
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    value, i = decoder.raw_decode(text, i)
    rows.extend(value)
json.dump(rows, open(sys.argv[1] + ".json", "w"))
EOF
python3 benches/cublas_gemm.py --isolate --reps "$reps" --ours "$rows.json" $(tr x x <<<"$sizes")
