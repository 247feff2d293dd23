/* gpu_runner - time one mixprec module through the public C API.
 *
 *   gpu_runner MODULE.mpk [--backend cpu|cuda|auto] [--input NAME=FILE]...
 *              [--raw-input NAME=FILE]... [--warmup N] [--repeat N]
 *              [--max-seconds S] [--output-dir DIR] [--device-io]
 *
 * FILE holds an input's values as raw little-endian float32 (bound as F32;
 * the runtime rounds them to the input's dtype); a --raw-input FILE holds
 * exactly the input's bytes in its own dtype (BF16 bits for a BF16 input;
 * bound as that dtype, no rounding). Loads the module, creates a
 * session on the backend, binds the inputs, runs once (first run: kernel
 * loading, plans), runs --warmup more times, then times --repeat runs one by
 * one with CLOCK_MONOTONIC (mixprec_session_run returns when the run is
 * done), stopping early after --max-seconds of timed runs. Writes each
 * output as raw float32 to DIR/NAME.f32 (with --output-dir) and prints one
 * JSON object on stdout: times in ms (median, min, mean, max), the backend
 * and auto's reason, the process's peak RSS (VmHWM) and, when a CUDA driver is
 * there, the device memory the module took (the drop in free memory from
 * before loading to the lowest seen; the runner retains the primary context
 * first, which the runtime shares, so the context itself is not counted).
 * With --device-io, each input whose file holds exactly its bytes in its
 * own dtype (an F32 input, or any --raw-input) is copied once into a buffer
 * of the session's backend
 * (mixprec_buffer_create, onnxruntime's IO binding) and bound from there, so
 * the timed runs read it in device memory as PyTorch's do; without it the
 * runtime copies the bound host data to the device at the start of every
 * run. Outputs stay on the device either way (read back only when written).
 * Exit status: 0 on success; 1 when the runtime reports an error (the JSON
 * then has "error" and "stage"); 2 on bad usage.
 */
#include <mixprec/runtime.h>

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define MAX_INPUTS 16
#define MAX_REPEAT 100000

static double nowMs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int compareDouble(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Prints a JSON string (quotes, backslashes and control bytes escaped). */
static void printJsonString(const char *s) {
  putchar('"');
  for (; *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      printf("\\%c", c);
    else if (c < 0x20)
      printf("\\u%04x", c);
    else
      putchar(c);
  }
  putchar('"');
}

/* Prints the failed status as the run's JSON and frees it; returns exit status 1. */
static int fail(const char *stage, mixprec_status_t status) {
  printf("{\"stage\": ");
  printJsonString(stage);
  printf(", \"error\": ");
  char line[1024];
  snprintf(line, sizeof line, "%s: %s", mixprec_status_code_name(mixprec_status_code(status)),
           mixprec_status_message(status));
  printJsonString(line);
  printf("}\n");
  mixprec_status_free(status);
  return 1;
}

static int failText(const char *stage, const char *message) {
  printf("{\"stage\": ");
  printJsonString(stage);
  printf(", \"error\": ");
  printJsonString(message);
  printf("}\n");
  return 1;
}

/* Reads a whole file; NULL on failure. */
static void *readFile(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  void *data = NULL;
  long length = -1;
  if (fseek(f, 0, SEEK_END) == 0 && (length = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
    data = malloc((size_t)length + 1);
    if (data && fread(data, 1, (size_t)length, f) != (size_t)length) {
      free(data);
      data = NULL;
    }
  }
  fclose(f);
  *size = length > 0 ? (size_t)length : 0;
  return data;
}

/* The process's peak resident memory: VmHWM, which starts afresh at exec
 * (getrusage's ru_maxrss keeps the parent's peak across exec). */
static long peakRssBytes(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0)
      kb = strtol(line + 6, NULL, 10);
  if (f)
    fclose(f);
  if (kb < 0) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    kb = usage.ru_maxrss;
  }
  return kb * 1024L;
}

/* Device memory through the driver, when there is one: the runner keeps the
 * primary context (the one the CUDA backend uses) so readings share it. */
