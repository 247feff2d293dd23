//===- Backend.cpp - what every backend shares ----------------------------===//
#include "runtime/src/Backend.h"

#include <cstring>

namespace mixprec::runtime {

Status Backend::allReduceInPlace(const std::string &opName, void *data, size_t count,
                                 mixprec_dtype_t dtype, int64_t reduction, void *stream) const {
  if (!hasCollective || collective.world_size <= 1 || count == 0)
    return okStatus(); // a job of one rank: the sum, mean and max of one value is the value
  char error[512] = {0};
  int rc = collective.all_reduce(collective.context, data, count, dtype,
                                 static_cast<mixprec_reduce_op_t>(reduction), stream, error,
                                 sizeof error);
  if (rc == 0)
    return okStatus();
  error[sizeof error - 1] = 0;
  return Status(MIXPREC_EXECUTION_ERROR, opName + ": the collective failed on rank " +
                                             std::to_string(collective.rank) + " of " +
                                             std::to_string(collective.world_size) + ": " +
                                             (error[0] ? error : "no message"));
}

} // namespace mixprec::runtime
