//===- CublasLt.cpp - cuBLASLt, loaded at run time -------------------------===//
#include "runtime/src/backends/cuda/CublasLt.h"

#include "runtime/src/backends/cuda/LoadOnce.h"

#include <dlfcn.h>

#include <cstdlib>
#include <type_traits>

namespace mixprec::runtime::cuda {
namespace {

#define MIXPREC_CUBLASLT_PFN_DECL(ret, name, ...)                                               \
  static_assert(std::is_same_v<decltype(&::name), ret (*)(__VA_ARGS__)>,                         \
                #name ": DynamicSymbolTables.h and cublasLt.h disagree on the signature");
#include "runtime/src/backends/cuda/DynamicSymbolTables.h"
#undef MIXPREC_CUBLASLT_PFN_DECL

/// The oldest cuBLASLt whose enums and attributes the headers describe.
constexpr size_t kMinVersion = CUBLAS_VER_MAJOR * 10000;

/// Loads `library` into `out`; "" or why it cannot be used.
std::string tryLoad(const std::string &library, CublasLt &out) {
  // Never closed: unloading cuBLASLt at exit is known to race its own
  // teardown, and the process keeps what it loaded.
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return std::string("cannot be opened: ") + (why ? why : "dlopen failed");
  }
#define MIXPREC_CUBLASLT_PFN_DECL(ret, name, ...)                                               \
  out.api.name = reinterpret_cast<ret (*)(__VA_ARGS__)>(dlsym(handle, #name));                   \
  if (!out.api.name)                                                                             \
    return "lacks " #name;
#include "runtime/src/backends/cuda/DynamicSymbolTables.h"
#undef MIXPREC_CUBLASLT_PFN_DECL
  out.version = out.api.cublasLtGetVersion();
  if (out.version < kMinVersion)
    return "is version " + std::to_string(out.version) + ", mixprec needs " +
           std::to_string(kMinVersion) + " or newer";
  out.library = library;
  return "";
}

} // namespace

Status loadCublasLt(const std::vector<std::string> &candidates, std::unique_ptr<CublasLt> &out) {
  std::string reasons;
  for (const std::string &library : candidates) {
    auto loaded = std::make_unique<CublasLt>();
    std::string why = tryLoad(library, *loaded);
    if (why.empty()) {
      out = std::move(loaded);
      return okStatus();
    }
    reasons += (reasons.empty() ? "" : "; ") + ("'" + library + "' " + why);
  }
  return Status(MIXPREC_FAILED_PRECONDITION,
                "cuBLASLt: no usable library (" + reasons +
                    "); set MIXPREC_CUBLASLT_LIBRARY to the path of libcublasLt.so." +
                    std::to_string(CUBLAS_VER_MAJOR));
}

Status cublasLt(const CublasLt **out) {
  return loadOnce(out, [](std::unique_ptr<CublasLt> &loaded) {
    const char *library = std::getenv("MIXPREC_CUBLASLT_LIBRARY");
    if (library && *library)
      return loadCublasLt({library}, loaded);
    const std::string versioned = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    return loadCublasLt({versioned, "libcublasLt.so"}, loaded);
  });
}

} // namespace mixprec::runtime::cuda