typedef int (*CuInitFn)(unsigned);
typedef int (*CuDeviceGetFn)(int *, int);
typedef int (*CuPrimaryCtxRetainFn)(void **, int);
typedef int (*CuCtxSetCurrentFn)(void *);
typedef int (*CuMemGetInfoFn)(size_t *, size_t *);
static CuMemGetInfoFn cuMemGetInfoPtr;

/* Opens the driver and makes device 0's primary context current; 0 if none. */
static int openDriver(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return 0;
  CuInitFn init = (CuInitFn)dlsym(lib, "cuInit");
  CuDeviceGetFn deviceGet = (CuDeviceGetFn)dlsym(lib, "cuDeviceGet");
  CuPrimaryCtxRetainFn retain = (CuPrimaryCtxRetainFn)dlsym(lib, "cuDevicePrimaryCtxRetain");
  CuCtxSetCurrentFn setCurrent = (CuCtxSetCurrentFn)dlsym(lib, "cuCtxSetCurrent");
  CuMemGetInfoFn memGetInfo = (CuMemGetInfoFn)dlsym(lib, "cuMemGetInfo_v2");
  int device = 0;
  void *context = NULL;
  if (!init || !deviceGet || !retain || !setCurrent || !memGetInfo || init(0) != 0 ||
      deviceGet(&device, 0) != 0 || retain(&context, device) != 0 || setCurrent(context) != 0)
    return 0;
  cuMemGetInfoPtr = memGetInfo;
  return 1;
}

/* Free device memory in bytes; 0 when unknown. */
static size_t deviceFree(void) {
  size_t freeBytes = 0, total = 0;
  if (cuMemGetInfoPtr && cuMemGetInfoPtr(&freeBytes, &total) != 0)
    return 0;
  return freeBytes;
}

/* Writes output `index` as raw float32 to DIR/NAME.f32 (bytes of NAME outside
 * [A-Za-z0-9_.-] as '_'); 0 on failure, with *status set when the runtime failed. */
static int writeOutput(mixprec_session_t session, mixprec_module_t module, size_t index,
                       const char *dir, mixprec_status_t *status) {
  mixprec_tensor_info_t info;
  if ((*status = mixprec_module_output_info(module, index, &info)))
    return 0;
  float *values = malloc(info.element_count * sizeof(float) + 1);
  if (!values)
    return 0;
  if ((*status = mixprec_session_copy_output(session, index, MIXPREC_DTYPE_F32, values,
                                             info.element_count * sizeof(float)))) {
    free(values);
    return 0;
  }
  char name[256], path[4096];
  size_t n = 0;
  for (const char *c = info.name; *c && n + 1 < sizeof name; ++c)
    name[n++] = isalnum((unsigned char)*c) || *c == '_' || *c == '.' || *c == '-' ? *c : '_';
  name[n] = '\0';
  snprintf(path, sizeof path, "%s/%s.f32", dir, name);
  FILE *out = fopen(path, "wb");
  int ok = out && fwrite(values, sizeof(float), info.element_count, out) == info.element_count;
  if (out && fclose(out) != 0)
    ok = 0;
  free(values);
  return ok;
}

/* Binds each input file inputPaths[k] (raw float32, or the input's own
 * dtype where inputRaw[k]) as the input named inputNames[k]: with
 * `deviceIo`, an input whose file holds exactly its bytes in its own dtype
 * through a backend buffer (buffers[k], released by the caller; *onDevice
 * counts them), else as host data; 0, or 1 after printing the failure. */
