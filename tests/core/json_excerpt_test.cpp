// Excerpts of values in messages (core/json_excerpt.hpp): short, one line, never walking into the value.
#include "core/json_excerpt.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tz {
namespace {

TEST(JsonExcerpt, ScalarsAsWritten) {
  EXPECT_EQ(json_excerpt(nlohmann::json(3)), "3");
  EXPECT_EQ(json_excerpt(nlohmann::json(-2.5)), "-2.5");
  EXPECT_EQ(json_excerpt(nlohmann::json(true)), "true");
  EXPECT_EQ(json_excerpt(nlohmann::json(nullptr)), "null");
  EXPECT_EQ(json_excerpt(nlohmann::json("AdamW")), "\"AdamW\"");
  EXPECT_EQ(json_excerpt(nlohmann::json::array()), "[]");
  EXPECT_EQ(json_excerpt(nlohmann::json::object()), "{}");
}

TEST(JsonExcerpt, LongStringsAreCutWithTheirLength) {
  const std::string s = json_excerpt(nlohmann::json(std::string(25'000'000, 'x')));
  EXPECT_EQ(s, "\"" + std::string(kExcerptChars, 'x') + "...\" (25000000 bytes)");
}

TEST(JsonExcerpt, ContainersOneLevelDeep) {
  EXPECT_EQ(json_excerpt(nlohmann::json::parse("[0.9, 0.95, 0.99]")), "[0.9, 0.95, 0.99]");
  EXPECT_EQ(json_excerpt(nlohmann::json::parse(R"({"a": 1, "b": [1, 2], "c": {"d": 2}})")),
            R"({"a": 1, "b": [...], "c": {...}})");
  const std::string cut = json_excerpt(nlohmann::json(std::vector<int>(100000, 7)));
  EXPECT_LT(cut.size(), 2 * kExcerptChars);
  EXPECT_NE(cut.find(", ...] (an array of 100000 elements)"), std::string::npos) << cut;
}

TEST(JsonExcerpt, DeepValuesAreNotWalked) {
  // Built in code (a parsed file stops at the depth limit): dump() would recurse 100000 deep.
  nlohmann::json deep = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i) deep = nlohmann::json::array({std::move(deep)});
  EXPECT_EQ(json_excerpt(deep), "[[...]]");
}

TEST(JsonExcerpt, TextIsEscapedOnOneLine) {
  EXPECT_EQ(text_excerpt("a\nb\x01\xff"), "a\\x0ab\\x01\\xff");
  EXPECT_EQ(text_excerpt(std::string(100, 'k'), 4), "kkkk... (100 bytes)");
  EXPECT_EQ(text_excerpt(""), "");
}

}  // namespace
}  // namespace tz
