// bfloat16 storage type: the upper 16 bits of an IEEE fp32. Conversion from fp32 rounds to nearest
// even; NaN stays NaN (quiet), infinities stay infinite. Arithmetic is always done in fp32.
#pragma once

#include <bit>
#include <cstdint>

namespace tz {

struct bf16 {
  std::uint16_t bits = 0;
};
static_assert(sizeof(bf16) == 2);

inline bf16 to_bf16(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return bf16{static_cast<std::uint16_t>((u >> 16) | 0x40u)};  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                               // round to nearest even
  return bf16{static_cast<std::uint16_t>(u >> 16)};
}

inline float to_float(bf16 h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h.bits) << 16);
}

// The same two conversions on bit patterns, without a branch (the NaN case is a select), for loops
// the compiler should vectorize (bulk conversion, reductions); equal to to_bf16 / to_float.
[[gnu::always_inline]] inline std::uint16_t bf16_bits_from_float_bits(std::uint32_t u) {
  const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return static_cast<std::uint16_t>(nan ? ((u >> 16) | 0x40u) : rounded);
}
[[gnu::always_inline]] inline std::uint32_t float_bits_from_bf16_bits(std::uint16_t h) {
  return static_cast<std::uint32_t>(h) << 16;
}

}  // namespace tz
