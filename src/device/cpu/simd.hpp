// AVX2 + FMA helpers for the elementwise kernels. The library is built for baseline x86-64, so the
// fast kernels carry a function-level target attribute (TZ_AVX2) and are chosen at run time when the
// CPU has AVX2 and FMA (have_avx2_fma()); every one of them has a plain _ref twin it is tested against.
// The few that gain from wider vectors have an AVX-512F body too (TZ_AVX512F, have_avx512f()) doing
// the AVX2 body's operations lane for lane, so the two give the same bits.
#pragma once

#include <immintrin.h>

#include "core/cpu_features.hpp"

#define TZ_AVX2 __attribute__((target("avx2,fma")))
#define TZ_AVX512F __attribute__((target("avx512f,avx2,fma")))

namespace tz::simd {

inline bool have_avx2_fma() {
  return cpu_features().avx2 && cpu_features().fma;
}

inline bool have_avx512f() {
  return have_avx2_fma() && cpu_features().avx512f;
}

// exp(x) for 8 floats: range reduction x = n ln2 + r, |r| <= ln2/2, then a degree-6 polynomial
// (Cephes expf coefficients); relative error about 2e-7 on [-87, 88]; inputs are clamped there.
TZ_AVX2 inline __m256 exp256(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// exp256 on 16 floats: the same operations in the same order, so each lane's result is bitwise exp256's.
TZ_AVX512F inline __m512 exp512(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.3f));
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

// tanh256 on 16 floats, bitwise the same per lane.
TZ_AVX512F inline __m512 tanh512(__m512 x) {
  __m512 e = exp512(_mm512_add_ps(x, x));
  return _mm512_sub_ps(_mm512_set1_ps(1.0f),
                       _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
}

// tanh(x) = 1 - 2 / (exp(2x) + 1); absolute error about 3e-7.
TZ_AVX2 inline __m256 tanh256(__m256 x) {
  __m256 e = exp256(_mm256_add_ps(x, x));
  return _mm256_sub_ps(_mm256_set1_ps(1.0f),
                       _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
}

TZ_AVX2 inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

TZ_AVX2 inline float hmax256(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace tz::simd
