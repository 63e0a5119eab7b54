// Shared helpers for the plan tests.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "core/error.hpp"
#include "topology/topology.hpp"

namespace tz::plan_test {

// Expects an InputError whose one-line message contains every fragment.
template <typename F>
void expect_input_error(F&& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    for (const auto& frag : fragments) EXPECT_NE(what.find(frag), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one-line message: " << what;
  }
}

inline Topology mini() {
  return Topology::load("frontier-mini");
}
inline Topology flat(int n) {
  return Topology::load("flat").resolve(n);
}

// The flat world sizes every preset is exercised on.
inline constexpr int kFlatSizes[] = {1, 2, 3, 4, 6, 8};

}  // namespace tz::plan_test
