//===- FormatShape.h - the one spelling of a shape in messages ---*- C++ -*-===//
//
// "[2, 3]": how every error names a shape, in the compiler (graph::
// formatShape) and in the code without LLVM (support::formatShape).
// Header-only, for any range of integers.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMMON_FORMATSHAPE_H
#define MIXPREC_COMMON_FORMATSHAPE_H

#include <string>

namespace mixprec::support {

template <typename Range> std::string formatShapeOf(const Range &shape) {
  std::string s = "[";
  bool first = true;
  for (auto d : shape) {
    if (!first)
      s += ", ";
    first = false;
    s += std::to_string(d);
  }
  return s + "]";
}

} // namespace mixprec::support

#endif // MIXPREC_COMMON_FORMATSHAPE_H
