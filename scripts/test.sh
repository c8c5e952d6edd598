#!/usr/bin/env bash
# Runs every test: unit tests of the engine, the CLI end to end (through the
# WASI component), containment, crash safety, damage and fuzzing passes,
# retrieval quality, the MCP server driven by the official Python MCP SDK,
# the edge component under `wasmtime serve`, and the browser app in
# headless Chromium driven by Playwright.
set -euo pipefail
cd "$(dirname "$0")/.."
# One shared target dir outside the clone, so reruns (and CI) reuse builds.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/qmd/target}"
bash scripts/toolchain.sh
# Mesa's software Vulkan for the wgpu model tests where there is no GPU.
bash scripts/setup-system.sh
# Mesa complains on every device open without a runtime dir.
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
    XDG_RUNTIME_DIR="$(mktemp -d)"
    export XDG_RUNTIME_DIR
fi
# The BEIR data sets of the retrieval tests (downloaded once, or
# $QMD_DATA_DIR). Without them those tests are reported as ignored; in CI
# a missing data set fails the run.
if ! bash scripts/data.sh beir >/dev/null; then
    if [ "${CI:-}" = true ]; then
        echo "test.sh: the BEIR data sets are missing (CI=true)" >&2
        exit 1
    fi
    echo "test.sh: BEIR data sets unavailable; the retrieval tests that need them will be ignored" >&2
fi
# Each step's time, printed at the end (and when a step fails).
steps=()
suite_start=$SECONDS
step() {
    local name="$1" start=$SECONDS
    shift
    "$@"
    steps+=("$(printf '%-28s %5d s' "$name" $((SECONDS - start)))")
}
# cargo test's time per test binary (the slowest first), for the report.
binary_times_file="$(mktemp)"
report_steps() {
    echo
    if [ -s "$binary_times_file" ]; then
        echo "cargo test, the slowest test binaries (building them comes first):"
        sort -rn "$binary_times_file" | head -12 | sed 's/^/  /'
    fi
    rm -f "$binary_times_file"
    echo "test.sh step times:"
    printf '  %s\n' "${steps[@]}"
    printf '  %-28s %5d s\n' total $((SECONDS - suite_start))
}
# Passes cargo test's output through, noting when each test binary starts
# ("Running …", "Doc-tests …") and so how long each took.
time_test_binaries() {
    local current="building the tests" start=$SECONDS line
    while IFS= read -r line; do
        printf '%s\n' "$line"
        if [[ $line =~ ^[[:space:]]+(Running|Doc-tests)[[:space:]]+(.+)$ ]]; then
            printf '%5d s  %s\n' $((SECONDS - start)) "$current" >>"$binary_times_file"
            current="${BASH_REMATCH[2]/$CARGO_TARGET_DIR\//}"
            start=$SECONDS
        fi
    done
    printf '%5d s  %s\n' $((SECONDS - start)) "$current" >>"$binary_times_file"
}
cargo_test() {
    cargo test --release --locked --workspace --no-fail-fast 2>&1 | time_test_binaries
}
trap report_steps EXIT
# No import circle between files beyond the model code's known ones (issue M).
step "module cycles" python3 scripts/module-cycles.py
step "build qmd" bash scripts/qmd-bin.sh
bash scripts/test-weights.sh >/dev/null   # the test model, fetched once
step "cargo test" cargo_test
# The AArch64 kernels, cross-compiled and run under qemu-user.
step "arm kernels (qemu)" bash scripts/test-arm.sh
# The browser's and edge's kernels (simd128, relaxed SIMD) under wasmtime.
step "wasm kernels (wasmtime)" bash scripts/test-wasm.sh
# Bounded fuzzing pass over the parsers and index readers (scripts/fuzz.sh).
step "fuzz" bash scripts/fuzz.sh "${QMD_FUZZ_ITERATIONS:-100000}"
# The MCP server through the official Python MCP SDK (stdio and HTTP).
py_env="$(scripts/python-env.sh)"
step "mcp (pytest)" env QMD_BIN="$CARGO_TARGET_DIR/release/qmd" QMD_TEST_MODEL_DIR="$(scripts/test-weights.sh)" \
    "$py_env/bin/pytest" -q tests/mcp
# The edge component under `wasmtime serve` (wasmtime-cli built once from
# crates.io), against `qmd mcp --http` and the CLI.
step "edge (pytest)" env QMD_BIN="$CARGO_TARGET_DIR/release/qmd" WASMTIME_BIN="$(scripts/wasmtime-cli.sh)" \
    QMD_TEST_MODEL_DIR="$(scripts/test-weights.sh)" "$py_env/bin/pytest" -q tests/edge
# The browser app (web/ + www/), served by `qmd web`, in Debian's Chromium.
step "build web" bash scripts/build-web.sh
browser_tests() (
    cd tests/browser
    # npm ci only when the lock file changed since the last install.
    local stamp=node_modules/.qmd-lock-hash hash
    hash="$(sha256sum package-lock.json | cut -d' ' -f1)"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$hash" ]; then
        npm ci --no-audit --no-fund --silent
        echo "$hash" >"$stamp"
    fi
    npm test
)
step "browser (playwright)" browser_tests
