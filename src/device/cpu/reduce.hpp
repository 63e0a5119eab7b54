// Elementwise sums used by the reducing collectives: out[i] = a[i] + b[i] for n elements of `dtype`
// (out may alias a or b). bf16 is added in fp32 and rounded once per call; u8 is not reducible.
// reduce_add is the fast path (vectorized loops: AVX2 when the CPU has it, else the baseline ISA);
// reduce_add_ref is the plain reference the tests hold both paths to.
#pragma once

#include <cstddef>

#include "core/dtype.hpp"

namespace tz {

void reduce_add(void* out, const void* a, const void* b, std::size_t n, DType dtype);
void reduce_add_ref(void* out, const void* a, const void* b, std::size_t n, DType dtype);
bool dtype_reducible(DType dtype);

namespace reduce_detail {  // the two paths reduce_add chooses between, for tests
bool have_avx2();
void reduce_add_portable(void* out, const void* a, const void* b, std::size_t n, DType dtype);
void reduce_add_avx2(void* out, const void* a, const void* b, std::size_t n, DType dtype);
}  // namespace reduce_detail

}  // namespace tz
