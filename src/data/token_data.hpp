// Training data as one token sequence, from any of the formats users bring:
//   - raw text (any file not ending in .bin): byte-level tokens (byte_tokenizer.hpp);
//   - llm.c shards (.bin): a header of 256 int32 (magic 20240520, version 1, token count) followed by
//     that many uint16 tokens;
//   - nanoGPT shards (.bin without that magic): raw uint16 tokens, nothing else.
// Missing, empty, truncated or malformed files are InputErrors of one line naming the file and what
// is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tz {

struct TokenData {
  std::string origin;  // file name (or "fortunes corpus") for messages
  std::string format;  // "text", "llm.c", "nanogpt"
  std::vector<std::int32_t> tokens;
  int max_token() const;
};

constexpr std::int32_t kLlmcMagic = 20240520;
constexpr std::int32_t kLlmcVersion = 1;

TokenData load_token_file(const std::string& path);
TokenData read_llmc_shard(const std::string& path);
TokenData read_nanogpt_shard(const std::string& path);
TokenData read_text_file(const std::string& path);

// Writes an llm.c shard (header + uint16); InternalError if a token does not fit in uint16.
void write_llmc_shard(const std::string& path, const std::vector<std::int32_t>& tokens);

// The default corpus: Debian's `fortunes` text files (every regular file in `dir` not ending in .dat
// or .u8, in name order), concatenated, as byte tokens. InputError if the folder or its texts are missing.
constexpr const char* kFortunesDir = "/usr/share/games/fortunes";
TokenData load_fortunes_corpus(const std::string& dir = kFortunesDir);

// Entropy of the unigram (token frequency) distribution of the data, in nats: the loss of a model that
// knows only token frequencies. Training should push the loss well below it.
double unigram_entropy_nats(const std::vector<std::int32_t>& tokens);

}  // namespace tz
