#!/usr/bin/env bash
# Configures and builds mixprec into ./build (Release, Ninja, ccache).
#
#   scripts/build.sh             Release build in ./build (GCC)
#   scripts/build.sh --sanitize  ASan+UBSan build with the libFuzzer targets in
#                                ./build-asan (clang-19, -O1, line tables)
# BUILD_DIR overrides the folder; further arguments go to cmake's configure.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout, so clean clones (CI) and
# worktrees in other folders hit the same cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
args=(-DCMAKE_BUILD_TYPE=Release)
if [[ ${1:-} == --sanitize ]]; then
  shift
  BUILD_DIR=${BUILD_DIR:-build-asan}
  export CC=clang-19 CXX=clang++-19
  # -O1 keeps ASan's stack traces exact and the build short; line tables are
  # enough for symbolized reports.
  args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo
        "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG"
        "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG"
        -DMIXPREC_SANITIZE=ON -DMIXPREC_BUILD_FUZZERS=ON)
fi
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja "${args[@]}" \
  -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir -DPython3_EXECUTABLE="$(command -v python3)" "$@" >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
