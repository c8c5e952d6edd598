#!/usr/bin/env bash
# The WebAssembly kernels (core/models/src/kernels/wasm.rs and wasm_relaxed.rs,
# and k_quants' pair: simd128 and relaxed SIMD) outside a browser: the
# engine's kernel tests compiled for wasm32-wasip2 with simd128, with and
# without the relaxed-simd feature (the page's two builds), and run under
# wasmtime, which runs both. Each kernel is held to the portable one bit
# for bit, as scripts/test-arm.sh does for NEON. (The browser tests hold
# the two builds to each other and to llama.cpp through the page.) Also
# the page's load-time path for a repository: reading its safetensors
# checkpoint and quantizing it (gguf::quantize, model::bert_checkpoint).
set -euo pipefail
cd "$(dirname "$0")/.."
# A target folder of its own: these flags differ from the workspace's
# wasm32-wasip2 builds, which would otherwise rebuild each other's crates.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/qmd/target}/wasm-tests"
bash scripts/toolchain.sh
wasmtime="$(bash scripts/wasmtime-cli.sh)"
export CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS="-Ctarget-feature=+simd128"
export CARGO_TARGET_WASM32_WASIP2_RUNNER="$wasmtime run -W relaxed-simd=y"
# By default only the kernels' tests; arguments replace the filter.
if [ "$#" -eq 0 ]; then
    set -- kernels:: gguf::quantize:: model::bert_checkpoint::
fi
for features in "" relaxed-simd; do
    echo "test-wasm: qmd-models --features '$features'" >&2
    cargo test --release --locked -p qmd-models --features "$features" --target wasm32-wasip2 --lib -- "$@"
done
