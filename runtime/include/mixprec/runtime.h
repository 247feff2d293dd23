/*===- mixprec/runtime.h - mixprec runtime C API ---------------------------===*
 *
 * Loads a compiled mixprec module (.mpk), binds host inputs (or device
 * buffers), runs it on a backend (CPU or CUDA), synchronously or not, and
 * reads the outputs.
 *
 * Conventions
 *  - Every call that can fail returns a mixprec_status_t. NULL means success.
 *    Anything else is a status object owned by the caller: read its code
 *    (stable numbers, below) and message, then free it with
 *    mixprec_status_free(). The message names what is wrong ("input 'x' has
 *    shape [2,4], the bound data has [2,3]").
 *  - Handles are opaque. A handle made by *_create or *_load is released by
 *    the matching *_release; releasing NULL does nothing.
 *  - out_* parameters are written only on success.
 *  - Strings and arrays returned by a query are owned by the object queried
 *    and stay valid as long as it lives.
 *  - Options structs begin with `struct_size`. Initialize them with the
 *    *_INIT macro or the *_init function, so that fields added in later
 *    versions take their defaults; passing NULL options means defaults.
 *  - Each handle type states its thread safety below.
 *  - Bad input (a corrupted module, a missing side file, an input of the
 *    wrong shape or dtype) is reported as a status; it never crashes or
 *    reads out of bounds. Tensor data is little-endian, densely packed in
 *    row-major order, one element per mixprec_dtype_size() bytes (F16/BF16
 *    as 16-bit words, FP8 as bytes, BOOL as 0/1 bytes).
 *
 *===----------------------------------------------------------------------===*/
#ifndef MIXPREC_RUNTIME_H
#define MIXPREC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define MIXPREC_API
#else
#define MIXPREC_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===*
 * Versions (thread-safe)
 *===----------------------------------------------------------------------===*/

/* The runtime library's version, "MAJOR.MINOR.PATCH". */
MIXPREC_API const char *mixprec_runtime_version(void);

/* The module schema version this runtime reads. Modules written for another
 * (newer, or older: recompile them) are refused with
 * MIXPREC_UNSUPPORTED_VERSION. */
MIXPREC_API uint32_t mixprec_schema_version(void);

/*===----------------------------------------------------------------------===*
 * Status
 * Thread safety: a status belongs to the caller that received it; free it
 * exactly once. The code/message functions accept NULL (meaning OK).
 *===----------------------------------------------------------------------===*/

/* Stable codes: the numbers never change meaning. Status codes, dtypes and
 * backends travel as fixed-width integers (not enum types), so any value a
 * caller passes is well-defined in C++ too, and an unknown one is reported. */
typedef int32_t mixprec_status_code_t;
enum mixprec_status_code_e {
  MIXPREC_OK = 0,
  MIXPREC_INVALID_ARGUMENT = 1,    /* a NULL handle/pointer, bad options, an index out of range */
  MIXPREC_INVALID_MODULE = 2,      /* truncated, corrupted or inconsistent module */
  MIXPREC_UNSUPPORTED_VERSION = 3, /* module schema other than this runtime's */
  MIXPREC_SIDE_FILE_ERROR = 4,     /* side file missing, or its size or hash differs */
  MIXPREC_SHAPE_MISMATCH = 5,      /* bound data has the wrong shape or byte size */
  MIXPREC_DTYPE_MISMATCH = 6,      /* bound or requested data has the wrong dtype */
  MIXPREC_NOT_FOUND = 7,           /* no input/output of that name */
  MIXPREC_NO_DEVICE = 8,           /* the requested backend has no device (no GPU) */
  MIXPREC_UNIMPLEMENTED = 9,       /* a feature this runtime does not have yet */
  MIXPREC_IO_ERROR = 10,           /* a file cannot be opened or read */
  MIXPREC_OUT_OF_MEMORY = 11,      /* an allocation failed */
  MIXPREC_FAILED_PRECONDITION = 12,/* e.g. run with an unbound input, output before run */
  MIXPREC_EXECUTION_ERROR = 13,    /* data-dependent failure while running (gather index out of range) */
  MIXPREC_INTERNAL = 14            /* a bug in the runtime */
};

