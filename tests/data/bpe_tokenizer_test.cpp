// GPT-2 byte-level BPE with vocabularies the tests write themselves: vocab.json + merges.txt and a
// Hugging Face tokenizer.json, worked encodings, round trips of arbitrary bytes, the fast encoder
// against GPT-2's reference loop on a trained vocabulary, the trainer, and the errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <random>

#include "data/bpe_tokenizer.hpp"
#include "data/bpe_trainer.hpp"
#include "data/token_data.hpp"
#include "data_test_util.hpp"
#include "support/expect_input_error.hpp"

namespace tz {
namespace {

namespace fs = std::filesystem;
using test::expect_input_error;
using test::write_file;

// A vocabulary in GPT-2's files: the 256 bytes (ids 0..255, GPT-2's order), then merges
// "Ġ t" -> "Ġt", "h e" -> "he", "Ġt he" -> "Ġthe", "l l" -> "ll", "ll o" -> "llo",
// then <|endoftext|>.
class SmallVocab : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_path("bpe");
    fs::create_directories(dir_);
    nlohmann::json v = nlohmann::json::object();
    int id = 0;
    for (int pass = 0; pass < 2; ++pass)
      for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        if (printable == (pass == 0)) v[bytes_to_alphabet(std::string(1, static_cast<char>(b)))] = id++;
      }
    for (const char* t : {"Ġt", "he", "Ġthe", "ll", "llo"}) v[t] = id++;
    v["<|endoftext|>"] = id++;
    vocab_json_ = v;
    write_file(dir_ + "/vocab.json", v.dump());
    write_file(dir_ + "/merges.txt", "#version: 0.2\nĠ t\nh e\nĠt he\nl l\nll o\n");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::int32_t id(const std::string& token) const { return vocab_json_.at(token).get<std::int32_t>(); }
  std::string dir_;
  nlohmann::json vocab_json_;
};

TEST_F(SmallVocab, EncodesByMergeRankAndDecodesExactly) {
  BpeTokenizer tok = BpeTokenizer::load(dir_);
  EXPECT_EQ(tok.vocab_size(), 262);
  ASSERT_TRUE(tok.end_of_text().has_value());
  EXPECT_EQ(*tok.end_of_text(), 261);
  EXPECT_TRUE(tok.merges_in_training_order());
  const auto ids = tok.encode("hello the world");
  const std::vector<std::int32_t> want = {id("he"), id("llo"), id("Ġthe"), id("Ġ"), id("w"),
                                          id("o"),  id("r"),   id("l"),    id("d")};
  EXPECT_EQ(ids, want);
  EXPECT_EQ(tok.encode_ref("hello the world"), want);
  EXPECT_EQ(tok.decode(ids), "hello the world");
  // "<|endoftext|>" in text is ordinary text, never the special token.
  for (auto t : tok.encode("<|endoftext|>")) EXPECT_NE(t, *tok.end_of_text());
  expect_input_error([&] { tok.decode(std::vector<std::int32_t>{5, 262}); }, {"token id 262 at index 1"});
  expect_input_error([&] { tok.decode(std::vector<std::int32_t>{-1}); }, {"token id -1"});
}

TEST_F(SmallVocab, RoundTripsArbitraryBytes) {
  BpeTokenizer tok = BpeTokenizer::load(dir_);
  const std::vector<std::string> texts = {
      "",
      "the",
      "\xF0\x9F\x98\x80 emoji \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9 family",
      "bad \xff\xfe\xc3 bytes \xed\xa0\x80",
      std::string("nul\0byte", 8),
      "   \n\t  trailing   ",
      "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC"};
  for (const auto& t : texts) {
    EXPECT_EQ(tok.decode(tok.encode(t)), t);
    EXPECT_EQ(tok.encode(t), tok.encode_ref(t));
  }
  EXPECT_TRUE(tok.encode("").empty());
  std::mt19937 rng(5);
  for (int i = 0; i < 300; ++i) {
    std::string s(rng() % 40, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    ASSERT_EQ(tok.decode(tok.encode(s)), s);
  }
}

TEST_F(SmallVocab, ReadsTheSameFromHuggingFaceTokenizerJson) {
  nlohmann::json doc = {
      {"version", "1.0"},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"added_tokens", {{{"id", 261}, {"content", "<|endoftext|>"}, {"special", true}}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"vocab", vocab_json_},
        {"merges", {"Ġ t", "h e", {"Ġt", "he"}, "l l", "ll o"}}}}};
  const std::string path = dir_ + "/tokenizer.json";
  write_file(path, doc.dump());
  BpeTokenizer hf = BpeTokenizer::load(path);
  BpeTokenizer files = BpeTokenizer(read_vocab_and_merges(dir_ + "/vocab.json", dir_ + "/merges.txt"));
  EXPECT_EQ(hf.encode("hello the world, the end"), files.encode("hello the world, the end"));
  EXPECT_EQ(hf.end_of_text(), files.end_of_text());
  // Settings tierzero does not implement are errors naming the key.
  for (auto [key, value] :
       std::vector<std::pair<std::string, nlohmann::json>>{{"/pre_tokenizer/add_prefix_space", true},
                                                           {"/normalizer", {{"type", "NFKC"}}},
                                                           {"/model/byte_fallback", true},
                                                           {"/model/type", "WordPiece"},
                                                           {"/model/merges/0", 5}}) {
    nlohmann::json bad = doc;
    bad[nlohmann::json::json_pointer(key)] = value;
    write_file(path, bad.dump());
    const std::string leaf = key.substr(key.rfind('/') + 1);
    expect_input_error([&] { BpeTokenizer::load(path); }, {path, leaf == "0" ? "merges[0]" : leaf});
  }
  write_file(path, "{not json");
  expect_input_error([&] { BpeTokenizer::load(path); }, {path, "not valid JSON"});
}

