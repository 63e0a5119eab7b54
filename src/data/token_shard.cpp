#include "data/token_shard.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "data/llmc_shard_writer.hpp"

namespace tz {
namespace {

std::int32_t header_word(const MappedFile& f, int i) {
  std::int32_t w;
  std::memcpy(&w, f.data() + 4 * i, 4);
  return w;
}

// llm.c's writers fill words 3..255 with zeros; together with a token count that matches the file
// size (or a version llm.c uses) that is an llm.c header, whatever the magic says.
bool looks_like_llmc_header(const MappedFile& f) {
  if (f.size_bytes() < kLlmcHeaderBytes) return false;
  for (int i = 3; i < 256; ++i)
    if (header_word(f, i) != 0) return false;
  const std::int64_t count = header_word(f, 2), payload = f.size_bytes() - kLlmcHeaderBytes;
  const std::int32_t version = header_word(f, 1);
  return (count > 0 && (count * 2 == payload || count * 4 == payload)) || version == kLlmcVersion ||
         version == kLlmcVersionUint32;
}

TokenShard llmc_shard(const std::shared_ptr<const MappedFile>& f) {
  const std::string& path = f->path();
  const std::int32_t magic = header_word(*f, 0);
  if (f->size_bytes() < kLlmcHeaderBytes)
    fail_input(
        "data {}: {} bytes, shorter than the llm.c header of {} bytes (256 int32) that magic {} at byte 0 "
        "announces",
        path, f->size_bytes(), kLlmcHeaderBytes, magic);
  const std::int32_t version = header_word(*f, 1);
  const bool wide = magic == kLlmcMagicUint32;
  const std::int32_t want = wide ? kLlmcVersionUint32 : kLlmcVersion;
  if (version != want)
    fail_input(
        "data {}: llm.c header: version {} at byte 4 is not supported with magic {} (expected {}: {} tokens)",
        path, version, magic, want, wide ? "uint32" : "uint16");
  const std::int64_t count = header_word(*f, 2);
  const int width = wide ? 4 : 2;
  const std::size_t payload = f->size_bytes() - kLlmcHeaderBytes;
  if (count <= 0) fail_input("data {}: llm.c header: token count {} at byte 8 must be positive", path, count);
  if (payload != static_cast<std::size_t>(count) * width)
    fail_input(
        "data {}: llm.c header: token count {} at byte 8 means {} bytes of {} tokens after the {}-byte "
        "header, but {} "
        "bytes follow it (truncated or padded file)",
        path, count, count * width, wide ? "uint32" : "uint16", kLlmcHeaderBytes, payload);
  return {path,
          wide ? ShardFormat::llmc_uint32 : ShardFormat::llmc_uint16,
          f->data() + kLlmcHeaderBytes,
          static_cast<std::size_t>(count),
          width,
          kLlmcHeaderBytes,
          f};
}

template <typename T>
T load_token(const unsigned char* p, std::size_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}

std::int64_t token_at(const TokenShard& s, std::size_t i) {
  switch (s.token_bytes) {
    case 1:
      return s.first[i];
    case 2:
      return load_token<std::uint16_t>(s.first, i);
    default:
      return s.format == ShardFormat::memory_int32
                 ? load_token<std::int32_t>(s.first, i)
                 : static_cast<std::int64_t>(load_token<std::uint32_t>(s.first, i));
  }
}

[[noreturn]] void fail_token(const TokenShard& s, std::size_t index, std::int64_t id, std::int64_t vocab) {
  fail_input(
      "data {}: token id {} at token index {} (byte offset {}) is outside the model's vocabulary [0, {}) ({} "
      "shard)",
      s.name, id, index, s.byte_offset(index), vocab, shard_format_name(s.format));
}

// Converts n tokens of type T and returns their largest id (the check is one comparison per window).
template <typename T>
std::int64_t copy_tokens(const unsigned char* src, std::size_t n, std::int32_t* out) {
  std::int64_t hi = 0, lo = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const T v = load_token<T>(src, i);
    out[i] = static_cast<std::int32_t>(v);
    hi = std::max<std::int64_t>(hi, v);
    lo = std::min<std::int64_t>(lo, v);
  }
  return lo < 0 ? -1 : hi;
}

}  // namespace

