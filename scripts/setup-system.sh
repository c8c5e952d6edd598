#!/usr/bin/env bash
# Debian packages the tests need, installed once: Mesa's Vulkan drivers
# (lavapipe, a software Vulkan device, so the wgpu model tests run where
# there is no GPU) and Chromium for the browser tests (WebGPU on its
# SwiftShader). `setup-system.sh cross-arm` adds what scripts/test-arm.sh
# needs instead: an AArch64 linker and C library, and qemu-user to run the
# tests. `setup-system.sh c-wasm` adds what the tree-sitter grammars (C)
# need to build into the wasm32 components: clang (its wasm32 backend) and
# the WASI C headers (.cargo/config.toml points clang at them). Skips the
# install when they are already there.
set -euo pipefail
packages=(mesa-vulkan-drivers libvulkan1 chromium)
case "${1:-}" in
    cross-arm) packages=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user) ;;
    c-wasm) packages=(clang wasi-libc) ;;
esac
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing ${missing[*]}" >&2
$sudo apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
