#!/usr/bin/env bash
# The browser benchmark: builds qmd and the app, then times the app in
# headless Chromium against the native CLI on the qmd eval docs and the
# English tldr pages. Writes bench/web-results.md.
#   BENCH_EMBED_DOCS   tldr pages embedded on both sides per run (default 100)
#   BENCH_EMBED_RUNS   embedding runs, sides taking turns (default 3)
#   BENCH_QUERY_RUNS   runs of each query set (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/web-bench-prepare.sh
mkdir -p bench
node tests/browser/bench.mjs "$BENCH_CORPUS" | tee bench/web-results.md.partial
mv bench/web-results.md.partial bench/web-results.md