typedef struct mixprec_status_s *mixprec_status_t;

/* MIXPREC_OK for NULL. */
MIXPREC_API mixprec_status_code_t mixprec_status_code(mixprec_status_t status);
/* "OK" for NULL. Valid until the status is freed. */
MIXPREC_API const char *mixprec_status_message(mixprec_status_t status);
MIXPREC_API void mixprec_status_free(mixprec_status_t status);
/* "OK", "INVALID_ARGUMENT", ...; "UNKNOWN" for other values. */
MIXPREC_API const char *mixprec_status_code_name(mixprec_status_code_t code);

/*===----------------------------------------------------------------------===*
 * Element types and backends (values stored in .mpk files: stable)
 *===----------------------------------------------------------------------===*/

typedef int32_t mixprec_dtype_t;
enum mixprec_dtype_e {
  MIXPREC_DTYPE_F32 = 0,
  MIXPREC_DTYPE_F16 = 1,
  MIXPREC_DTYPE_BF16 = 2,
  MIXPREC_DTYPE_F8E4M3FN = 3,
  MIXPREC_DTYPE_F8E5M2 = 4,
  MIXPREC_DTYPE_I64 = 5,
  MIXPREC_DTYPE_I32 = 6,
  MIXPREC_DTYPE_BOOL = 7
};

/* "f32", "f16", "bf16", "f8E4M3FN", "f8E5M2", "i64", "i32", "bool";
 * "unknown" for other values. */
MIXPREC_API const char *mixprec_dtype_name(mixprec_dtype_t dtype);
/* Bytes per element; 0 for unknown values. */
MIXPREC_API size_t mixprec_dtype_size(mixprec_dtype_t dtype);

typedef int32_t mixprec_backend_t;
enum mixprec_backend_e {
  MIXPREC_BACKEND_AUTO = 0, /* CUDA when a GPU is found and the backend runs the module, else
                               CPU; mixprec_session_backend_reason() says which and why */
  MIXPREC_BACKEND_CPU = 1,
  MIXPREC_BACKEND_CUDA = 2
};

/* "auto", "cpu", "cuda"; "unknown" for other values. */
MIXPREC_API const char *mixprec_backend_name(mixprec_backend_t backend);

/* The compute capability of CUDA device 0 as an SM version (90 for sm_90),
 * what a module for this machine is compiled for (`mixprec compile --arch`).
 * MIXPREC_NO_DEVICE, saying why, where no driver or no device is found. */
MIXPREC_API mixprec_status_t mixprec_cuda_device_sm_version(int *sm_version);

/*===----------------------------------------------------------------------===*
 * Module: a loaded and fully verified .mpk.
 * Thread safety: immutable after load; every query may run concurrently
 * from any thread. Reference counted (retain/release are thread-safe);
 * sessions keep what they need, so a module may be released while its
 * sessions live.
 *===----------------------------------------------------------------------===*/

typedef struct mixprec_module_s *mixprec_module_t;

typedef struct mixprec_load_options_t {
  size_t struct_size;
  /* Directory the side file path is resolved against. NULL: the module
   * file's directory (file loads) or the current directory (memory loads). */
  const char *side_file_dir;
  /* The side file's bytes, given directly (e.g. embedded in the app). When
   * non-NULL it is used instead of reading a file; size and hash are still
   * checked. The runtime copies it. */
  const void *side_file_data;
  size_t side_file_size;
} mixprec_load_options_t;

#define MIXPREC_LOAD_OPTIONS_INIT {sizeof(mixprec_load_options_t), NULL, NULL, 0}
MIXPREC_API void mixprec_load_options_init(mixprec_load_options_t *options);

/* Reads, verifies (FlatBuffers verifier, schema version, content hash, every
 * index and size) and loads a module and its side file. */
MIXPREC_API mixprec_status_t mixprec_module_load_file(const char *path,
                                                      const mixprec_load_options_t *options,
                                                      mixprec_module_t *out_module);
