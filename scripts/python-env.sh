#!/usr/bin/env bash
# Creates, once, the Python virtualenv the MCP integration tests
# (tests/mcp/test_mcp.py) run in, and prints its path on stdout.
#
#   env_dir=$(scripts/python-env.sh)
#   QMD_BIN=~/.cache/qmd/target/release/qmd "$env_dir/bin/pytest" tests/mcp
#
# The venv lives at ${QMD_PY_ENV:-$HOME/.cache/qmd/py-env}. A stamp file in it
# records the pinned versions; when it matches, the script does nothing else.
# Changing a pin below rebuilds the venv from scratch. Progress goes to stderr.
#
# `scripts/python-env.sh torch` makes the PyTorch reference's venv instead
# (${QMD_TORCH_ENV:-$HOME/.cache/qmd/torch-env}), for the embedding bench's
# PyTorch row (`BENCH_PYTORCH=1 scripts/bench-gguf.sh`) only: torch from
# PyPI brings its CUDA wheels (about 7 GB installed) but runs on the CPU.
set -euo pipefail

# The official MCP Python SDK, 1.x line: it speaks the 2025-era initialize
# handshake (what rmcp serves) and has the `streamable_http_client` API the
# tests use. 2.x is a different API (httpx2, server/discover probing).
MCP_VERSION=1.30.0
PYTEST_VERSION=9.2.0
# The models' independent reference (tests/models/reference.py): a NumPy
# forward pass over the safetensors weights, with HF's Python tokenizer.
NUMPY_VERSION=2.4.6
SAFETENSORS_VERSION=0.8.0
TOKENIZERS_VERSION=0.23.3
# gguf-py (llama.cpp's GGUF writer, for tests/models/make_gguf.py) imports it.
PYYAML_VERSION=6.0.3
# SentencePiece trains the GGUF test models' vocabularies (make_gguf.py gemma).
SENTENCEPIECE_VERSION=0.2.3
# The official OpenAI client, against our /v1/embeddings (tests/mcp).
OPENAI_VERSION=3.57.0

# The PyTorch reference (tests/models/torch_bench.py).
TORCH_VERSION=2.9.1
TRANSFORMERS_VERSION=4.57.3
SENTENCE_TRANSFORMERS_VERSION=5.2.0

if [ "${1:-}" = torch ]; then
    env_dir="${QMD_TORCH_ENV:-$HOME/.cache/qmd/torch-env}"
    want="torch==$TORCH_VERSION transformers==$TRANSFORMERS_VERSION sentence-transformers==$SENTENCE_TRANSFORMERS_VERSION"
    imports='import torch, transformers, sentence_transformers'
else
    env_dir="${QMD_PY_ENV:-$HOME/.cache/qmd/py-env}"
    want="mcp==$MCP_VERSION pytest==$PYTEST_VERSION numpy==$NUMPY_VERSION safetensors==$SAFETENSORS_VERSION tokenizers==$TOKENIZERS_VERSION pyyaml==$PYYAML_VERSION sentencepiece==$SENTENCEPIECE_VERSION openai==$OPENAI_VERSION"
    # The names the tests import must exist in these versions.
    imports='
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError
import anyio, pytest
import numpy, safetensors.numpy, tokenizers, yaml, sentencepiece
from openai import OpenAI, APIStatusError
'
fi
stamp="$env_dir/.qmd-py-env-stamp"

if [[ -x "$env_dir/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "$env_dir"
    exit 0
fi

python="${PYTHON:-python3}"
if ! "$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
    echo "python-env.sh: $python is older than 3.10, which mcp $MCP_VERSION needs" >&2
    exit 1
fi

# Never wipe a folder that is not a venv (QMD_PY_ENV could point anywhere).
if [[ -e "$env_dir" && ! -f "$env_dir/pyvenv.cfg" && -n "$(ls -A "$env_dir" 2>/dev/null)" ]]; then
    echo "python-env.sh: $env_dir exists and is not a virtualenv; refusing to replace it" >&2
    exit 1
fi

echo "python-env.sh: creating $env_dir ($want)" >&2
if ! "$python" -m venv --clear "$env_dir" >&2; then
    echo "python-env.sh: '$python -m venv' failed (on Debian: apt-get install python3-venv)" >&2
    exit 1
fi
"$env_dir/bin/python" -m pip install --quiet --disable-pip-version-check \
    $want >&2
"$env_dir/bin/python" -c "$imports" >&2
printf '%s\n' "$want" >"$stamp"
echo "$env_dir"
