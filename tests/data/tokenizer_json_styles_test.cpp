// tokenizer.json files in the two styles tierzero reads, from tests/fixtures/tokenizers/
// (scripts/gen_tokenizer_json_fixtures.py: the 256 bytes plus a few merges): Llama 3's (a Split with
// Llama 3's pattern, then ByteLevel; ignore_merges) and GPT-NeoX's (ByteLevel with GPT-2's pattern,
// special tokens at ids 0 and 1). Worked encodings, round trips, the document separator, and the
// errors for every section setting tierzero does not implement.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "data/bpe_tokenizer.hpp"
#include "data/unicode_nfc.hpp"
#include "data_test_util.hpp"
#include "support/expect_input_error.hpp"

namespace tz {
namespace {

namespace fs = std::filesystem;

nlohmann::json styles_read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

class TokenizerJsonStyles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_path("tokenizer_styles");
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string fixture(const std::string& name) {
    return std::string(TZ_TEST_DATA_DIR) + "/tokenizers/" + name;
  }
  // Writes `doc` as DIR/tokenizer.json and returns the path.
  std::string write(const nlohmann::json& doc) {
    const std::string path = dir_ + "/tokenizer.json";
    test::write_file(path, doc.dump());
    return path;
  }
  std::string dir_;
};

// Ids of tokens written in GPT-2's byte-level alphabet, from the fixture's model.vocab.
std::vector<std::int32_t> styles_ids(const nlohmann::json& doc, const std::vector<std::string>& tokens) {
  std::vector<std::int32_t> out;
  for (const auto& t : tokens) out.push_back(doc["model"]["vocab"].at(t).get<std::int32_t>());
  return out;
}

const std::string kStylesText = "DON'T stop 1234567 the\r\n\r\n \xe4\xb8\xad";  // ... " 中"

TEST_F(TokenizerJsonStyles, Llama3StyleLoadsAndEncodesAsExpected) {
  const std::string path = fixture("llama3_style.json");
  ASSERT_LT(fs::file_size(path), 20'000u);
  const nlohmann::json doc = styles_read_json(path);
  BpeTokenizer tok = BpeTokenizer::load(path);
  EXPECT_EQ(tok.pretokenizer(), PreTokenizerPattern::llama3);
  EXPECT_TRUE(tok.vocabulary().ignore_merges);
  EXPECT_EQ(tok.vocab_size(), 269);
  // Pieces: "DON" "'T" " stop" " " "123" "456" "7" " the" "\r\n\r\n" " 中". "DON" is a token that no
  // merge makes (ignore_merges); " 中" (Ġ ä ¸ \xad) merges "Ġ ä" (rank 8) before "ä ¸" (rank 9).
  const auto want = styles_ids(doc, {"DON", "'T", "Ġ", "s", "t", "o", "p", "Ġ", "123", "4", "5", "6", "7",
                                     "Ġthe", "čĊčĊ", "Ġä", "¸", "\xc5\x83"});
  EXPECT_EQ(tok.encode(kStylesText), want);
  EXPECT_EQ(tok.encode_ref(kStylesText), want);
  EXPECT_EQ(tok.decode(want), kStylesText);
  EXPECT_FALSE(tok.end_of_text().has_value());
  ASSERT_TRUE(tok.document_separator().has_value());
  EXPECT_EQ(tok.decode(std::vector<std::int32_t>{*tok.document_separator()}), "<|begin_of_text|>");
  // Special tokens spelled in the text are ordinary text.
  for (auto t : tok.encode("<|begin_of_text|>")) EXPECT_NE(t, *tok.document_separator());

  // Without ignore_merges "DON" is three bytes.
  nlohmann::json merged = doc;
  merged["model"]["ignore_merges"] = false;
  BpeTokenizer plain = BpeTokenizer::load(write(merged));
  EXPECT_EQ(plain.encode("DON"), styles_ids(doc, {"D", "O", "N"}));
}

TEST_F(TokenizerJsonStyles, GptNeoxStyleLoadsAndEncodesAsExpected) {
  const std::string path = fixture("gpt_neox_style.json");
  ASSERT_LT(fs::file_size(path), 20'000u);
  const nlohmann::json doc = styles_read_json(path);
  BpeTokenizer tok = BpeTokenizer::load(path);
  EXPECT_EQ(tok.pretokenizer(), PreTokenizerPattern::gpt2);
  EXPECT_FALSE(tok.vocabulary().ignore_merges);
  // GPT-2's pieces: "DON" "'" "T" " stop" " 1234567" " the" "\r\n\r\n" " 中"; in " 1234567" the merge
  // "1 2" (rank 5) comes before "Ġ 1" (rank 7), so the space stays alone.
  const auto want = styles_ids(doc, {"DON", "'", "T", "Ġ",    "s",  "t",  "o", "p", "Ġ", "123",     "4",
                                     "5",   "6", "7", "Ġthe", "čĊ", "čĊ", "Ġ", "ä", "¸", "\xc5\x83"});
  EXPECT_EQ(tok.encode(kStylesText), want);
  EXPECT_EQ(tok.encode_ref(kStylesText), want);
  EXPECT_EQ(tok.decode(want), kStylesText);
  ASSERT_TRUE(tok.end_of_text().has_value());
  EXPECT_EQ(*tok.end_of_text(), 0);
  EXPECT_EQ(tok.document_separator(), tok.end_of_text());
  EXPECT_EQ(tok.decode(std::vector<std::int32_t>{1}), "<|padding|>");
}

// GPT-NeoX-20B / Pythia's extras: an NFC normalizer and runs of spaces as added tokens that are not
// special. Added tokens are cut out first (longest at each position, leftmost first), the rest is
// normalized, pre-tokenized and merged.
TEST_F(TokenizerJsonStyles, GptNeoxNfcStyleComposesAndSplitsAddedTokens) {
  const std::string path = fixture("gpt_neox_nfc_style.json");
  ASSERT_LT(fs::file_size(path), 20'000u);
  const nlohmann::json doc = styles_read_json(path);
  BpeTokenizer tok = BpeTokenizer::load(path);
  EXPECT_TRUE(tok.vocabulary().nfc);
  ASSERT_EQ(tok.vocabulary().added.size(), 3u);
  EXPECT_EQ(tok.vocab_size(), 271);
  const std::int32_t four = 268, three = 269, two = 270;
  // "cafe" + U+0301 composes to "café" before BPE, so "Ã ©" merges: the same ids as the composed text.
  const auto cafe = styles_ids(doc, {"c", "a", "f", "Ã©"});
  EXPECT_EQ(tok.encode("cafe\xcc\x81"), cafe);
  EXPECT_EQ(tok.encode("caf\xc3\xa9"), cafe);
  EXPECT_EQ(tok.decode(cafe), "caf\xc3\xa9");
  // "x  y" + 5 spaces + "z" + 3 spaces + "the": the runs become added ids, the longest first (5 = 4 + 1);
  // the single space left joins "z" by GPT-2's pattern.
  std::vector<std::int32_t> want = styles_ids(doc, {"x"});
  want.push_back(two);
  want.push_back(styles_ids(doc, {"y"})[0]);
  want.push_back(four);
  for (auto id : styles_ids(doc, {"Ġ", "z"})) want.push_back(id);
  want.push_back(three);
  for (auto id : styles_ids(doc, {"t", "he"})) want.push_back(id);
  const std::string text = "x  y     z   the";
  EXPECT_EQ(tok.encode(text), want);
  EXPECT_EQ(tok.encode_ref(text), want);
  EXPECT_EQ(tok.decode(want), text);
  std::vector<std::int32_t> chunked;
  tok.encode_chunked(text, 2, [&](std::span<const std::int32_t> ids) {
    EXPECT_GE(ids.size(), 2u);
    chunked.insert(chunked.end(), ids.begin(), ids.end());
  });
  EXPECT_EQ(chunked, want);
  // Special tokens are still ordinary text.
  for (auto t : tok.encode("<|endoftext|>")) EXPECT_NE(t, 0);
  // Without NFC the decomposed text stays decomposed.
  nlohmann::json plain_doc = doc;
  plain_doc["normalizer"] = nullptr;
  BpeTokenizer plain = BpeTokenizer::load(write(plain_doc));
  EXPECT_EQ(plain.decode(plain.encode("cafe\xcc\x81")), "cafe\xcc\x81");
  EXPECT_NE(plain.encode("cafe\xcc\x81"), cafe);
  // "normalized": false tokens are matched in the raw text: a decomposed "é" is then found before NFC.
  nlohmann::json raw_doc = doc;
  raw_doc["added_tokens"][2]["content"] = "e\xcc\x81";
  raw_doc["added_tokens"][2]["normalized"] = false;
  BpeTokenizer raw = BpeTokenizer::load(write(raw_doc));
  EXPECT_EQ(raw.encode("cafe\xcc\x81"), (std::vector<std::int32_t>{cafe[0], cafe[1], cafe[2], four}));
  EXPECT_EQ(raw.encode("caf\xc3\xa9"), cafe);  // the composed text does not spell it
}

// decode(encode(x)) == x in both styles on every text of the Llama 3 pre-tokenizer fixture (ASCII,
// contractions, digit runs, punctuation with newlines, white space, CJK, emoji, combining marks,
// CR LF, invalid UTF-8), and the fast encoder equals the reference loop.
TEST_F(TokenizerJsonStyles, RoundTripsEveryFixtureText) {
  const nlohmann::json cases = styles_read_json(std::string(TZ_TEST_DATA_DIR) + "/llama3_pretokenize.json");
  for (const char* name : {"llama3_style.json", "gpt_neox_style.json", "gpt_neox_nfc_style.json"}) {
    BpeTokenizer tok = BpeTokenizer::load(fixture(name));
    const bool nfc = tok.vocabulary().nfc;
    for (const auto& c : cases["cases"]) {
      const std::string hex = c["text"];
      std::string text;
      for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        text += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
      const auto ids = tok.encode(text);
      // With NFC the round trip gives the normalized text (Hugging Face's too).
      EXPECT_EQ(tok.decode(ids), nfc ? nfc_normalize(text) : text) << name << " text hex " << hex;
      EXPECT_EQ(ids, tok.encode_ref(text)) << name << " text hex " << hex;
    }
  }
}

TEST_F(TokenizerJsonStyles, SplitWithGpt2PatternIsGpt2) {
  nlohmann::json doc = styles_read_json(fixture("llama3_style.json"));
  doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] =
      std::string(pretokenizer_regex(PreTokenizerPattern::gpt2));
  EXPECT_EQ(BpeTokenizer::load(write(doc)).pretokenizer(), PreTokenizerPattern::gpt2);
}

// Every setting tierzero does not implement is an error naming the key and the value found.
TEST_F(TokenizerJsonStyles, UnsupportedSectionsAreErrorsNamingKeyAndValue) {
  const nlohmann::json llama = styles_read_json(fixture("llama3_style.json"));
  const nlohmann::json neox = styles_read_json(fixture("gpt_neox_style.json"));
  using nlohmann::json;
  struct Case {
    const json* base;
    std::string pointer;
    json value;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      {&llama,
       "/pre_tokenizer/pretokenizers/0/pattern/Regex",
       R"(\p{N}{1,4}|\s+)",
       {"'pre_tokenizer.pretokenizers[0].pattern.Regex'", R"(\\p{N}{1,4}|\\s+)"}},
      {&llama,
       "/pre_tokenizer/pretokenizers/0/pattern",
       {{"String", " "}},
       {"'pre_tokenizer.pretokenizers[0].pattern'", "String"}},
      {&llama,
       "/pre_tokenizer/pretokenizers/0/behavior",
       "Removed",
       {"'pre_tokenizer.pretokenizers[0].behavior'", "Removed"}},
      {&llama,
       "/pre_tokenizer/pretokenizers/0/invert",
       true,
       {"'pre_tokenizer.pretokenizers[0].invert'", "true"}},
      {&llama,
       "/pre_tokenizer/pretokenizers/1/use_regex",
       true,
       {"'pre_tokenizer.pretokenizers[1].use_regex'", "true"}},
      {&llama,
       "/pre_tokenizer/pretokenizers/1/add_prefix_space",
       true,
       {"'pre_tokenizer.pretokenizers[1].add_prefix_space'", "true"}},
      {&llama,
       "/pre_tokenizer/pretokenizers/2",
       {{"type", "Digits"}},
       {"'pre_tokenizer.pretokenizers'", "Digits"}},
      {&llama, "/pre_tokenizer/type", "Metaspace", {"'pre_tokenizer.type'", "Metaspace"}},
      {&llama, "/pre_tokenizer", nullptr, {"'pre_tokenizer'", "null"}},
      {&llama, "/normalizer", {{"type", "NFKC"}}, {"'normalizer'", "NFKC"}},
      {&llama,
       "/normalizer",
       {{"type", "Sequence"}, {"normalizers", json::array({{{"type", "NFC"}}})}},
       {"'normalizer'", "Sequence"}},
      {&llama, "/decoder", {{"type", "Metaspace"}}, {"'decoder'", "Metaspace"}},
      {&llama, "/added_tokens/0/lstrip", true, {"added_tokens[0]", "'lstrip'", "true", "<|begin_of_text|>"}},
      {&llama, "/added_tokens/0/rstrip", true, {"added_tokens[0]", "'rstrip'", "true"}},
      {&llama, "/added_tokens/0/single_word", true, {"added_tokens[0]", "'single_word'", "true"}},
      {&llama, "/added_tokens/0/special", "no", {"added_tokens[0]", "'special'", "no"}},
      {&llama, "/added_tokens/0/content", "", {"added_tokens[0]", "'content'", "empty"}},
      {&llama, "/model/ignore_merges", "yes", {"'model.ignore_merges'", "yes"}},
      {&neox, "/pre_tokenizer/use_regex", false, {"'pre_tokenizer.use_regex'", "false"}},
      {&neox, "/pre_tokenizer/add_prefix_space", true, {"'pre_tokenizer.add_prefix_space'", "true"}},
      {&neox, "/normalizer", {{"type", "NFD"}}, {"'normalizer'", "NFD"}},
      {&neox, "/normalizer", {{"type", "NFC"}, {"x", 1}}, {"'normalizer'", "NFC"}},
  };
  for (const Case& c : cases) {
    json bad = *c.base;
    bad[json::json_pointer(c.pointer)] = c.value;
    const std::string path = write(bad);
    SCOPED_TRACE(c.pointer);
    try {
      BpeTokenizer::load(path);
      ADD_FAILURE() << "expected an InputError";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      for (const auto& f : c.fragments) EXPECT_NE(what.find(f), std::string::npos) << f << " in: " << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace tz
