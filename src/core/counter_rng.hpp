// Counter-based random numbers: the value for index i depends only on (seed, i), so any slice of a
// buffer can be filled on its own (a shard initialises exactly what the whole model would hold
// there), and results do not depend on the standard library. splitmix64 (Steele, Lea, Flood 2014)
// mixes the counter; Box-Muller turns two uniforms into a normal.
#pragma once

#include <cmath>
#include <cstdint>

namespace tz {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in (0, 1): 24 random bits, never 0.
inline double counter_uniform(std::uint64_t seed, std::uint64_t i) {
  return (static_cast<double>(splitmix64(seed ^ splitmix64(i)) >> 40) + 0.5) / 16777216.0;
}

// Standard normal for (seed, i).
inline double counter_normal(std::uint64_t seed, std::uint64_t i) {
  double u1 = counter_uniform(seed, 2 * i), u2 = counter_uniform(seed, 2 * i + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace tz
