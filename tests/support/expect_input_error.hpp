// Shared by the test suites: runs f and expects a tz::InputError whose one-line message contains every
// fragment (the key, file, value... that the error policy says a message must name).
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "core/error.hpp"

namespace tz::test {

template <typename F>
void expect_input_error(F&& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    for (const auto& frag : fragments)
      EXPECT_NE(std::string(e.what()).find(frag), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one-line message: " << e.what();
  }
}

}  // namespace tz::test