/* Same from bytes in memory; the runtime copies them (the caller may free
 * `data` on return). */
MIXPREC_API mixprec_status_t mixprec_module_load_memory(const void *data, size_t size,
                                                        const mixprec_load_options_t *options,
                                                        mixprec_module_t *out_module);
MIXPREC_API void mixprec_module_retain(mixprec_module_t module);
MIXPREC_API void mixprec_module_release(mixprec_module_t module);

/* The module's schema version and producer ("mixprec 0.1.0", or ""). */
MIXPREC_API uint32_t mixprec_module_schema_version(mixprec_module_t module);
MIXPREC_API const char *mixprec_module_producer(mixprec_module_t module);

/* A graph input or output. */
typedef struct mixprec_tensor_info_t {
  const char *name;
  mixprec_dtype_t dtype;
  size_t rank;
  const int64_t *dims; /* `rank` entries */
  size_t element_count;
  size_t byte_size; /* element_count * mixprec_dtype_size(dtype) */
} mixprec_tensor_info_t;

/* 0 for a NULL module. */
MIXPREC_API size_t mixprec_module_input_count(mixprec_module_t module);
MIXPREC_API size_t mixprec_module_output_count(mixprec_module_t module);
MIXPREC_API mixprec_status_t mixprec_module_input_info(mixprec_module_t module, size_t index,
                                                       mixprec_tensor_info_t *out_info);
MIXPREC_API mixprec_status_t mixprec_module_output_info(mixprec_module_t module, size_t index,
                                                        mixprec_tensor_info_t *out_info);
/* MIXPREC_NOT_FOUND, listing the names there are, when none matches. */
MIXPREC_API mixprec_status_t mixprec_module_find_input(mixprec_module_t module, const char *name,
                                                       size_t *out_index);
MIXPREC_API mixprec_status_t mixprec_module_find_output(mixprec_module_t module, const char *name,
                                                        size_t *out_index);

/*===----------------------------------------------------------------------===*
 * Session: a module instantiated on a backend, with its memory and inputs.
 * Thread safety: one thread at a time (calls on one session must not
 * overlap); distinct sessions, of the same module or not, run concurrently.
 *===----------------------------------------------------------------------===*/

typedef struct mixprec_session_s *mixprec_session_t;

typedef struct mixprec_session_options_t {
  size_t struct_size;
  mixprec_backend_t backend; /* default MIXPREC_BACKEND_AUTO */
  /* Upper bound on the memory a session may allocate for the module's
   * arena plus its largest scratch buffer (im2col), in bytes; creating a
   * session that needs more fails with MIXPREC_OUT_OF_MEMORY. 0: no
   * limit. For services that load modules they do not control. */
  uint64_t max_memory_bytes;
  /* Non-zero: a CUDA session launches its steps one by one on every run
   * instead of replaying the CUDA graph it captured on the first (the
   * environment variable MIXPREC_CUDA_GRAPHS=0 does the same for every
   * session). Sessions with routine steps run on the host never capture. */
  int32_t disable_cuda_graphs;
  /* CPU backend: threads for its element-wise, reduction and attention
   * kernels, the calling thread included; results are the same bits for
   * any count. 0 (the default): MIXPREC_NUM_THREADS, else OMP_NUM_THREADS,
   * else the CPUs the process may run on. GEMMs and convolutions run on
   * oneDNN's OpenMP threads, which follow OMP_NUM_THREADS (or, when
   * num_threads is set, that count for the runs' calling thread). */
  int32_t num_threads;
} mixprec_session_options_t;

#define MIXPREC_SESSION_OPTIONS_INIT                                                               \
  { sizeof(mixprec_session_options_t), MIXPREC_BACKEND_AUTO, 0, 0, 0 }
MIXPREC_API void mixprec_session_options_init(mixprec_session_options_t *options);

