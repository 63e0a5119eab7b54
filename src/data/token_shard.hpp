// One file of training tokens, memory-mapped (mapped_file.hpp), in any of the formats users bring:
//   - llm.c shards (.bin): a header of 256 int32 (magic, version, token count, then zeros) followed by
//     the tokens; magic 20240520 version 1 = uint16 tokens (GPT-2 vocabulary), magic 20240801
//     version 7 = uint32 tokens (the Llama-3 vocabulary), as llm.c's dev/data writers produce;
//   - nanoGPT shards (.bin without an llm.c header): raw uint16 tokens, nothing else;
//   - raw text (any other file name): byte-level tokens, one per byte (vocabulary 256).
// Opening checks the header and the file size only (O(1), nothing else is read); token ids are
// checked against the model's vocabulary as windows are read (read_tokens). Every error is one
// line naming the file and the byte offset or token index.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "data/mapped_file.hpp"

namespace tz {

constexpr std::int32_t kLlmcMagic = 20240520;  // GPT-2 token shards: uint16
constexpr std::int32_t kLlmcVersion = 1;
constexpr std::int32_t kLlmcMagicUint32 = 20240801;  // Llama-3 token shards: uint32
constexpr std::int32_t kLlmcVersionUint32 = 7;
constexpr std::int32_t kLlmcEvalMagic = 20240522;  // llm.c's multiple-choice eval files (not tokens)
constexpr std::size_t kLlmcHeaderBytes = 256 * 4;

enum class ShardFormat { text, llmc_uint16, llmc_uint32, nanogpt_uint16, memory_int32 };
const char* shard_format_name(ShardFormat f);

struct TokenShard {
  std::string name;  // the file path (or a label for tokens held in memory), for messages
  ShardFormat format = ShardFormat::text;
  const unsigned char* first = nullptr;  // the first token's first byte
  std::size_t count = 0;                 // tokens
  int token_bytes = 1;                   // 1 (text), 2 (uint16), 4 (uint32 or int32)
  std::size_t header_bytes = 0;          // byte offset of token 0 in the file
  std::shared_ptr<const void> owner;     // keeps the mapping (or the memory) alive

  // Byte offset in the file of token `index`, for messages.
  std::size_t byte_offset(std::size_t index) const { return header_bytes + index * token_bytes; }
};

// Opens a shard: the format from the name (.bin: llm.c or nanoGPT; otherwise text) and the header.
// InputError naming the file on a missing, empty or unreadable file, a bad llm.c header (wrong magic
// or version, a token count that disagrees with the file size, with the byte offset of the field), a
// file whose first bytes look like an llm.c header with an unknown magic, or an odd-sized nanoGPT file.
TokenShard open_token_shard(const std::string& path);

// Tokens held in memory as one shard (the default corpus, tests). `tokens` is kept alive by the shard.
TokenShard memory_shard(std::shared_ptr<const std::vector<std::int32_t>> tokens, std::string name);
// A view of tokens owned elsewhere: they must outlive the shard (and every copy of it).
TokenShard memory_view_shard(std::span<const std::int32_t> tokens, std::string name);

// Copies tokens [first, first + n) of the shard to `out` as int32, checking every id against
// [0, vocab_size): InputError naming the file, the token index, its byte offset and the id.
void read_tokens(const TokenShard& shard, std::size_t first, std::size_t n, std::int32_t* out,
                 std::int64_t vocab_size);
// The same, one token at a time with no vectorisable reduction: the reference read_tokens is tested
// against.
void read_tokens_ref(const TokenShard& shard, std::size_t first, std::size_t n, std::int32_t* out,
                     std::int64_t vocab_size);

// Checks every token of the shard against [0, vocab_size), 64 Ki tokens at a time (bounded memory,
// but it reads the whole shard): the same error as read_tokens.
void validate_tokens(const TokenShard& shard, std::int64_t vocab_size);

// Writes an llm.c shard: uint16 (magic 20240520, version 1) when every token fits, else uint32
// (magic 20240801, version 7). InputError naming the file on a failed write; InternalError on a
// negative token.
void write_llmc_shard(const std::string& path, const std::vector<std::int32_t>& tokens);

}  // namespace tz
