#!/usr/bin/env bash
# Prepares the chunking parity test (tests/tests/chunk_parity.rs), once, and
# prints where each part is, one `name=path` a line:
#
#   node_modules  qmd 2.8.3 with web-tree-sitter and the grammars it pins
#                 (tests/parity/package-lock.json), and the npm packages
#                 whose TypeScript, TSX and JavaScript sources are corpus
#   python        the test Python environment's site-packages (PyPI)
#   go            Go's standard library sources, from Debian's
#                 golang-1.19-src (no Go registry is reachable here)
#
# Rust sources come from cargo's registry (the crates of Cargo.lock).
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${XDG_CACHE_HOME:-$HOME/.cache}/qmd/chunk-parity"
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

# npm ci again only when the lock file changed.
hash="$(cat tests/parity/package.json tests/parity/package-lock.json | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$cache/npm/.qmd-lock-hash" 2>/dev/null)" != "$hash" ]; then
    rm -rf "$cache/npm"
    mkdir -p "$cache/npm"
    cp tests/parity/package.json tests/parity/package-lock.json "$cache/npm/"
    (cd "$cache/npm" && npm ci --omit=optional --ignore-scripts --legacy-peer-deps --no-audit --no-fund --silent) >&2
    echo "$hash" >"$cache/npm/.qmd-lock-hash"
fi

go_src="$cache/go/usr/share/go-1.19/src"
if [ ! -d "$go_src" ]; then
    rm -rf "$cache/go" "$cache/go-deb"
    mkdir -p "$cache/go-deb"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    (cd "$cache/go-deb" && { apt-get download golang-1.19-src || { $sudo apt-get update -qq && apt-get download golang-1.19-src; }; } >&2 2>&1)
    dpkg-deb -x "$cache"/go-deb/golang-1.19-src_*.deb "$cache/go"
    rm -rf "$cache/go-deb"
fi

py_env="$(bash scripts/python-env.sh)"
echo "node_modules=$cache/npm/node_modules"
echo "python=$("$py_env/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "go=$go_src"
