#include "data/token_data.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "core/error.hpp"
#include "data/byte_tokenizer.hpp"

namespace tz {
namespace {

std::string read_bytes(const std::string& path) {
  if (!std::filesystem::exists(path)) fail_input("data {}: no such file", path);
  if (std::filesystem::is_directory(path)) fail_input("data {}: is a directory, expected a file", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_input("data {}: cannot open file", path);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) fail_input("data {}: file is empty", path);
  return bytes;
}

std::vector<std::int32_t> uint16_tokens(const char* p, std::size_t count) {
  std::vector<std::int32_t> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint16_t t;
    std::memcpy(&t, p + 2 * i, 2);
    out[i] = t;
  }
  return out;
}

std::int32_t header_word(const std::string& bytes, int i) {
  std::int32_t w;
  std::memcpy(&w, bytes.data() + 4 * i, 4);
  return w;
}

}  // namespace

int TokenData::max_token() const {
  return tokens.empty() ? -1 : *std::max_element(tokens.begin(), tokens.end());
}

TokenData read_llmc_shard(const std::string& path) {
  std::string bytes = read_bytes(path);
  constexpr std::size_t kHeaderBytes = 256 * 4;
  if (bytes.size() < kHeaderBytes)
    fail_input("data {}: {} bytes, shorter than the llm.c header of {} bytes", path, bytes.size(),
               kHeaderBytes);
  if (header_word(bytes, 0) != kLlmcMagic)
    fail_input("data {}: bad llm.c magic {} (expected {})", path, header_word(bytes, 0), kLlmcMagic);
  if (header_word(bytes, 1) != kLlmcVersion)
    fail_input("data {}: llm.c version {} not supported (expected {}: uint16 tokens)", path,
               header_word(bytes, 1), kLlmcVersion);
  const std::int64_t count = header_word(bytes, 2);
  const std::size_t payload = bytes.size() - kHeaderBytes;
  if (count <= 0) fail_input("data {}: llm.c header says {} tokens", path, count);
  if (payload != static_cast<std::size_t>(count) * 2)
    fail_input("data {}: llm.c header says {} tokens ({} bytes) but {} bytes follow the header", path, count,
               count * 2, payload);
  return {path, "llm.c", uint16_tokens(bytes.data() + kHeaderBytes, static_cast<std::size_t>(count))};
}

TokenData read_nanogpt_shard(const std::string& path) {
  std::string bytes = read_bytes(path);
  if (bytes.size() % 2 != 0)
    fail_input("data {}: {} bytes is not a whole number of uint16 tokens (nanoGPT shard)", path,
               bytes.size());
  return {path, "nanogpt", uint16_tokens(bytes.data(), bytes.size() / 2)};
}

TokenData read_text_file(const std::string& path) {
  return {path, "text", byte_encode(read_bytes(path))};
}

TokenData load_token_file(const std::string& path) {
  if (!path.ends_with(".bin")) return read_text_file(path);
  std::ifstream in(path, std::ios::binary);
  std::int32_t magic = 0;
  if (in && in.read(reinterpret_cast<char*>(&magic), 4) && magic == kLlmcMagic) return read_llmc_shard(path);
  return read_nanogpt_shard(path);
}

void write_llmc_shard(const std::string& path, const std::vector<std::int32_t>& tokens) {
  std::vector<std::int32_t> header(256, 0);
  header[0] = kLlmcMagic;
  header[1] = kLlmcVersion;
  TZ_CHECK_LE(tokens.size(), static_cast<std::size_t>(INT32_MAX));
  header[2] = static_cast<std::int32_t>(tokens.size());
  std::ofstream out(path, std::ios::binary);
  if (!out) fail_input("data {}: cannot open for writing", path);
  out.write(reinterpret_cast<const char*>(header.data()), 256 * 4);
  for (auto t : tokens) {
    TZ_CHECK(t >= 0 && t <= 65535, "token {} does not fit in uint16", t);
    std::uint16_t u = static_cast<std::uint16_t>(t);
    out.write(reinterpret_cast<const char*>(&u), 2);
  }
}

TokenData load_fortunes_corpus(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir))
    fail_input("data {}: fortunes corpus not found (install Debian's 'fortunes' package)", dir);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name.ends_with(".dat") || name.ends_with(".u8") || name.starts_with("."))
      continue;
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (text.empty()) fail_input("data {}: no fortunes text files in the folder", dir);
  return {dir, "text", byte_encode(text)};
}

double unigram_entropy_nats(const std::vector<std::int32_t>& tokens) {
  std::unordered_map<std::int32_t, std::size_t> counts;
  for (auto t : tokens) ++counts[t];
  double h = 0;
  const double n = static_cast<double>(tokens.size());
  for (const auto& [t, c] : counts) {
    const double p = c / n;
    h -= p * std::log(p);
  }
  return h;
}

}  // namespace tz
