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
targets="$(sed -n 's/^targets *= *\[\(.*\)\]/\1/p' rust-toolchain.toml | tr -d '"' | tr ',' ' ')"
components="$(sed -n 's/^components *= *\[\(.*\)\]/\1/p' rust-toolchain.toml | tr -d '"' | tr ',' ' ')"
installed_targets="$(rustup target list --installed)"
missing=()
for t in $targets; do
    grep -qx "$t" <<<"$installed_targets" || missing+=("$t")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "toolchain.sh: adding targets ${missing[*]}" >&2
    rustup target add "${missing[@]}" >&2
fi
installed_components="$(rustup component list --installed)"
missing=()
for c in $components; do
    grep -q "^$c" <<<"$installed_components" || missing+=("$c")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "toolchain.sh: adding components ${missing[*]}" >&2
    rustup component add "${missing[@]}" >&2
fi
