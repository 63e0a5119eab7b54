// Unknown-key hints: a short list is given whole; a long one is cut to the keys nearest the one
// given, so the error stays one short line whatever the reader knows or the input holds.
#include "core/known_keys.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tz {
namespace {

TEST(KnownKeys, AShortListIsGivenWhole) {
  EXPECT_EQ(known_keys_text("stag", {"stage", "offload_param"}), "known: stage, offload_param");
}

TEST(KnownKeys, ALongListGivesTheNearestKeysAndTheCount) {
  std::vector<std::string> names;
  for (int i = 0; i < 60; ++i) names.push_back("some_long_configuration_key_" + std::to_string(i));
  names.push_back("stage");
  names.push_back("stage3_max_live_parameters");
  const std::vector<std::string_view> known(names.begin(), names.end());
  const std::string text = known_keys_text("st=ge", known);
  EXPECT_EQ(text.rfind("nearest: stage, ", 0), 0u) << text;
  EXPECT_NE(text.find("; 62 keys in all"), std::string::npos) << text;
  EXPECT_LT(text.size(), 300u) << text;
  // A huge given key costs no more than a short one.
  EXPECT_LT(known_keys_text(std::string(1 << 20, 'x'), known).size(), 300u);
}

}  // namespace
}  // namespace tz
