//===- CublasLt.h - cuBLASLt, loaded at run time ----------------*- C++ -*-===//
//
// cuBLASLt is opened with dlopen, never linked: libmixprec_runtime.so must
// load without it, and loading it costs 0.1-0.7 s and ~200 MB, which only
// the CUDA backend should pay. Its entry points are the
// MIXPREC_CUBLASLT_PFN_DECL lines of DynamicSymbolTables.h.
//
// MIXPREC_CUBLASLT_LIBRARY names the library to open (PyTorch's wheels, for
// one, keep it outside the loader's path); otherwise libcublasLt.so.13, then
// libcublasLt.so.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CUDA_CUBLASLT_H
#define MIXPREC_RUNTIME_CUDA_CUBLASLT_H

#include "runtime/src/Status.h"

#include <cublasLt.h>

#include <memory>
#include <string>
#include <vector>

namespace mixprec::runtime::cuda {

/// cuBLASLt's entry points, one member per MIXPREC_CUBLASLT_PFN_DECL line.
struct CublasLtSymbols {
#define MIXPREC_CUBLASLT_PFN_DECL(ret, name, ...) ret (*name)(__VA_ARGS__) = nullptr;
#include "runtime/src/backends/cuda/DynamicSymbolTables.h"
#undef MIXPREC_CUBLASLT_PFN_DECL
};

struct CublasLt {
  CublasLtSymbols api;
  std::string library; ///< what was opened
  size_t version = 0;  ///< cublasLtGetVersion(), e.g. 130100
};

/// Opens the first of `candidates` that loads and resolves the table, each
/// call anew (tests). MIXPREC_FAILED_PRECONDITION naming every candidate and
/// why it failed (cannot be opened, lacks a function, older than cuBLASLt
/// 13) when none does.
Status loadCublasLt(const std::vector<std::string> &candidates, std::unique_ptr<CublasLt> &out);

/// The process's cuBLASLt, loaded once on first use.
Status cublasLt(const CublasLt **out);

} // namespace mixprec::runtime::cuda

#endif // MIXPREC_RUNTIME_CUDA_CUBLASLT_H
