// Shared by the data tests: per-process temporary paths and small file writers.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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

inline std::vector<std::int32_t> iota_tokens(std::size_t n) {
  std::vector<std::int32_t> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<std::int32_t>(i);
  return t;
}

}  // namespace tz::test
