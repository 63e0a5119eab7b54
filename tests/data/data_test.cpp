// Byte tokenizer, the fortunes corpus and the unigram entropy.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "data/byte_tokenizer.hpp"
#include "data/token_data.hpp"
#include "data_test_util.hpp"
#include "support/expect_input_error.hpp"

namespace tz {
namespace {

namespace fs = std::filesystem;
using test::expect_input_error;

TEST(ByteTokenizer, RoundTripsAnyBytes) {
  std::string s = "Hello, w\xc3\xb6rld\n";
  s.push_back('\0');
  s.push_back('\xff');
  auto t = byte_encode(s);
  EXPECT_EQ(t.size(), s.size());
  EXPECT_EQ(t[0], 'H');
  EXPECT_EQ(t.back(), 255);
  EXPECT_EQ(byte_decode(t), s);
}

TEST(TokenData, FortunesCorpusIsEnglishText) {
  if (!fs::is_directory(kFortunesDir)) GTEST_SKIP() << "Debian's fortunes package is not installed";
  TokenData d = load_fortunes_corpus();
  EXPECT_GT(d.tokens.size(), 1000000u);
  EXPECT_LT(d.max_token(), 256);
  const double h = unigram_entropy_nats(d.tokens);
  EXPECT_GT(h, 2.5);  // English bytes: about 4.5 bits = 3.1 nats
  EXPECT_LT(h, 3.5);
}

TEST(TokenData, MissingFortunesFolderIsAnError) {
  const std::string dir = test::temp_path("nofortunes");
  fs::create_directories(dir);
  expect_input_error([&] { load_fortunes_corpus(dir); }, {dir, "fortunes"});
  expect_input_error([&] { load_fortunes_corpus(dir + "/absent"); }, {"absent", "fortunes"});
  fs::remove_all(dir);
}

TEST(UnigramEntropy, ClosedForms) {
  EXPECT_NEAR(unigram_entropy_nats(std::vector<std::int32_t>{1, 1, 1}), 0.0, 1e-12);
  EXPECT_NEAR(unigram_entropy_nats(std::vector<std::int32_t>{1, 2, 3, 4}), std::log(4.0), 1e-12);
}

}  // namespace
}  // namespace tz
