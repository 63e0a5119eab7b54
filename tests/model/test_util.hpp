// Shared helpers for the model tests: random buffers and the normalized error used everywhere,
//   err(a, ref) = ||a - ref||_2 / max(||ref||_2, tiny)
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace tz::test {

inline std::vector<float> randn(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

inline double norm_err(const float* a, const float* ref, std::size_t n) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    num += (double(a[i]) - ref[i]) * (double(a[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}
inline double norm_err(const std::vector<float>& a, const std::vector<float>& ref) {
  return norm_err(a.data(), ref.data(), std::min(a.size(), ref.size()));
}

}  // namespace tz::test
