/* embed - load a mixprec module, describe it, run it, print a checksum.
 *
 * A small C program against the installed runtime (find_package(mixprec)):
 *
 *   embed MODULE.mpk [--seed N] [--input NAME=FILE]... [--backend cpu|cuda|auto]
 *
 * Inputs not given as files are filled from a seeded generator: floats in
 * [-1, 1) (bound as f32; the runtime rounds them to the input's dtype),
 * integers in [0, 4), booleans 0/1. FILE holds the input's raw bytes in its
 * own dtype, or f32 values for a float input. Prints each output's sum and
 * FNV-1a 64, then one checksum over all outputs' bytes. Exit status: 0 on
 * success, 1 when the runtime reports an error (printed with its code), 2 on
 * bad usage.
 */
#include <mixprec/runtime.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE_INPUTS 16

static uint64_t fnv1a64(const void *data, size_t size, uint64_t hash) {
  const unsigned char *p = (const unsigned char *)data;
  for (size_t i = 0; i < size; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

static uint64_t xorshift(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

/* Prints a failed status and frees it; returns 1 for the caller to exit. */
static int report(const char *what, mixprec_status_t status) {
  fprintf(stderr, "embed: %s: %s: %s\n", what,
          mixprec_status_code_name(mixprec_status_code(status)), mixprec_status_message(status));
  mixprec_status_free(status);
  return 1;
}

static void printInfo(const char *kind, size_t index, const mixprec_tensor_info_t *info) {
  printf("%s %zu: %s %s [", kind, index, info->name, mixprec_dtype_name(info->dtype));
  for (size_t d = 0; d < info->rank; ++d)
    printf("%s%" PRId64, d ? "," : "", info->dims[d]);
  printf("]\n");
}

static int isFloat(mixprec_dtype_t dtype) {
  return dtype == MIXPREC_DTYPE_F32 || dtype == MIXPREC_DTYPE_F16 || dtype == MIXPREC_DTYPE_BF16 ||
         dtype == MIXPREC_DTYPE_F8E4M3FN || dtype == MIXPREC_DTYPE_F8E5M2;
}

/* Reads a whole file; NULL on failure. */
static void *readFile(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long length = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *data = length > 0 ? malloc((size_t)length) : malloc(1);
  if (data && length > 0 && fread(data, 1, (size_t)length, f) != (size_t)length) {
    free(data);
    data = NULL;
  }
  fclose(f);
  *size = length > 0 ? (size_t)length : 0;
  return data;
}

/* Binds input `index` from seeded values. */
static mixprec_status_t bindSeeded(mixprec_session_t session, size_t index,
                                   const mixprec_tensor_info_t *info, uint64_t seed) {
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + index + 1;
  size_t n = info->element_count;
  if (isFloat(info->dtype)) {
    float *values = malloc(n * sizeof(float) + 1);
    for (size_t i = 0; i < n; ++i)
      values[i] = (float)((double)(xorshift(&state) >> 40) / 16777216.0 * 2.0 - 1.0);
    mixprec_status_t s = mixprec_session_bind_input(session, index, MIXPREC_DTYPE_F32, info->rank,
                                                    info->dims, values, n * sizeof(float));
    free(values);
    return s;
  }
  size_t width = mixprec_dtype_size(info->dtype);
  unsigned char *bytes = calloc(n + 1, width);
  for (size_t i = 0; i < n; ++i) {
    uint64_t v = info->dtype == MIXPREC_DTYPE_BOOL ? xorshift(&state) & 1 : xorshift(&state) % 4;
    memcpy(bytes + i * width, &v, width); /* little-endian */
  }
  mixprec_status_t s = mixprec_session_bind_input(session, index, info->dtype, info->rank,
                                                  info->dims, bytes, n * width);
  free(bytes);
  return s;
}

int main(int argc, char **argv) {
  const char *modulePath = NULL;
  const char *fileNames[MAX_FILE_INPUTS], *filePaths[MAX_FILE_INPUTS];
  size_t fileCount = 0;
  uint64_t seed = 1;
  mixprec_backend_t backend = MIXPREC_BACKEND_AUTO;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      seed = strtoull(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--input") == 0 && i + 1 < argc && fileCount < MAX_FILE_INPUTS) {
      char *spec = argv[++i], *eq = strchr(spec, '=');
      if (!eq) {
        fprintf(stderr, "embed: --input wants NAME=FILE, got '%s'\n", spec);
        return 2;
      }
      *eq = '\0';
      fileNames[fileCount] = spec;
      filePaths[fileCount++] = eq + 1;
    } else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      ++i;
      backend = strcmp(argv[i], "cpu") == 0    ? MIXPREC_BACKEND_CPU
                : strcmp(argv[i], "cuda") == 0 ? MIXPREC_BACKEND_CUDA
                                               : MIXPREC_BACKEND_AUTO;
    } else if (!modulePath && argv[i][0] != '-') {
      modulePath = argv[i];
    } else {
      fprintf(stderr, "usage: embed MODULE.mpk [--seed N] [--input NAME=FILE]... "
                      "[--backend cpu|cuda|auto]\n");
      return 2;
    }
  }
  if (!modulePath) {
    fprintf(stderr, "usage: embed MODULE.mpk [--seed N] [--input NAME=FILE]... "
                    "[--backend cpu|cuda|auto]\n");
    return 2;
  }

  mixprec_module_t module = NULL;
  mixprec_status_t s = mixprec_module_load_file(modulePath, NULL, &module);
  if (s)
    return report("load", s);
  mixprec_session_options_t options = MIXPREC_SESSION_OPTIONS_INIT;
  options.backend = backend;
  mixprec_session_t session = NULL;
  if ((s = mixprec_session_create(module, &options, &session))) {
    mixprec_module_release(module);
    return report("session", s);
  }
  printf("module: %s (schema %u, producer \"%s\"), runtime %s, backend %s\n", modulePath,
         mixprec_module_schema_version(module), mixprec_module_producer(module),
         mixprec_runtime_version(), mixprec_backend_name(mixprec_session_backend(session)));
  if (*mixprec_session_backend_reason(session))
    printf("%s\n", mixprec_session_backend_reason(session));

  int status = 0;
  for (size_t i = 0; i < mixprec_module_input_count(module) && !status; ++i) {
    mixprec_tensor_info_t info;
    if ((s = mixprec_module_input_info(module, i, &info))) {
      status = report("input", s);
      break;
    }
    printInfo("input", i, &info);
    const char *path = NULL;
    for (size_t f = 0; f < fileCount; ++f)
      if (strcmp(fileNames[f], info.name) == 0)
        path = filePaths[f];
    if (!path) {
      s = bindSeeded(session, i, &info, seed);
    } else {
      size_t size = 0;
      void *data = readFile(path, &size);
      if (!data) {
        fprintf(stderr, "embed: cannot read '%s'\n", path);
        status = 1;
        break;
      }
      /* f32 data for a float input when the size says so. */
      mixprec_dtype_t dtype = isFloat(info.dtype) && size == info.element_count * 4
                                  ? MIXPREC_DTYPE_F32
                                  : info.dtype;
      s = mixprec_session_bind_input(session, i, dtype, info.rank, info.dims, data, size);
      free(data);
    }
    if (s)
      status = report("bind", s);
  }
  for (size_t i = 0; i < mixprec_module_output_count(module) && !status; ++i) {
    mixprec_tensor_info_t info;
    if ((s = mixprec_module_output_info(module, i, &info)))
      status = report("output", s);
    else
      printInfo("output", i, &info);
  }
  if (!status && (s = mixprec_session_run(session)))
    status = report("run", s);

  uint64_t checksum = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < mixprec_module_output_count(module) && !status; ++i) {
    mixprec_tensor_info_t info;
    const void *data = NULL;
    size_t size = 0;
    if ((s = mixprec_module_output_info(module, i, &info)) ||
        (s = mixprec_session_output_data(session, i, &data, &size))) {
      status = report("output", s);
      break;
    }
    double sum = 0.0;
    if (isFloat(info.dtype)) {
      float *values = malloc(info.element_count * sizeof(float) + 1);
      if ((s = mixprec_session_copy_output(session, i, MIXPREC_DTYPE_F32, values,
                                           info.element_count * sizeof(float)))) {
        free(values);
        status = report("output", s);
        break;
      }
      for (size_t e = 0; e < info.element_count; ++e)
        sum += values[e];
      free(values);
    }
    printf("output %zu %s: sum %.9g fnv1a64 0x%016" PRIx64 "\n", i, info.name, sum,
           fnv1a64(data, size, 0xcbf29ce484222325ull));
    checksum = fnv1a64(data, size, checksum);
  }
  if (!status)
    printf("checksum 0x%016" PRIx64 "\n", checksum);
  mixprec_session_release(session);
  mixprec_module_release(module);
  return status;
}
