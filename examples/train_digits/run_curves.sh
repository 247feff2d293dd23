#!/usr/bin/env bash
# Trains the digits MLP at fp32, bf16 and fp16 (same seed, data order and
# options), then plots the curves into curves.svg beside this script and
# prints the table.
#
#   examples/train_digits/run_curves.sh [CSV_FOLDER]
#
# CSV_FOLDER (default: a new temporary folder) gets fp32.csv, bf16.csv and
# fp16.csv. MIXPREC: the mixprec binary (default ../../build/bin/mixprec
# relative to this folder). BACKEND: the runtime backend (default cpu).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mixprec="${MIXPREC:-$here/../../build/bin/mixprec}"
backend="${BACKEND:-cpu}"
out="${1:-$(mktemp -d "${TMPDIR:-/tmp}/train_digits.XXXXXX")}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

if [[ ! -x "$mixprec" ]]; then
  echo "run_curves.sh: no mixprec binary at $mixprec (set MIXPREC)" >&2
  exit 1
fi

cd "$here"
for precision in fp32 bf16 fp16; do
  echo "== $precision" >&2
  start=$(date +%s.%N)
  "$mixprec" train mlp.onnx \
    --data x=x_train.npy --labels y_train.npy \
    --test-data x=x_test.npy --test-labels y_test.npy \
    --batch 32 --epochs 20 --optimizer sgd --lr 0.1 --momentum 0.9 --seed 7 \
    --log-every 44 --eval-every 44 \
    --precision "$precision" --backend "$backend" --csv "$out/$precision.csv" >&2
  end=$(date +%s.%N)
  awk -v p="$precision" -v s="$start" -v e="$end" \
    'BEGIN { printf "== %s: %.2f s wall\n", p, e - s }' >&2
done

python3 "$here/plot_curves.py" --out "$here/curves.svg" \
  --title "mixprec train: digits MLP (64-128-128-10), SGD, batch 32, CPU backend" \
  fp32="$out/fp32.csv" bf16="$out/bf16.csv" fp16="$out/fp16.csv"
echo "CSVs in $out; curves in $here/curves.svg" >&2
