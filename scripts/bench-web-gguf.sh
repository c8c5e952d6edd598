#!/usr/bin/env bash
# The browser's GGUF benchmark: MiniLM embedding in headless Chromium on the
# CPU — this project's page on the Q8_0 GGUF file and on the safetensors
# repository (the default path, quantized to Q8_0 at load), wllama (llama.cpp in wasm) on the same GGUF file and
# Transformers.js (ONNX Runtime Web) on the int8 ONNX graph — on the same
# tldr texts, in one run. Writes bench/web-gguf-results.md.
# Then SmolLM2-135M Q4_1 decoding in the page (all three engine builds) against
# the native kernels.
#   BENCH_TEXTS    texts embedded by each runtime (default 100)
#   BENCH_ROUNDS   timed runs of each, the best reported (default 3)
#   BENCH_ONLY     `embed`, `decode`, `ours` (the page's three GGUF rows: a
#                  kernel change's quick check) or `references` (wllama and
#                  Transformers.js alone): that part alone, written to
#                  bench/web-gguf-results.PART.md (the committed file is
#                  a whole run's)
#   BENCH_THREADS  wllama's threads (default 2, this machine's cores)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/web-bench-prepare.sh
(cd tests/browser/reference && npm ci --ignore-scripts --no-audit --no-fund --silent)
texts="$(mktemp)"
trap 'rm -f "$texts"' EXIT
"$CARGO_TARGET_DIR/release/qmd-bench-texts" "${BENCH_TEXTS:-100}" >"$texts"
mkdir -p bench
# A part alone (BENCH_ONLY) goes to a file of its own: the committed
# results are a whole run's.
results=bench/web-gguf-results${BENCH_ONLY:+.$BENCH_ONLY}.md
node tests/browser/bench-gguf.mjs "$texts" | tee "$results.partial"
mv "$results.partial" "$results"
