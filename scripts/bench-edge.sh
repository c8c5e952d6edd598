#!/usr/bin/env bash
# The edge component under `wasmtime serve` against `qmd mcp --http`, keyword
# and hybrid queries, on tldr-pages' `pages/common` (unpacked by
# scripts/bench.sh), embedded with the test weights (all-MiniLM-L6-v2).
# Writes bench/edge-results.md.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
qmd="${QMD_BIN:-${CARGO_TARGET_DIR:-$HOME/.cache/qmd/target}/release/qmd}"
corpus="${BENCH_CORPUS:-$HOME/.cache/qmd/bench-corpus/tldr-pages/pages/common}"
if [[ ! -d "$corpus" ]]; then
    echo "bench-edge: no corpus at $corpus; run scripts/bench.sh once to unpack it" >&2
    exit 1
fi
wasmtime="$("$repo/scripts/wasmtime-cli.sh")"
model="$("$repo/scripts/test-weights.sh")"
python3 "$repo/scripts/bench/edge_bench.py" --qmd "$qmd" --wasmtime "$wasmtime" --corpus "$corpus" \
    --model "$model" --rounds "${BENCH_ROUNDS:-3}" | tee "$repo/bench/edge-results.md.partial"
mv "$repo/bench/edge-results.md.partial" "$repo/bench/edge-results.md"
