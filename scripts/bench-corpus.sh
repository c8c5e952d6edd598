#!/usr/bin/env bash
# Unpacks the tldr-pages corpus once (again when the tarball changes) and
# prints its directory, for the benchmarks.
#   BENCH_CORPUS_TAR   corpus tarball (default: the one scripts/data.sh
#                      downloads, or finds under $QMD_DATA_DIR)
set -euo pipefail
tarball="${BENCH_CORPUS_TAR:-$(bash "$(dirname "$0")/data.sh" tldr)/corpora/tldr-pages.tar.gz}"
corpus_cache="$HOME/.cache/qmd/bench-corpus"
corpus="$corpus_cache/tldr-pages"
stamp="$(stat -c '%s %Y' "$tarball") $tarball"
if [[ ! -f "$corpus_cache/.stamp" || "$(cat "$corpus_cache/.stamp")" != "$stamp" ]]; then
    echo "bench: unpacking $tarball into $corpus" >&2
    rm -rf "$corpus_cache"
    mkdir -p "$corpus.partial"
    tar xzf "$tarball" -C "$corpus.partial"
    mv "$corpus.partial" "$corpus"
    printf '%s' "$stamp" >"$corpus_cache/.stamp"
fi
echo "$corpus"
