//===- ModuleWriter.h - serialize a planned mpk function to .mpk -*- C++ -*-===//
#ifndef MIXPREC_CODEGEN_MODULEWRITER_H
#define MIXPREC_CODEGEN_MODULEWRITER_H

#include "codegen/Cuda/CudaProgram.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mixprec::codegen {

/// Why an op got its dtype, recorded in the module (from the annotated graph).
struct PrecisionEntry {
  std::string op, opType, dtype, reason;
};

struct ModuleWriteOptions {
  /// Constants larger than this go to the side file `<module>.weights`.
  uint64_t sideFileThreshold = 1 << 20;
  std::string producer;
  /// The kernels' CUDA code (compileCudaProgram on the same function), or
  /// null: a module without CUDA code, as without `--arch`.
  const CudaModuleCode *cuda = nullptr;
};

/// What the written module holds, for reports and benchmarks.
struct ModuleStats {
  int64_t kernels = 0, gemms = 0, routines = 0;
  int64_t arenaBytes = 0, bufferBytes = 0;
  int64_t constantBytes = 0, sideFileBytes = 0;
  /// Bytes the steps read and write per run, and the minimum (each graph
  /// input read once, each output written once).
  int64_t bytesMoved = 0, minimumBytes = 0;
};

/// Collects the precision plan of an annotated mp function (ops with a reason).
std::vector<PrecisionEntry> collectPrecisionPlan(mlir::func::FuncOp func);

/// A serialized module: the sealed .mpk bytes and its side file (large
/// weights; empty when there are none).
struct ModuleImage {
  std::vector<uint8_t> module, sideFile;
};

/// Serializes `func` (after --mp-lower-to-kernels and --mp-plan-memory) as
/// a sealed module whose side file is called `sideFileName`. Failures are
/// one-line errors: at the op the format cannot express (a step, or the
/// op defining a value), or at `func` when the graph as a whole has no
/// module form (a state binding, a module the runtime refuses).
mlir::FailureOr<ModuleImage> buildModule(mlir::func::FuncOp func,
                                         const std::vector<PrecisionEntry> &precision,
                                         const std::string &sideFileName,
                                         const ModuleWriteOptions &options, ModuleStats &stats);

/// The side file name a module written to `path` refers to.
std::string sideFileNameFor(const std::string &path);

/// Where the side file of a module written to `path` lives: beside it.
std::string sideFilePathFor(const std::string &path);

/// Writes the module to `path` and its side file beside it, each atomically
/// (common/FileIO.h): both are complete before either replaces an old file.
/// Errors read "FILE: cannot write: REASON". A file error is no op's error,
/// so it stays a string, as common/FileIO.h gives it: the compile API
/// (compiler::writeModule) emits it at an unknown location, the tools that
/// retry elsewhere (the JIT's module cache) read it as text.
bool writeModuleFiles(const std::string &path, const ModuleImage &image, std::string &error);

} // namespace mixprec::codegen

#endif // MIXPREC_CODEGEN_MODULEWRITER_H