const char* shard_format_name(ShardFormat f) {
  switch (f) {
    case ShardFormat::text:
      return "text";
    case ShardFormat::llmc_uint16:
      return "llm.c uint16";
    case ShardFormat::llmc_uint32:
      return "llm.c uint32";
    case ShardFormat::nanogpt_uint16:
      return "nanoGPT uint16";
    case ShardFormat::memory_int32:
      return "int32 in memory";
  }
  return "?";
}

TokenShard open_token_shard(const std::string& path) {
  auto f = std::make_shared<const MappedFile>(path, "data");
  if (!path.ends_with(".bin")) return {path, ShardFormat::text, f->data(), f->size_bytes(), 1, 0, f};
  const std::int32_t magic = f->size_bytes() >= 4 ? header_word(*f, 0) : 0;
  if (magic == kLlmcMagic || magic == kLlmcMagicUint32) return llmc_shard(f);
  if (magic == kLlmcEvalMagic)
    fail_input(
        "data {}: magic {} at byte 0 marks an llm.c evaluation file (HellaSwag/MMLU examples), not a token "
        "shard",
        path, magic);
  if (looks_like_llmc_header(*f))
    fail_input(
        "data {}: the first {} bytes look like an llm.c header (words 3..255 zero, version {}, token count "
        "{}) but the "
        "magic {} at byte 0 is neither {} (uint16 tokens) nor {} (uint32 tokens)",
        path, kLlmcHeaderBytes, header_word(*f, 1), header_word(*f, 2), magic, kLlmcMagic, kLlmcMagicUint32);
  if (f->size_bytes() % 2 != 0)
    fail_input(
        "data {}: {} bytes is not a whole number of uint16 tokens (a .bin without an llm.c header is read as "
        "a nanoGPT shard)",
        path, f->size_bytes());
  return {path, ShardFormat::nanogpt_uint16, f->data(), f->size_bytes() / 2, 2, 0, f};
}

TokenShard memory_shard(std::shared_ptr<const std::vector<std::int32_t>> tokens, std::string name) {
  TokenShard s = memory_view_shard(*tokens, std::move(name));
  s.owner = std::move(tokens);
  return s;
}

TokenShard memory_view_shard(std::span<const std::int32_t> tokens, std::string name) {
  return {std::move(name),
          ShardFormat::memory_int32,
          reinterpret_cast<const unsigned char*>(tokens.data()),
          tokens.size(),
          4,
          0,
          nullptr};
}

void read_tokens(const TokenShard& s, std::size_t first, std::size_t n, std::int32_t* out,
                 std::int64_t vocab_size) {
  TZ_CHECK(first + n <= s.count, "tokens {}..{} of {} with {}", first, first + n, s.name, s.count);
  const unsigned char* src = s.first + first * s.token_bytes;
  std::int64_t hi;
  switch (s.token_bytes) {
    case 1:
      hi = copy_tokens<std::uint8_t>(src, n, out);
      break;
    case 2:
      hi = copy_tokens<std::uint16_t>(src, n, out);
      break;
    default:
      hi = s.format == ShardFormat::memory_int32 ? copy_tokens<std::int32_t>(src, n, out)
                                                 : copy_tokens<std::uint32_t>(src, n, out);
  }
  if (hi < 0 || hi >= vocab_size) read_tokens_ref(s, first, n, out, vocab_size);  // finds and names the token
}

void read_tokens_ref(const TokenShard& s, std::size_t first, std::size_t n, std::int32_t* out,
                     std::int64_t vocab_size) {
  TZ_CHECK(first + n <= s.count, "tokens {}..{} of {} with {}", first, first + n, s.name, s.count);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t id = token_at(s, first + i);
    if (id < 0 || id >= vocab_size) fail_token(s, first + i, id, vocab_size);
    out[i] = static_cast<std::int32_t>(id);
  }
}

void validate_tokens(const TokenShard& s, std::int64_t vocab_size) {
  constexpr std::size_t kChunk = 1 << 16;
  std::vector<std::int32_t> buf(std::min(kChunk, s.count));
  for (std::size_t first = 0; first < s.count; first += kChunk)
    read_tokens(s, first, std::min(kChunk, s.count - first), buf.data(), vocab_size);
}

void write_llmc_shard(const std::string& path, const std::vector<std::int32_t>& tokens) {
  int width = 2;
  for (auto t : tokens) {
    TZ_CHECK(t >= 0, "token {} is negative", t);
    if (t > 65535) width = 4;
  }
  LlmcShardWriter w(path, width);
  w.append(tokens);
  w.close();
}

}  // namespace tz
