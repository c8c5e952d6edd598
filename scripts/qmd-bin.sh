#!/usr/bin/env bash
# Builds the `qmd` binary (host + embedded engine component) and prints its
# path. Built with the whole workspace's features (`--workspace --bin qmd`),
# as `cargo test --workspace` builds it: with `-p qmd` alone cargo resolves
# fewer features, so the two alternated and each recompiled qmd and its
# engine (about 3 minutes on 2 cores) in every test run.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/qmd/target}"
cargo build --release --locked --workspace --bin qmd >&2
echo "$CARGO_TARGET_DIR/release/qmd"
