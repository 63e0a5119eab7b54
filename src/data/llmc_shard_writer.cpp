#include "data/llmc_shard_writer.hpp"

#include <cerrno>
#include <cstring>

#include "core/error.hpp"
#include "data/token_shard.hpp"

namespace tz {

LlmcShardWriter::LlmcShardWriter(std::string path, int token_bytes)
    : path_(std::move(path)), token_bytes_(token_bytes) {
  TZ_CHECK(token_bytes == 2 || token_bytes == 4, "token bytes {}", token_bytes);
  f_ = std::fopen(path_.c_str(), "wb");
  if (f_ == nullptr) fail_input("{}: cannot open for writing: {}", path_, std::strerror(errno));
  const std::vector<std::int32_t> placeholder(256, 0);
  write(placeholder.data(), kLlmcHeaderBytes);
}

LlmcShardWriter::~LlmcShardWriter() {
  if (f_ != nullptr) std::fclose(f_);
}

void LlmcShardWriter::write(const void* p, std::size_t bytes) {
  if (bytes > 0 && std::fwrite(p, 1, bytes, f_) != bytes)
    fail_input("{}: write of {} bytes failed: {}", path_, bytes, std::strerror(errno));
}

void LlmcShardWriter::append(std::span<const std::int32_t> tokens) {
  TZ_CHECK(f_ != nullptr, "append after close of {}", path_);
  if (count_ + tokens.size() > static_cast<std::size_t>(INT32_MAX))
    fail_input(
        "{}: {} tokens pass llm.c's limit of {} per shard (the header's int32 count); use smaller shards",
        path_, count_ + tokens.size(), INT32_MAX);
  const std::int64_t limit = token_bytes_ == 2 ? 65535 : 4294967295LL;
  buffer_.resize(tokens.size() * token_bytes_);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] > limit)
      fail_input("{}: token {} at index {} does not fit a uint{} shard", path_, tokens[i], count_ + i,
                 8 * token_bytes_);
    if (token_bytes_ == 2) {
      const std::uint16_t u = static_cast<std::uint16_t>(tokens[i]);
      std::memcpy(buffer_.data() + 2 * i, &u, 2);
    } else {
      const std::uint32_t u = static_cast<std::uint32_t>(tokens[i]);
      std::memcpy(buffer_.data() + 4 * i, &u, 4);
    }
  }
  write(buffer_.data(), buffer_.size());
  count_ += tokens.size();
}

void LlmcShardWriter::close() {
  TZ_CHECK(f_ != nullptr, "close twice of {}", path_);
  std::int32_t header[3] = {token_bytes_ == 2 ? kLlmcMagic : kLlmcMagicUint32,
                            token_bytes_ == 2 ? kLlmcVersion : kLlmcVersionUint32,
                            static_cast<std::int32_t>(count_)};
  if (std::fseek(f_, 0, SEEK_SET) != 0)
    fail_input("{}: seek to the header failed: {}", path_, std::strerror(errno));
  write(header, sizeof(header));
  std::FILE* f = f_;
  f_ = nullptr;
  if (std::fflush(f) != 0 || std::ferror(f)) {
    const int err = errno;
    std::fclose(f);
    fail_input("{}: write failed: {}", path_, std::strerror(err));
  }
  if (std::fclose(f) != 0) fail_input("{}: close failed: {}", path_, std::strerror(errno));
}

}  // namespace tz
