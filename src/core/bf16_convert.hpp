// Bulk fp32 <-> bf16 conversion, bit for bit the same as to_bf16 / to_float element by element
// (round to nearest even, NaN kept quiet). The engine converts every weight range it gathers and every
// gradient it sends in a bf16 plan, each rank the whole model per step, so these run as vector loops:
// an AVX-512F or AVX2 path chosen at run time when the CPU has it, a portable path otherwise. All are
// exposed so tests can hold each against the element-wise reference on any machine that can run it.
#pragma once

#include <cstddef>

#include "core/bf16.hpp"

namespace tz {

void bf16_from_floats(bf16* out, const float* in, std::size_t n);
void floats_from_bf16(float* out, const bf16* in, std::size_t n);

namespace bf16_convert_detail {
bool have_avx2();  // the CPU can run the *_avx2 paths
void bf16_from_floats_portable(bf16* out, const float* in, std::size_t n);
void floats_from_bf16_portable(float* out, const bf16* in, std::size_t n);
void bf16_from_floats_avx2(bf16* out, const float* in, std::size_t n);
void floats_from_bf16_avx2(float* out, const bf16* in, std::size_t n);
bool have_avx512();  // the CPU can run the *_avx512 paths (AVX-512F)
void bf16_from_floats_avx512(bf16* out, const float* in, std::size_t n);
void floats_from_bf16_avx512(float* out, const bf16* in, std::size_t n);
}  // namespace bf16_convert_detail

}  // namespace tz
