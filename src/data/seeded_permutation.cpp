#include "data/seeded_permutation.hpp"

#include "core/counter_rng.hpp"
#include "core/error.hpp"

namespace tz {

constexpr int kFeistelRounds = 6;

SeededPermutation::SeededPermutation(std::uint64_t n, std::uint64_t key) : n_(n), key_(splitmix64(key)) {
  TZ_CHECK_LE(n, 1ULL << 62);
  while (half_bits_ < 31 && (1ULL << (2 * half_bits_)) < n) ++half_bits_;
  mask_ = (1ULL << half_bits_) - 1;
}

std::uint64_t SeededPermutation::encrypt(std::uint64_t x) const {
  std::uint64_t left = x >> half_bits_, right = x & mask_;
  for (int r = 0; r < kFeistelRounds; ++r) {
    const std::uint64_t f =
        splitmix64(key_ ^ splitmix64((static_cast<std::uint64_t>(r) << 56) ^ right)) & mask_;
    const std::uint64_t next = left ^ f;
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

std::uint64_t SeededPermutation::operator()(std::uint64_t i) const {
  TZ_CHECK_LT(i, n_);
  std::uint64_t y = encrypt(i);
  while (y >= n_) y = encrypt(y);  // cycle walking: the cycle through i returns to [0, n)
  return y;
}

}  // namespace tz
