#!/usr/bin/env bash
# Builds the engine component for plugin hosts (WIT world `tools`: the same
# exports as the one embedded in `qmd`, and no imports beyond WASI) and
# prints its path. See "Loading the component into a plugin host" in the README.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$HOME/.cache/qmd/target}/plugin"
CARGO_TARGET_DIR="$target" cargo build --locked --quiet -p qmd-core --features plugin \
    --target wasm32-wasip2 --profile component >&2
cp "$target/wasm32-wasip2/component/qmd_core.wasm" "$target/qmd-tools.wasm"
echo "$target/qmd-tools.wasm"
