// Writes one llm.c token shard incrementally, in bounded memory: a placeholder header, the tokens as
// they come, then the real header (token count) at close. uint16 tokens (magic 20240520, version 1)
// or uint32 (magic 20240801, version 7), as llm.c's dev/data writers do. Every write, the seek back
// and the close are checked: a failure is an InputError naming the file. The shard appears whole at
// close() or not at all (core/output_file.hpp): a failed or abandoned shard leaves no partial file.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/output_file.hpp"

namespace tz {

class LlmcShardWriter {
 public:
  LlmcShardWriter(std::string path, int token_bytes);  // token_bytes 2 or 4

  // InputError if a token does not fit the token width, or the shard would pass llm.c's limit of
  // 2^31 - 1 tokens (the header's int32 count).
  void append(std::span<const std::int32_t> tokens);
  void close();  // writes the header and closes; InputError naming the file on any failure
  std::size_t count() const { return count_; }
  const std::string& path() const { return file_.path(); }

 private:
  OutputFile file_;
  int token_bytes_;
  std::size_t count_ = 0;
  std::vector<unsigned char> buffer_;
};

}  // namespace tz
