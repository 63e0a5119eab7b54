// GELU, exact form (PyTorch's nn.GELU() default; Pythia's "gelu"):
//   y = x Phi(x),  Phi(x) = 0.5 (1 + erf(x / sqrt 2)) = 0.5 erfc(-x / sqrt 2)
//   dy/dx = Phi(x) + x phi(x),  phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
// Elementwise over n floats. The _ref twins use std::erf and std::exp. The fast path (AVX2, all
// threads) evaluates erfc(|z|) by the Chebyshev fit of Numerical Recipes (erfcc: fractional error
// below 1.2e-7 everywhere) on simd.hpp's exp, and takes Phi from it on the side where it is small, so
// the negative tail keeps its relative accuracy instead of cancelling 1 - erf.
#include <algorithm>
#include <cmath>

#include "core/parallel_for.hpp"
#include "device/cpu/layers.hpp"
#include "device/cpu/simd.hpp"

namespace tz {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;  // 1 / sqrt(2 pi)

// Phi(x) for 8 floats: with a = |x| / sqrt 2, erfc(a) = t exp(-a^2 + P(t)), t = 1 / (1 + a / 2);
// Phi = erfc(a) / 2 for x < 0 and 1 - erfc(a) / 2 otherwise.
TZ_AVX2 inline __m256 gelu_exact_cdf256(__m256 x) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256 a = _mm256_mul_ps(_mm256_andnot_ps(sign_bit, x), _mm256_set1_ps(kInvSqrt2));
  const __m256 t =
      _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(_mm256_set1_ps(0.5f), a, _mm256_set1_ps(1.0f)));
  __m256 p = _mm256_set1_ps(0.17087277f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.82215223f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.48851587f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.13520398f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.27886807f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.18628806f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.09678418f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.37409196f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.00002368f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.26551223f));
  const __m256 half_erfc =
      _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), t), simd::exp256(_mm256_fnmadd_ps(a, a, p)));
  const __m256 negative = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  return _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(1.0f), half_erfc), half_erfc, negative);
}

TZ_AVX2 inline __m256 gelu_exact_forward256(__m256 x) {
  return _mm256_mul_ps(x, gelu_exact_cdf256(x));
}

TZ_AVX2 inline __m256 gelu_exact_backward256(__m256 x, __m256 dy) {
  const __m256 pdf = _mm256_mul_ps(_mm256_set1_ps(kInvSqrt2Pi),
                                   simd::exp256(_mm256_mul_ps(_mm256_set1_ps(-0.5f), _mm256_mul_ps(x, x))));
  return _mm256_mul_ps(_mm256_fmadd_ps(x, pdf, gelu_exact_cdf256(x)), dy);
}

// The last n % 8 elements go through the same vector arithmetic on a padded copy, so every element's
// result is the same wherever the thread chunks split the array.
TZ_AVX2 void gelu_exact_forward_avx2(float* out, const float* inp, long n) {
  long i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, gelu_exact_forward256(_mm256_loadu_ps(inp + i)));
  if (i < n) {
    float x[8] = {}, y[8];
    std::copy(inp + i, inp + n, x);
    _mm256_storeu_ps(y, gelu_exact_forward256(_mm256_loadu_ps(x)));
    std::copy(y, y + (n - i), out + i);
  }
}

TZ_AVX2 void gelu_exact_backward_avx2(float* dinp, const float* inp, const float* dout, long n) {
  long i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dinp + i, gelu_exact_backward256(_mm256_loadu_ps(inp + i), _mm256_loadu_ps(dout + i)));
  if (i < n) {
    float x[8] = {}, dy[8] = {}, dx[8];
    std::copy(inp + i, inp + n, x);
    std::copy(dout + i, dout + n, dy);
    _mm256_storeu_ps(dx, gelu_exact_backward256(_mm256_loadu_ps(x), _mm256_loadu_ps(dy)));
    std::copy(dx, dx + (n - i), dinp + i);
  }
}

}  // namespace

void gelu_exact_forward_ref(float* out, const float* inp, long n) {
  for (long i = 0; i < n; ++i) {
    const float x = inp[i];
    out[i] = 0.5f * x * (1.0f + std::erf(x * kInvSqrt2));
  }
}

void gelu_exact_backward_ref(float* dinp, const float* inp, const float* dout, long n) {
  for (long i = 0; i < n; ++i) {
    const float x = inp[i];
    const float cdf = 0.5f * (1.0f + std::erf(x * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * std::exp(-0.5f * x * x);
    dinp[i] = (cdf + x * pdf) * dout[i];
  }
}

void gelu_exact_forward_serial(float* out, const float* inp, long n) {
  if (simd::have_avx2_fma())
    gelu_exact_forward_avx2(out, inp, n);
  else
    gelu_exact_forward_ref(out, inp, n);
}

void gelu_exact_backward_serial(float* dinp, const float* inp, const float* dout, long n) {
  if (simd::have_avx2_fma())
    gelu_exact_backward_avx2(dinp, inp, dout, n);
  else
    gelu_exact_backward_ref(dinp, inp, dout, n);
}

void gelu_exact_forward(float* out, const float* inp, long n) {
  parallel_for(static_cast<std::size_t>(n), 1 << 14, [&](std::size_t b, std::size_t e) {
    gelu_exact_forward_serial(out + b, inp + b, static_cast<long>(e - b));
  });
}

void gelu_exact_backward(float* dinp, const float* inp, const float* dout, long n) {
  parallel_for(static_cast<std::size_t>(n), 1 << 14, [&](std::size_t b, std::size_t e) {
    gelu_exact_backward_serial(dinp + b, inp + b, dout + b, static_cast<long>(e - b));
  });
}

}  // namespace tz
