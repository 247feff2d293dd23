//===- BytecodeGuard.h - reading untrusted MLIR bytecode --------*- C++ -*-===//
#ifndef MIXPREC_COMPILER_COMPILE_BYTECODEGUARD_H
#define MIXPREC_COMPILER_COMPILE_BYTECODEGUARD_H

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mixprec::compiler {

/// Why MLIR's bytecode reader cannot be trusted with `bytes`, or "". MLIR
/// 19's reader trusts a file further than a damaged one deserves: an
/// attribute that refers to itself recurses until the stack runs out, a
/// damaged count allocates gigabytes. So the file is read first in a child
/// process, its memory bounded (the process's, plus 16 times the file,
/// plus 1 GiB); a child that dies is the answer, and the command reports
/// it instead of dying. A child that merely fails leaves the error to the
/// real read, which reports it with its notes.
/// `prepare` sets up the child's context (the dialects the reader needs).
/// Used by every command that reads a model and by mixprec-opt.
std::string bytecodeReaderFailure(const std::string &path, llvm::StringRef bytes,
                                  llvm::function_ref<void(mlir::MLIRContext &)> prepare);

} // namespace mixprec::compiler

#endif // MIXPREC_COMPILER_COMPILE_BYTECODEGUARD_H
