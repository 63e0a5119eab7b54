#include "data/byte_tokenizer.hpp"

#include "core/error.hpp"

namespace tz {

std::vector<std::int32_t> byte_encode(std::string_view text) {
  std::vector<std::int32_t> out(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) out[i] = static_cast<unsigned char>(text[i]);
  return out;
}

std::string byte_decode(const std::vector<std::int32_t>& tokens) {
  std::string out(tokens.size(), '\0');
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    TZ_CHECK(tokens[i] >= 0 && tokens[i] < kByteVocabSize, "token {} at {} is not a byte", tokens[i], i);
    out[i] = static_cast<char>(tokens[i]);
  }
  return out;
}

}  // namespace tz
