#!/usr/bin/env bash
# Builds `qmd` (host + embedded engine component) and runs it on qmd's eval
# notes (tests/fixtures/qmd-eval/docs): add a collection, search, get. The
# binary ends up in $CARGO_TARGET_DIR/release/qmd (default
# ~/.cache/qmd/target/release/qmd).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/qmd/target}"
bash scripts/toolchain.sh
qmd="$(bash scripts/qmd-bin.sh)"
demo="$(mktemp -d)"
trap 'rm -rf "$demo"' EXIT
export XDG_CACHE_HOME="$demo/cache" XDG_CONFIG_HOME="$demo/config"
"$qmd" collection add tests/fixtures/qmd-eval/docs --name eval
"$qmd" search "CAP theorem" --files
"$qmd" search "consistency vs availability tradeoffs" -n 2
"$qmd" get "qmd://eval/distributed-systems-overview.md:1:5"
echo
echo "Built $qmd ($(du -h "$qmd" | cut -f1))"
