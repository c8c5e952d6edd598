#!/usr/bin/env bash
# The AArch64 kernels (core/models/src/kernels/arm/ and k_quants/arm.rs: NEON, and `sdot` where the
# CPU has it) on an x86 machine: the engine's unit tests cross-compiled for
# aarch64-unknown-linux-gnu and run under qemu-user with every CPU feature
# it emulates (`QEMU_CPU=max`, FEAT_DotProd included), so each kernel is
# held to the portable one. On an AArch64 machine they run natively.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/qmd/target}"
bash scripts/toolchain.sh
target=aarch64-unknown-linux-gnu
if [ "$(uname -m)" != aarch64 ]; then
    bash scripts/setup-system.sh cross-arm
    export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
    export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"
    export QEMU_CPU=max
    export QMD_EXPECT_DOTPROD=1
fi
# By default only the tests of what differs on AArch64 (the kernels, the
# GGUF reader and the architectures over them); the rest of the engine's
# unit tests run natively in test.sh. Arguments replace the filter.
if [ "$#" -eq 0 ]; then
    set -- kernels:: gguf:: arch::
fi
cargo test --release --locked -p qmd-models --target "$target" --lib -- "$@"
