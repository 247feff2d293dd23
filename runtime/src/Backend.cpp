//===- Backend.cpp - what every backend shares ----------------------------===//
#include "runtime/src/Backend.h"

#include <cstring>

namespace mixprec::runtime {

Status Backend::collectiveResult(const std::string &opName, int rc, char *error,
                                 size_t size) const {
  if (rc == 0)
    return okStatus();
  error[size - 1] = 0;
  return Status(MIXPREC_EXECUTION_ERROR, opName + ": the collective failed on rank " +
                                             std::to_string(collective.rank) + " of " +
                                             std::to_string(collective.world_size) + ": " +
                                             (error[0] ? error : "no message"));
}

Status Backend::allReduceInPlace(const std::string &opName, void *data, size_t count,
                                 mixprec_dtype_t dtype, int64_t reduction, void *stream) const {
  if (!hasCollective || collective.world_size <= 1 || count == 0)
    return okStatus(); // a job of one rank: the sum, mean and max of one value is the value
  char error[512] = {0};
  int rc = collective.all_reduce(collective.context, data, count, dtype,
                                 static_cast<mixprec_reduce_op_t>(reduction), stream, error,
                                 sizeof error);
  return collectiveResult(opName, rc, error, sizeof error);
}

/// The world a step compiled for `world` ranks runs in, or the error.
static Status checkWorld(const std::string &opName, int64_t world, bool hasCollective,
                         const mixprec_collective_t &c) {
  const int64_t have = hasCollective ? c.world_size : 1;
  if (have == world)
    return okStatus();
  return Status(MIXPREC_FAILED_PRECONDITION,
                opName + ": the step was compiled for a job of " + std::to_string(world) +
                    " ranks (sharded optimizer state); this session's is " +
                    (hasCollective ? "a job of " + std::to_string(have)
                                   : std::string("one process without a collective")) +
                    " (compile for this job, or run it with as many ranks)");
}

Status Backend::rankSlice(const std::string &opName, int64_t world, size_t partBytes,
                          const std::function<Status(size_t offset)> &copy) const {
  if (Status s = checkWorld(opName, world, hasCollective, collective); !s.ok())
    return s;
  const size_t rank = hasCollective ? static_cast<size_t>(collective.rank) : 0;
  return copy(rank * partBytes);
}

Status Backend::allGather(const std::string &opName, int64_t world, const void *send, void *recv,
                          size_t count, mixprec_dtype_t dtype, void *stream,
                          const std::function<Status()> &copy) const {
  if (Status s = checkWorld(opName, world, hasCollective, collective); !s.ok())
    return s;
  if (world == 1)
    return copy();
  if (!collective.all_gather)
    return Status(MIXPREC_FAILED_PRECONDITION,
                  opName + ": the session's collective has no all_gather (an older "
                           "mixprec_collective_t; set struct_size to sizeof and all_gather)");
  char error[512] = {0};
  int rc = collective.all_gather(collective.context, send, recv, count, dtype, stream, error,
                                 sizeof error);
  return collectiveResult(opName, rc, error, sizeof error);
}

} // namespace mixprec::runtime
