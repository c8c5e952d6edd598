#!/usr/bin/env bash
# Embedding speed next to sentence-transformers (PyTorch fp32) on a GPU
# machine (an NVIDIA H100 with 16 cores; ../shared/notes/gpu-benchmarking.md
# says how it was reached). Two steps, because that machine has no network
# and takes at most 64 MiB of files along:
#
#   scripts/bench-gpu.sh pack     here: builds qmd and qmd-embed, packs them
#                                 (stripped, xz), the Vulkan loader debs, the
#                                 MiniLM config/tokenizer and 4,000 tldr pages
#                                 into .gpu/ (git-ignored)
#   scripts/bench-gpu.sh run      there, from the repository root with .gpu/
#                                 carried along: installs the Vulkan loader,
#                                 makes a MiniLM-shaped model with random
#                                 weights (transformers; real weights are too
#                                 big to carry), runs scripts/bench/gpu.py and
#                                 writes $OUT/gpu-results.md (or .gpu/)
#
# `run` also works on a machine without a GPU with BENCH_SKIP_GPU=1 (the CPU
# rows only) and BENCH_MODEL_DIR=<a model directory> (instead of making
# random weights with transformers), which is how the script is checked.
set -euo pipefail
cd "$(dirname "$0")/.."
pack=.gpu
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/qmd/target}"

case "${1:-}" in
pack)
    bash scripts/toolchain.sh
    cargo build --release --locked --workspace --bin qmd --bin qmd-embed
    model="$(bash scripts/test-weights.sh)"
    corpus="$(bash scripts/bench-corpus.sh)"
    rm -rf "$pack" && mkdir -p "$pack/model" "$pack/debs"
    for bin in qmd qmd-embed; do
        xz -6 -T0 -c "$CARGO_TARGET_DIR/release/$bin" >"$pack/$bin.xz"
    done
    # The model's shape and tokenizer; its weights are made over there.
    cp "$model"/{config.json,tokenizer.json,tokenizer_config.json,special_tokens_map.json,vocab.txt} "$pack/model/"
    # Vulkan's loader: the machine has NVIDIA's ICD but no libvulkan.
    debs=(libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
    (cd "$pack/debs" && apt-get download "${debs[@]}" >/dev/null)
    for deb in "${debs[@]}"; do
        compgen -G "$pack/debs/${deb}_*.deb" >/dev/null || { echo "bench-gpu: apt-get did not download $deb" >&2; exit 1; }
    done
    find "$corpus" -path '*/pages/*' -name '*.md' | sort | head -4000 |
        tar czf "$pack/pages.tar.gz" --transform 's|.*/pages/|pages/|' -T -
    du -sh "$pack"
    echo "carry .gpu and run: bash scripts/bench-gpu.sh run" >&2
    ;;
run)
    out="${OUT:-$pack}"
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    for bin in qmd qmd-embed; do
        xz -dc "$pack/$bin.xz" >"$work/$bin" && chmod +x "$work/$bin"
    done
    if [[ -z "${BENCH_SKIP_GPU:-}" ]]; then
        for deb in "$pack"/debs/*.deb; do dpkg -x "$deb" /; done
        ldconfig
        export VK_DRIVER_FILES="${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}"
    fi
    mkdir -p "$work/model" "$work/corpus"
    tar xzf "$pack/pages.tar.gz" -C "$work/corpus"
    if [[ -n "${BENCH_MODEL_DIR:-}" ]]; then
        cp -r "$BENCH_MODEL_DIR"/. "$work/model/"
    else
        cp "$pack"/model/* "$work/model/"
        python3 -c '
import sys, torch
from transformers import BertConfig, BertModel
torch.manual_seed(0)
BertModel(BertConfig.from_pretrained(sys.argv[1])).save_pretrained(sys.argv[1], safe_serialization=True)
' "$work/model"
    fi
    mkdir -p "$out"
    python3 scripts/bench/gpu.py --qmd "$work/qmd" --embed-bin "$work/qmd-embed" --model "$work/model" \
        --corpus "$work/corpus" ${BENCH_SKIP_GPU:+--skip-gpu} "${@:2}" | tee "$out/gpu-results.md"
    ;;
*)
    echo "usage: scripts/bench-gpu.sh pack|run [gpu.py options]" >&2
    exit 2
    ;;
esac
