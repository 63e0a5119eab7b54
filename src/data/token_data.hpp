// Token sequences held in memory: the default corpus (Debian's fortunes, 2.6 MB of English text as
// byte tokens) and the unigram entropy of a sequence. Training data on disk is read through
// ShardSet (shard_set.hpp), memory-mapped, never whole.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tz {

struct TokenData {
  std::string origin;  // file or folder name, for messages
  std::string format;  // "text"
  std::vector<std::int32_t> tokens;
  int max_token() const;
};

// The default corpus: Debian's `fortunes` text files (every regular file in `dir` not ending in .dat
// or .u8, in name order), concatenated, as byte tokens. InputError if the folder or its texts are missing.
constexpr const char* kFortunesDir = "/usr/share/games/fortunes";
TokenData load_fortunes_corpus(const std::string& dir = kFortunesDir);

// Entropy of the unigram (token frequency) distribution of the data, in nats: the loss of a model that
// knows only token frequencies. Training should push the loss well below it.
double unigram_entropy_nats(std::span<const std::int32_t> tokens);

}  // namespace tz
