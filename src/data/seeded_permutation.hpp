// A pseudo-random permutation of [0, n) that costs O(1) memory and O(1) time per element: any
// position of a shuffled order can be computed on its own, so a data loader can start at any point
// of an epoch (a restored cursor) without materialising the order.
//
// Construction: a balanced Feistel network of 6 rounds on 2h-bit integers (the smallest even width
// with 2^(2h) >= n; at most 4n values), whose round function is splitmix64 of (key, round, half).
// A Feistel network is a bijection for any round function, and 4 or more rounds of a pseudo-random
// function make it a pseudo-random permutation (Luby-Rackoff). Values >= n are mapped again
// ("cycle walking") until they land in [0, n): still a bijection of [0, n), fewer than 4 rounds of
// walking on average.
#pragma once

#include <cstdint>

namespace tz {

class SeededPermutation {
 public:
  SeededPermutation() = default;
  SeededPermutation(std::uint64_t n, std::uint64_t key);  // n <= 2^62
  std::uint64_t operator()(std::uint64_t i) const;        // i < n; InternalError otherwise
  std::uint64_t size() const { return n_; }

 private:
  std::uint64_t encrypt(std::uint64_t x) const;
  std::uint64_t n_ = 0, key_ = 0, mask_ = 0;
  int half_bits_ = 1;
};

}  // namespace tz
