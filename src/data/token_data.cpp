#include "data/token_data.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "core/error.hpp"
#include "data/byte_tokenizer.hpp"

namespace tz {

int TokenData::max_token() const {
  return tokens.empty() ? -1 : *std::max_element(tokens.begin(), tokens.end());
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
    if (!in) fail_input("data {}: cannot open file", f.string());
    text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) fail_input("data {}: read failed", f.string());
  }
  if (text.empty()) fail_input("data {}: no fortunes text files in the folder", dir);
  return {dir, "text", byte_encode(text)};
}

double unigram_entropy_nats(std::span<const std::int32_t> tokens) {
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
