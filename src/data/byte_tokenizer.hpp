// Byte-level tokenizer: every byte of the text is one token (vocabulary 256), decoding is the
// inverse. Lossless for any input, UTF-8 or not.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tz {

constexpr int kByteVocabSize = 256;

std::vector<std::int32_t> byte_encode(std::string_view text);
std::string byte_decode(const std::vector<std::int32_t>& tokens);  // InternalError on ids outside [0, 256)

}  // namespace tz
