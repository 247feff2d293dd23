//===- RuntimeStatus.cpp - the C API's versions, statuses and names ---------===//
//
// The version queries, status objects (and the helpers every Runtime*.cpp
// makes them with), and the names of dtypes and backends.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/RuntimeHandles.h"

#include "runtime/src/backends/cuda/CudaDriver.h"

#include <new>
#include <string>
#include <utility>

#ifndef MIXPREC_RUNTIME_VERSION
#error "MIXPREC_RUNTIME_VERSION must be defined by the build"
#endif

using mixprec::runtime::Status;
namespace rt = mixprec::runtime;
namespace schema = mixprec::schema;
using namespace mixprec::runtime::capi;

namespace mixprec::runtime::capi {

mixprec_status_s kStatusOutOfMemory{MIXPREC_OUT_OF_MEMORY,
                                    "out of memory (while reporting an error)"};

mixprec_status_t makeStatus(mixprec_status_code_t code, std::string message) {
  if (code == MIXPREC_OK)
    return nullptr;
  auto *status = new (std::nothrow) mixprec_status_s{code, std::move(message)};
  return status ? status : &kStatusOutOfMemory;
}

mixprec_status_t toC(const Status &s) {
  return s.ok() ? nullptr : makeStatus(s.code(), s.message());
}

mixprec_status_t invalidArgument(const std::string &message) {
  return makeStatus(MIXPREC_INVALID_ARGUMENT, message);
}

} // namespace mixprec::runtime::capi

const char *mixprec_runtime_version(void) { return MIXPREC_RUNTIME_VERSION; }

uint32_t mixprec_schema_version(void) { return rt::kSchemaVersion; }

mixprec_status_code_t mixprec_status_code(mixprec_status_t status) {
  return status ? status->code : MIXPREC_OK;
}

const char *mixprec_status_message(mixprec_status_t status) {
  return status ? status->message.c_str() : "OK";
}

void mixprec_status_free(mixprec_status_t status) {
  if (status != &kStatusOutOfMemory)
    delete status;
}

const char *mixprec_status_code_name(mixprec_status_code_t code) {
  switch (code) {
  case MIXPREC_OK:
    return "OK";
  case MIXPREC_INVALID_ARGUMENT:
    return "INVALID_ARGUMENT";
  case MIXPREC_INVALID_MODULE:
    return "INVALID_MODULE";
  case MIXPREC_UNSUPPORTED_VERSION:
    return "UNSUPPORTED_VERSION";
  case MIXPREC_SIDE_FILE_ERROR:
    return "SIDE_FILE_ERROR";
  case MIXPREC_SHAPE_MISMATCH:
    return "SHAPE_MISMATCH";
  case MIXPREC_DTYPE_MISMATCH:
    return "DTYPE_MISMATCH";
  case MIXPREC_NOT_FOUND:
    return "NOT_FOUND";
  case MIXPREC_NO_DEVICE:
    return "NO_DEVICE";
  case MIXPREC_UNIMPLEMENTED:
    return "UNIMPLEMENTED";
  case MIXPREC_IO_ERROR:
    return "IO_ERROR";
  case MIXPREC_OUT_OF_MEMORY:
    return "OUT_OF_MEMORY";
  case MIXPREC_FAILED_PRECONDITION:
    return "FAILED_PRECONDITION";
  case MIXPREC_EXECUTION_ERROR:
    return "EXECUTION_ERROR";
  case MIXPREC_INTERNAL:
    return "INTERNAL";
  }
  return "UNKNOWN";
}

const char *mixprec_dtype_name(mixprec_dtype_t dtype) {
  if (mixprec_dtype_size(dtype) == 0)
    return "unknown";
  return rt::dtypeName(static_cast<schema::DType>(dtype));
}

size_t mixprec_dtype_size(mixprec_dtype_t dtype) {
  if (dtype < 0 || dtype > MIXPREC_DTYPE_BOOL)
    return 0;
  return rt::dtypeSize(static_cast<schema::DType>(dtype));
}

const char *mixprec_backend_name(mixprec_backend_t backend) {
  switch (backend) {
  case MIXPREC_BACKEND_AUTO:
    return "auto";
  case MIXPREC_BACKEND_CPU:
    return "cpu";
  case MIXPREC_BACKEND_CUDA:
    return "cuda";
  }
  return "unknown";
}

mixprec_status_t mixprec_cuda_device_sm_version(int *sm_version) {
  if (!sm_version)
    return invalidArgument("mixprec_cuda_device_sm_version: sm_version is NULL");
  const rt::cuda::Driver *driver = nullptr;
  if (Status s = rt::cuda::driver(&driver); !s.ok())
    return toC(s);
  *sm_version = driver->smVersion;
  return nullptr;
}
