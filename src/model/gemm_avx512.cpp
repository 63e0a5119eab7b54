// AVX-512F micro-kernel of gemm: a 12 x 32 tile of C in 24 zmm accumulators. Each of the kc steps loads
// two vectors of the B panel (32 floats) and broadcasts 12 values of the A panel: 24 FMAs for 2 loads
// and 12 broadcasts, so the two FMA ports stay busy while the panels stream from L1 and L2.
#include <immintrin.h>

#include "model/gemm_kernels.hpp"

namespace tz::gemm_detail {
namespace {

constexpr int kMr = 12, kNr = 32;

__attribute__((target("avx512f"))) void tile_avx512(int kc, const float* Ap, const float* Bp, const Tile& t) {
  __m512 c0[kMr], c1[kMr];
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) c0[i] = c1[i] = _mm512_setzero_ps();
  for (int k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(Bp), b1 = _mm512_load_ps(Bp + 16);
#pragma GCC unroll 12
    for (int i = 0; i < kMr; ++i) {
      const __m512 a = _mm512_set1_ps(Ap[i]);
      c0[i] = _mm512_fmadd_ps(a, b0, c0[i]);
      c1[i] = _mm512_fmadd_ps(a, b1, c1[i]);
    }
    Ap += kMr;
    Bp += kNr;
  }
  const __mmask16 m0 = t.n >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << t.n) - 1);
  const __mmask16 m1 = t.n >= 32 ? 0xFFFF : t.n <= 16 ? 0 : static_cast<__mmask16>((1u << (t.n - 16)) - 1);
  const __m512 alpha = _mm512_set1_ps(t.alpha), beta = _mm512_set1_ps(t.beta);
  const __m512 bias0 = t.bias ? _mm512_maskz_loadu_ps(m0, t.bias) : _mm512_setzero_ps();
  const __m512 bias1 = t.bias ? _mm512_maskz_loadu_ps(m1, t.bias + 16) : _mm512_setzero_ps();
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) {
    if (i >= t.m) break;
    float* c = t.C + i * t.ldc;
    __m512 r0 = _mm512_fmadd_ps(c0[i], alpha, bias0), r1 = _mm512_fmadd_ps(c1[i], alpha, bias1);
    if (t.beta != 0.0f) {
      r0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m0, c), beta, r0);
      r1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m1, c + 16), beta, r1);
    }
    _mm512_mask_storeu_ps(c, m0, r0);
    _mm512_mask_storeu_ps(c + 16, m1, r1);
  }
}

}  // namespace

Kernel avx512_kernel() {
  return {kMr, kNr, tile_avx512};
}

}  // namespace tz::gemm_detail
