#!/bin/sh
# The sanitized mixprec CLI as the Python tests start it under
# run_sanitized.sh: without the preloaded ASan runtime (it links its own)
# and with the suite's sanitizer options (its built-in defaults, then
# scripts/test.sh's log_path), leak detection included.
ASAN_OPTIONS="$MIXPREC_OUTER_ASAN_OPTIONS" UBSAN_OPTIONS="$MIXPREC_OUTER_UBSAN_OPTIONS" \
  exec env -u LD_PRELOAD "$MIXPREC_SANITIZED_CLI" "$@"
