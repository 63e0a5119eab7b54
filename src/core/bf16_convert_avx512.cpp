// The AVX-512F loops of bf16_convert.hpp: 16 lanes at a time, like the AVX2 ones, but narrowing with one
// truncating move (vpmovdw) where AVX2 needs a pack and a permute, selecting NaNs by a mask, and doing
// the narrowing's tail with masked loads and stores. Bit for bit the portable loops' results.
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own _mm512_undefined_* (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <cstddef>

#include "core/bf16_convert.hpp"

#define TZ_BF16_AVX512 __attribute__((target("avx512f")))

namespace tz::bf16_convert_detail {
namespace {

// 16 fp32 bit patterns -> their bf16 patterns in the low half of each 32-bit lane.
TZ_BF16_AVX512 inline __m512i narrow16(__m512i u) {
  const __m512i high = _mm512_srli_epi32(u, 16);
  const __m512i lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __m512i magnitude = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(magnitude, _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_or_epi32(rounded, nan, high, _mm512_set1_epi32(0x40));
}

// The mask of the first n < 16 lanes.
TZ_BF16_AVX512 inline __mmask16 first_lanes(std::size_t n) {
  return static_cast<__mmask16>((1u << n) - 1);
}

}  // namespace

TZ_BF16_AVX512 void bf16_from_floats_avx512(bf16* out, const float* in, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i h = narrow16(_mm512_loadu_si512(in + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_cvtepi32_epi16(h));
  }
  if (i < n) {
    const __mmask16 m = first_lanes(n - i);
    _mm512_mask_cvtepi32_storeu_epi16(out + i, m, narrow16(_mm512_maskz_loadu_epi32(m, in + i)));
  }
}

TZ_BF16_AVX512 void floats_from_bf16_avx512(float* out, const bf16* in, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    _mm512_storeu_si512(out + i, _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  floats_from_bf16_portable(out + i, in + i, n - i);  // no masked 16-bit load in AVX-512F
}

}  // namespace tz::bf16_convert_detail
