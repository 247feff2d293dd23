#!/usr/bin/env bash
# Configures and builds mixprec into ./build (Release, Ninja, ccache).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
# ccache keys on paths relative to the checkout, so clean clones (CI) and
# worktrees in other folders hit the same cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir -DPython3_EXECUTABLE="$(command -v python3)" >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
