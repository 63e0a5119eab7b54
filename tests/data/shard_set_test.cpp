// --data as users write it (file, list, glob), its errors, the fingerprint, the unigram entropy,
// and that a large shard is streamed from its mapping, never read whole.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "data/data_loader.hpp"
#include "data/shard_set.hpp"
#include "data/token_data.hpp"
#include "data_test_util.hpp"
#include "support/expect_input_error.hpp"

namespace tz {
namespace {

namespace fs = std::filesystem;
using test::expect_input_error;
using test::temp_path;

class ShardSetFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_path("set");
    fs::create_directories(dir_);
    for (int i = 0; i < 3; ++i) write_llmc_shard(path(i), test::iota_tokens(100 + 10 * i));
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(int i) const { return dir_ + "/train_00" + std::to_string(i) + ".bin"; }
  std::string dir_;
};

TEST_F(ShardSetFiles, FileListAndGlob) {
  EXPECT_EQ(expand_data_spec(path(1)), std::vector<std::string>{path(1)});
  EXPECT_EQ(expand_data_spec(path(2) + "," + path(0)), (std::vector<std::string>{path(2), path(0)}));
  EXPECT_EQ(expand_data_spec(dir_ + "/train_*.bin"), (std::vector<std::string>{path(0), path(1), path(2)}));
  EXPECT_EQ(expand_data_spec(dir_ + "/train_00[12].bin," + path(0)),
            (std::vector<std::string>{path(1), path(2), path(0)}));
  const ShardSet set = ShardSet::open(dir_ + "/*.bin");
  ASSERT_EQ(set.shards().size(), 3u);
  EXPECT_EQ(set.total_tokens(), 100u + 110u + 120u);
  EXPECT_FALSE(set.is_text());
  EXPECT_NE(set.describe().find("3 shards (llm.c uint16), 330 tokens"), std::string::npos) << set.describe();
}

TEST_F(ShardSetFiles, BadSpecsAreErrorsNamingTheItem) {
  expect_input_error([&] { expand_data_spec(""); }, {"--data", "empty"});
  expect_input_error([&] { expand_data_spec(path(0) + ",," + path(1)); }, {"empty item"});
  expect_input_error([&] { expand_data_spec(dir_ + "/val_*.bin"); },
                     {dir_ + "/val_*.bin", "matches no file"});
  expect_input_error([&] { expand_data_spec(path(0) + "," + dir_ + "/*.bin"); }, {path(0), "named twice"});
  expect_input_error([&] { ShardSet::open(dir_ + "/absent.bin"); }, {dir_ + "/absent.bin", "no such file"});
  expect_input_error([&] { ShardSet::open(dir_); }, {dir_, "directory", "*.bin"});
  const std::string text = dir_ + "/notes.txt";
  test::write_file(text, "hello");
  expect_input_error([&] { ShardSet::open(path(0) + "," + text); }, {text, "do not mix"});
}

TEST_F(ShardSetFiles, FingerprintFollowsOrderAndCounts) {
  const auto a = ShardSet::open(path(0) + "," + path(1)).fingerprint();
  EXPECT_EQ(a, ShardSet::open(path(0) + "," + path(1)).fingerprint());
  EXPECT_NE(a, ShardSet::open(path(1) + "," + path(0)).fingerprint());
  EXPECT_NE(a, ShardSet::open(path(0) + "," + path(2)).fingerprint());
}

TEST(ShardSet, UnigramEntropyExactAndSampled) {
  std::vector<std::int32_t> toks(1 << 18);
  for (std::size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<std::int32_t>(i % 4);
  toks.push_back(70000);  // an id above 2^16 goes through the map
  const ShardSet set = ShardSet::from_tokens(toks, "mem");
  const double n = static_cast<double>(toks.size());
  const double exact = -4 * ((n - 1) / 4 / n) * std::log((n - 1) / 4 / n) - (1 / n) * std::log(1 / n);
  EXPECT_NEAR(set.unigram_entropy_nats(70001), exact, 1e-9);
  EXPECT_NEAR(set.unigram_entropy_nats(70001, 1 << 17), std::log(4.0),
              1e-3);  // chunks of 64 Ki: near uniform
  EXPECT_NEAR(unigram_entropy_nats(toks), exact, 1e-9);
}

TEST_F(ShardSetFiles, UnigramEntropyRefusesIdsOutsideTheVocabularyOfAnyWidth) {
  // Ids of 2^31 and more used to index the counting table as negative int32: a crash, not an error.
  const std::string wide = dir_ + "/wide.bin";
  for (std::uint32_t id : {0x80000000u, 0xFFFFFFFFu, 128256u}) {
    test::write_file(wide, test::uint32_shard_bytes(id, 3000));
    const ShardSet set = ShardSet::open(wide);
    expect_input_error([&] { set.unigram_entropy_nats(128256); },
                       {wide, fmt::format("token id {} at token index 0", id),
                        "outside the model's vocabulary", "[0, 128256)", "llm.c uint32"});
    expect_input_error([&] { set.unigram_entropy_nats(128256, 1 << 16); }, {wide, std::to_string(id)});
  }
  test::write_file(wide, test::uint32_shard_bytes(
                             128255u, 3000));  // the largest id of a 128256-token vocabulary (Llama 3)
  EXPECT_NEAR(ShardSet::open(wide).unigram_entropy_nats(128256), 0.0, 1e-12);
}

std::size_t resident_bytes(const void* base, std::size_t bytes) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec((bytes + page - 1) / page);
  EXPECT_EQ(::mincore(const_cast<void*>(base), bytes, vec.data()), 0);
  std::size_t n = 0;
  for (unsigned char v : vec) n += v & 1;
  return n * page;
}

std::size_t rss_bytes() {
  std::ifstream in("/proc/self/statm");
  std::size_t size = 0, resident = 0;
  in >> size >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// A 1 GiB llm.c shard (sparse: the tokens are holes that read as id 0) is opened and 200 batches
// are drawn from it: the pages in memory, and the process's resident set, stay a few MiB.
TEST(ShardSet, LargeShardIsStreamedNotReadWhole) {
  const std::string path = temp_path("large.bin");
  const std::size_t tokens = std::size_t{1} << 29;  // 1 GiB of uint16
  {
    std::ofstream out(path, std::ios::binary);
    const std::int32_t header[3] = {kLlmcMagic, kLlmcVersion, static_cast<std::int32_t>(tokens)};
    out.write(reinterpret_cast<const char*>(header), sizeof(header));
  }
  fs::resize_file(path, kLlmcHeaderBytes + 2 * tokens);
  const std::size_t rss_before = rss_bytes();
  {
    const ShardSet set = ShardSet::open(path);
    const TokenShard& shard = set.shards()[0];
    ASSERT_EQ(shard.count, tokens);
    const void* base = shard.first - shard.header_bytes;
    const std::size_t file_bytes = kLlmcHeaderBytes + 2 * tokens;
    DataLoader loader(set, {.batch = 4, .seq = 256, .rank = 0, .world = 1, .seed = 1, .vocab_size = 50257});
    std::vector<std::int32_t> in(4 * 256), tg(4 * 256);
    for (int step = 0; step < 200; ++step) loader.next(in.data(), tg.data());
    const std::size_t resident = resident_bytes(base, file_bytes), rss = rss_bytes();
    // 800 windows of 514 bytes touch at most 1600 pages (6.25 MiB); allow readahead slack.
    EXPECT_LT(resident, std::size_t{64} << 20) << "pages of the 1 GiB shard in memory";
    EXPECT_LT(rss > rss_before ? rss - rss_before : 0, std::size_t{64} << 20) << "resident set growth";
    std::cout << "1 GiB shard after 200 batches: " << resident / 1024
              << " KiB of it in memory, resident set +" << (rss > rss_before ? (rss - rss_before) / 1024 : 0)
              << " KiB\n";
  }
  fs::remove(path);
}

}  // namespace
}  // namespace tz