// A tokenizer.json whose "model" is there but of another type says so, with the type it found; only
// an absent one is "missing".
TEST_F(SmallVocab, TokenizerJsonWhoseModelIsNotAnObjectNamesTheTypeFound) {
  const std::string path = dir_ + "/tokenizer.json";
  for (const auto& [model, type] : std::vector<std::pair<nlohmann::json, std::string>>{
           {"BPE", "string"}, {nlohmann::json::array({1, 2}), "array"}, {nullptr, "null"}, {7, "number"}}) {
    write_file(path, nlohmann::json{{"model", model}}.dump());
    try {
      BpeTokenizer::load(path);
      ADD_FAILURE() << "expected an InputError for model " << model.dump();
    } catch (const InputError& e) {
      const std::string what = e.what();
      for (const std::string& f : {path, std::string("key 'model' is ") + type, std::string("not an object")})
        EXPECT_NE(what.find(f), std::string::npos) << what;
      EXPECT_EQ(what.find("missing"), std::string::npos) << what;
    }
  }
  write_file(path, "[1, 2]");
  expect_input_error([&] { BpeTokenizer::load(path); }, {path, "expected a JSON object", "array"});
  write_file(path, "{}");
  expect_input_error([&] { BpeTokenizer::load(path); }, {path, "missing key 'model'"});
}

TEST_F(SmallVocab, BadFilesAreErrorsNamingFileAndLine) {
  const std::string merges = dir_ + "/merges.txt";
  write_file(merges, "#version: 0.2\nĠ t\nhe\n");
  expect_input_error([&] { BpeTokenizer::load(dir_); }, {merges, "line 3", "two tokens"});
  write_file(merges, "Ġ t\nq z\n");
  expect_input_error([&] { BpeTokenizer::load(dir_); }, {merges, "line 2", "merged token 'qz'"});
  write_file(merges, "Ġ t\nĠ t\n");
  expect_input_error([&] { BpeTokenizer::load(dir_); }, {"listed twice"});
  nlohmann::json v = vocab_json_;
  v.erase(bytes_to_alphabet("A"));
  write_file(dir_ + "/vocab.json", v.dump());
  write_file(merges, "");
  expect_input_error([&] { BpeTokenizer::load(dir_); }, {"byte 0x41 has no token"});
  v = vocab_json_;
  v["abc\x01"] = 999;  // U+0001 is not in the byte-level alphabet
  write_file(dir_ + "/vocab.json", v.dump());
  expect_input_error([&] { BpeTokenizer::load(dir_); }, {"vocab.json", "U+0001", "alphabet"});
  v = vocab_json_;
  v["zz"] = 5;
  write_file(dir_ + "/vocab.json", v.dump());
  expect_input_error([&] { BpeTokenizer::load(dir_); }, {"id 5 is given to two tokens"});
  fs::remove(dir_ + "/vocab.json");
  expect_input_error([&] { BpeTokenizer::load(dir_); }, {dir_, "neither tokenizer.json nor vocab.json"});
  expect_input_error([&] { BpeTokenizer::load(dir_ + "/absent"); }, {"absent", "no such file"});
}

// A merge whose part does not exist yet when it is ranked (out of training order): encode falls
// back to GPT-2's loop and agrees with it.
TEST_F(SmallVocab, MergesOutOfTrainingOrderUseTheReferenceLoop) {
  write_file(dir_ + "/merges.txt", "Ġt he\nĠ t\nh e\n");
  BpeTokenizer tok = BpeTokenizer::load(dir_);
  EXPECT_FALSE(tok.merges_in_training_order());
  EXPECT_EQ(tok.encode("the the"), tok.encode_ref("the the"));
}

std::string fortunes_sample(std::size_t bytes) {
  if (!fs::is_directory(kFortunesDir)) return "";
  const TokenData d = load_fortunes_corpus();
  std::string s;
  for (std::size_t i = 0; i < std::min(bytes, d.tokens.size()); ++i) s += static_cast<char>(d.tokens[i]);
  return s;
}

TEST(BpeTrainer, TrainedVocabularyEncodesLikeTheReferenceAndRoundTrips) {
  std::string text = fortunes_sample(200000);
  if (text.empty()) {  // without the fortunes package: a synthetic text with repeated words
    std::mt19937 rng(3);
    const char* words[] = {"the ",  "quick ", "brown ", "fox ",  "jumps ",
                           "over ", "lazy ",  "dog. ",  "It's ", "42 "};
    for (int i = 0; i < 20000; ++i) text += words[rng() % 10];
  }
  const BpeVocabulary v = train_bpe({text}, 600);
  EXPECT_EQ(v.tokens.size(), 600u);
  EXPECT_EQ(v.merges.size(), 600u - 257u);
  BpeTokenizer tok(v);
  EXPECT_TRUE(tok.merges_in_training_order());
  const std::string sample = text.substr(0, 20000);
  const auto ids = tok.encode(sample);
  EXPECT_EQ(ids, tok.encode_ref(sample));
  EXPECT_EQ(tok.decode(ids), sample);
  EXPECT_LT(ids.size(), sample.size() * 3 / 5) << "600 tokens compress English at least 1.6x";
  // Written as vocab.json + merges.txt and read back: the same tokenizer.
  const std::string dir = test::temp_path("trained");
  write_vocab_and_merges(v, dir);
  BpeTokenizer back = BpeTokenizer::load(dir);
  EXPECT_EQ(back.encode(sample), ids);
  EXPECT_EQ(back.end_of_text(), tok.end_of_text());
  fs::remove_all(dir);
  expect_input_error([] { train_bpe({"abc"}, 100); }, {"--train-vocab 100"});
}

}  // namespace
}  // namespace tz
