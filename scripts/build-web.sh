#!/usr/bin/env bash
# Builds the browser app into $CARGO_TARGET_DIR/www: the engine for
# wasm32-unknown-unknown (web/) in its two builds, their wasm-bindgen glue
# and the static files of www/. No wasm-opt: Debian's binaryen 108 breaks the externref table of
# wasm-bindgen 0.2.130 output ("WebAssembly.Table.set(): Argument 1 is
# invalid"), for a 10% smaller gzip that is not worth a newer binaryen.
# `qmd web` serves that directory; it is built too, so a fresh machine
# needs just this and `qmd web`.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/qmd/target}"
bash scripts/toolchain.sh
out="$CARGO_TARGET_DIR/www"
bindgen="$(scripts/wasm-bindgen.sh)"

bash scripts/qmd-bin.sh >/dev/null
staging="$(mktemp -d)"
trap 'rm -rf "$staging"' EXIT
# Three builds of the engine (www/engine.js picks one in the page): pkg/ on
# simd128 alone, pkg-relaxed/ with relaxed SIMD's 8-bit dot product for
# the quantized products. Only qmd-core and qmd-web differ between them,
# so the second build reuses every dependency of the first.
for build in pkg:"" pkg-relaxed:relaxed-simd; do
    folder="${build%%:*}" features="${build#*:}"
    cargo build --profile web --locked -p qmd-web --target wasm32-unknown-unknown ${features:+--features "$features"}
    "$bindgen" --target web --no-typescript --remove-name-section --remove-producers-section \
        --out-dir "$staging/$folder" "$CARGO_TARGET_DIR/wasm32-unknown-unknown/web/qmd_web.wasm"
done
# The third, pkg-threads/: pkg-relaxed/ with threads, CPU only (no WebGPU:
# wgpu's browser types cannot cross threads). Wasm atomics and a shared
# memory need the standard library rebuilt with them (-Zbuild-std, from the
# toolchain's rust-src; RUSTC_BOOTSTRAP lets the pinned stable toolchain
# take that one unstable flag), and every crate is built with other flags,
# so in a target folder of its own. The linker is told what wasm-bindgen's
# thread support expects (rustc 1.95 passes none of it for +atomics): an
# imported shared memory, and the thread-local storage symbols each thread
# initialises its own copy with. The memory may grow to 4 GiB, as the other
# builds' can (a shared memory must declare its maximum).
threads_target="$CARGO_TARGET_DIR/web-threads"
RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR="$threads_target" \
    CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS='--cfg getrandom_backend="wasm_js" -C target-feature=+simd128,+atomics,+bulk-memory,+mutable-globals -C link-arg=--shared-memory -C link-arg=--import-memory -C link-arg=--max-memory=4294967296 -C link-arg=--export=__wasm_init_tls -C link-arg=--export=__tls_size -C link-arg=--export=__tls_align -C link-arg=--export=__tls_base' \
    cargo build --profile web --locked -p qmd-web --target wasm32-unknown-unknown \
    --no-default-features --features threads -Zbuild-std=panic_abort,std
"$bindgen" --target web --no-typescript --remove-name-section --remove-producers-section \
    --out-dir "$staging/pkg-threads" "$threads_target/wasm32-unknown-unknown/web/qmd_web.wasm"
# The code grammars of `--chunk-strategy auto`, a module of their own
# (web/grammars) that the engine's Worker loads only to chunk code. Their C
# needs libc headers, which wasm32-unknown-unknown lacks: tree-sitter-
# language ships a small set for it (fetched first, so its folder exists).
cargo fetch --locked --target wasm32-unknown-unknown
ts_language="$(awk '/^name = "tree-sitter-language"$/ { getline; gsub(/"/, "", $3); print $3 }' Cargo.lock)"
ts_headers="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"tree-sitter-language-$ts_language"/wasm/include | head -1)"
CFLAGS_wasm32_unknown_unknown="${CFLAGS_wasm32_unknown_unknown:--isystem $ts_headers}" \
    cargo build --profile web --locked -p qmd-web-grammars --target wasm32-unknown-unknown
"$bindgen" --target web --no-typescript --remove-name-section --remove-producers-section \
    --out-dir "$staging/grammars" "$CARGO_TARGET_DIR/wasm32-unknown-unknown/web/qmd_web_grammars.wasm"
cp www/*.html www/*.js www/*.css "$staging/"
# The service worker's cache is named after the build, so a new build
# replaces what returning visitors have cached.
build="$(find "$staging" -type f | sort | xargs cat | sha256sum | cut -c1-12)"
sed -i "s/__QMD_BUILD__/$build/" "$staging/sw.js"
rm -rf "$out"
mkdir -p "$(dirname "$out")"
cp -r "$staging" "$out"
chmod -R a+rX "$out"
echo "built $out ($(du -sh "$out" | cut -f1), wasm $(stat -c %s "$out/pkg/qmd_web_bg.wasm") bytes, relaxed $(stat -c %s "$out/pkg-relaxed/qmd_web_bg.wasm"), threads $(stat -c %s "$out/pkg-threads/qmd_web_bg.wasm"), grammars $(stat -c %s "$out/grammars/qmd_web_grammars_bg.wasm"))" >&2
