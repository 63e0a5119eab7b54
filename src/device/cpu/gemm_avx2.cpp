// AVX2 + FMA micro-kernel of gemm: a 6 x 16 tile of C in 12 ymm accumulators (two vectors of 8 per row);
// each of the kc steps loads two vectors of the B panel and broadcasts 6 values of the A panel.
#include <immintrin.h>

#include "device/cpu/gemm_kernels.hpp"

namespace tz::gemm_detail {
namespace {

constexpr int kMr = 6, kNr = 16;

// Lanes j < n of 8 set (n clamped to [0, 8]), for maskload / maskstore.
__attribute__((target("avx2"))) __m256i lane_mask(int n) {
  n = n < 0 ? 0 : n > 8 ? 8 : n;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

__attribute__((target("avx2,fma"))) void tile_avx2(int kc, const float* Ap, const float* Bp, const Tile& t) {
  __m256 c0[kMr], c1[kMr];
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) c0[i] = c1[i] = _mm256_setzero_ps();
  for (int k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_load_ps(Bp), b1 = _mm256_load_ps(Bp + 8);
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      const __m256 a = _mm256_broadcast_ss(Ap + i);
      c0[i] = _mm256_fmadd_ps(a, b0, c0[i]);
      c1[i] = _mm256_fmadd_ps(a, b1, c1[i]);
    }
    Ap += kMr;
    Bp += kNr;
  }
  const __m256i m0 = lane_mask(t.n), m1 = lane_mask(t.n - 8);
  const __m256 alpha = _mm256_set1_ps(t.alpha), beta = _mm256_set1_ps(t.beta);
  const __m256 bias0 = t.bias ? _mm256_maskload_ps(t.bias, m0) : _mm256_setzero_ps();
  const __m256 bias1 = t.bias ? _mm256_maskload_ps(t.bias + 8, m1) : _mm256_setzero_ps();
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) {
    if (i >= t.m) break;
    float* c = t.C + i * t.ldc;
    __m256 r0 = _mm256_fmadd_ps(c0[i], alpha, bias0), r1 = _mm256_fmadd_ps(c1[i], alpha, bias1);
    if (t.beta != 0.0f) {
      r0 = _mm256_fmadd_ps(_mm256_maskload_ps(c, m0), beta, r0);
      r1 = _mm256_fmadd_ps(_mm256_maskload_ps(c + 8, m1), beta, r1);
    }
    _mm256_maskstore_ps(c, m0, r0);
    _mm256_maskstore_ps(c + 8, m1, r1);
  }
}

}  // namespace

Kernel avx2_kernel() {
  return {kMr, kNr, tile_avx2};
}

}  // namespace tz::gemm_detail
