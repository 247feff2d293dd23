//===- CudaDriverTest.cpp - loading the driver and cuBLASLt ---------------===//
//
// Runs without a GPU. A missing library, the toolkit's stub, no device, an
// old driver and a missing entry point are each a NO_DEVICE status with its
// own message, made with a fake driver (FakeCudaDriver.c) whose behaviour
// environment variables set; cuBLASLt loads from the toolkit and answers
// through its symbol table.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cuda/CublasLt.h"
#include "runtime/src/backends/cuda/CudaDriver.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace {

using mixprec::runtime::Status;
namespace cuda = mixprec::runtime::cuda;

/// Whether `text` begins with `prefix`, showing both when it does not.
::testing::AssertionResult startsWith(const std::string &text, const std::string &prefix) {
  if (text.rfind(prefix, 0) == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not start with '" << prefix
                                       << "'";
}

#ifndef MIXPREC_FAKE_CUDA_DRIVER
#error "MIXPREC_FAKE_CUDA_DRIVER must name the fake driver library"
#endif

/// Sets the fake driver's environment for one test, then clears it.
class FakeDriver : public ::testing::Test {
protected:
  void TearDown() override {
    for (const char *name : {"MIXPREC_FAKE_CUDA_INIT", "MIXPREC_FAKE_CUDA_DEVICES",
                             "MIXPREC_FAKE_CUDA_VERSION", "MIXPREC_FAKE_CUDA_MISSING"})
      ::unsetenv(name);
  }
  Status load() { return cuda::loadDriver(MIXPREC_FAKE_CUDA_DRIVER, driver); }
  std::unique_ptr<cuda::Driver> driver;
};

TEST(CudaDriver, ProcessDriverReportsStatusWithoutCrashing) {
  const cuda::Driver *driver = nullptr;
  Status s = cuda::driver(&driver);
  if (s.ok()) {
    EXPECT_GT(driver->deviceCount, 0) << driver->summary();
  } else {
    EXPECT_EQ(s.code(), MIXPREC_NO_DEVICE);
    EXPECT_TRUE(startsWith(s.message(), "no GPU: "));
  }
  const cuda::Driver *again = nullptr;
  EXPECT_EQ(cuda::driver(&again).message(), s.message()); // loaded once
  EXPECT_EQ(again, driver);
}

TEST(CudaDriver, MissingLibraryIsNoDevice) {
  std::unique_ptr<cuda::Driver> driver;
  Status s = cuda::loadDriver("libmixprec-no-such-driver.so.1", driver);
  EXPECT_EQ(s.code(), MIXPREC_NO_DEVICE);
  EXPECT_TRUE(startsWith(s.message(), "no GPU: cannot load 'libmixprec-no-such-driver.so.1' (no "
                                      "NVIDIA driver installed): "));
  EXPECT_FALSE(driver);
}

TEST(CudaDriver, LibraryThatIsNotADriver) {
  std::unique_ptr<cuda::Driver> driver;
  Status s = cuda::loadDriver("libm.so.6", driver);
  EXPECT_EQ(s.code(), MIXPREC_NO_DEVICE);
  EXPECT_EQ(s.message(),
            "no GPU: 'libm.so.6' is not a CUDA 12 or newer driver: it lacks cuGetProcAddress_v2");
}

TEST_F(FakeDriver, LoadsEveryEntryPoint) {
  ASSERT_TRUE(load().ok());
  EXPECT_EQ(driver->summary(), "1 CUDA device(s), device 0: Fake GPU (sm_90), driver 13.0");
  // Every member of the table was filled.
#define MIXPREC_CU_PFN_DECL(name, ...) EXPECT_NE(driver->api.name, nullptr) << #name;
#include "runtime/src/backends/cuda/DynamicSymbolTables.h"
#undef MIXPREC_CU_PFN_DECL
  int count = 0;
  EXPECT_EQ(driver->api.cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, 1);
}

TEST_F(FakeDriver, StubLibrary) {
  ::setenv("MIXPREC_FAKE_CUDA_INIT", "34", 1); // CUDA_ERROR_STUB_LIBRARY
  Status s = load();
  EXPECT_EQ(s.code(), MIXPREC_NO_DEVICE);
  EXPECT_EQ(s.message(), "no GPU: libcuda.so.1 is the toolkit's stub library, not a driver");
}

TEST_F(FakeDriver, NoDevice) {
  ::setenv("MIXPREC_FAKE_CUDA_INIT", "100", 1); // CUDA_ERROR_NO_DEVICE
  Status s = load();
  EXPECT_EQ(s.code(), MIXPREC_NO_DEVICE);
  EXPECT_EQ(s.message(), "no GPU: the driver reports no CUDA device");
  ::setenv("MIXPREC_FAKE_CUDA_INIT", "0", 1);
  ::setenv("MIXPREC_FAKE_CUDA_DEVICES", "0", 1);
  s = load();
  EXPECT_EQ(s.code(), MIXPREC_NO_DEVICE);
  EXPECT_EQ(s.message(), "no GPU: the driver reports no CUDA device");
}

TEST_F(FakeDriver, OldDriver) {
  ::setenv("MIXPREC_FAKE_CUDA_VERSION", "12040", 1);
  Status s = load();
  EXPECT_EQ(s.code(), MIXPREC_NO_DEVICE);
  EXPECT_EQ(s.message(), "no GPU: the NVIDIA driver supports CUDA 12.4, mixprec needs 13.0 or newer");
}

TEST_F(FakeDriver, MissingEntryPointIsNamed) {
  ::setenv("MIXPREC_FAKE_CUDA_MISSING", "cuGraphLaunch", 1);
  Status s = load();
  EXPECT_EQ(s.code(), MIXPREC_NO_DEVICE);
  EXPECT_EQ(s.message(), std::string("no GPU: the CUDA driver '") + MIXPREC_FAKE_CUDA_DRIVER +
                             "' (CUDA 13.0) lacks cuGraphLaunch (cuGetProcAddress: CUresult 500); "
                             "update the NVIDIA driver");
}

TEST(CublasLt, LoadsThroughItsSymbolTable) {
  std::unique_ptr<cuda::CublasLt> lt;
  Status s = cuda::loadCublasLt({"libmixprec-no-such-cublaslt.so", "libcublasLt.so.13"}, lt);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(lt->library, "libcublasLt.so.13");
  EXPECT_GE(lt->version, 130000u);
  EXPECT_EQ(lt->api.cublasLtGetVersion(), lt->version);
  EXPECT_STREQ(lt->api.cublasLtGetStatusName(CUBLAS_STATUS_NOT_INITIALIZED),
               "CUBLAS_STATUS_NOT_INITIALIZED");
#define MIXPREC_CUBLASLT_PFN_DECL(ret, name, ...) EXPECT_NE(lt->api.name, nullptr) << #name;
#include "runtime/src/backends/cuda/DynamicSymbolTables.h"
#undef MIXPREC_CUBLASLT_PFN_DECL
}

TEST(CublasLt, NoUsableLibraryNamesEachCandidate) {
  std::unique_ptr<cuda::CublasLt> lt;
  Status s = cuda::loadCublasLt({"libmixprec-no-such-cublaslt.so", MIXPREC_FAKE_CUDA_DRIVER}, lt);
  EXPECT_EQ(s.code(), MIXPREC_FAILED_PRECONDITION);
  EXPECT_TRUE(startsWith(s.message(), "cuBLASLt: no usable library "
                                      "('libmixprec-no-such-cublaslt.so' cannot be opened: "));
  EXPECT_NE(s.message().find(std::string("; '") + MIXPREC_FAKE_CUDA_DRIVER +
                             "' lacks cublasLtGetVersion); set MIXPREC_CUBLASLT_LIBRARY to the "
                             "path of libcublasLt.so.13"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(lt);
}

TEST(CublasLt, ProcessLibraryLoadsOnce) {
  const cuda::CublasLt *first = nullptr, *second = nullptr;
  Status a = cuda::cublasLt(&first), b = cuda::cublasLt(&second);
  EXPECT_EQ(a.message(), b.message());
  EXPECT_EQ(first, second);
  if (a.ok()) {
    EXPECT_GE(first->version, 130000u);
  }
}

} // namespace
