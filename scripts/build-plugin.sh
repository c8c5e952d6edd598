#!/usr/bin/env bash
# Builds the engine component for plugin hosts and prints its path:
#   scripts/build-plugin.sh        WIT world `tools`: every engine operation
#                                  (as the component inside `qmd` exports them)
#   scripts/build-plugin.sh mcp    WIT world `mcp`: qmd's four MCP tools, for
#                                  hosts that make each export an agent's tool
#                                  (Wassette); see host/plugin/policy.yaml
# Neither imports anything beyond WASI. See "Loading the component into a
# plugin host" in the README.
set -euo pipefail
cd "$(dirname "$0")/.."
world="${1:-tools}"
case "$world" in
    tools) feature=plugin ;;
    mcp) feature=mcp ;;
    *) echo "build-plugin.sh: unknown world '$world' (tools or mcp)" >&2; exit 2 ;;
esac
target="${CARGO_TARGET_DIR:-$HOME/.cache/qmd/target}/plugin"
CARGO_TARGET_DIR="$target" cargo build --locked --quiet -p qmd-core --features "$feature" \
    --target wasm32-wasip2 --profile component >&2
out="$target/qmd-$world.wasm"
cp "$target/wasm32-wasip2/component/qmd_core.wasm" "$out"
echo "$out"
