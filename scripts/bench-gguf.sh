#!/usr/bin/env bash
# GGUF embedding and rerank throughput against llama.cpp (node-llama-cpp,
# qmd 2.8.3's runtime) on the same files, texts and cores, in one run;
# prints tables. `scripts/bench-gguf.sh rerank` (or `embed`) runs one part.
# Needs the tldr corpus (scripts/bench-corpus.sh), the test model, node and
# the llama.cpp reference (scripts/llama-ref.sh, installed on first use).
# BENCH_PYTORCH=1 adds PyTorch fp32 (scripts/python-env.sh torch: about 7 GB, once).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/qmd/target}"
BENCH_CORPUS="$(bash scripts/bench-corpus.sh)"
export BENCH_CORPUS
cargo bench --locked -p qmd-tests --bench gguf -- "$@"
