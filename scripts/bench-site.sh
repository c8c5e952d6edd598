#!/usr/bin/env bash
# The static-site benchmark: `qmd site build` next to Pagefind 1.6.0 on
# the same HTML sites (BEIR SciFact and NFCorpus, one page per document; the
# English tldr pages; an MDN-sized site of 14,000 pages made of all three),
# keyword tier and keyword + semantic tier. Writes bench/site-results.md
# (BENCH_SITES=name,name: those sites alone, bench/site-results.NAME+NAME.md).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/qmd/target}"
qmd="$(bash scripts/qmd-bin.sh)"
data="$(bash scripts/data.sh all)"
corpus="$(bash scripts/bench-corpus.sh)"
# The semantic tier is distilled from all-MiniLM-L6-v2 (the test weights).
model="${BENCH_MODEL_DIR:-$(bash scripts/test-weights.sh)}"
tools="$HOME/.cache/qmd/tools/pagefind-1.6.0"
if [[ ! -x "$tools/node_modules/.bin/pagefind" ]]; then
    mkdir -p "$tools"
    (cd "$tools" && npm install --no-audit --no-fund --silent pagefind@1.6.0)
fi
work="$HOME/.cache/qmd/bench-site"
mkdir -p "$work" bench
# Some sites alone (BENCH_SITES=tldr,mdn-sized) go to a file of their own:
# the committed results stay a whole run.
results=bench/site-results${BENCH_SITES:+.${BENCH_SITES//,/+}}.md
node scripts/bench/site.mjs "$work" "$data" "$corpus" "$qmd" \
    "$tools/node_modules/.bin/pagefind" "$model" | tee "$results.partial"
mv "$results.partial" "$results"
