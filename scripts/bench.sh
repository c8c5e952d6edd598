#!/usr/bin/env bash
# Benchmarks the qmd binary on the tldr-pages corpus (38,405 .md files):
# index time and peak RSS, index size, open cost, CLI search latency, and a
# grep baseline. Prints a Markdown table and writes it to bench/results.md.
# See bench/README.md for what each number means.
#
# Environment:
#   QMD_BIN            binary to measure (default: $HOME/.cache/qmd/target/release/qmd,
#                      built with `cargo build --release -p qmd` if missing)
#   BENCH_CORPUS_TAR   corpus tarball (default: scripts/data.sh's)
#   BENCH_INDEX_RUNS   full index runs, median reported (default 3)
#   BENCH_OPEN_RUNS    runs of each open-cost command (default 20)
#   BENCH_QUERY_RUNS   runs per query, the first one a warm-up (default 3)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target_dir="$HOME/.cache/qmd/target"
qmd="${QMD_BIN:-$target_dir/release/qmd}"

if [[ ! -x "$qmd" ]]; then
    if [[ -n "${QMD_BIN:-}" ]]; then
        echo "bench: QMD_BIN=$qmd is not an executable" >&2
        exit 1
    fi
    echo "bench: building qmd into $target_dir" >&2
    (cd "$repo" && bash scripts/toolchain.sh && CARGO_TARGET_DIR="$target_dir" cargo build --release -p qmd)
fi

corpus="$(bash "$repo/scripts/bench-corpus.sh")"

# Isolated XDG cache, config and home, removed on exit.
home="$(mktemp -d "${TMPDIR:-/tmp}/qmd-bench.XXXXXX")"
trap 'rm -rf "$home"' EXIT

mkdir -p "$repo/bench"
python3 "$repo/scripts/bench/bench.py" \
    --qmd "$qmd" \
    --corpus "$corpus" \
    --home "$home" \
    --index-runs "${BENCH_INDEX_RUNS:-3}" \
    --open-runs "${BENCH_OPEN_RUNS:-20}" \
    --query-runs "${BENCH_QUERY_RUNS:-3}" \
    | tee "$repo/bench/results.md.partial"
mv "$repo/bench/results.md.partial" "$repo/bench/results.md"
