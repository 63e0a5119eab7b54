// AVX-512F micro-kernel of gemm: a 12 x 32 tile of C in 24 zmm accumulators. Each of the kc steps loads
// two vectors of the B panel (32 floats) and broadcasts 12 values of the A panel: 24 FMAs for 2 loads
// and 12 broadcasts, so the two FMA ports stay busy while the panels stream from L1 and L2.
// An edge tile of at most 4 or 8 rows (256 rows are 21 full tiles and one of 4) runs a copy of the loop
// with only that many rows of accumulators: the same FMAs per element in the same order, so the result
// is bitwise the one of the full tile, at a third or two thirds of its work.
#include <immintrin.h>

#include "device/cpu/gemm_kernels.hpp"

namespace tz::gemm_detail {
namespace {

constexpr int kMr = 12, kNr = 32;

// Rows 0 .. R - 1 of the tile; the A panel keeps its stride of kMr.
template <int R>
__attribute__((target("avx512f"))) void tile_rows(int kc, const float* Ap, const float* Bp, const Tile& t) {
  __m512 c0[R], c1[R];
#pragma GCC unroll 12
  for (int i = 0; i < R; ++i) c0[i] = c1[i] = _mm512_setzero_ps();
  for (int k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(Bp), b1 = _mm512_load_ps(Bp + 16);
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) {
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
  for (int i = 0; i < R; ++i) {
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

void tile_avx512(int kc, const float* Ap, const float* Bp, const Tile& t) {
  if (t.m <= 4) return tile_rows<4>(kc, Ap, Bp, t);
  if (t.m <= 8) return tile_rows<8>(kc, Ap, Bp, t);
  tile_rows<kMr>(kc, Ap, Bp, t);
}

}  // namespace

Kernel avx512_kernel() {
  return {kMr, kNr, tile_avx512};
}

}  // namespace tz::gemm_detail
