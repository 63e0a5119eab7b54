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

}  // namespace tz
