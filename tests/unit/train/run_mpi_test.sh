#!/usr/bin/env bash
# Runs a test program as 2 MPI ranks (ctest collective_mpi, collective_mpi_kill).
#
#   run_mpi_test.sh MODE MPIRUN PLUGIN PROGRAM [ARGS...]
#
# MODE pass: the job must exit 0. MODE kill: PROGRAM's rank 1 SIGKILLs
# itself; the job must end non-zero within 60 s with output naming rank 1.
# MODE hang: rank 1 stops (SIGSTOP); rank 0's barrier must time out naming
# itself and abort the job (MPI_Abort, exit code 3), non-zero within 60 s.
# Exits 77 (skipped) when MPIRUN is empty or missing, or PLUGIN
# (libmixprec_mpi.so) was not built. As root, mpirun needs the two
# OMPI_ALLOW_RUN_AS_ROOT variables; --oversubscribe lets 2 ranks share fewer
# cores.
set -u
mode=$1 mpirun=$2 plugin=$3
shift 3
if [ -z "$mpirun" ] || ! command -v "$mpirun" >/dev/null; then
  echo "skipped: no mpirun (Debian: apt-get install openmpi-bin)"
  exit 77
fi
if [ ! -f "$plugin" ]; then
  echo "skipped: $plugin was not built (MPI not found at configure time: apt-get install libopenmpi-dev)"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
command=("$mpirun" --oversubscribe -np 2 "$@")
case $mode in
pass)
  exec "${command[@]}"
  ;;
kill | hang)
  if [ "$mode" = kill ]; then
    expected=("rank 1 .*(signal 9|Killed)")
  else
    # mpirun's own "MPI_ABORT was invoked on rank 0" is not always printed
    # (its show_help can fail with ORTE_ERROR_LOG: Out of resource).
    expected=("rank 0 of 2: barrier: no reply from the other ranks within 5 s")
  fi
  log=$(mktemp)
  trap 'rm -f "$log"' EXIT
  start=$(date +%s%N)
  "${command[@]}" >"$log" 2>&1
  status=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  cat "$log"
  echo "run_mpi_test.sh: the job exited with status $status after $ms ms"
  fail=0
  if [ "$status" -eq 0 ]; then
    echo "FAIL: the job exited 0 after rank 1 was stopped"
    fail=1
  fi
  if [ "$ms" -ge 60000 ]; then
    echo "FAIL: the job took $ms ms to end (60 s allowed)"
    fail=1
  fi
  for pattern in "${expected[@]}"; do
    if ! grep -Eq "$pattern" "$log"; then
      echo "FAIL: no line of the output matches '$pattern'"
      fail=1
    fi
  done
  exit $fail
  ;;
*)
  echo "run_mpi_test.sh: unknown mode '$mode'"
  exit 2
  ;;
esac
