// Tokenizer, shard readers and their one-line errors, the fortunes corpus and the data loader's
// disjointness, determinism, union-of-ranks property and save/restore.
#include <gtest/gtest.h>
#include "support/expect_input_error.hpp"

#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.hpp"
#include "data/byte_tokenizer.hpp"
#include "data/data_loader.hpp"
#include "data/token_data.hpp"

namespace tz {
namespace {

namespace fs = std::filesystem;

using test::expect_input_error;

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("tz_data_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

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

TEST(TokenData, ReadsLlmcNanogptAndText) {
  std::vector<std::int32_t> toks = {0, 1, 50256, 65535, 7};
  std::string llmc = temp_path("a.bin"), nano = temp_path("b.bin"), text = temp_path("c.txt");
  write_llmc_shard(llmc, toks);
  std::string raw;
  for (auto t : toks) raw.push_back(static_cast<char>(t & 0xff)), raw.push_back(static_cast<char>(t >> 8));
  write_file(nano, raw);
  write_file(text, "abc");
  TokenData a = load_token_file(llmc), b = load_token_file(nano), c = load_token_file(text);
  EXPECT_EQ(a.format, "llm.c");
  EXPECT_EQ(a.tokens, toks);
  EXPECT_EQ(b.format, "nanogpt");
  EXPECT_EQ(b.tokens, toks);
  EXPECT_EQ(c.tokens, (std::vector<std::int32_t>{'a', 'b', 'c'}));
  EXPECT_EQ(a.max_token(), 65535);
  for (const auto& p : {llmc, nano, text}) fs::remove(p);
}

TEST(TokenData, BadFilesAreOneLineErrorsNamingTheFile) {
  const std::string missing = temp_path("missing.bin");
  expect_input_error([&] { load_token_file(missing); }, {missing, "no such file"});
  const std::string empty = temp_path("empty.txt");
  write_file(empty, "");
  expect_input_error([&] { load_token_file(empty); }, {empty, "empty"});
  const std::string odd = temp_path("odd.bin");
  write_file(odd, "abc");
  expect_input_error([&] { load_token_file(odd); }, {odd, "uint16"});
  // llm.c header claiming more tokens than follow.
  const std::string trunc = temp_path("trunc.bin");
  write_llmc_shard(trunc, {1, 2, 3, 4});
  fs::resize_file(trunc, fs::file_size(trunc) - 2);
  expect_input_error([&] { load_token_file(trunc); }, {trunc, "4 tokens"});
  // llm.c header with a wrong version.
  const std::string version = temp_path("version.bin");
  write_llmc_shard(version, {1, 2});
  {
    std::fstream f(version, std::ios::in | std::ios::out | std::ios::binary);
    std::int32_t v = 7;
    f.seekp(4);
    f.write(reinterpret_cast<const char*>(&v), 4);
  }
  expect_input_error([&] { read_llmc_shard(version); }, {version, "version 7"});
  const std::string dir = temp_path("dir");
  fs::create_directories(dir);
  expect_input_error([&] { load_token_file(dir); }, {dir, "directory"});
  expect_input_error([&] { load_fortunes_corpus(dir); }, {dir, "fortunes"});
  for (const auto& p : {empty, odd, trunc, version, dir}) fs::remove_all(p);
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

TEST(UnigramEntropy, ClosedForms) {
  EXPECT_NEAR(unigram_entropy_nats({1, 1, 1}), 0.0, 1e-12);
  EXPECT_NEAR(unigram_entropy_nats({1, 2, 3, 4}), std::log(4.0), 1e-12);
}

std::vector<std::int32_t> iota_tokens(int n) {
  std::vector<std::int32_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = i;
  return t;
}

TEST(DataLoader, RanksGetDisjointDeterministicWindows) {
  auto tokens = iota_tokens(1000);
  const int B = 3, T = 7, world = 3;  // 142 windows, 15 steps per epoch
  std::set<int> seen;
  for (int r = 0; r < world; ++r) {
    DataLoader a(tokens, B, T, r, world, 11), b(tokens, B, T, r, world, 11);
    EXPECT_EQ(a.steps_per_epoch(), 15u);
    std::vector<std::int32_t> in(B * T), tg(B * T), in2(B * T), tg2(B * T);
    for (std::size_t s = 0; s < a.steps_per_epoch(); ++s) {
      a.next(in.data(), tg.data());
      b.next(in2.data(), tg2.data());
      EXPECT_EQ(in, in2);
      for (int i = 0; i < B; ++i) {
        EXPECT_EQ(in[i * T] % T, 0) << "windows start at multiples of T";
        EXPECT_TRUE(seen.insert(in[i * T]).second) << "window starting at " << in[i * T] << " seen twice";
        for (int t = 0; t < T; ++t) EXPECT_EQ(tg[i * T + t], in[i * T + t] + 1);
      }
    }
  }
  EXPECT_EQ(seen.size(), 15u * B * world);
  // Another seed, another order.
  DataLoader a(tokens, B, T, 0, world, 11), c(tokens, B, T, 0, world, 12);
  std::vector<std::int32_t> x(B * T), y(B * T), z(B * T);
  a.next(x.data(), y.data());
  c.next(z.data(), y.data());
  EXPECT_NE(x, z);
}

TEST(DataLoader, UnionOfRanksIsTheSingleProcessBatch) {
  auto tokens = iota_tokens(5000);
  const int B = 2, T = 9, world = 4;
  DataLoader single = DataLoader::union_of_ranks(tokens, B, T, world, 5);
  std::vector<DataLoader> ranks;
  for (int r = 0; r < world; ++r) ranks.emplace_back(tokens, B, T, r, world, 5);
  std::vector<std::int32_t> in(world * B * T), tg(in.size()), rin(B * T), rtg(B * T);
  for (int step = 0; step < 80; ++step) {  // crosses an epoch boundary (69 steps per epoch)
    single.next(in.data(), tg.data());
    for (int r = 0; r < world; ++r) {
      ranks[r].next(rin.data(), rtg.data());
      ASSERT_TRUE(std::equal(rin.begin(), rin.end(), in.begin() + r * B * T))
          << "step " << step << " rank " << r;
    }
  }
}

TEST(DataLoader, SaveAndRestorePosition) {
  auto tokens = iota_tokens(300);
  DataLoader a(tokens, 2, 5, 1, 2, 3);
  std::vector<std::int32_t> in(10), tg(10), in2(10);
  for (int i = 0; i < 20; ++i) a.next(in.data(), tg.data());  // past one epoch (14 steps)
  DataLoaderState saved = a.state();
  EXPECT_EQ(saved.epoch, 1u);
  a.next(in.data(), tg.data());
  DataLoader b(tokens, 2, 5, 1, 2, 3);
  b.restore(saved);
  b.next(in2.data(), tg.data());
  EXPECT_EQ(in, in2);
}

TEST(DataLoader, TooShortDataIsAnError) {
  auto tokens = iota_tokens(40);
  expect_input_error([&] { DataLoader(tokens, 4, 8, 0, 2, 1, "tiny.txt"); },
                     {"tiny.txt", "too short", "40 tokens"});
  expect_input_error([&] { DataLoader(tokens, 1, 8, 2, 2, 1, "tiny.txt"); }, {"rank 2"});
}

}  // namespace
}  // namespace tz
