//===- TestUtil.h - helpers for the runtime tests ---------------*- C++ -*-===//
#ifndef MIXPREC_TESTS_UNIT_RUNTIME_TESTUTIL_H
#define MIXPREC_TESTS_UNIT_RUNTIME_TESTUTIL_H

#include "mixprec/runtime.hpp"
#include "tests/unit/FloatBits.h"
#include "tests/unit/runtime/ModuleBuilder.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace mixprec::testing {

/// Fails the test with the status's code and message unless it is OK.
#define ASSERT_OK(expr)                                                                            \
  do {                                                                                             \
    ::mixprec::Status status_ = (expr);                                                            \
    ASSERT_TRUE(status_.ok()) << status_.codeName() << ": " << status_.message();                  \
  } while (0)

/// A fresh directory under the test temp dir.
inline std::string makeTempDir() {
  std::string pattern = ::testing::TempDir() + "mixprec_runtime_XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  const char *dir = mkdtemp(buffer.data());
  return dir ? std::string(dir) : std::string();
}

/// Loads a built module from memory (side file bytes given directly).
inline Status loadBuilt(const BuiltModule &built, Module &out) {
  mixprec_load_options_t options = MIXPREC_LOAD_OPTIONS_INIT;
  if (!built.sideFile.empty()) {
    options.side_file_data = built.sideFile.data();
    options.side_file_size = built.sideFile.size();
  }
  return Module::loadFromMemory(built.module.data(), built.module.size(), out, &options);
}

/// Loads, creates a CPU session; fails the test on error.
inline void openCpu(const BuiltModule &built, Module &module, Session &session) {
  ASSERT_OK(loadBuilt(built, module));
  ASSERT_OK(Session::create(module, session, MIXPREC_BACKEND_CPU));
}

using mixprec::test::bitsOf;

/// Element-by-element bit equality of two float vectors, reporting the first
/// difference.
inline ::testing::AssertionResult bitEqual(const std::vector<float> &got,
                                           const std::vector<float> &want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << "sizes differ: " << got.size() << " vs " << want.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (bitsOf(got[i]) != bitsOf(want[i]))
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << " (0x"
                                           << std::hex << bitsOf(got[i]) << "), want "
                                           << want[i] << " (0x" << bitsOf(want[i]) << ")";
  return ::testing::AssertionSuccess();
}

/// The status code of a load of `built` (OK or the failure).
inline mixprec_status_code_t loadCode(const BuiltModule &built, std::string *message = nullptr) {
  Module module;
  Status s = loadBuilt(built, module);
  if (message)
    *message = s.message();
  return s.code();
}

} // namespace mixprec::testing

#endif // MIXPREC_TESTS_UNIT_RUNTIME_TESTUTIL_H
