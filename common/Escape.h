//===- Escape.h - names and messages that stay one line ---------*- C++ -*-===//
//
// Every mixprec error is one line. Names that come from a user's file (op
// types, nodes, tensors, attributes, .npy header keys, paths) may hold any
// bytes; these two functions are the one rule for showing them, for the
// compiler, the tools and the .npy reader alike (no LLVM).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMMON_ESCAPE_H
#define MIXPREC_COMMON_ESCAPE_H

#include <string>
#include <string_view>

namespace mixprec::common {

/// `s` in single quotes, with C-style escapes (\n, \t, \r, \\, \', \xHH,
/// \uHHHH) for control characters, the Unicode controls and line
/// separators U+0080-U+009F, U+2028 and U+2029, bytes that are not UTF-8,
/// backslashes and quotes: how every name taken from a file appears in a
/// message, so that the message stays one unambiguous line.
std::string quotedName(std::string_view s);

/// `s` with control characters, line separators and non-UTF-8 bytes escaped
/// as quotedName() does, nothing else changed: for paths and whole messages.
std::string escapeControls(std::string_view s);

} // namespace mixprec::common

#endif // MIXPREC_COMMON_ESCAPE_H
