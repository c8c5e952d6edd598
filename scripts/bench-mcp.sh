#!/usr/bin/env bash
# Concurrent-load benchmark of `qmd mcp --http` on the tldr corpus
# (unpacked by scripts/bench.sh). Writes bench/mcp-results.md.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
qmd="${QMD_BIN:-$HOME/.cache/qmd/target/release/qmd}"
corpus="${BENCH_CORPUS:-$HOME/.cache/qmd/bench-corpus/tldr-pages}"
if [[ ! -d "$corpus" ]]; then
    echo "bench-mcp: no corpus at $corpus; run scripts/bench.sh once to unpack it" >&2
    exit 1
fi
python3 "$repo/scripts/bench/mcp_bench.py" --qmd "$qmd" --corpus "$corpus" --rounds "${BENCH_ROUNDS:-3}" \
    | tee "$repo/bench/mcp-results.md.partial"
mv "$repo/bench/mcp-results.md.partial" "$repo/bench/mcp-results.md"
