// Typed field access (core/json_fields.hpp): types, ranges without wrap-around, names, short messages.
#include "core/json_fields.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "support/expect_input_error.hpp"

namespace tz {
namespace {

using test::expect_input_error;

nlohmann::json doc(std::string_view text) {
  return parse_json_strict(text, "test");
}

TEST(JsonFields, IntegersInRange) {
  const auto j = doc(R"({"a": 5, "min": -9223372036854775808, "max": 9223372036854775807})");
  JsonFields f(j, "config c.json");
  EXPECT_EQ(f.integer("a", 1, 5), 5);
  EXPECT_EQ(f.integer("min"), LLONG_MIN);
  EXPECT_EQ(f.integer("max"), LLONG_MAX);
  EXPECT_EQ(f.integer_or("absent", 7, 1, 5), 7);  // the fallback is the caller's, not range-checked
  expect_input_error([&] { f.integer("a", 1, 4); },
                     {"config c.json: key 'a' must be an integer in [1, 4], got 5"});
  expect_input_error([&] { f.integer("a", 6); }, {"key 'a' must be an integer >= 6, got 5"});
}

TEST(JsonFields, IntegersThatDoNotFitAreErrorsNotWrapped) {
  const auto j = doc(R"({"u64": 18446744073709551615, "big": 9223372036854775808, "huge": 1e30,
                         "below": -9223372036854775809, "float": 2.5, "text": "3", "neg": -1})");
  JsonFields f(j, "config c.json");
  // 2^64 - 1 as a long long would be -1, 2^63 would be LLONG_MIN.
  expect_input_error([&] { f.integer("u64"); }, {"key 'u64' must be an integer, got 18446744073709551615"});
  expect_input_error([&] { f.integer("big", 0); },
                     {"key 'big' must be an integer >= 0, got 9223372036854775808"});
  expect_input_error([&] { f.integer("huge"); }, {"key 'huge' must be an integer, got 1e+30"});
  expect_input_error([&] { f.integer("below"); }, {"key 'below' must be an integer"});
  expect_input_error([&] { f.integer("float"); }, {"key 'float' must be an integer, got 2.5"});
  expect_input_error([&] { f.integer("text"); }, {"key 'text' must be an integer, got \"3\""});
  expect_input_error([&] { f.integer("neg", 0, 1 << 30); },
                     {"must be an integer in [0, 1073741824], got -1"});
}

TEST(JsonFields, NumbersAreFinite) {
  nlohmann::json j = {{"nan", std::nan("")}, {"inf", INFINITY}, {"ok", 3}, {"s", "1.5"}};  // built in code
  JsonFields f(j, "config c.json");
  EXPECT_EQ(f.number("ok"), 3.0);
  expect_input_error([&] { f.number("nan"); }, {"key 'nan' must be a finite number"});
  expect_input_error([&] { f.number("inf"); }, {"key 'inf' must be a finite number"});
  expect_input_error([&] { f.number("s"); }, {"key 's' must be a number, got \"1.5\""});
}

TEST(JsonFields, BadValuesAreQuotedShort) {
  const std::string big(25'000'000, 'x');
  std::string many = "1";
  for (int i = 0; i < 100000; ++i) many += ", 1";
  const auto j = doc(R"({"clip": ")" + big + R"(", "arr": [)" + many + R"(], "obj": {"a": [[1]]}})");
  JsonFields f(j, "config c.json");
  for (const char* key : {"clip", "arr", "obj"}) {
    try {
      f.number(key);
      FAIL() << key;
    } catch (const InputError& e) {
      EXPECT_LT(std::string(e.what()).size(), 200u) << key;
      EXPECT_NE(std::string(e.what()).find(std::string("config c.json: key '") + key + "' must be a number"),
                std::string::npos);
    }
  }
  expect_input_error([&] { f.str("obj"); }, {"must be a string, got {\"a\": [...]}"});
  expect_input_error([&] { f.boolean("clip"); }, {"must be true or false, got \"xxxx", "(25000000 bytes)"});
}

TEST(JsonFields, NotAnObjectIsQuotedShort) {
  const auto j = doc(R"([")" + std::string(100000, '1') + R"(", 2])");
  expect_input_error([&] { JsonFields(j, "topology t.json"); },
                     {"topology t.json: expected a JSON object, got [\"1111", "(100000 bytes), 2]"});
}

TEST(JsonFields, UnknownKeysAreQuotedShort) {
  const auto j = doc("{\"line\\nbreak" + std::string(1000, 'k') + "\": 1}");
  expect_input_error(
      [&] {
        JsonFields(j, "config c.json").allow_only({"a", "b"});
      },
      {"config c.json: unknown key 'line\\x0abreakkk", "(1010 bytes)", "(known: a, b)"});
}

TEST(JsonFields, Identifiers) {
  const auto j = doc(R"({"ok": "gcd", "empty": "", "long": ")" + std::string(65, 'n') +
                     R"(", "newline": "a\nb", "utf8": "n\u00f6de"})");
  JsonFields f(j, "topology t.json");
  EXPECT_EQ(f.identifier("ok"), "gcd");
  EXPECT_EQ(f.identifier("utf8"),
            "n\xc3\xb6"
            "de");
  EXPECT_EQ(f.identifier_or("absent", "x"), "x");
  for (const char* key : {"empty", "long", "newline"})
    expect_input_error(
        [&] { f.identifier(key); },
        {std::string("key '") + key + "' must be a name of 1 to 64 bytes without control characters"});
}

}  // namespace
}  // namespace tz
