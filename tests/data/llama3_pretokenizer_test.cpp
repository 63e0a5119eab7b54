// The Llama 3 pre-tokenizer against pieces cut by the reference (the Python `regex` module with
// Llama 3's pattern; tests/fixtures/llama3_pretokenize.json, scripts/gen_llama3_pretokenizer_data.py),
// worked examples of each alternative, and the pattern selection.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "data/llama3_pretokenizer.hpp"
#include "data/pretokenizer.hpp"

namespace tz {
namespace {

std::string llama3_from_hex(const std::string& h) {
  std::string out;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2)
    out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

std::vector<std::string> llama3_cut(std::string_view s) {
  std::vector<std::string> out;
  for (auto p : llama3_pretokenize(s)) out.emplace_back(p);
  return out;
}

TEST(Llama3PreTokenizer, MatchesTheReferenceRegexOnTheFixture) {
  std::ifstream in(std::string(TZ_TEST_DATA_DIR) + "/llama3_pretokenize.json");
  ASSERT_TRUE(in) << "fixture missing";
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc["pattern"].get<std::string>(), pretokenizer_regex(PreTokenizerPattern::llama3));
  ASSERT_GT(doc["cases"].size(), 200u);
  for (const auto& c : doc["cases"]) {
    const std::string text = llama3_from_hex(c["text"]);
    std::vector<std::string> want;
    for (const auto& p : c["pieces"]) want.push_back(llama3_from_hex(p));
    EXPECT_EQ(llama3_cut(text), want) << "text hex " << c["text"].get<std::string>();
  }
}

TEST(Llama3PreTokenizer, WorkedExamples) {
  using V = std::vector<std::string>;
  EXPECT_EQ(llama3_cut(""), V{});
  EXPECT_EQ(llama3_cut("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(llama3_cut("DON'T"), (V{"DON", "'T"}));  // contractions in any case
  EXPECT_EQ(llama3_cut("we'Ll"), (V{"we", "'Ll"}));
  EXPECT_EQ(llama3_cut("it'\u017f"), (V{"it", "'\u017f"}));      // long s folds to s
  EXPECT_EQ(llama3_cut("1234567"), (V{"123", "456", "7"}));      // numbers in threes
  EXPECT_EQ(llama3_cut("x 42"), (V{"x", " ", "42"}));            // a number never takes the space
  EXPECT_EQ(llama3_cut("(word\tword"), (V{"(word", "\tword"}));  // one non-letter before a word
  EXPECT_EQ(llama3_cut("Hi!!\n\nYo"), (V{"Hi", "!!\n\n", "Yo"}));
  EXPECT_EQ(llama3_cut("a\r\n\r\n  b"), (V{"a", "\r\n\r\n", " ", " b"}));  // up to the last CR/LF
  EXPECT_EQ(llama3_cut("   a"), (V{"  ", " a"}));
  EXPECT_EQ(llama3_cut("a  "), (V{"a", "  "}));
  EXPECT_EQ(llama3_cut("\xff"
                       "abc"),
            (V{"\xff"
               "abc"}));  // an invalid byte is "other"
}

TEST(PreTokenizer, SelectsThePattern) {
  const std::string text = "I'M 2024 ready\r\n";
  std::vector<std::string> gpt2, llama3;
  for (auto p : pretokenize(PreTokenizerPattern::gpt2, text)) gpt2.emplace_back(p);
  for (auto p : pretokenize(PreTokenizerPattern::llama3, text)) llama3.emplace_back(p);
  using V = std::vector<std::string>;
  EXPECT_EQ(gpt2, (V{"I", "'", "M", " 2024", " ready", "\r\n"}));  // GPT-2's contractions are lower case
  EXPECT_EQ(llama3, (V{"I", "'M", " ", "202", "4", " ready", "\r\n"}));
  EXPECT_STREQ(pretokenizer_name(PreTokenizerPattern::llama3), "Llama 3");
}

}  // namespace
}  // namespace tz
