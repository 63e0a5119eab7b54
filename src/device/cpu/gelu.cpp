// GELU, tanh approximation (GPT-2's "gelu_new"):
//   y = 0.5 x (1 + tanh(u)),  u = s (x + k x^3),  s = sqrt(2/pi), k = 0.044715
//   dy/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) s (1 + 3 k x^2)
// Elementwise over n floats; the fast path evaluates tanh with a vector exp (simd.hpp) on all threads,
// 16 floats at a time where the CPU has AVX-512F, else 8 (the same operations per lane: the same bits).
// The last n % 8 elements go through the same vector arithmetic on a padded copy, so each element's
// result depends on its value alone, not on where thread chunks or gemm tiles split the array: the
// gemm epilogue (gemm.cpp) calls the serial entry points on tile rows and matches this pass bit for bit.
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/parallel_for.hpp"
#include "device/cpu/layers.hpp"
#include "device/cpu/simd.hpp"

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own _mm512_undefined_* (GCC bug 105593);
// popped at the end, so that other files of a unity build keep the warning.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace tz {
namespace {

constexpr float kS = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kK = 0.044715f;

TZ_AVX2 inline __m256 gelu_forward256(__m256 x) {
  const __m256 s = _mm256_set1_ps(kS), k = _mm256_set1_ps(kK), half = _mm256_set1_ps(0.5f),
               one = _mm256_set1_ps(1.f);
  __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  __m256 t = simd::tanh256(_mm256_mul_ps(s, _mm256_fmadd_ps(k, x3, x)));
  return _mm256_mul_ps(_mm256_mul_ps(half, x), _mm256_add_ps(one, t));
}

TZ_AVX2 inline __m256 gelu_backward256(__m256 x, __m256 dy) {
  const __m256 s = _mm256_set1_ps(kS), k = _mm256_set1_ps(kK), k3 = _mm256_set1_ps(3 * kK),
               half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.f);
  __m256 x2 = _mm256_mul_ps(x, x);
  __m256 t = simd::tanh256(_mm256_mul_ps(s, _mm256_fmadd_ps(_mm256_mul_ps(k, x2), x, x)));
  __m256 sech2 = _mm256_fnmadd_ps(t, t, one);
  __m256 du = _mm256_mul_ps(s, _mm256_fmadd_ps(k3, x2, one));
  __m256 g = _mm256_fmadd_ps(_mm256_mul_ps(half, x), _mm256_mul_ps(sech2, du),
                             _mm256_mul_ps(half, _mm256_add_ps(one, t)));
  return _mm256_mul_ps(g, dy);
}

TZ_AVX2 void gelu_forward_avx2(float* out, const float* inp, long n) {
  long i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, gelu_forward256(_mm256_loadu_ps(inp + i)));
  if (i < n) {
    float x[8] = {}, y[8];
    std::copy(inp + i, inp + n, x);
    _mm256_storeu_ps(y, gelu_forward256(_mm256_loadu_ps(x)));
    std::copy(y, y + (n - i), out + i);
  }
}

// dinp may alias dout (each vector is read before it is written).
TZ_AVX2 void gelu_backward_avx2(float* dinp, const float* inp, const float* dout, long n) {
  long i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dinp + i, gelu_backward256(_mm256_loadu_ps(inp + i), _mm256_loadu_ps(dout + i)));
  if (i < n) {
    float x[8] = {}, dy[8] = {}, dx[8];
    std::copy(inp + i, inp + n, x);
    std::copy(dout + i, dout + n, dy);
    _mm256_storeu_ps(dx, gelu_backward256(_mm256_loadu_ps(x), _mm256_loadu_ps(dy)));
    std::copy(dx, dx + (n - i), dinp + i);
  }
}

TZ_AVX512F inline __m512 gelu_forward512(__m512 x) {
  const __m512 s = _mm512_set1_ps(kS), k = _mm512_set1_ps(kK), half = _mm512_set1_ps(0.5f),
               one = _mm512_set1_ps(1.f);
  __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
  __m512 t = simd::tanh512(_mm512_mul_ps(s, _mm512_fmadd_ps(k, x3, x)));
  return _mm512_mul_ps(_mm512_mul_ps(half, x), _mm512_add_ps(one, t));
}

