#!/usr/bin/env bash
# Prints the path of the wasm-bindgen CLI matching the `wasm-bindgen` crate
# pinned in web/Cargo.toml, installing it into ~/.cache/qmd/tools once
# (about 6 minutes on 2 cores). Not `--locked`: the crate's lockfile names a
# webpki-roots release the crates.io mirror here does not have.
set -euo pipefail
version="$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)".*/\1/p' "$(dirname "$0")/../web/Cargo.toml")"
root="${XDG_CACHE_HOME:-$HOME/.cache}/qmd/tools/wasm-bindgen-$version"
if [ ! -x "$root/bin/wasm-bindgen" ]; then
    echo "installing wasm-bindgen-cli $version into $root" >&2
    cargo install wasm-bindgen-cli --version "$version" --root "$root" >&2
fi
echo "$root/bin/wasm-bindgen"
