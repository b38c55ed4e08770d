#!/usr/bin/env bash
# Makes NVIDIA's `ptxas` and `nvdisasm` available offline, for validating the
# PTX the compiler writes (no GPU and no CUDA install needed).
#
#   source scripts/nvidia-tools.sh   # exports PTXAS and NVDISASM
#   bash scripts/nvidia-tools.sh     # prints the export lines
#
# Order: tools named by $PTXAS / $NVDISASM, then tools on PATH, then the
# cache folder ${XDG_CACHE_HOME:-$HOME/.cache}/graphene/nvidia-tools, filled
# once from PyPI with `python3 -m pip install --target`:
#   nvidia-cuda-nvcc-cu12  ships ptxas 12.9 (assembles sm_70 ... sm_90)
#   nvidia-cuda-nvdisasm   ships nvdisasm 13, which no longer reads sm_70
#                          cubins (the tests check sm_70 another way)
# Sourcing is idempotent and, with a warm cache, does no network access.
# Safe under `set -euo pipefail` in the caller; returns non-zero on failure.

graphene_nvidia_tools() {
    local nvcc_wheel="${GRAPHENE_NVCC_WHEEL:-nvidia-cuda-nvcc-cu12==12.9.86}"
    local nvdisasm_wheel="${GRAPHENE_NVDISASM_WHEEL:-nvidia-cuda-nvdisasm==13.5.37}"
    local cache="${XDG_CACHE_HOME:-${HOME:-}/.cache}/graphene/nvidia-tools"
    local marker="$cache/.installed"
    local wanted="$nvcc_wheel $nvdisasm_wheel"

    # Already set up by an earlier source in this shell, or by the user.
    if [ -n "${PTXAS:-}" ] && [ -x "${PTXAS}" ] && [ -n "${NVDISASM:-}" ] && [ -x "${NVDISASM}" ]; then
        return 0
    fi

    local ptxas="${PTXAS:-}" nvdisasm="${NVDISASM:-}"
    if [ -n "$ptxas" ] && [ ! -x "$ptxas" ]; then
        echo "nvidia-tools: PTXAS=$ptxas is not an executable file" >&2
        return 1
    fi
    if [ -n "$nvdisasm" ] && [ ! -x "$nvdisasm" ]; then
        echo "nvidia-tools: NVDISASM=$nvdisasm is not an executable file" >&2
        return 1
    fi
    [ -n "$ptxas" ] || ptxas="$(command -v ptxas 2>/dev/null || true)"
    [ -n "$nvdisasm" ] || nvdisasm="$(command -v nvdisasm 2>/dev/null || true)"

    if [ -z "$ptxas" ] || [ -z "$nvdisasm" ]; then
        if [ ! -f "$marker" ] || [ "$(cat "$marker")" != "$wanted" ]; then
            echo "nvidia-tools: installing $wanted into $cache" >&2
            mkdir -p "$cache" || return 1
            PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet \
                --disable-pip-version-check --no-deps --upgrade \
                --target "$cache" "$nvcc_wheel" "$nvdisasm_wheel" >&2 || {
                echo "nvidia-tools: pip install failed" >&2
                return 1
            }
            # Stable paths, whatever folders the wheels use inside.
            mkdir -p "$cache/bin" || return 1
            local tool found
            for tool in ptxas nvdisasm; do
                found="$(find "$cache/nvidia" -path "*/bin/$tool" -type f | sort | head -n 1)"
                if [ -z "$found" ]; then
                    echo "nvidia-tools: the wheels hold no $tool" >&2
                    return 1
                fi
                chmod +x "$found" && ln -sf "$found" "$cache/bin/$tool" || return 1
            done
            printf '%s' "$wanted" >"$marker" || return 1
        fi
        [ -n "$ptxas" ] || ptxas="$cache/bin/ptxas"
        [ -n "$nvdisasm" ] || nvdisasm="$cache/bin/nvdisasm"
    fi

    if ! "$ptxas" --version >/dev/null 2>&1 || ! "$nvdisasm" --version >/dev/null 2>&1; then
        echo "nvidia-tools: $ptxas or $nvdisasm does not run" >&2
        return 1
    fi
    export PTXAS="$ptxas" NVDISASM="$nvdisasm"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    # Executed rather than sourced: set up, then print what to export.
    set -euo pipefail
    graphene_nvidia_tools
    printf 'export PTXAS=%q\nexport NVDISASM=%q\n' "$PTXAS" "$NVDISASM"
else
    graphene_nvidia_tools
fi
