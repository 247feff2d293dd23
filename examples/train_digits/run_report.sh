#!/usr/bin/env bash
# The training-validation run of README: the digits MLP at fp16 (dynamic loss
# scaling) beside FP32 over 5 data-order seeds, gradients compared every 22
# steps, the five metrics in metrics.json and the run report run.html; then
# headless Chromium renders the page to run_report.png beside this script.
#
#   examples/train_digits/run_report.sh [OUT_FOLDER]
#
# OUT_FOLDER (default: a new temporary folder) gets run.csv, metrics.json and
# run.html. MIXPREC: the mixprec binary (default ../../build/bin/mixprec
# relative to this folder). CHROMIUM: the browser (default
# chromium-headless-shell, else chromium; scripts/setup.sh installs it).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mixprec="${MIXPREC:-$here/../../build/bin/mixprec}"
out="${1:-$(mktemp -d "${TMPDIR:-/tmp}/train_digits_report.XXXXXX")}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
chromium="${CHROMIUM:-$(command -v chromium-headless-shell || command -v chromium || true)}"

if [[ ! -x "$mixprec" ]]; then
  echo "run_report.sh: no mixprec binary at $mixprec (set MIXPREC)" >&2
  exit 1
fi

cd "$here"
"$mixprec" train mlp.onnx --data x=x_train.npy --labels y_train.npy \
  --test-data x=x_test.npy --test-labels y_test.npy \
  --precision fp16 --compare fp32 --seeds 5 --compare-every 22 \
  --batch 32 --epochs 20 --optimizer sgd --lr 0.1 --momentum 0.9 --seed 7 \
  --backend cpu --log-every 100000 \
  --csv "$out/run.csv" --metrics "$out/metrics.json" --report "$out/run.html" |
  grep -v -E '^(grads step|eval step|step |seed |trained )'

if [[ -z "$chromium" ]]; then
  echo "run_report.sh: no Chromium (apt-get install chromium-headless-shell): run_report.png not drawn" >&2
  exit 0
fi
"$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --user-data-dir="$out/chromium" --window-size=1400,3000 \
  --screenshot="$here/run_report.png" "file://$out/run.html" 2>/dev/null
echo "wrote $here/run_report.png (the page: $out/run.html)"