static int bindInputs(mixprec_module_t module, mixprec_session_t session,
                      const char *const *inputNames, const char *const *inputPaths,
                      const int *inputRaw, size_t inputCount, int deviceIo,
                      mixprec_buffer_t *buffers, size_t *onDevice) {
  mixprec_status_t s;
  for (size_t k = 0; k < inputCount; ++k) {
    size_t index = 0, size = 0;
    if ((s = mixprec_module_find_input(module, inputNames[k], &index)))
      return fail("bind", s);
    mixprec_tensor_info_t info;
    if ((s = mixprec_module_input_info(module, index, &info)))
      return fail("bind", s);
    void *data = readFile(inputPaths[k], &size);
    if (!data) {
      char message[512];
      snprintf(message, sizeof message, "cannot read input file '%s'", inputPaths[k]);
      return failText("bind", message);
    }
    if (inputRaw[k] && size != info.byte_size) {
      char message[600];
      snprintf(message, sizeof message,
               "raw input file '%s' has %zu bytes, input '%s' takes %zu in its own dtype",
               inputPaths[k], size, inputNames[k], (size_t)info.byte_size);
      free(data);
      return failText("bind", message);
    }
    if (deviceIo && (inputRaw[k] || info.dtype == MIXPREC_DTYPE_F32) && size == info.byte_size) {
      s = mixprec_buffer_create(session, size, &buffers[k]);
      if (!s)
        s = mixprec_buffer_copy_from_host(buffers[k], 0, data, size);
      if (!s)
        s = mixprec_session_bind_input_buffer(session, index, buffers[k]);
      *onDevice += !s;
    } else {
      s = mixprec_session_bind_input(session, index,
                                     inputRaw[k] ? info.dtype : MIXPREC_DTYPE_F32, info.rank,
                                     info.dims, data, size);
    }
    free(data);
    if (s)
      return fail("bind", s);
  }
  return 0;
}

static void usage(void) {
  fprintf(stderr, "usage: gpu_runner MODULE.mpk [--backend cpu|cuda|auto] [--input NAME=FILE]... "
                  "[--raw-input NAME=FILE]... [--warmup N] [--repeat N] [--max-seconds S] "
                  "[--output-dir DIR] [--device-io]\n");
}

