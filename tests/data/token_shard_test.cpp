// Token shard formats (llm.c uint16 and uint32, nanoGPT, text), their header checks with the byte
// offset of the bad field, the lazy token-id check against the reference reader, and the writer.
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "data/llmc_shard_writer.hpp"
#include "data/token_shard.hpp"
#include "data_test_util.hpp"
#include "support/expect_input_error.hpp"

namespace tz {
namespace {

namespace fs = std::filesystem;
using test::expect_input_error;
using test::temp_path;
using test::write_file;

std::vector<std::int32_t> all_tokens(const TokenShard& s, std::int64_t vocab = 1LL << 32) {
  std::vector<std::int32_t> out(s.count);
  read_tokens(s, 0, s.count, out.data(), vocab);
  return out;
}

TEST(TokenShard, ReadsLlmcNanogptAndText) {
  const std::vector<std::int32_t> toks = {0, 1, 50256, 65535, 7};
  const std::string llmc = temp_path("a.bin"), nano = temp_path("b.bin"), text = temp_path("c.txt"),
                    wide = temp_path("w.bin");
  write_llmc_shard(llmc, toks);
  write_file(nano, test::uint16_bytes(toks));
  write_file(text, "abc\xff");
  const std::vector<std::int32_t> big = {3, 70000, 128255, 0};
  write_llmc_shard(wide, big);  // a token above 65535: uint32 (llm.c's Llama-3 format)
  const TokenShard a = open_token_shard(llmc), b = open_token_shard(nano), c = open_token_shard(text),
                   w = open_token_shard(wide);
  EXPECT_EQ(a.format, ShardFormat::llmc_uint16);
  EXPECT_EQ(a.header_bytes, kLlmcHeaderBytes);
  EXPECT_EQ(all_tokens(a), toks);
  EXPECT_EQ(b.format, ShardFormat::nanogpt_uint16);
  EXPECT_EQ(all_tokens(b), toks);
  EXPECT_EQ(c.format, ShardFormat::text);
  EXPECT_EQ(all_tokens(c), (std::vector<std::int32_t>{'a', 'b', 'c', 255}));
  EXPECT_EQ(w.format, ShardFormat::llmc_uint32);
  EXPECT_EQ(w.token_bytes, 4);
  EXPECT_EQ(all_tokens(w), big);
  EXPECT_EQ(fs::file_size(wide), kLlmcHeaderBytes + 4 * big.size());
  for (const auto& p : {llmc, nano, text, wide}) fs::remove(p);
}

TEST(TokenShard, BadFilesNameTheFileAndTheOffset) {
  const std::string missing = temp_path("missing.bin");
  expect_input_error([&] { open_token_shard(missing); }, {missing, "no such file"});
  const std::string empty = temp_path("empty.txt");
  write_file(empty, "");
  expect_input_error([&] { open_token_shard(empty); }, {empty, "empty"});
  const std::string odd = temp_path("odd.bin");
  write_file(odd, "abc");
  expect_input_error([&] { open_token_shard(odd); }, {odd, "uint16", "nanoGPT"});
  const std::string dir = temp_path("dir");
  fs::create_directories(dir);
  expect_input_error([&] { open_token_shard(dir); }, {dir, "directory"});

  // A header claiming more tokens than follow (truncated file).
  const std::string trunc = temp_path("trunc.bin");
  write_llmc_shard(trunc, {1, 2, 3, 4});
  fs::resize_file(trunc, fs::file_size(trunc) - 2);
  expect_input_error([&] { open_token_shard(trunc); }, {trunc, "token count 4 at byte 8", "6 bytes follow"});
  // Shorter than the header its magic announces.
  const std::string short_header = temp_path("short.bin");
  write_llmc_shard(short_header, {1, 2});
  fs::resize_file(short_header, 100);
  expect_input_error([&] { open_token_shard(short_header); }, {short_header, "100 bytes", "1024"});
  // Wrong version for the magic.
  const std::string version = temp_path("version.bin");
  write_llmc_shard(version, {1, 2});
  test::poke_int32(version, 4, 7);
  expect_input_error([&] { open_token_shard(version); }, {version, "version 7 at byte 4", "uint16"});
  // Non-positive count.
  const std::string zero = temp_path("zero.bin");
  write_llmc_shard(zero, {1, 2});
  test::poke_int32(zero, 8, 0);
  expect_input_error([&] { open_token_shard(zero); }, {zero, "token count 0 at byte 8"});
  // A header that looks like llm.c's with a wrong magic is named as such, not read as nanoGPT tokens.
  const std::string magic = temp_path("magic.bin");
  write_llmc_shard(magic, {1, 2, 3});
  test::poke_int32(magic, 0, 20240521);
  expect_input_error([&] { open_token_shard(magic); },
                     {magic, "look like an llm.c header", "magic 20240521 at byte 0"});
  // llm.c's evaluation files are not token shards.
  const std::string eval = temp_path("eval.bin");
  write_llmc_shard(eval, {1, 2, 3});
  test::poke_int32(eval, 0, kLlmcEvalMagic);
  expect_input_error([&] { open_token_shard(eval); }, {eval, "evaluation file"});
  for (const auto& p : {empty, odd, dir, trunc, short_header, version, zero, magic, eval}) fs::remove_all(p);
}

TEST(TokenShard, TokenOutsideTheVocabularyNamesFileIndexAndOffset) {
  const std::string path = temp_path("vocab.bin");
  write_llmc_shard(path, {5, 6, 60, 7, 61, 2});
  const TokenShard s = open_token_shard(path);
  std::vector<std::int32_t> out(6), ref(6);
  read_tokens(s, 0, 3, out.data(), 61);  // ids 5, 6, 60 fit a vocabulary of 61
  expect_input_error([&] { read_tokens(s, 1, 5, out.data(), 61); },
                     {path, "token id 61 at token index 4", "byte offset 1032", "[0, 61)"});
  expect_input_error([&] { validate_tokens(s, 61); }, {path, "token index 4"});
  read_tokens(s, 0, 6, out.data(), 62);
  read_tokens_ref(s, 0, 6, ref.data(), 62);
  EXPECT_EQ(out, ref);
  const std::vector<std::int32_t> neg = {1, -3, 2};
  const TokenShard m = memory_view_shard(neg, "mem");
  expect_input_error([&] { read_tokens(m, 0, 3, out.data(), 10); }, {"mem", "token id -3 at token index 1"});
  fs::remove(path);
}

TEST(TokenShard, ReadTokensMatchesReferenceOnEveryWidth) {
  std::vector<std::int32_t> toks;
  for (int i = 0; i < 1000; ++i) toks.push_back((i * 7919) % 65536);
  const std::string u16 = temp_path("r16.bin"), text = temp_path("r8.txt");
  write_llmc_shard(u16, toks);
  std::string bytes;
  for (auto t : toks) bytes.push_back(static_cast<char>(t & 0xff));
  write_file(text, bytes);
  for (const auto& path : {u16, text}) {
    const TokenShard s = open_token_shard(path);
    for (std::size_t first : {0u, 1u, 333u, 999u}) {
      const std::size_t n = std::min<std::size_t>(65, s.count - first);
      std::vector<std::int32_t> a(n), b(n);
      read_tokens(s, first, n, a.data(), 65536);
      read_tokens_ref(s, first, n, b.data(), 65536);
      EXPECT_EQ(a, b) << path << " at " << first;
    }
  }
  fs::remove(u16);
  fs::remove(text);
}

TEST(LlmcShardWriter, StreamsAndChecksTokens) {
  const std::string path = temp_path("stream.bin");
  {
    LlmcShardWriter w(path, 2);
    w.append(std::vector<std::int32_t>{1, 2});
    w.append(std::vector<std::int32_t>{3});
    EXPECT_EQ(w.count(), 3u);
    expect_input_error([&] { w.append(std::vector<std::int32_t>{70000}); }, {path, "70000", "uint16"});
    w.close();
  }
  EXPECT_EQ(all_tokens(open_token_shard(path)), (std::vector<std::int32_t>{1, 2, 3}));
  expect_input_error([&] { LlmcShardWriter("/nonexistent-dir/x.bin", 2); },
                     {"/nonexistent-dir/x.bin", "cannot create"});
  if (fs::exists("/dev/full")) {
    expect_input_error(
        [&] {
          LlmcShardWriter w("/dev/full", 2);
          w.append(std::vector<std::int32_t>(100000, 1));
          w.close();
        },
        {"/dev/full"});
  }
  fs::remove(path);
}

// A shard that fills the disk leaves nothing behind: `tokenize` used to leave a partial
// PREFIX_000000.bin. The disk is a tmpfs of 16 KiB (root only: skipped, saying why, elsewhere).
TEST(LlmcShardWriter, AFullDiskLeavesNoPartialShard) {
  const std::string dir = test::temp_path("full_disk");
  fs::create_directories(dir);
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=16k") != 0) {
    const std::string why = std::strerror(errno);
    fs::remove(dir);
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << why;
  }
  expect_input_error(
      [&] {
        LlmcShardWriter w(dir + "/train_000000.bin", 2);
        w.append(std::vector<std::int32_t>(100000, 1));
        w.close();
      },
      {"token shard " + dir + "/train_000000.bin", "No space left on device"});
  EXPECT_TRUE(fs::is_empty(dir));
  ::umount2(dir.c_str(), MNT_DETACH);
  fs::remove(dir);
}

}  // namespace
}  // namespace tz
