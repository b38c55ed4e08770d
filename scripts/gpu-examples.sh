#!/usr/bin/env bash
# Runs every `// gpu:` line of the given examples (default: all) on the GPU
# with `ptxgen run --backend gpu --check` and a fresh seed per run, so that a
# kernel is checked against its f64 contract at several sizes — those the
# lines name, tuned or not — with new random inputs and poisoned outputs
# each time. Prints one line per run and a closing count; exits 1 when a
# run fails or stops.
#
#   cargo build --release --features cuda
#   bash scripts/gpu-examples.sh                     # every example
#   bash scripts/gpu-examples.sh examples/layernorm.gph
#   PTXGEN=path/to/ptxgen bash scripts/gpu-examples.sh
set -uo pipefail
cd "$(dirname "$0")/.."
ptxgen=${PTXGEN:-target/release/ptxgen}
if [ ! -x "$ptxgen" ]; then
    echo "gpu-examples.sh: no ptxgen at $ptxgen (cargo build --release --features cuda)" >&2
    exit 2
fi
passed=0
failed=0
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(examples/*.gph)
for file in "${files[@]}"; do
    while IFS= read -r line; do
        read -r -a args <<<"$line"
        seed=$(( (RANDOM << 15) | RANDOM ))
        echo "+ $file ${args[*]} --seed $seed"
        if "$ptxgen" run --backend gpu --check --seed "$seed" "${args[@]}" "$file"; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1))
        fi
    done < <(sed -n 's#^// gpu:##p' "$file")
done
echo "gpu examples: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
