#!/usr/bin/env bash
# The browser's GGUF benchmark: MiniLM embedding in headless Chromium on the
# CPU — this project's page on the Q8_0 GGUF file and on the f32 safetensors
# repository, and wllama 3.8.1 (llama.cpp in wasm) on the same GGUF file —
# on the same tldr texts, in one run. Writes bench/web-gguf-results.md.
# Then SmolLM2-135M Q4_1 decoding in the page (both engine builds) against
# the native kernels.
#   BENCH_TEXTS    texts embedded by each runtime (default 200)
#   BENCH_ONLY     `embed` or `decode`: that part alone
#   BENCH_THREADS  wllama's threads (default 2, this machine's cores)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/web-bench-prepare.sh
(cd tests/browser/reference && npm ci --no-audit --no-fund --silent)
texts="$(mktemp)"
trap 'rm -f "$texts"' EXIT
"$CARGO_TARGET_DIR/release/qmd-bench-texts" "${BENCH_TEXTS:-200}" >"$texts"
mkdir -p bench
node tests/browser/bench-gguf.mjs "$texts" | tee bench/web-gguf-results.md.partial
mv bench/web-gguf-results.md.partial bench/web-gguf-results.md
