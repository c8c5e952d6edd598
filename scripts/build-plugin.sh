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
mkdir -p "$target"
out="$target/qmd-$world.wasm"
# Both worlds build to the same cargo output file, and callers (tests) run
# at once: hold one lock from build to copy, so a `tools` build is never
# copied after an `mcp` build replaced it, and rename into place, so no
# reader ever sees a half-written component.
exec 9>"$target/.build-plugin.lock"
flock 9
CARGO_TARGET_DIR="$target" cargo build --locked --quiet -p qmd-core --features "$feature" \
    --target wasm32-wasip2 --profile component >&2
cp "$target/wasm32-wasip2/component/qmd_core.wasm" "$out.tmp.$$"
mv -f "$out.tmp.$$" "$out"
echo "$out"
