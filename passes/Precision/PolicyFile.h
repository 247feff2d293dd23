//===- PolicyFile.h - the settings of --mp-assign-precision -----*- C++ -*-===//
//
// The policy --mp-assign-precision runs with, and the reader of its JSON
// policy files (`policy=FILE`, the CLI's `--policy`). The reader takes a
// buffer as well as a path so that the fuzzer (tests/fuzz) can drive it.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_PASSES_POLICYFILE_H
#define MIXPREC_PASSES_POLICYFILE_H

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Types.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace mixprec::passes {

/// One user override: which ops it names, and what it asks.
struct PolicyOverride {
  std::string entry;   ///< as the user wrote it, for reasons and errors
  std::string pattern; ///< op type or op-name glob
  mlir::Type dtype;    ///< f32 for keep-fp32
  bool matched = false;
};

/// The settings the pass runs with, from options and the policy file.
struct PrecisionPolicy {
  mlir::Type target;
  bool keepIoTypes = true;
  std::vector<PolicyOverride> overrides; ///< force entries first, then keep-fp32
  double fp16Margin = 2.0;
  double underflowThreshold = 0.5;
  mlir::Type overflowFallback;
};

/// How deeply a policy file may nest arrays and objects. The JSON parser
/// recurses once per level, so deeper files are refused before parsing
/// (a policy needs two levels).
constexpr unsigned kMaxPolicyNesting = 64;

/// Parses the JSON text of a policy file into `policy`, appending its
/// "force" entries (as GLOB:DTYPE) to `forces` and its "keep_fp32" entries
/// to `keeps`. Unknown keys are errors; `name` names the file in `error`.
mlir::LogicalResult parsePolicyJson(mlir::MLIRContext *ctx, llvm::StringRef name,
                                    llvm::StringRef text, PrecisionPolicy &policy,
                                    std::vector<std::string> &forces,
                                    std::vector<std::string> &keeps, std::string &error);

/// Reads the policy file at `path`, which must be a regular file (a device
/// would be read forever, a FIFO would block), and parses it.
mlir::LogicalResult readPolicyFile(mlir::MLIRContext *ctx, llvm::StringRef path,
                                   PrecisionPolicy &policy, std::vector<std::string> &forces,
                                   std::vector<std::string> &keeps, std::string &error);

} // namespace mixprec::passes

#endif // MIXPREC_PASSES_POLICYFILE_H
