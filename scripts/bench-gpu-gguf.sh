#!/usr/bin/env bash
# GGUF models on a GPU machine: the GPU kernels (wgpu, Vulkan) against the
# CPU kernels on every core, in one process over the same texts
# (qmd-gguf-bench), and sentence-transformers (PyTorch fp32) on the GPU
# for the MiniLM shape. Two steps, as scripts/bench-gpu.sh (that machine
# has no network and takes at most 64 MiB of files along):
#
#   scripts/bench-gpu-gguf.sh pack   here: qmd-gguf-bench (stripped, xz), the
#                                    MiniLM Q8_0 GGUF, gguf-py and the
#                                    fixture maker, the Vulkan loader debs,
#                                    2,000 tldr texts, into .gpu-gguf/
#   scripts/bench-gpu-gguf.sh run    there, with .gpu-gguf/ carried: makes the
#                                    EmbeddingGemma- and Qwen3-Reranker-shaped
#                                    Q8_0 models (random weights, gguf-py),
#                                    runs the benches, writes
#                                    $OUT/gpu-gguf-results.md
#
# `run` works on a machine without a GPU too (Mesa's lavapipe), slowly; set
# BENCH_TEXTS to fewer texts. BENCH_MODELS picks the shaped models (default
# "gemma qwen3-reranker qwen3", the last qmd's expansion model's shape,
# timed generating on both devices); BENCH_SKIP_TORCH=1 leaves PyTorch out;
# BENCH_PROFILE=1 runs each model once more on the GPU alone with
# QMD_GPU_PROFILE set (each kernel's seconds); BENCH_BASELINE=FILE.xz
# runs another build of qmd-gguf-bench (say, the last commit's) on the GPU
# over the same texts first, for a before/after ratio from one run.
set -euo pipefail
cd "$(dirname "$0")/.."
pack=.gpu-gguf
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/qmd/target}"

