#!/usr/bin/env bash
# Installs, once, the `wasmtime` command-line runtime the edge tests and
# bench serve the `wasi:http` component with (`wasmtime serve`), and prints
# the binary's path on stdout (progress goes to stderr).
#
#   wasmtime=$(scripts/wasmtime-cli.sh)
#   "$wasmtime" serve -Scli --dir index::/index qmd-edge.wasm
#
# The version is the one the `qmd` host links (host/Cargo.toml), so the
# component is checked against the runtime users will serve it with. Built
# from crates.io with only what serving and pre-initialising need (no
# wasi-nn, debugger, explorer, winch or pulley), which halves the build.
# Lives at ${XDG_CACHE_HOME:-$HOME/.cache}/qmd/tools/wasmtime-<version>.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/^wasmtime = { version = "=\([0-9.]*\)".*/\1/p' host/Cargo.toml)
[[ -n "$version" ]] || { echo "wasmtime-cli.sh: no pinned wasmtime version in host/Cargo.toml" >&2; exit 1; }
root="${XDG_CACHE_HOME:-$HOME/.cache}/qmd/tools/wasmtime-$version"
bin="$root/bin/wasmtime"
mkdir -p "$root"

# Tests call this concurrently: one installs, the others wait for it.
exec 9>"$root/.install.lock"
flock 9

if [[ -x "$bin" ]]; then
    echo "$bin"
    exit 0
fi

echo "wasmtime-cli.sh: building wasmtime-cli $version from crates.io (once; several minutes)" >&2
# (serve needs component-model-async to build, though a WASIp2 component
# does not use it.)
features=serve,run,wizer,component-model,component-model-async,cranelift,parallel-compilation,pooling-allocator,cache
CARGO_TARGET_DIR="$root/build" cargo install --quiet --locked --root "$root" \
    --version "$version" --no-default-features --features "$features" wasmtime-cli >&2
rm -rf "$root/build"
"$bin" --version >&2
echo "$bin"
