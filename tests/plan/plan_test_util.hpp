// Shared helpers for the plan tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "support/expect_input_error.hpp"
#include "topology/topology.hpp"

namespace tz::plan_test {

using tz::test::expect_input_error;  // tests/support: one copy for every suite

inline Topology mini() {
  return Topology::load("frontier-mini");
}
inline Topology flat(int n) {
  return Topology::load("flat").resolve(n);
}

// The flat world sizes every preset is exercised on.
inline constexpr int kFlatSizes[] = {1, 2, 3, 4, 6, 8};

}  // namespace tz::plan_test
