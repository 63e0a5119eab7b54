// The training data of a run: an ordered list of token shards (token_shard.hpp), from the `--data`
// value as users write it: a file, a comma-separated list of files, or glob patterns ("data/*.bin",
// "train_0[0-4]*.bin"), mixed freely. A pattern's matches are taken in name order; a list keeps its
// order. Every shard is memory-mapped; opening reads the headers only.
// Text and token shards do not mix (text is byte tokens, a different vocabulary), and a file named
// twice is an error (double weight is rarely meant; a link names a file twice on purpose).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/token_shard.hpp"

namespace tz {

class ShardSet {
 public:
  ShardSet() = default;
  explicit ShardSet(std::vector<TokenShard> shards);

  // Expands and opens `spec`. InputError naming the item: an empty item, a pattern that matches no
  // file, a missing file, text mixed with token shards, a file named twice, any shard error.
  static ShardSet open(const std::string& spec);
  // One shard of tokens held in memory (kept alive by the set).
  static ShardSet from_tokens(std::vector<std::int32_t> tokens, std::string name);
  // A view of tokens owned elsewhere: they must outlive the set and every loader made from it.
  static ShardSet view(std::span<const std::int32_t> tokens, std::string name);

  const std::vector<TokenShard>& shards() const { return shards_; }
  std::size_t total_tokens() const;
  bool is_text() const;  // byte-level tokens (vocabulary 256)
  // "data/train_*.bin: 12 shards (llm.c uint16), 1.2e9 tokens" style, for logs.
  std::string describe() const;
  // Depends on the shards' order, token counts and widths (not their names or contents): two runs
  // whose fingerprints match cut the same windows.
  std::uint64_t fingerprint() const;

  // Unigram entropy (nats) of the token ids: over every token when there are at most `max_tokens`,
  // else over `max_tokens` tokens read in 64 Ki-token chunks spread evenly over all shards (bounded
  // time and memory; an estimate then). The loss of a model that knows only token frequencies. Every
  // id read is checked against [0, vocab_size) (at most 2^31): the InputError of read_tokens names the
  // file, the token index and the id.
  double unigram_entropy_nats(std::int64_t vocab_size, std::size_t max_tokens = std::size_t{1} << 24) const;

  const std::string& spec() const { return spec_; }

 private:
  std::vector<TokenShard> shards_;
  std::string spec_;
};

// The file names `spec` stands for, in order (exposed for tests and messages).
std::vector<std::string> expand_data_spec(const std::string& spec);

}  // namespace tz
