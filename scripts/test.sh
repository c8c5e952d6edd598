#!/usr/bin/env bash
# Runs every test: unit tests of the engine, the CLI end to end (through the
# WASI component), containment, crash safety and retrieval quality.
set -euo pipefail
cd "$(dirname "$0")/.."
# One shared target dir outside the clone, so reruns (and CI) reuse builds.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/qmd/target}"
cargo build --release --locked -p qmd
cargo test --release --locked --workspace
