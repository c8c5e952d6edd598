#!/usr/bin/env bash
# Makes sure the pinned toolchain has the components and targets that
# rust-toolchain.toml lists. rustup applies that file's `targets` only when
# it installs the toolchain itself; a machine that already had 1.95.0 lacks
# the wasm targets, and the build then fails deep inside (E0463, "can't find
# crate for core"). Idempotent: does nothing when all are there.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v rustup >/dev/null || { echo "toolchain.sh: rustup not found (https://rustup.rs)" >&2; exit 1; }
# `rustup show active-toolchain` installs the pinned toolchain when missing.
rustup show active-toolchain >/dev/null

# ensure KIND (target|component): adds what rust-toolchain.toml lists under
# `KINDs` and rustup does not list as installed.
ensure() {
    local wanted installed missing=()
    wanted="$(sed -n "s/^$1s *= *\[\(.*\)\]/\1/p" rust-toolchain.toml | tr -d '"' | tr ',' ' ')"
    installed="$(rustup "$1" list --installed)"
    for item in $wanted; do
        grep -q "^$item" <<<"$installed" || missing+=("$item")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "toolchain.sh: adding ${1}s ${missing[*]}" >&2
        rustup "$1" add "${missing[@]}" >&2
    fi
}
ensure target
ensure component
# The grammars of code-aware chunking are C, built for wasm32 too.
bash scripts/setup-system.sh c-wasm
