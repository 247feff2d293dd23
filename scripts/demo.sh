#!/usr/bin/env bash
# The README's main command: installs what is needed, builds, imports the
# example MLP and runs it on the CPU reference interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
mkdir -p out
./build/bin/mixprec import examples/mlp.onnx -o out/mlp.mlir
echo "wrote out/mlp.mlir"
./build/bin/mixprec run examples/mlp.onnx --input x=examples/mlp_input.npy --output-dir out
