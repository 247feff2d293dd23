#!/usr/bin/env bash
# Runs every fuzzer of the sanitizer build long, one at a time, and prints a
# markdown row per target for bench/README.md ("## Fuzzing"): executions,
# executions per second, time, corpus size, findings.
#
#   bench/fuzz.sh [RUNS] [MAX_SECONDS]
#
# RUNS (default 1000000) executions per target, each target stopping after
# MAX_SECONDS (default 14400) or at its first finding. FUZZERS="npy policy"
# picks targets. Work corpora, logs and findings (crash-*, leak-*, timeout-*,
# oom-*) go to build-asan/fuzz-bench/<target>/; the seeds in
# tests/fuzz/corpus/ are only read.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-1000000}
MAX_SECONDS=${2:-14400}
BUILD=${ASAN_BUILD_DIR:-build-asan}
bash scripts/build.sh --sanitize >/dev/null
echo "| target | executions | exec/s | time | corpus | findings |"
echo "| --- | --- | --- | --- | --- | --- |"
failed=0
for name in ${FUZZERS:-npy policy module onnx}; do
  out=$BUILD/fuzz-bench/$name
  mkdir -p "$out/corpus" "$out/findings"
  start=$(date +%s)
  rc=0
  "$BUILD/tests/fuzz/mixprec_${name}_fuzzer" -runs="$RUNS" -max_total_time="$MAX_SECONDS" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/findings/" \
    "$out/corpus" "tests/fuzz/corpus/$name" >"$out/log" 2>&1 || rc=$?
  seconds=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log" | tail -1)
  findings=$(find "$out/findings" -type f | wc -l)
  corpus=$(find "$out/corpus" -type f | wc -l)
  if [[ $rc -ne 0 && $findings -eq 0 ]]; then
    findings="fuzzer exit $rc, see $out/log"
  fi
  [[ $rc -eq 0 ]] || failed=1
  echo "| $name | ${execs:-?} | $(( ${execs:-0} / (seconds > 0 ? seconds : 1) )) | ${seconds} s | $corpus | $findings |"
done
exit $failed
