#!/usr/bin/env bash
# `query` latency with and without query expansion (cold CLI, cached, the
# warm MCP server) on qmd's eval notes. Writes bench/expansion-results.md.
# BENCH_GENERATOR=path.gguf measures another generator (qmd's 1.7B model,
# where it can be downloaded); the default is SmolLM2-135M-Instruct Q4_1.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/qmd/target}"
qmd="${QMD_BIN:-$(bash "$repo/scripts/qmd-bin.sh")}"
generator="${BENCH_GENERATOR:-$(bash "$repo/scripts/test-weights.sh" smollm2)}"
embedder="$(bash "$repo/scripts/test-weights.sh")"
python3 "$repo/scripts/bench/expansion_bench.py" --qmd "$qmd" --generator "$generator" --embedder "$embedder" \
    --queries "${BENCH_QUERIES:-8}" | tee "$repo/bench/expansion-results.md.partial"
mv "$repo/bench/expansion-results.md.partial" "$repo/bench/expansion-results.md"