TZ_AVX512F inline __m512 gelu_backward512(__m512 x, __m512 dy) {
  const __m512 s = _mm512_set1_ps(kS), k = _mm512_set1_ps(kK), k3 = _mm512_set1_ps(3 * kK),
               half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.f);
  __m512 x2 = _mm512_mul_ps(x, x);
  __m512 t = simd::tanh512(_mm512_mul_ps(s, _mm512_fmadd_ps(_mm512_mul_ps(k, x2), x, x)));
  __m512 sech2 = _mm512_fnmadd_ps(t, t, one);
  __m512 du = _mm512_mul_ps(s, _mm512_fmadd_ps(k3, x2, one));
  __m512 g = _mm512_fmadd_ps(_mm512_mul_ps(half, x), _mm512_mul_ps(sech2, du),
                             _mm512_mul_ps(half, _mm512_add_ps(one, t)));
  return _mm512_mul_ps(g, dy);
}

// The 16-wide body; the last n % 16 floats go through the 8-wide path (the same bits per element).
TZ_AVX512F void gelu_forward_avx512(float* out, const float* inp, long n) {
  long i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, gelu_forward512(_mm512_loadu_ps(inp + i)));
  if (i < n) gelu_forward_avx2(out + i, inp + i, n - i);
}

TZ_AVX512F void gelu_backward_avx512(float* dinp, const float* inp, const float* dout, long n) {
  long i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dinp + i, gelu_backward512(_mm512_loadu_ps(inp + i), _mm512_loadu_ps(dout + i)));
  if (i < n) gelu_backward_avx2(dinp + i, inp + i, dout + i, n - i);
}

void check_vector_width(const char* what, int width) {
  if (width == 16 ? !simd::have_avx512f() : width == 8 ? !simd::have_avx2_fma() : true)
    fail_input("{}: vector width {} is not one this CPU runs (8: AVX2 + FMA, 16: AVX-512F)", what, width);
}

}  // namespace

void gelu_forward_width(float* out, const float* inp, long n, int width) {
  check_vector_width("gelu_forward_width", width);
  if (width == 16)
    gelu_forward_avx512(out, inp, n);
  else
    gelu_forward_avx2(out, inp, n);
}

void gelu_backward_width(float* dinp, const float* inp, const float* dout, long n, int width) {
  check_vector_width("gelu_backward_width", width);
  if (width == 16)
    gelu_backward_avx512(dinp, inp, dout, n);
  else
    gelu_backward_avx2(dinp, inp, dout, n);
}

void gelu_forward_ref(float* out, const float* inp, long n) {
  for (long i = 0; i < n; ++i) {
    float x = inp[i];
    out[i] = 0.5f * x * (1.0f + std::tanh(kS * (x + kK * x * x * x)));
  }
}

void gelu_backward_ref(float* dinp, const float* inp, const float* dout, long n) {
  for (long i = 0; i < n; ++i) {
    float x = inp[i];
    float t = std::tanh(kS * (x + kK * x * x * x));
    float g = 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kS * (1.0f + 3.0f * kK * x * x);
    dinp[i] = g * dout[i];
  }
}

void gelu_forward_serial(float* out, const float* inp, long n) {
  if (simd::have_avx512f())
    gelu_forward_avx512(out, inp, n);
  else if (simd::have_avx2_fma())
    gelu_forward_avx2(out, inp, n);
  else
    gelu_forward_ref(out, inp, n);
}

void gelu_backward_serial(float* dinp, const float* inp, const float* dout, long n) {
  if (simd::have_avx512f())
    gelu_backward_avx512(dinp, inp, dout, n);
  else if (simd::have_avx2_fma())
    gelu_backward_avx2(dinp, inp, dout, n);
  else
    gelu_backward_ref(dinp, inp, dout, n);
}

void gelu_forward(float* out, const float* inp, long n) {
  parallel_for(static_cast<std::size_t>(n), 1 << 14, [&](std::size_t b, std::size_t e) {
    gelu_forward_serial(out + b, inp + b, static_cast<long>(e - b));
  });
}

void gelu_backward(float* dinp, const float* inp, const float* dout, long n) {
  parallel_for(static_cast<std::size_t>(n), 1 << 14, [&](std::size_t b, std::size_t e) {
    gelu_backward_serial(dinp + b, inp + b, dout + b, static_cast<long>(e - b));
  });
}

}  // namespace tz

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic pop
#endif