int main(int argc, char **argv) {
  const char *modulePath = NULL, *outputDir = NULL;
  const char *inputNames[MAX_INPUTS], *inputPaths[MAX_INPUTS];
  int inputRaw[MAX_INPUTS];
  size_t inputCount = 0;
  long warmup = 5, repeat = 50;
  double maxSeconds = 30;
  mixprec_backend_t backend = MIXPREC_BACKEND_AUTO;
  int deviceIo = 0;
  mixprec_buffer_t buffers[MAX_INPUTS] = {NULL};
  size_t inputsOnDevice = 0;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    int hasValue = i + 1 < argc;
    if (strcmp(a, "--backend") == 0 && hasValue) {
      const char *b = argv[++i];
      if (strcmp(b, "cpu") == 0)
        backend = MIXPREC_BACKEND_CPU;
      else if (strcmp(b, "cuda") == 0)
        backend = MIXPREC_BACKEND_CUDA;
      else if (strcmp(b, "auto") == 0)
        backend = MIXPREC_BACKEND_AUTO;
      else
        return usage(), 2;
    } else if ((strcmp(a, "--input") == 0 || strcmp(a, "--raw-input") == 0) && hasValue &&
               inputCount < MAX_INPUTS) {
      char *spec = argv[++i], *eq = strchr(spec, '=');
      if (!eq)
        return usage(), 2;
      *eq = '\0';
      inputRaw[inputCount] = strcmp(a, "--raw-input") == 0;
      inputNames[inputCount] = spec;
      inputPaths[inputCount++] = eq + 1;
    } else if (strcmp(a, "--warmup") == 0 && hasValue) {
      warmup = strtol(argv[++i], NULL, 10);
    } else if (strcmp(a, "--repeat") == 0 && hasValue) {
      repeat = strtol(argv[++i], NULL, 10);
    } else if (strcmp(a, "--max-seconds") == 0 && hasValue) {
      maxSeconds = strtod(argv[++i], NULL);
    } else if (strcmp(a, "--device-io") == 0) {
      deviceIo = 1;
    } else if (strcmp(a, "--output-dir") == 0 && hasValue) {
      outputDir = argv[++i];
    } else if (!modulePath && a[0] != '-') {
      modulePath = a;
    } else {
      return usage(), 2;
    }
  }
  if (!modulePath || warmup < 0 || repeat < 1 || repeat > MAX_REPEAT || !(maxSeconds > 0))
    return usage(), 2;

  int haveDriver = backend != MIXPREC_BACKEND_CPU && openDriver();
  size_t freeBefore = deviceFree(), freeLowest = freeBefore;

  double t0 = nowMs();
  mixprec_module_t module = NULL;
  mixprec_status_t s = mixprec_module_load_file(modulePath, NULL, &module);
  if (s)
    return fail("load", s);
  double loadMs = nowMs() - t0;

  mixprec_session_options_t options = MIXPREC_SESSION_OPTIONS_INIT;
  options.backend = backend;
  mixprec_session_t session = NULL;
  t0 = nowMs();
  if ((s = mixprec_session_create(module, &options, &session)))
    return fail("session", s);
  double sessionMs = nowMs() - t0;

  if (bindInputs(module, session, inputNames, inputPaths, inputRaw, inputCount, deviceIo,
                 buffers, &inputsOnDevice))
    return 1;

  t0 = nowMs();
  if ((s = mixprec_session_run(session)))
    return fail("first run", s);
  double firstRunMs = nowMs() - t0;
  size_t f = deviceFree();
  freeLowest = f && f < freeLowest ? f : freeLowest;
  for (long i = 0; i < warmup; ++i)
    if ((s = mixprec_session_run(session)))
      return fail("warm-up run", s);

  double *times = malloc((size_t)repeat * sizeof(double));
  if (!times)
    return failText("timed run", "out of host memory for the timings");
  long done = 0;
  double timedTotal = 0;
  while (done < repeat && timedTotal < maxSeconds * 1e3) {
    t0 = nowMs();
    if ((s = mixprec_session_run(session)))
      return fail("timed run", s);
    times[done] = nowMs() - t0;
    timedTotal += times[done++];
  }
  f = deviceFree();
  freeLowest = f && f < freeLowest ? f : freeLowest;
  size_t outputCount = mixprec_module_output_count(module);
  if (outputDir)
    for (size_t o = 0; o < outputCount; ++o)
      if (!writeOutput(session, module, o, outputDir, &s))
        return s ? fail("output", s) : failText("output", "cannot write an output file");
  double sum = 0;
  for (long i = 0; i < done; ++i)
    sum += times[i];
  qsort(times, (size_t)done, sizeof(double), compareDouble);
  double median = done % 2 ? times[done / 2] : 0.5 * (times[done / 2 - 1] + times[done / 2]);

  printf("{\"module\": ");
  printJsonString(modulePath);
  printf(", \"backend\": ");
  printJsonString(mixprec_backend_name(mixprec_session_backend(session)));
  printf(", \"backend_reason\": ");
  printJsonString(mixprec_session_backend_reason(session));
  printf(", \"load_ms\": %.3f, \"session_ms\": %.3f, \"first_run_ms\": %.3f", loadMs, sessionMs,
         firstRunMs);
  printf(", \"warmup\": %ld, \"runs\": %ld, \"median_ms\": %.4f, \"min_ms\": %.4f, "
         "\"mean_ms\": %.4f, \"max_ms\": %.4f",
         warmup, done, median, times[0], sum / (double)done, times[done - 1]);
  printf(", \"device_io\": %s, \"inputs_on_device\": %zu", deviceIo ? "true" : "false",
         inputsOnDevice);
  printf(", \"peak_rss_bytes\": %ld", peakRssBytes());
  if (haveDriver && freeBefore)
    printf(", \"device_bytes\": %zu", freeBefore - freeLowest);
  else
    printf(", \"device_bytes\": null");
  printf(", \"outputs\": [");
  for (size_t o = 0; o < outputCount; ++o) {
    mixprec_tensor_info_t info;
    if ((s = mixprec_module_output_info(module, o, &info)))
      return fail("output", s);
    printf("%s{\"name\": ", o ? ", " : "");
    printJsonString(info.name);
    printf(", \"dims\": [");
    for (size_t d = 0; d < info.rank; ++d)
      printf("%s%lld", d ? ", " : "", (long long)info.dims[d]);
    printf("]}");
  }
  printf("]}\n");
  free(times);
  for (size_t k = 0; k < inputCount; ++k)
    mixprec_buffer_release(buffers[k]); /* NULL: no-op; the session keeps bound memory */
  mixprec_session_release(session);
  mixprec_module_release(module);
  return 0;
}
