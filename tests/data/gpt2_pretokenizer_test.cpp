// The GPT-2 pre-tokenizer against pieces cut by the reference (the Python `regex` module with GPT-2's
// pattern; tests/fixtures/gpt2_pretokenize.json, scripts/gen_gpt2_pretokenizer_data.py), the
// code-point class lookup against its linear reference on every code point, and UTF-8 decoding.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "data/gpt2_pretokenizer.hpp"
#include "data/unicode_classes.hpp"

namespace tz {
namespace {

std::string from_hex(const std::string& h) {
  std::string out;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2)
    out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

TEST(Gpt2PreTokenizer, MatchesTheReferenceRegexOnTheFixture) {
  std::ifstream in(std::string(TZ_TEST_DATA_DIR) + "/gpt2_pretokenize.json");
  ASSERT_TRUE(in) << "fixture missing";
  const nlohmann::json doc = nlohmann::json::parse(in);
  ASSERT_GT(doc["cases"].size(), 200u);
  for (const auto& c : doc["cases"]) {
    const std::string text = from_hex(c["text"]);
    std::vector<std::string> want;
    for (const auto& p : c["pieces"]) want.push_back(from_hex(p));
    std::vector<std::string> got;
    for (auto p : gpt2_pretokenize(text)) got.emplace_back(p);
    EXPECT_EQ(got, want) << "text hex " << c["text"].get<std::string>();
  }
}

TEST(Gpt2PreTokenizer, WorkedExamples) {
  auto cut = [](std::string_view s) {
    std::vector<std::string> out;
    for (auto p : gpt2_pretokenize(s)) out.emplace_back(p);
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(cut(""), V{});
  EXPECT_EQ(cut("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(cut("it's"), (V{"it", "'s"}));
  EXPECT_EQ(cut("   a"), (V{"  ", " a"}));  // the last space goes with the word
  EXPECT_EQ(cut("a \n"), (V{"a", " \n"}));  // trailing white space is one piece
  EXPECT_EQ(cut("x1 2.5!!"), (V{"x", "1", " 2", ".", "5", "!!"}));
}

TEST(UnicodeClasses, FastLookupMatchesLinearReferenceOnEveryCodePoint) {
  for (char32_t cp = 0; cp < 0x110000; ++cp)
    ASSERT_EQ(code_point_class(cp), code_point_class_ref(cp))
        << "U+" << std::hex << static_cast<unsigned>(cp);
  EXPECT_EQ(code_point_class(U'a'), CodePointClass::letter);
  EXPECT_EQ(code_point_class(U'\u4e2d'), CodePointClass::letter);
  EXPECT_EQ(code_point_class(U'\u0663'), CodePointClass::number);  // Arabic-Indic three
  EXPECT_EQ(code_point_class(U'\u00a0'), CodePointClass::space);
  EXPECT_EQ(code_point_class(U'\x1c'), CodePointClass::other);    // not White_Space
  EXPECT_EQ(code_point_class(U'\u0301'), CodePointClass::other);  // a combining mark is not a letter
  EXPECT_EQ(code_point_class(U'\U0001F600'), CodePointClass::other);
}

TEST(Utf8, DecodesWellFormedAndRejectsTheRest) {
  auto dec = [](std::string s) {
    return decode_utf8_unit(reinterpret_cast<const unsigned char*>(s.data()), s.size());
  };
  EXPECT_EQ(dec("\xc3\xa9").code_point, U'\u00e9');
  EXPECT_EQ(dec("\xf0\x9f\x98\x80").code_point, U'\U0001F600');
  EXPECT_EQ(dec("\xf0\x9f\x98\x80").bytes, 4);
  for (const std::string bad :
       {"\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\x80", "\xff", "\xe2\x82", "\xc3"}) {
    const Utf8Unit u = dec(bad);
    EXPECT_FALSE(u.valid) << bad;
    EXPECT_EQ(u.bytes, 1);
  }
}

}  // namespace
}  // namespace tz
