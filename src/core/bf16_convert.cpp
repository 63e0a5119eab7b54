// The portable loops use integer operations only (no branch but the NaN select), so the compiler
// vectorizes them for the baseline ISA; the AVX2 and AVX-512 loops do the same 16 lanes at a time with
// explicit intrinsics, behind function-level target attributes because the library is built for
// baseline x86-64 (the AVX-512 loops are in bf16_convert_avx512.cpp).
#include "core/bf16_convert.hpp"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/cpu_features.hpp"

#define TZ_BF16_AVX2 __attribute__((target("avx2")))

namespace tz {
namespace bf16_convert_detail {
namespace {

// 8 fp32 bit patterns -> their bf16 patterns in the low half of each 32-bit lane.
TZ_BF16_AVX2 inline __m256i narrow8(__m256i u) {
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  const __m256i magnitude = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7f800000));  // both non-negative
  return _mm256_blendv_epi8(rounded, quiet, nan);
}

}  // namespace

bool have_avx2() {
  return cpu_features().avx2;
}

bool have_avx512() {
  return cpu_features().avx512f;
}

void bf16_from_floats_portable(bf16* out, const float* in, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, in + i, 4);
    out[i].bits = bf16_bits_from_float_bits(u);
  }
}

void floats_from_bf16_portable(float* out, const bf16* in, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t u = float_bits_from_bf16_bits(in[i].bits);
    std::memcpy(out + i, &u, 4);
  }
}

TZ_BF16_AVX2 void bf16_from_floats_avx2(bf16* out, const float* in, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = narrow8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i)));
    const __m256i b = narrow8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i + 8)));
    // packus works per 128-bit lane (a0-3 b0-3 a4-7 b4-7); the permute restores element order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), packed);
  }
  bf16_from_floats_portable(out + i, in + i, n - i);
}

TZ_BF16_AVX2 void floats_from_bf16_avx2(float* out, const bf16* in, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    const __m256i lo = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(h)), 16);
    const __m256i hi = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(h, 1)), 16);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i + 8), hi);
  }
  floats_from_bf16_portable(out + i, in + i, n - i);
}

}  // namespace bf16_convert_detail

namespace {

enum class Bf16Path { portable, avx2, avx512 };

Bf16Path best_bf16_path() {
  if (bf16_convert_detail::have_avx512()) return Bf16Path::avx512;
  if (bf16_convert_detail::have_avx2()) return Bf16Path::avx2;
  return Bf16Path::portable;
}

}  // namespace

void bf16_from_floats(bf16* out, const float* in, std::size_t n) {
  namespace d = bf16_convert_detail;
  static const Bf16Path path = best_bf16_path();
  switch (path) {
    case Bf16Path::avx512:
      return d::bf16_from_floats_avx512(out, in, n);
    case Bf16Path::avx2:
      return d::bf16_from_floats_avx2(out, in, n);
    case Bf16Path::portable:
      break;
  }
  d::bf16_from_floats_portable(out, in, n);
}

void floats_from_bf16(float* out, const bf16* in, std::size_t n) {
  namespace d = bf16_convert_detail;
  static const Bf16Path path = best_bf16_path();
  switch (path) {
    case Bf16Path::avx512:
      return d::floats_from_bf16_avx512(out, in, n);
    case Bf16Path::avx2:
      return d::floats_from_bf16_avx2(out, in, n);
    case Bf16Path::portable:
      break;
  }
  d::floats_from_bf16_portable(out, in, n);
}

}  // namespace tz
