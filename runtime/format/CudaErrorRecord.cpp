//===- CudaErrorRecord.cpp - the wording of index errors ------------------===//
#include "runtime/format/CudaErrorRecord.h"

namespace mixprec::runtime {

std::string indexOutOfRangeMessage(const std::string &op, int64_t value, bool withPosition,
                                   int64_t position, int64_t dim, int64_t size) {
  std::string where =
      withPosition ? " (element " + std::to_string(position) + " of the indices)" : "";
  return op + ": index " + std::to_string(value) + where + " is out of range for dim " +
         std::to_string(dim) + " of size " + std::to_string(size);
}

} // namespace mixprec::runtime
