#include "data/llmc_shard_writer.hpp"

#include <cstring>

#include "core/error.hpp"
#include "data/token_shard.hpp"

namespace tz {

LlmcShardWriter::LlmcShardWriter(std::string path, int token_bytes)
    : file_(std::move(path), "token shard"), token_bytes_(token_bytes) {
  TZ_CHECK(token_bytes == 2 || token_bytes == 4, "token bytes {}", token_bytes);
  const std::vector<std::int32_t> placeholder(256, 0);
  file_.write(placeholder.data(), kLlmcHeaderBytes);
}

void LlmcShardWriter::append(std::span<const std::int32_t> tokens) {
  const std::string& path = file_.path();
  if (count_ + tokens.size() > static_cast<std::size_t>(INT32_MAX))
    fail_input(
        "{}: {} tokens pass llm.c's limit of {} per shard (the header's int32 count); use smaller shards",
        path, count_ + tokens.size(), INT32_MAX);
  const std::int64_t limit = token_bytes_ == 2 ? 65535 : 4294967295LL;
  buffer_.resize(tokens.size() * token_bytes_);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] > limit)
      fail_input("{}: token {} at index {} does not fit a uint{} shard", path, tokens[i], count_ + i,
                 8 * token_bytes_);
    if (token_bytes_ == 2) {
      const std::uint16_t u = static_cast<std::uint16_t>(tokens[i]);
      std::memcpy(buffer_.data() + 2 * i, &u, 2);
    } else {
      const std::uint32_t u = static_cast<std::uint32_t>(tokens[i]);
      std::memcpy(buffer_.data() + 4 * i, &u, 4);
    }
  }
  file_.write(buffer_.data(), buffer_.size());
  count_ += tokens.size();
}

void LlmcShardWriter::close() {
  std::int32_t header[3] = {token_bytes_ == 2 ? kLlmcMagic : kLlmcMagicUint32,
                            token_bytes_ == 2 ? kLlmcVersion : kLlmcVersionUint32,
                            static_cast<std::int32_t>(count_)};
  file_.seek(0);
  file_.write(header, sizeof(header));
  file_.close();
}

}  // namespace tz
