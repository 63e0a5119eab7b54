#include "device/cpu/sum_of_squares.hpp"

#include <algorithm>
#include <vector>

#include "core/parallel_for.hpp"

namespace tz {
namespace {

// 8 independent fp64 lanes so the loop vectorizes without reassociating a single sum.
double sum_sq_block(const float* x, std::size_t n) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += double(x[i + k]) * x[i + k];
  for (; i < n; ++i) acc[0] += double(x[i]) * x[i];
  double s = 0;
  for (double a : acc) s += a;
  return s;
}

}  // namespace

double sum_of_squares(const float* x, std::size_t n) {
  // Fixed 64 Ki-element blocks summed in order: the result does not depend on the thread count.
  constexpr std::size_t kBlock = 1 << 16;
  const std::size_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(blocks);
  parallel_for(blocks, 1, [&](std::size_t b0, std::size_t b1) {
    for (std::size_t b = b0; b < b1; ++b)
      partial[b] = sum_sq_block(x + b * kBlock, std::min(kBlock, n - b * kBlock));
  });
  double s = 0;
  for (double p : partial) s += p;
  return s;
}

double sum_of_squares_ref(const float* x, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += double(x[i]) * x[i];
  return s;
}

}  // namespace tz
