//===- ExerciseModule.h - run arbitrary bytes through the runtime -*- C++ -*-===//
//
// Shared by the libFuzzer target (ModuleLoaderFuzzer.cpp) and the seeded
// corruption test (tests/unit/runtime/CorruptionTest.cpp): loads bytes as a
// module and, when they load, creates a CPU session, binds every input,
// runs and reads every output. Whatever happens must be a status, never a
// crash or an out-of-bounds access (the callers run under AddressSanitizer).
// The public C API runs the module; the schema header is read only to
// bound the work a run asks for (kernelPoints), as kMaxSessionBytes bounds
// its memory.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_TESTS_FUZZ_EXERCISEMODULE_H
#define MIXPREC_TESTS_FUZZ_EXERCISEMODULE_H

#include "runtime/include/mixprec/runtime.h"
#include "runtime/schema/module_generated.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace mixprec::fuzz {

/// What happened to one input: the first failing call's status code, or OK
/// when it loaded, ran and every output was read.
struct Outcome {
  mixprec_status_code_t code = MIXPREC_OK;
  bool loaded = false;
  bool ran = false;
};

/// Bounds a session's memory so that a mangled shape cannot make the
/// harness allocate (and zero) gigabytes.
constexpr uint64_t kMaxSessionBytes = 16u << 20;

/// Bounds the points of all kernels' iteration spaces that one run may
/// visit. The loader accepts spaces of up to 2^48 points whose accesses
/// stay in bounds (a stride of 0 reads one element for all of them), so a
/// mangled shape can ask a valid module for hours of work on 16 MiB of
/// tensors: a module the fuzzer found ran 52 s under ASan. Such a module
/// is loaded and its session made, but not run.
constexpr uint64_t kMaxKernelPoints = uint64_t(1) << 22;

/// The points every kernel of a module the runtime loaded (so its buffer
/// verified) visits, saturating at UINT64_MAX: its outer points times its
/// row points, or times 1 where the rows are empty (the backends then run
/// each outer point once: a [98884911109, 0] space with one row dim, which
/// the fuzzer found, is 98884911109 runs of an empty row).
inline uint64_t kernelPoints(const uint8_t *data) {
  const auto *kernels = mixprec::schema::GetModule(data)->kernels();
  uint64_t total = 0;
  for (size_t k = 0; kernels && k < kernels->size(); ++k) {
    const mixprec::schema::Kernel &kernel = *kernels->Get(k);
    const auto *shape = kernel.shape();
    const size_t rank = shape ? shape->size() : 0;
    const size_t outerRank = rank - static_cast<size_t>(kernel.row_dims()); // checked on load
    uint64_t outer = 1, row = 1;
    for (size_t d = 0; d < rank; ++d) {
      uint64_t &part = d < outerRank ? outer : row;
      // Not negative: the module loaded.
      if (__builtin_mul_overflow(part, static_cast<uint64_t>(shape->Get(d)), &part))
        return UINT64_MAX;
    }
    uint64_t points = 0;
    if (__builtin_mul_overflow(outer, row > 0 ? row : 1, &points) ||
        __builtin_add_overflow(total, points, &total))
      return UINT64_MAX;
  }
  return total;
}

inline Outcome exerciseModule(const uint8_t *data, size_t size) {
  Outcome outcome;
  auto fail = [&](mixprec_status_t s) {
    outcome.code = mixprec_status_code(s);
    // Every failure carries a message: read it all.
    volatile size_t length = std::strlen(mixprec_status_message(s));
    (void)length;
    mixprec_status_free(s);
    return outcome;
  };
  mixprec_module_t module = nullptr;
  if (mixprec_status_t s = mixprec_module_load_memory(data, size, nullptr, &module))
    return fail(s);
  outcome.loaded = true;
  struct Release {
    mixprec_module_t module;
    mixprec_session_t session = nullptr;
    ~Release() {
      mixprec_session_release(session);
      mixprec_module_release(module);
    }
  } release{module};

  mixprec_session_options_t options = MIXPREC_SESSION_OPTIONS_INIT;
  options.backend = MIXPREC_BACKEND_CPU;
  options.max_memory_bytes = kMaxSessionBytes;
  if (mixprec_status_t s = mixprec_session_create(module, &options, &release.session))
    return fail(s);
  for (size_t i = 0; i < mixprec_module_input_count(module); ++i) {
    mixprec_tensor_info_t info;
    if (mixprec_status_t s = mixprec_module_input_info(module, i, &info))
      return fail(s);
    // Deterministic, non-trivial data: small integers (valid gather
    // indices for the seed modules), varied bit patterns for floats.
    std::vector<uint8_t> bytes(info.byte_size);
    const size_t width = mixprec_dtype_size(info.dtype);
    const bool integer = info.dtype == MIXPREC_DTYPE_I64 || info.dtype == MIXPREC_DTYPE_I32 ||
                         info.dtype == MIXPREC_DTYPE_BOOL;
    for (size_t e = 0; e < info.element_count; ++e)
      for (size_t b = 0; b < width; ++b)
        bytes[e * width + b] =
            integer ? static_cast<uint8_t>(b == 0 ? e % 2 : 0)
                    : static_cast<uint8_t>(((e * width + b) * 37 + i) & 0x3f);
    if (mixprec_status_t s = mixprec_session_bind_input(release.session, i, info.dtype, info.rank,
                                                        info.dims, bytes.data(), bytes.size()))
      return fail(s);
  }
  if (kernelPoints(data) > kMaxKernelPoints)
    return outcome;
  if (mixprec_status_t s = mixprec_session_run(release.session))
    return fail(s);
  outcome.ran = true;
  for (size_t i = 0; i < mixprec_module_output_count(module); ++i) {
    mixprec_tensor_info_t info;
    if (mixprec_status_t s = mixprec_module_output_info(module, i, &info))
      return fail(s);
    std::vector<uint8_t> bytes(info.byte_size);
    if (mixprec_status_t s = mixprec_session_copy_output(release.session, i, info.dtype,
                                                         bytes.data(), bytes.size()))
      return fail(s);
  }
  return outcome;
}

} // namespace mixprec::fuzz

#endif // MIXPREC_TESTS_FUZZ_EXERCISEMODULE_H