case "${1:-}" in
pack)
    bash scripts/toolchain.sh
    cargo build --release --locked --workspace --bin qmd-gguf-bench --bin qmd-gguf-fixtures --bin qmd-bench-texts
    fixtures="$("$CARGO_TARGET_DIR/release/qmd-gguf-fixtures")"
    llama="$(bash scripts/llama-ref.sh | tail -1)/llamacpp"
    model="$(bash scripts/test-weights.sh)"
    rm -rf "$pack" && mkdir -p "$pack/debs" "$pack/model"
    xz -6 -T0 -c "$CARGO_TARGET_DIR/release/qmd-gguf-bench" >"$pack/qmd-gguf-bench.xz"
    cp "$fixtures/minilm-q8_0.gguf" "$pack/"
    cp -r "$llama/gguf-py" "$pack/gguf-py"
    rm -rf "$pack"/gguf-py/{tests,examples}
    # MiniLM's shape for PyTorch (its weights are made over there).
    cp "$model"/{config.json,tokenizer.json,tokenizer_config.json,special_tokens_map.json,vocab.txt} "$pack/model/"
    cp -r "$model"/1_Pooling "$pack/model/" 2>/dev/null || true
    cp "$model"/modules.json "$model"/sentence_bert_config.json "$pack/model/" 2>/dev/null || true
    "$CARGO_TARGET_DIR/release/qmd-bench-texts" 2000 >"$pack/texts.json"
    debs=(libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
    (cd "$pack/debs" && apt-get download "${debs[@]}" >/dev/null)
    du -sh "$pack"
    echo "carry .gpu-gguf and run: bash scripts/bench-gpu-gguf.sh run" >&2
    ;;
run)
    out="${OUT:-$pack}"
    mkdir -p "$out"
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    xz -dc "$pack/qmd-gguf-bench.xz" >"$work/bench" && chmod +x "$work/bench"
    if compgen -G "$pack/debs/*.deb" >/dev/null && [[ -e /usr/local/nvidia ]]; then
        for deb in "$pack"/debs/*.deb; do dpkg -x "$deb" /; done
        ldconfig
        export VK_DRIVER_FILES="${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}"
    fi
    count="${BENCH_TEXTS:-2000}"
    python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); json.dump(t[:int(sys.argv[2])], open(sys.argv[3],"w"))' \
        "$pack/texts.json" "$count" "$work/texts.json"
    python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); json.dump(t[:max(1,int(sys.argv[2])//20)], open(sys.argv[3],"w"))' \
        "$pack/texts.json" "$count" "$work/rank.json"
    python3 -c 'import json,sys; json.dump(["<|im_start|>user\n/no_think Expand this search query: " + q + "<|im_end|>\n<|im_start|>assistant\n" for q in ("rotate api keys", "CAP theorem tradeoffs")], open(sys.argv[1], "w"))' \
        "$work/prompts.json"
    if [[ -n "${BENCH_BASELINE:-}" ]]; then
        xz -dc "$BENCH_BASELINE" >"$work/baseline" && chmod +x "$work/baseline"
    fi
    # bench embed|rank MODEL TEXTS: this build on both sides, then the
    # baseline and the profile where asked for.
    bench() {
        if [[ -x "$work/baseline" ]]; then
            BENCH_DEVICES=gpu "$work/baseline" "$@" | sed 's/^{/{"build": "baseline", /'
        fi
        "$work/bench" "$@"
        if [[ -n "${BENCH_PROFILE:-}" ]]; then
            BENCH_DEVICES=gpu QMD_GPU_PROFILE=1 "$work/bench" "$@" | sed 's/^{/{"build": "profiled", /'
        fi
    }
    {
        echo "# GGUF on the GPU: $(date -u +%F)"
        echo
        echo '```'
        bench embed "$pack/minilm-q8_0.gguf" "$work/texts.json"
        for model in ${BENCH_MODELS:-gemma qwen3-reranker qwen3}; do
            if PYTHONPATH="$pack/gguf-py" python3 tests/models/make_gguf.py "$model" tests/fixtures/qmd-eval/docs \
                "$work/$model.gguf" --type q8_0 --size full >"$work/$model.log" 2>&1; then
                if [[ $model == gemma ]]; then
                    bench embed "$work/$model.gguf" "$work/texts.json"
                elif [[ $model == qwen3 ]]; then
                    # qmd's expansion model's shape: prompt and decode
                    # tokens/s, the KV cache on the GPU and on the CPU.
                    BENCH_DEVICES=cpu,gpu bench generate "$work/$model.gguf" "$work/prompts.json"
                else
                    bench rank "$work/$model.gguf" "$work/rank.json"
                fi
            else
                echo "{\"model\": \"$model\", \"skipped\": \"make_gguf.py failed: $(tail -1 "$work/$model.log" | tr '"' "'")\"}"
            fi
        done
        cp -r "$pack/model" "$work/minilm"
        if [[ -z "${BENCH_SKIP_TORCH:-}" ]] && python3 -c "import torch, transformers, sentence_transformers" 2>/dev/null; then
            python3 -c '
import sys, torch
from transformers import BertConfig, BertModel
torch.manual_seed(0)
BertModel(BertConfig.from_pretrained(sys.argv[1])).save_pretrained(sys.argv[1], safe_serialization=True)
' "$work/minilm"
            device=$(python3 -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")')
            python3 tests/models/torch_bench.py "$work/minilm" "$device" <"$work/texts.json" |
                python3 -c 'import json,sys; r=json.load(sys.stdin); r.pop("embeddings"); r["device"]=sys.argv[1]; r["model"]="MiniLM shape, random weights, PyTorch fp32"; print(json.dumps(r))' "$device"
        else
            echo '{"pytorch": "skipped: torch, transformers or sentence-transformers missing"}'
        fi
        echo '```'
    } 2>&1 | tee "$out/gpu-gguf-results.md"
    ;;
*)
    echo "usage: scripts/bench-gpu-gguf.sh pack|run" >&2
    exit 2
    ;;
esac