/* MIXPREC_NO_DEVICE when CUDA is asked for and no GPU is found (the message
 * says why); MIXPREC_FAILED_PRECONDITION when the module has no CUDA code
 * (compiled without --arch) or none this device can load;
 * MIXPREC_OUT_OF_MEMORY naming the bytes asked and free when the device
 * cannot hold the module's memory. */
MIXPREC_API mixprec_status_t mixprec_session_create(mixprec_module_t module,
                                                    const mixprec_session_options_t *options,
                                                    mixprec_session_t *out_session);
MIXPREC_API void mixprec_session_release(mixprec_session_t session);

/* The backend the session runs on (never AUTO); AUTO for NULL. */
MIXPREC_API mixprec_backend_t mixprec_session_backend(mixprec_session_t session);

/* For a session created with MIXPREC_BACKEND_AUTO, which backend auto chose
 * and why, one line: "auto chose the CUDA backend: CUDA backend on NVIDIA
 * H200 (sm_90, driver 13.0), ...", or "auto chose the CPU backend: CUDA
 * backend: no GPU: cannot load 'libcuda.so.1' ...". A CUDA session asked
 * for by name gets the part after "auto chose the CUDA backend: " (the
 * device, and which routine steps run on the host). "" for a CPU session
 * asked for by name, and for NULL. Owned by the session. */
MIXPREC_API const char *mixprec_session_backend_reason(mixprec_session_t session);

/* Copies `byte_size` bytes of host data into the session as input `index`.
 * `dtype` and `dims` must match the input exactly (MIXPREC_DTYPE_MISMATCH,
 * MIXPREC_SHAPE_MISMATCH otherwise), except that F32 data may be bound to
 * an F16/BF16/FP8 input: it is rounded to nearest even (FP8 saturating), as
 * the compiled graph's input cast would. The binding stays until replaced,
 * so a session can run many times. */
MIXPREC_API mixprec_status_t mixprec_session_bind_input(mixprec_session_t session, size_t index,
                                                        mixprec_dtype_t dtype, size_t rank,
                                                        const int64_t *dims, const void *data,
                                                        size_t byte_size);
MIXPREC_API mixprec_status_t mixprec_session_bind_input_by_name(mixprec_session_t session,
                                                                const char *name,
                                                                mixprec_dtype_t dtype, size_t rank,
                                                                const int64_t *dims,
                                                                const void *data,
                                                                size_t byte_size);

/* Runs the module and waits for it. Every input must be bound, to host data
 * or to a buffer (MIXPREC_FAILED_PRECONDITION names the first that is not).
 * Same as mixprec_session_run_async then mixprec_session_wait. */
MIXPREC_API mixprec_status_t mixprec_session_run(mixprec_session_t session);

/* Starts a run and returns without waiting for the device: the run is
 * enqueued on the session's stream (the CPU backend runs it before
 * returning). Until mixprec_session_wait, the session accepts no other call
 * but wait, stream and release (MIXPREC_FAILED_PRECONDITION); host data
 * bound with mixprec_session_bind_input was copied when the run started.
 * The status reports what failed while starting it. */
MIXPREC_API mixprec_status_t mixprec_session_run_async(mixprec_session_t session);

/* Waits for the run that mixprec_session_run_async started and returns its
 * status (a failure on the device). Returns NULL at once when no run is in
 * flight (and always on the CPU backend, whose runs are finished). */
MIXPREC_API mixprec_status_t mixprec_session_wait(mixprec_session_t session);

/* The stream the session's runs are enqueued on: a CUstream on the CUDA
 * backend (an application may make its own work wait on it with events),
 * NULL on the CPU backend and for NULL. Owned by the session. */
MIXPREC_API void *mixprec_session_stream(mixprec_session_t session);

/* Output `index` of the last successful run, in its own dtype. The pointer
 * is valid until the next bind, run or release of the session (or state
 * write, reset or checkpoint load).
 * MIXPREC_FAILED_PRECONDITION before the first run, or after a bind or a
 * failed run (run again). */
MIXPREC_API mixprec_status_t mixprec_session_output_data(mixprec_session_t session, size_t index,
                                                         const void **out_data,
                                                         size_t *out_byte_size);
