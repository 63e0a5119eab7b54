// SwiGLU (Llama's MLP activation) over N rows of [gate (F) | up (F)]:
//   y = silu(g) u,  silu(g) = g s,  s = sigmoid(g) = 1 / (1 + e^-g)
//   d gate = dy u s (1 + g (1 - s)),  d up = dy silu(g)
// The fast path splits rows over the kernel threads and evaluates e^-g with simd.hpp's AVX2 exp
// (relative error about 2e-7; its input clamp keeps s finite and in [0, 1] for any g).
#include <algorithm>
#include <cmath>

#include "core/parallel_for.hpp"
#include "device/cpu/layers.hpp"
#include "device/cpu/simd.hpp"

namespace tz {
namespace {

// Rows per thread chunk: about 16k elements, as the other elementwise layers split.
std::size_t swiglu_grain_rows(int F) {
  return std::max<std::size_t>(1, (std::size_t{1} << 14) / static_cast<std::size_t>(std::max(F, 1)));
}

// One element of each pass, as the _ref functions compute it (the vector loops' tails).
inline float swiglu_out(float g, float u) {
  return g / (1.0f + std::exp(-g)) * u;
}
inline void swiglu_grad(float* dg, float* du, float g, float u, float dy) {
  const float s = 1.0f / (1.0f + std::exp(-g));
  *dg = dy * u * s * (1.0f + g * (1.0f - s));
  *du = dy * g * s;
}

TZ_AVX2 inline __m256 swiglu_sigmoid256(__m256 g) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, simd::exp256(_mm256_sub_ps(_mm256_setzero_ps(), g))));
}

TZ_AVX2 void swiglu_forward_rows(float* out, const float* inp, std::size_t r0, std::size_t r1, int F) {
  for (std::size_t r = r0; r < r1; ++r) {
    const float* gate = inp + r * 2 * F;
    const float* up = gate + F;
    float* y = out + r * F;
    int j = 0;
    for (; j + 8 <= F; j += 8) {
      const __m256 g = _mm256_loadu_ps(gate + j);
      const __m256 silu = _mm256_mul_ps(g, swiglu_sigmoid256(g));
      _mm256_storeu_ps(y + j, _mm256_mul_ps(silu, _mm256_loadu_ps(up + j)));
    }
    for (; j < F; ++j) y[j] = swiglu_out(gate[j], up[j]);
  }
}

TZ_AVX2 void swiglu_backward_rows(float* dinp, const float* inp, const float* dout, std::size_t r0,
                                  std::size_t r1, int F) {
  const __m256 one = _mm256_set1_ps(1.0f);
  for (std::size_t r = r0; r < r1; ++r) {
    const float* gate = inp + r * 2 * F;
    const float* up = gate + F;
    const float* dy = dout + r * F;
    float* dgate = dinp + r * 2 * F;
    float* dup = dgate + F;
    int j = 0;
    for (; j + 8 <= F; j += 8) {
      const __m256 g = _mm256_loadu_ps(gate + j), u = _mm256_loadu_ps(up + j), d = _mm256_loadu_ps(dy + j);
      const __m256 s = swiglu_sigmoid256(g);
      const __m256 slope = _mm256_mul_ps(s, _mm256_fmadd_ps(g, _mm256_sub_ps(one, s), one));
      _mm256_storeu_ps(dgate + j, _mm256_mul_ps(_mm256_mul_ps(d, u), slope));
      _mm256_storeu_ps(dup + j, _mm256_mul_ps(d, _mm256_mul_ps(g, s)));
    }
    for (; j < F; ++j) swiglu_grad(dgate + j, dup + j, gate[j], up[j], dy[j]);
  }
}

}  // namespace

void swiglu_forward_ref(float* out, const float* inp, int N, int F) {
  for (int r = 0; r < N; ++r) {
    const float* gate = inp + static_cast<std::size_t>(r) * 2 * F;
    for (int j = 0; j < F; ++j) out[static_cast<std::size_t>(r) * F + j] = swiglu_out(gate[j], gate[F + j]);
  }
}

void swiglu_backward_ref(float* dinp, const float* inp, const float* dout, int N, int F) {
  for (int r = 0; r < N; ++r) {
    const std::size_t row = static_cast<std::size_t>(r) * 2 * F;
    for (int j = 0; j < F; ++j)
      swiglu_grad(dinp + row + j, dinp + row + F + j, inp[row + j], inp[row + F + j],
                  dout[static_cast<std::size_t>(r) * F + j]);
  }
}

void swiglu_forward(float* out, const float* inp, int N, int F) {
  if (!simd::have_avx2_fma()) return swiglu_forward_ref(out, inp, N, F);
  parallel_for(static_cast<std::size_t>(N), swiglu_grain_rows(F),
               [&](std::size_t r0, std::size_t r1) { swiglu_forward_rows(out, inp, r0, r1, F); });
}

void swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F) {
  if (!simd::have_avx2_fma()) return swiglu_backward_ref(dinp, inp, dout, N, F);
  parallel_for(static_cast<std::size_t>(N), swiglu_grain_rows(F),
               [&](std::size_t r0, std::size_t r1) { swiglu_backward_rows(dinp, inp, dout, r0, r1, F); });
}

}  // namespace tz
