#!/usr/bin/env bash
# The large data sets of the retrieval tests and benchmarks, in one folder:
#   eval/scifact/, eval/nfcorpus/     BEIR (corpus.jsonl, queries.jsonl, qrels/*.tsv)
#   corpora/tldr-pages.tar.gz         tldr-pages (pages*/ + LICENSE.md)
# Prints that folder on stdout; progress goes to stderr.
#
#   scripts/data.sh [beir|tldr|all]   (default: all)
#
# QMD_DATA_DIR names a local copy in that layout (CI points it at the
# shared data beside the clone); it is checked, never written. Otherwise
# missing sets are downloaded from their public sources into
# ${XDG_CACHE_HOME:-~/.cache}/qmd/data, each moved into place only when
# complete, so an interrupted download is redone.
set -euo pipefail
want="${1:-all}"
case "$want" in beir|tldr|all) ;; *) echo "usage: scripts/data.sh [beir|tldr|all]" >&2; exit 2 ;; esac

# BEIR's own downloads (UKP Lab, TU Darmstadt), as the beir package uses.
BEIR_URL=https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets
# tldr-pages at the commit the benchmarks were measured on.
TLDR_COMMIT=08e345f42639f67d99282813247ac670dc6e87cb
TLDR_URL="https://github.com/tldr-pages/tldr/archive/$TLDR_COMMIT.tar.gz"

beir_ok() { [[ -f "$1/corpus.jsonl" && -f "$1/queries.jsonl" && -f "$1/qrels/test.tsv" ]]; }

if [[ -n "${QMD_DATA_DIR:-}" ]]; then
    root="$QMD_DATA_DIR"
    missing=()
    if [[ "$want" != tldr ]]; then
        for set in scifact nfcorpus; do beir_ok "$root/eval/$set" || missing+=("eval/$set"); done
    fi
    if [[ "$want" != beir ]]; then
        [[ -f "$root/corpora/tldr-pages.tar.gz" ]] || missing+=("corpora/tldr-pages.tar.gz")
    fi
    if [[ ${#missing[@]} -gt 0 ]]; then
        echo "data.sh: QMD_DATA_DIR=$root lacks ${missing[*]}" >&2
        exit 1
    fi
    echo "$root"
    exit 0
fi

root="${XDG_CACHE_HOME:-$HOME/.cache}/qmd/data"
mkdir -p "$root/eval" "$root/corpora"
work="$(mktemp -d "$root/.fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT

fetch() { # url file
    echo "data.sh: downloading $1" >&2
    if ! curl -fL --retry 3 --progress-bar -o "$2" "$1"; then
        echo "data.sh: could not download $1" >&2
        return 1
    fi
}

if [[ "$want" != tldr ]]; then
    for set in scifact nfcorpus; do
        beir_ok "$root/eval/$set" && continue
        fetch "$BEIR_URL/$set.zip" "$work/$set.zip"
        python3 -m zipfile -e "$work/$set.zip" "$work/unzipped-$set"
        beir_ok "$work/unzipped-$set/$set" || { echo "data.sh: $set.zip does not hold the BEIR layout" >&2; exit 1; }
        rm -rf "$root/eval/$set"
        mv "$work/unzipped-$set/$set" "$root/eval/$set"
    done
fi

if [[ "$want" != beir && ! -f "$root/corpora/tldr-pages.tar.gz" ]]; then
    fetch "$TLDR_URL" "$work/tldr.tar.gz"
    mkdir "$work/tldr"
    # The archive's top folder is tldr-<commit>/; keep the pages and the licence.
    tar xzf "$work/tldr.tar.gz" -C "$work/tldr" --strip-components=1 --wildcards '*/pages*' '*/LICENSE.md'
    tar czf "$work/tldr-pages.tar.gz" -C "$work/tldr" .
    mv "$work/tldr-pages.tar.gz" "$root/corpora/tldr-pages.tar.gz"
fi
echo "$root"