/* Copies output `index` into `buffer` as `dtype`: the output's own dtype, or
 * F32 for any float output (decoded exactly). `byte_size` must be the exact
 * size. */
MIXPREC_API mixprec_status_t mixprec_session_copy_output(mixprec_session_t session, size_t index,
                                                         mixprec_dtype_t dtype, void *buffer,
                                                         size_t byte_size);

/*===----------------------------------------------------------------------===*
 * Buffers: memory of a session's backend (device memory on the CUDA backend,
 * host memory on the CPU backend), bound in place of host inputs and
 * outputs so that an application keeps tensors on the device between runs,
 * as onnxruntime's IO binding does.
 * Thread safety: as the session that made the buffer. A buffer may be
 * released at any time: a session it is bound to keeps the memory until it
 * is unbound or the session is released.
 *===----------------------------------------------------------------------===*/

typedef struct mixprec_buffer_s *mixprec_buffer_t;

/* Allocates `byte_size` bytes of the session's backend memory, set to zero.
 * MIXPREC_OUT_OF_MEMORY (with the bytes asked and free) when it cannot. */
MIXPREC_API mixprec_status_t mixprec_buffer_create(mixprec_session_t session, size_t byte_size,
                                                   mixprec_buffer_t *out_buffer);
MIXPREC_API void mixprec_buffer_release(mixprec_buffer_t buffer);
/* 0 for NULL. */
MIXPREC_API size_t mixprec_buffer_size(mixprec_buffer_t buffer);
/* The memory's address: a CUdeviceptr on the CUDA backend, a host pointer
 * on the CPU backend; 0 for NULL. */
MIXPREC_API uint64_t mixprec_buffer_device_address(mixprec_buffer_t buffer);
/* The backend whose memory it is; MIXPREC_BACKEND_AUTO for NULL. */
MIXPREC_API mixprec_backend_t mixprec_buffer_backend(mixprec_buffer_t buffer);

/* Synchronous copies between host memory and `byte_size` bytes of the
 * buffer at `offset` (MIXPREC_SHAPE_MISMATCH when they do not fit). A copy
 * waits for the runs already started on the buffer's device. */
MIXPREC_API mixprec_status_t mixprec_buffer_copy_from_host(mixprec_buffer_t buffer, size_t offset,
                                                           const void *data, size_t byte_size);
MIXPREC_API mixprec_status_t mixprec_buffer_copy_to_host(mixprec_buffer_t buffer, size_t offset,
                                                         void *data, size_t byte_size);

/* Binds input `index` to `buffer`: each run reads the input from it (in the
 * input's own dtype, no conversion), replacing data bound with
 * mixprec_session_bind_input (and binding host data replaces the buffer).
 * The buffer must come from mixprec_buffer_create on this session
 * (MIXPREC_INVALID_ARGUMENT) and have exactly the input's byte size
 * (MIXPREC_SHAPE_MISMATCH). */
MIXPREC_API mixprec_status_t mixprec_session_bind_input_buffer(mixprec_session_t session,
                                                               size_t index,
                                                               mixprec_buffer_t buffer);
/* Binds output `index` to `buffer`: each run writes the output into it, in
 * its own dtype, on the device (same rules as for inputs). On the CUDA
 * backend the steps write it there directly, unless the memory plan shares
 * its bytes with another tensor (an output listed under two names): then
 * it is copied there at the end of the run. NULL unbinds. output_data and
 * copy_output keep working for a bound output. */
MIXPREC_API mixprec_status_t mixprec_session_bind_output_buffer(mixprec_session_t session,
                                                                size_t index,
                                                                mixprec_buffer_t buffer);

/*===----------------------------------------------------------------------===*
 * State: tensors a module keeps across runs (schema version 3), such as a
 * compiled training step's parameters, optimizer state and loss scale. The
 * compiled graph reads each state as an argument and returns its next
 * value; the session holds the state (initialised from the module when the
 * session is created), binds it on every run, and replaces it with the
 * next value only when the run succeeds: a failed run leaves every state
 * as it was. States are neither inputs nor outputs: the input and output
 * counts, infos and names above leave them out. State data is in the
 * state's own dtype, exactly its byte size.
 * Thread safety: the module queries as the module's; the session calls as
 * the session's (and not while a run is in flight: FAILED_PRECONDITION).
 * A write, reset or checkpoint load makes pointers from output_data invalid.
 *===----------------------------------------------------------------------===*/

