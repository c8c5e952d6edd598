#!/usr/bin/env bash
# Installs, once, the llama.cpp reference the GGUF tests compare against, and
# prints its directory on stdout (progress goes to stderr).
#
#   ref=$(scripts/llama-ref.sh)
#   LLAMA_REF_DIR=$ref node tests/models/llama_ref.mjs embed model.gguf < texts.json
#   PYTHONPATH=$ref/llamacpp/gguf-py python tests/models/make_gguf.py ...
#
# qmd 2.8.3 runs its models through llama.cpp via the npm package
# node-llama-cpp, so that package (same version family) is the reference:
# - node_modules/node-llama-cpp: prebuilt llama.cpp binaries for this platform,
#   which npm installs as optional dependencies (@node-llama-cpp/<platform>).
#   Install scripts are skipped: the postinstall only offers to build from
#   source, and nothing may be compiled or downloaded later ({build: "never"}).
# - llamacpp/: the llama.cpp source the binaries were built from, cloned from
#   the git bundle the package ships (llama/gitRelease.bundle), for
#   convert_hf_to_gguf.py and gguf-py (used by tests/models/make_gguf.py).
#
# Lives at ${XDG_CACHE_HOME:-$HOME/.cache}/qmd/tools/llama-ref. A stamp file
# records the version; when it matches, the script does nothing else.
set -euo pipefail

NODE_LLAMA_CPP_VERSION=3.20.0

dir="${XDG_CACHE_HOME:-$HOME/.cache}/qmd/tools/llama-ref"
stamp="$dir/.llama-ref-stamp"
want="node-llama-cpp@$NODE_LLAMA_CPP_VERSION"
mkdir -p "$dir"

# Tests call this concurrently: one installs, the others wait for it.
exec 9>"$dir/.install.lock"
flock 9

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" \
      && -f "$dir/node_modules/node-llama-cpp/package.json" \
      && -f "$dir/llamacpp/convert_hf_to_gguf.py" ]]; then
    echo "$dir"
    exit 0
fi

for tool in node npm git; do
    if ! command -v "$tool" >/dev/null; then
        echo "llama-ref.sh: $tool is not installed" >&2
        exit 1
    fi
done

installed="$(node -e 'try { console.log(require(process.argv[1]).version) } catch { console.log("") }' \
    "$dir/node_modules/node-llama-cpp/package.json")"
if [[ "$installed" != "$NODE_LLAMA_CPP_VERSION" ]]; then
    echo "llama-ref.sh: installing $want into $dir" >&2
    # A package.json of our own, so npm installs here and not in a parent project.
    [[ -f "$dir/package.json" ]] || printf '{ "private": true }\n' >"$dir/package.json"
    (cd "$dir" && npm install --no-audit --no-fund --ignore-scripts --save-exact \
        "$want" >&2)
fi

# The version the bundle holds is the one the binaries were built from.
if [[ "$installed" != "$NODE_LLAMA_CPP_VERSION" && -d "$dir/llamacpp" ]]; then
    rm -rf "$dir/llamacpp"
fi
if [[ ! -f "$dir/llamacpp/convert_hf_to_gguf.py" ]]; then
    bundle="$dir/node_modules/node-llama-cpp/llama/gitRelease.bundle"
    if [[ ! -f "$bundle" ]]; then
        echo "llama-ref.sh: $bundle is missing from the npm package" >&2
        exit 1
    fi
    echo "llama-ref.sh: cloning llama.cpp source from $bundle" >&2
    rm -rf "$dir/llamacpp" "$dir/.llamacpp.tmp"
    git clone --quiet "$bundle" "$dir/.llamacpp.tmp" >&2
    # Move into place only when complete, so an interrupted clone is redone.
    mv "$dir/.llamacpp.tmp" "$dir/llamacpp"
fi

# The prebuilt binary for this machine must have come with it. (A file, not
# `node -e`: node-llama-cpp tests the binary in a forked node, which would
# inherit -e.)
cat >"$dir/.check.mjs" <<'JS'
import { getLlama } from "node-llama-cpp";
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
await llama.dispose();
JS
if ! node "$dir/.check.mjs" >&2; then
    echo "llama-ref.sh: node-llama-cpp has no usable prebuilt binary for this platform" >&2
    exit 1
fi

printf '%s\n' "$want" >"$stamp"
echo "$dir"
