//===- PolicyFuzzer.cpp - libFuzzer entry: policy files --------------------===//
//
// Bytes -> parsePolicyJson (what `--policy FILE` reads). Whatever the text,
// the result is a policy or a one-line error naming the file, never a crash
// (deep nesting once overflowed the stack).
// Seeds: tests/fuzz/corpus/policy.
//
//===----------------------------------------------------------------------===//
#include "passes/Precision/PolicyFile.h"

#include "mlir/IR/MLIRContext.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // Only builtin float types are created: one context serves every input.
  static mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  mixprec::passes::PrecisionPolicy policy;
  std::vector<std::string> forces, keeps;
  std::string error;
  if (mlir::failed(mixprec::passes::parsePolicyJson(
          &context, "fuzz.json", llvm::StringRef(reinterpret_cast<const char *>(data), size),
          policy, forces, keeps, error)) &&
      (error.rfind("policy file 'fuzz.json'", 0) != 0 || error.find('\n') != std::string::npos))
    __builtin_trap();
  return 0;
}