/* 0 for a NULL module or a module without state. */
MIXPREC_API size_t mixprec_module_state_count(mixprec_module_t module);
/* The state's name, dtype and shape. */
MIXPREC_API mixprec_status_t mixprec_module_state_info(mixprec_module_t module, size_t index,
                                                       mixprec_tensor_info_t *out_info);

/* Copies state `name` (MIXPREC_NOT_FOUND, listing the states, when there is
 * none) into `buffer`, or replaces it with `data`; `byte_size` must be its
 * exact size (MIXPREC_SHAPE_MISMATCH). */
MIXPREC_API mixprec_status_t mixprec_session_read_state(mixprec_session_t session,
                                                        const char *name, void *buffer,
                                                        size_t byte_size);
MIXPREC_API mixprec_status_t mixprec_session_write_state(mixprec_session_t session,
                                                         const char *name, const void *data,
                                                         size_t byte_size);
/* Sets every state back to its initial value from the module. */
MIXPREC_API mixprec_status_t mixprec_session_reset_state(mixprec_session_t session);

/* Writes every state and `user_bytes` bytes of `user_blob` (the
 * application's own: a trainer's step, RNG state, data order) to a
 * checkpoint file at `path`, atomically: a temporary file in the same
 * folder, synced, then renamed over `path`, so a crash mid-write leaves the
 * previous checkpoint intact (MIXPREC_IO_ERROR, saying why, when it cannot
 * be written). The file holds a format version, a fingerprint of the
 * module's state names, dtypes and shapes, and a checksum. */
MIXPREC_API mixprec_status_t mixprec_session_save_checkpoint(mixprec_session_t session,
                                                             const char *path,
                                                             const void *user_blob,
                                                             size_t user_bytes);
/* Replaces every state with a checkpoint's and copies its user blob into
 * `user_blob_out` (`capacity` bytes; its size to `*user_bytes` when not
 * NULL). The whole file is checked first, and on any error no state
 * changes: MIXPREC_IO_ERROR when it cannot be read;
 * MIXPREC_UNSUPPORTED_VERSION for a newer format; MIXPREC_INVALID_ARGUMENT
 * for a truncated or corrupted file or a checkpoint of another model (its
 * states' names, dtypes or shapes differ, named in the message);
 * MIXPREC_SHAPE_MISMATCH when the user blob does not fit `capacity`. */
MIXPREC_API mixprec_status_t mixprec_session_load_checkpoint(mixprec_session_t session,
                                                             const char *path,
                                                             void *user_blob_out,
                                                             size_t capacity,
                                                             size_t *user_bytes);
/* Reads and checks a checkpoint file as mixprec_session_load_checkpoint
 * does (the same errors, except that no module's states are compared) and
 * copies its user blob out, changing no session: an application reads its
 * own record (what the run was) before it loads the states. */
MIXPREC_API mixprec_status_t mixprec_checkpoint_read_user_blob(const char *path,
                                                               void *user_blob_out,
                                                               size_t capacity,
                                                               size_t *user_bytes);

/* A checkpoint's state without a session: `info` (name, dtype, rank, dims,
 * element_count, byte_size) and its `byte_size` bytes at `data`. */
typedef struct mixprec_checkpoint_state_t {
  mixprec_tensor_info_t info;
  const void *data;
} mixprec_checkpoint_state_t;

/* Writes `count` states (in order) and the user blob to a checkpoint file,
 * atomically, as mixprec_session_save_checkpoint does, with the fingerprint
 * of these names, dtypes and shapes: a session of a module with exactly
 * these states loads it. For an application that keeps part of a state
 * itself (a data-parallel trainer whose ranks each hold a slice of the
 * optimizer state writes the whole). MIXPREC_INVALID_ARGUMENT for a NULL
 * or empty name, two states of one name, an unknown dtype, a rank above
 * 8, a byte_size or element_count that is not the shape's. */
