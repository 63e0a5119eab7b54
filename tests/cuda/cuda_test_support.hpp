// For the CUDA backend's tests: whether a GPU can be used here. Without one each test skips, unless
// TZ_REQUIRE_GPU=1 is set (as on a GPU machine, where a skip would hide a broken device).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <exception>
#include <string>

#include "device/backend.hpp"

namespace tz::test {

inline const std::string& cuda_unusable_reason() {
  static const std::string reason = [] {
    try {
      backend(DeviceKind::cuda);
      return std::string();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  }();
  return reason;
}

inline bool gpu_required() {
  const char* v = std::getenv("TZ_REQUIRE_GPU");
  return v != nullptr && std::string(v) == "1";
}

}  // namespace tz::test

#define TZ_REQUIRE_CUDA()                                                           \
  do {                                                                              \
    if (!::tz::test::cuda_unusable_reason().empty()) {                              \
      if (::tz::test::gpu_required()) FAIL() << ::tz::test::cuda_unusable_reason(); \
      GTEST_SKIP() << "no CUDA device: " << ::tz::test::cuda_unusable_reason();     \
    }                                                                               \
  } while (0)
