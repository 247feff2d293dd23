#!/usr/bin/env bash
# The README's test command: installs what is needed, builds, runs every test
# twice: on the Release build (build/), then on the ASan+UBSan build with the
# fuzzers (build-asan/, `scripts/build.sh --sanitize`), which also runs each
# fuzzer for a bounded time (ctest label `fuzz`). Any sanitizer report fails
# the run. Arguments go to both ctest runs (e.g. -R pattern).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's wall time, for the CI log (CI's budget is 45 minutes).
phase_start=$SECONDS
phase() {
  echo "==== test.sh: $1 took $((SECONDS - phase_start)) s"
  phase_start=$SECONDS
}
bash scripts/setup.sh
phase setup
bash scripts/build.sh
phase "Release build"
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j"$(nproc)" "$@")
phase "Release tests"

ASAN_BUILD_DIR=${ASAN_BUILD_DIR:-build-asan}
BUILD_DIR=$ASAN_BUILD_DIR bash scripts/build.sh --sanitize
phase "ASan+UBSan build"
# Reports go to files, which are checked after the run: a test that expects a
# command to fail (lit's `not`, an error-case script) would otherwise count a
# sanitizer abort as the failure it wanted.
reports=$PWD/$ASAN_BUILD_DIR/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
status=0
(cd "$ASAN_BUILD_DIR" &&
  ASAN_OPTIONS=log_path=$reports/report UBSAN_OPTIONS=log_path=$reports/report \
    ctest --output-on-failure -j"$(nproc)" "$@") || status=$?
phase "ASan+UBSan tests"
if compgen -G "$reports/*" >/dev/null; then
  for report in "$reports"/*; do
    echo "==== sanitizer report $report"
    cat "$report"
  done
  echo "FAILED: sanitizer reports in $reports" >&2
  status=1
fi
exit $status
