#!/usr/bin/env bash
# Configures and builds mixprec into ./build (Release, Ninja, ccache).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir -DPython3_EXECUTABLE="$(command -v python3)" >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
