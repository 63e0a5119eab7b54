// The sum of squares of a float slice in fp64: a shard's share of the global gradient norm (summed
// over shards, then all-reduced; optim/grad_clip.hpp turns the norm into the clipping factor). Fixed
// 64 Ki-element blocks summed in order, 8 independent fp64 lanes in each: the result does not depend
// on the thread count. sum_of_squares_ref is the plain loop it is tested against.
#pragma once

#include <cstddef>

namespace tz {

double sum_of_squares(const float* x, std::size_t n);
double sum_of_squares_ref(const float* x, std::size_t n);

}  // namespace tz
