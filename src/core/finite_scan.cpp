#include "core/finite_scan.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tz {

std::size_t first_nonfinite(const float* x, std::size_t n) {
  std::uint32_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t b;
    std::memcpy(&b, x + i, 4);
    bad |= static_cast<std::uint32_t>((b & 0x7f800000u) == 0x7f800000u);  // exponent all ones
  }
  if (!bad) return n;
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return i;
  return n;
}

}  // namespace tz
