// Shared by the data tests: per-process temporary paths and small file writers.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/token_shard.hpp"

namespace tz::test {

inline std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("tz_data_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

inline std::string uint16_bytes(const std::vector<std::int32_t>& tokens) {
  std::string raw;
  for (auto t : tokens)
    raw.push_back(static_cast<char>(t & 0xff)), raw.push_back(static_cast<char>((t >> 8) & 0xff));
  return raw;
}

// Overwrites the int32 at byte `offset` of a file.
inline void poke_int32(const std::string& path, std::streamoff offset, std::int32_t v) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(offset);
  f.write(reinterpret_cast<const char*>(&v), 4);
}

// An llm.c uint32 shard (the Llama-3 format) of `n` copies of `id`, written byte by byte as a hostile
// file would be: the header (magic 20240801, version 7, the count), then the raw ids.
inline std::string uint32_shard_bytes(std::uint32_t id, std::int32_t n) {
  std::vector<std::int32_t> header(256, 0);
  header[0] = kLlmcMagicUint32;
  header[1] = kLlmcVersionUint32;
  header[2] = n;
  std::string bytes(reinterpret_cast<const char*>(header.data()), kLlmcHeaderBytes);
  for (std::int32_t i = 0; i < n; ++i) bytes.append(reinterpret_cast<const char*>(&id), 4);
  return bytes;
}

inline std::vector<std::int32_t> iota_tokens(std::size_t n) {
  std::vector<std::int32_t> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<std::int32_t>(i);
  return t;
}

}  // namespace tz::test
