#!/usr/bin/env bash
# Creates, once, the virtualenv of the PyTorch reference for the benchmarks
# (`BENCH_PYTORCH=1 scripts/bench-gguf.sh`, tests/models/torch_bench.py) and
# prints its path. PyTorch from PyPI brings its CUDA wheels (about 7 GB
# installed) but runs on the CPU; no test needs it, only that bench row.
# The venv lives at ${QMD_TORCH_ENV:-$HOME/.cache/qmd/torch-env}; a stamp
# records the pins, and changing one rebuilds it. Progress goes to stderr.
set -euo pipefail
TORCH_VERSION=2.9.1
TRANSFORMERS_VERSION=4.57.3
SENTENCE_TRANSFORMERS_VERSION=5.2.0

env_dir="${QMD_TORCH_ENV:-$HOME/.cache/qmd/torch-env}"
stamp="$env_dir/.qmd-torch-env-stamp"
want="torch==$TORCH_VERSION transformers==$TRANSFORMERS_VERSION sentence-transformers==$SENTENCE_TRANSFORMERS_VERSION"
if [[ -x "$env_dir/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "$env_dir"
    exit 0
fi
rm -rf "$env_dir"
"${PYTHON:-python3}" -m venv "$env_dir" >&2
# shellcheck disable=SC2086
"$env_dir/bin/pip" install --quiet --disable-pip-version-check $want >&2
echo "$want" >"$stamp"
echo "$env_dir"
