// Finding a non-finite value (NaN or infinity) in a float buffer: what a save refuses to write and a
// reader refuses to load, with the index of the first one for the message.
#pragma once

#include <cstddef>

namespace tz {

// Index of the first non-finite value of x[0, n), or n when all are finite. A branch-free pass over
// the exponent bits (vectorised) finds whether there is one; only then is it located.
std::size_t first_nonfinite(const float* x, std::size_t n);

}  // namespace tz
