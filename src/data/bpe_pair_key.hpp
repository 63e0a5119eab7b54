// The key of an adjacent symbol pair (a, b) in the BPE merge tables of the trainer and the tokenizer:
// a in the high 32 bits, b in the low ones, so that one 64-bit hash lookup finds a pair.
#pragma once

#include <cstdint>

namespace tz {

inline std::uint64_t bpe_pair_key(std::int32_t a, std::int32_t b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
}

}  // namespace tz
