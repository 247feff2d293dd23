//===- Escape.h - names and messages that stay one line ---------*- C++ -*-===//
//
// Every tool error is one line (`mixprec: error: ...`). Names that come from
// a model (op types, nodes, tensors, attributes, file paths) may hold any
// bytes; these two functions are the one rule for showing them.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMPILER_SUPPORT_ESCAPE_H
#define MIXPREC_COMPILER_SUPPORT_ESCAPE_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace mixprec::compiler {

/// `s` in single quotes, with C-style escapes (\n, \t, \r, \\, \', \xHH,
/// \uHHHH) for control characters, Unicode line separators, bytes that are
/// not UTF-8, backslashes and quotes: how every name taken from a model
/// appears in a message, so that the message stays one unambiguous line.
std::string quotedName(llvm::StringRef s);

/// `s` with control characters, line separators and non-UTF-8 bytes escaped
/// as quotedName() does, nothing else changed: for paths and whole messages.
std::string escapeControls(llvm::StringRef s);

} // namespace mixprec::compiler

#endif // MIXPREC_COMPILER_SUPPORT_ESCAPE_H
