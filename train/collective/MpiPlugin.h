/*===- MpiPlugin.h - libmixprec_mpi.so's C table -----------------*- C -*-===*
 *
 * libmixprec_mpi.so links libmpi; nothing else in mixprec does. The
 * training loop (train/Collective.cpp) opens it with dlopen only when MPI
 * is asked for, so that the trainers start on machines without MPI, and
 * finds this table with dlsym(handle, MIXPREC_MPI_PLUGIN_ENTRY).
 *
 * Plain C, so that the plugin and its caller need not share a C++ ABI.
 * Every call that can fail returns 0 on success, else non-zero with a
 * NUL-terminated message (at most error_size bytes) in `error` that names
 * this rank and the operation: "rank 0 of 2: all_reduce of 1234 f32
 * elements: ...".
 *
 *===----------------------------------------------------------------------===*/
#ifndef MIXPREC_TRAIN_COLLECTIVE_MPIPLUGIN_H
#define MIXPREC_TRAIN_COLLECTIVE_MPIPLUGIN_H

#include "mixprec/runtime.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Raised when a member changes meaning; members are only ever appended. */
#define MIXPREC_MPI_PLUGIN_ABI 1
/* The one exported symbol: const mixprec_mpi_plugin_t *(void). */
#define MIXPREC_MPI_PLUGIN_ENTRY "mixprec_mpi_plugin"

typedef struct mixprec_mpi_plugin_t {
  uint32_t abi_version; /* MIXPREC_MPI_PLUGIN_ABI */
  size_t struct_size;   /* sizeof(mixprec_mpi_plugin_t) */

  /* Starts MPI where it is not running yet (MPI_Init_thread,
   * MPI_THREAD_FUNNELED: only the thread that opened it calls it) and
   * returns a communicator of every rank (a duplicate of MPI_COMM_WORLD),
   * or NULL with the reason in `error`. Each wait for the other ranks ends
   * after `timeout_seconds` (> 0). MPI starts once per process: an open
   * after the last close (which finalised it) fails. */
  void *(*open)(double timeout_seconds, char *error, size_t error_size);
  /* Ends the communicator; the last one open finalises MPI when this
   * plugin started it and no rank was aborted. */
  void (*close)(void *comm);

  int (*rank)(void *comm);
  int (*world_size)(void *comm);
  /* "Open MPI v4.1.4, ..." (MPI_Get_library_version's first line). */
  const char *(*library_version)(void);

  /* In place, every rank's `count` elements of `dtype` (F32, F16, BF16,
   * I32, I64) reduced with `op` (MIXPREC_REDUCE_SUM, _MEAN, _MAX). Sum and
   * max of F16 and BF16 add (or compare) in FP32 per pair and round to
   * nearest even (common/numerics/Rounding.h). Mean: the sum divided by the
   * world size, in FP32 and rounded once to the dtype (F16 and BF16 are
   * summed as FP32 copies), for integers truncated toward zero. On failure
   * the contents of `data` are unspecified; after a timeout MPI may still
   * write them until the job ends (abort). */
  int (*all_reduce)(void *comm, void *data, size_t count, mixprec_dtype_t dtype,
                    mixprec_reduce_op_t op, char *error, size_t error_size);
  /* `bytes` at `data` of rank `root` to every rank. */
  int (*broadcast)(void *comm, void *data, size_t bytes, int root, char *error, size_t error_size);
  /* Every rank's `bytes` at `in` into `out` (world_size x bytes, in rank
   * order). `in` may lie inside `out`. */
  int (*all_gather)(void *comm, const void *in, void *out, size_t bytes, char *error,
                    size_t error_size);
  int (*barrier)(void *comm, char *error, size_t error_size);
  /* MPI_Abort(comm, exit_code): ends every rank of the job. */
  void (*abort)(void *comm, int exit_code);
} mixprec_mpi_plugin_t;

typedef const mixprec_mpi_plugin_t *(*mixprec_mpi_plugin_entry_t)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MIXPREC_TRAIN_COLLECTIVE_MPIPLUGIN_H */
