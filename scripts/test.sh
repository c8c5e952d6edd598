#!/usr/bin/env bash
# Runs every test: unit tests of the engine, the CLI end to end (through the
# WASI component), containment, crash safety, retrieval quality, the MCP
# server driven by the official Python MCP SDK, and the browser app in
# headless Chromium driven by Playwright.
set -euo pipefail
cd "$(dirname "$0")/.."
# One shared target dir outside the clone, so reruns (and CI) reuse builds.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/qmd/target}"
# Mesa's software Vulkan for the wgpu model tests where there is no GPU.
bash scripts/setup-system.sh
# Mesa complains on every device open without a runtime dir.
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
    XDG_RUNTIME_DIR="$(mktemp -d)"
    export XDG_RUNTIME_DIR
fi
cargo build --release --locked -p qmd
cargo test --release --locked --workspace
# The MCP server through the official Python MCP SDK (stdio and HTTP).
py_env="$(scripts/python-env.sh)"
QMD_BIN="$CARGO_TARGET_DIR/release/qmd" "$py_env/bin/pytest" -q tests/mcp
# The browser app (web/ + www/), served by `qmd web`, in Debian's Chromium.
bash scripts/build-web.sh
(cd tests/browser && npm ci --no-audit --no-fund --silent && npm test)