MIXPREC_API mixprec_status_t mixprec_checkpoint_write(const char *path,
                                                      const mixprec_checkpoint_state_t *states,
                                                      size_t count, const void *user_blob,
                                                      size_t user_bytes);

/* Reads and checks a checkpoint file as mixprec_session_load_checkpoint
 * does (the same errors; its fingerprint against its own states) and calls
 * `visit` for each state in order, its pointers valid during the call. A
 * non-zero return from `visit` stops the reading with
 * MIXPREC_EXECUTION_ERROR naming the state. */
typedef int (*mixprec_checkpoint_visit_t)(void *context, const mixprec_checkpoint_state_t *state);
MIXPREC_API mixprec_status_t mixprec_checkpoint_read_states(const char *path,
                                                            mixprec_checkpoint_visit_t visit,
                                                            void *context);

/*===----------------------------------------------------------------------===*
 * Collectives (data-parallel training)
 *
 * A module may hold all_reduce steps (a training step compiled for data
 * parallelism: its gradients, loss and overflow flag are reduced across
 * the ranks before the optimizer). Without a collective, or with one of
 * world size 1, an all_reduce copies its input: one process computes what
 * it computed before. With one of world size 2 or more, the step copies its
 * input to its output and calls `all_reduce` in place on the output (a host
 * pointer on the CPU backend; on the CUDA backend a device pointer and the
 * session's stream when `device_buffers` is 1, else a host copy) with the
 * step's reduction (the routine's numbers: 0 sum, 1 mean, 2 max), which
 * must leave the same bits on every rank. The application owns the collective (MPI,
 * NCCL: train/Collective.h) and keeps `context` alive while the session
 * may run. A non-zero return fails the run with the message the callback
 * wrote into `error` (NUL-terminated, at most error_size bytes) and leaves
 * every state as it was.
 *
 * A step compiled with its optimizer state sharded (ZeRO stage 1, for a job
 * of N ranks) also holds rank_slice steps (this rank's slice of a vector:
 * `rank` from the collective) and all_gather steps, which call `all_gather`
 * with `count` elements of this rank's at `send` and `world_size` x `count`
 * at `recv`, rank r's at recv + r x count (device pointers and the stream
 * as for all_reduce). Both need a collective of world size N (a session
 * without one is a job of one rank). `all_gather` came with struct_size
 * sizeof(mixprec_collective_t); a collective of the older size (up to
 * all_reduce) is taken, and its session fails such a step saying so.
 *===----------------------------------------------------------------------===*/

typedef int32_t mixprec_reduce_op_t;
enum mixprec_reduce_op_e {
  MIXPREC_REDUCE_SUM = 0,
  MIXPREC_REDUCE_MEAN = 1, /* the sum divided by world_size */
  MIXPREC_REDUCE_MAX = 2
};

typedef struct mixprec_collective_t {
  size_t struct_size; /* sizeof(mixprec_collective_t) */
  void *context;
  int32_t rank, world_size;
  int32_t device_buffers;
  int (*all_reduce)(void *context, void *data, size_t count, mixprec_dtype_t dtype,
                    mixprec_reduce_op_t op, void *stream, char *error, size_t error_size);
  int (*all_gather)(void *context, const void *send, void *recv, size_t count,
                    mixprec_dtype_t dtype, void *stream, char *error, size_t error_size);
} mixprec_collective_t;

/* Sets (or, with NULL, removes) the session's collective; copied.
 * MIXPREC_INVALID_ARGUMENT for a struct_size below the first version's
 * (up to all_reduce), a missing all_reduce, a rank outside
 * [0, world_size) or a world size below 1. */
MIXPREC_API mixprec_status_t mixprec_session_set_collective(mixprec_session_t session,
                                                            const mixprec_collective_t *collective);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MIXPREC_RUNTIME_H */
