// Fuzzes the token-shard reader (`train --data FILE`): open_token_shard (the header checks) and
// read_tokens (every token, checked against a vocabulary), then the unigram-entropy pass `train` runs
// over its data (ShardSet, which once indexed a table with ids of 2^31 and more), on a file holding
// the input. The first
// input byte picks the file name's ending (.bin: an llm.c or nanoGPT shard; .txt: raw text) and
// whether the vocabulary is the format's whole range or a small one (ids above it must be refused),
// the rest is the file. A shard that reads has tokens in range.
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include "data/shard_set.hpp"
#include "data/token_shard.hpp"
#include "fuzz_check.hpp"

namespace {

// One scratch file per fuzzing process, under $TMPDIR (scripts/fuzz.sh points it into the build folder).
std::string scratch_path(std::string_view ending) {
  return (std::filesystem::temp_directory_path() / fmt::format("tz-fuzz-token-{}{}", ::getpid(), ending))
      .string();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool shard = data[0] & 1;
  const std::string path = scratch_path(shard ? ".bin" : ".txt");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
    if (!out) tz::fuzz::finding(fmt::format("cannot write the scratch file {}", path));
  }
  const std::int64_t vocab = (data[0] & 2) ? 100 : (shard ? 65536 : 256);
  std::vector<std::int32_t> tokens;
  const bool read = tz::fuzz::reads_or_input_error([&] {
    const tz::TokenShard s = tz::open_token_shard(path);
    tz::fuzz::expect(s.count > 0, "a shard that opened has no tokens");
    tokens.resize(s.count);
    tz::read_tokens(s, 0, s.count, tokens.data(), vocab);
  });
  const bool counted = tz::fuzz::reads_or_input_error([&] {
    const double h = tz::ShardSet::open(path).unigram_entropy_nats(vocab);
    tz::fuzz::expect(h >= 0 && h <= std::log(static_cast<double>(vocab)) + 1e-9, "entropy out of range");
  });
  tz::fuzz::expect(counted == read, "the entropy pass and read_tokens disagree on the file");
  std::filesystem::remove(path);
  if (!read) return 0;
  for (std::int32_t t : tokens)
    tz::fuzz::expect(t >= 0 && t < vocab, fmt::format("token {} outside [0, {})", t, vocab));
  return 0;
}
