// Shared by the test suites: expects a message to contain every fragment (a file, a tensor, a size).
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

namespace tz::test {

inline void expect_contains(const std::string& msg, std::initializer_list<std::string> parts) {
  for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

}  // namespace tz::test
