#!/usr/bin/env bash
# python_tests in the sanitizer build (issue 28): the interpreter is not
# instrumented, so the ASan runtime (which carries UBSan's too) is preloaded
# for the sanitized extension and libmixprec_runtime.so, in this interpreter
# and the ones the tests start. The options are those every sanitized
# executable gets (cmake/SanitizerDefaults.c.in), less leak detection
# (CPython frees little at exit); the environment's (scripts/test.sh's
# log_path) come last and win. The sanitized CLI links its own runtime and
# must not get a second one: MIXPREC_CLI becomes sanitized_cli.sh, which
# starts it without the preload and with the suite's own options.
#
#   run_sanitized.sh ASAN_RUNTIME.so SYMBOLIZER COMMAND...
set -euo pipefail
runtime=$1
symbolizer=$2
shift 2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export MIXPREC_SANITIZED_CLI="${MIXPREC_CLI:-}"
export MIXPREC_CLI="$here/sanitized_cli.sh"
export MIXPREC_OUTER_ASAN_OPTIONS="${ASAN_OPTIONS:-}"
export MIXPREC_OUTER_UBSAN_OPTIONS="${UBSAN_OPTIONS:-}"
export LD_PRELOAD="$runtime${LD_PRELOAD:+:$LD_PRELOAD}"
export ASAN_OPTIONS="abort_on_error=1:allocator_may_return_null=1:detect_leaks=0:external_symbolizer_path=$symbolizer${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="abort_on_error=1:halt_on_error=1:print_stacktrace=1:external_symbolizer_path=$symbolizer${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
exec "$@"
