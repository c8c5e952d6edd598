#!/usr/bin/env bash
# A bounded fuzzing pass over the parsers and index readers
# (tests/src/fuzz.rs): N mutated inputs per target (default 20000), a
# fixed seed so a run repeats. Crashing inputs are saved under
# $CARGO_TARGET_DIR/fuzz-artifacts and fail the run.
#   scripts/fuzz.sh [N] [TARGET…]      QMD_FUZZ_SEED=S to vary the seed
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/qmd/target}"
iterations="${1:-20000}"
shift || true
# Workspace-wide features, as `cargo test --workspace` resolves them: with
# `-p qmd-tests` alone cargo resolves them differently and builds its own
# copy of every dependency and of qmd-core.
cargo build --release --locked -q --workspace --bin qmd-fuzz
"$CARGO_TARGET_DIR/release/qmd-fuzz" --iterations "$iterations" --seed "${QMD_FUZZ_SEED:-1}" \
    --artifacts "$CARGO_TARGET_DIR/fuzz-artifacts" "$@"
