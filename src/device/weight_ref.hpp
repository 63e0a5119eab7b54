// A weight matrix a kernel only reads, in device memory: fp32, or bf16 (as a sharded engine gathers
// it in bf16 mode), which the kernels widen exactly as they read it, so results are bitwise those of
// the widened fp32 matrix.
#pragma once

#include "core/bf16.hpp"

namespace tz {

// Converts implicitly from either pointer.
struct WeightRef {
  const float* f32 = nullptr;
  const bf16* b16 = nullptr;
  WeightRef(const float* p) : f32(p) {}  // NOLINT(google-explicit-constructor): either pointer is a weight
  WeightRef(const bf16* p) : b16(p) {}   // NOLINT(google-explicit-constructor)
};

}  // namespace tz
