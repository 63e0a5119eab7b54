// Shared helpers for the plan tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "plan/shard_layout.hpp"
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

// Three ranges (an embedding and two blocks) of uneven sizes, 54 elements in all.
inline std::vector<RangeSpec> small_ranges() {
  return {{"emb", 16}, {"h0", 30}, {"h1", 8}};
}

// The flat world sizes every preset is exercised on.
inline constexpr int kFlatSizes[] = {1, 2, 3, 4, 6, 8};

}  // namespace tz::plan_test
