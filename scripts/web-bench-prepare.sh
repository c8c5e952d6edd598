# Sourced by the browser benchmarks (bench-web.sh, bench-web-gguf.sh), from
# the repository root: the system packages, qmd and the test binaries, the
# browser app, the tldr corpus (exported as BENCH_CORPUS) and the browser
# test harness.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/qmd/target}"
bash scripts/setup-system.sh
cargo build --release --locked --workspace --bins
bash scripts/build-web.sh
BENCH_CORPUS="$(bash scripts/bench-corpus.sh)"
export BENCH_CORPUS
(cd tests/browser && npm ci --no-audit --no-fund --silent)
