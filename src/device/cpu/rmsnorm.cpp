// RMSNorm (Llama) over the last dimension (C) of N rows:
//   rstd = 1/sqrt(sum(x^2)/C + eps), n = x rstd, y = n w.
// Backward, with g = dy w:  dx += rstd (g - n mean(g n)),  dw += dy n.
// The fast path splits rows over the kernel threads. Backward sums the weight gradient of fixed
// 64-row parts (a count set by N alone, never by the thread count) into a scratch each, then adds the
// parts in order, so the result is bitwise the same for any thread count (as layernorm.cpp does).
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/parallel_for.hpp"
#include "device/cpu/layers.hpp"
#include "device/cpu/simd.hpp"

namespace tz {
namespace {

constexpr int kRmsBackwardPartRows = 64;  // rows per weight-gradient partial sum

TZ_AVX2 void rms_forward_rows(float* out, float* rstd, const float* inp, const float* w, std::size_t r0,
                              std::size_t r1, int C, float eps) {
  for (std::size_t r = r0; r < r1; ++r) {
    const float* x = inp + r * C;
    float* y = out + r * C;
    __m256 acc = _mm256_setzero_ps();
    int c = 0;
    for (; c + 8 <= C; c += 8) {
      const __m256 v = _mm256_loadu_ps(x + c);
      acc = _mm256_fmadd_ps(v, v, acc);
    }
    float ss = simd::hsum256(acc);
    for (; c < C; ++c) ss += x[c] * x[c];
    const float rs = 1.0f / std::sqrt(ss / C + eps);
    const __m256 vrs = _mm256_set1_ps(rs);
    for (c = 0; c + 8 <= C; c += 8)
      _mm256_storeu_ps(y + c,
                       _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + c), vrs), _mm256_loadu_ps(w + c)));
    for (; c < C; ++c) y[c] = x[c] * rs * w[c];
    rstd[r] = rs;
  }
}

TZ_AVX2 void rms_backward_rows(float* dinp, float* dw, const float* dout, const float* inp, const float* w,
                               const float* rstd, std::size_t r0, std::size_t r1, int C) {
  for (std::size_t r = r0; r < r1; ++r) {
    const float* dy = dout + r * C;
    const float* x = inp + r * C;
    float* dx = dinp + r * C;
    const float rs = rstd[r];
    const __m256 vrs = _mm256_set1_ps(rs);
    __m256 acc = _mm256_setzero_ps();
    int c = 0;
    for (; c + 8 <= C; c += 8) {
      const __m256 n = _mm256_mul_ps(_mm256_loadu_ps(x + c), vrs);
      const __m256 g = _mm256_mul_ps(_mm256_loadu_ps(dy + c), _mm256_loadu_ps(w + c));
      acc = _mm256_fmadd_ps(g, n, acc);
    }
    float sgn = simd::hsum256(acc);
    for (; c < C; ++c) sgn += dy[c] * w[c] * (x[c] * rs);
    const float mgn = sgn / C;
    const __m256 vmgn = _mm256_set1_ps(mgn);
    for (c = 0; c + 8 <= C; c += 8) {
      const __m256 vdy = _mm256_loadu_ps(dy + c);
      const __m256 n = _mm256_mul_ps(_mm256_loadu_ps(x + c), vrs);
      const __m256 g = _mm256_mul_ps(vdy, _mm256_loadu_ps(w + c));
      const __m256 d = _mm256_mul_ps(vrs, _mm256_fnmadd_ps(n, vmgn, g));
      _mm256_storeu_ps(dx + c, _mm256_add_ps(_mm256_loadu_ps(dx + c), d));
      _mm256_storeu_ps(dw + c, _mm256_fmadd_ps(vdy, n, _mm256_loadu_ps(dw + c)));
    }
    for (; c < C; ++c) {
      const float n = x[c] * rs;
      dx[c] += rs * (dy[c] * w[c] - n * mgn);
      dw[c] += dy[c] * n;
    }
  }
}

}  // namespace

void rmsnorm_forward_ref(float* out, float* rstd, const float* inp, const float* weight, int N, int C,
                         float eps) {
  for (int r = 0; r < N; ++r) {
    const float* x = inp + static_cast<std::size_t>(r) * C;
    float ss = 0;
    for (int c = 0; c < C; ++c) ss += x[c] * x[c];
    const float rs = 1.0f / std::sqrt(ss / C + eps);
    for (int c = 0; c < C; ++c) out[static_cast<std::size_t>(r) * C + c] = x[c] * rs * weight[c];
    rstd[r] = rs;
  }
}

void rmsnorm_backward_ref(float* dinp, float* dweight, const float* dout, const float* inp,
                          const float* weight, const float* rstd, int N, int C) {
  for (int r = 0; r < N; ++r) {
    const float* dy = dout + static_cast<std::size_t>(r) * C;
    const float* x = inp + static_cast<std::size_t>(r) * C;
    float sgn = 0;
    for (int c = 0; c < C; ++c) sgn += dy[c] * weight[c] * x[c] * rstd[r];
    sgn /= C;
    for (int c = 0; c < C; ++c) {
      const float n = x[c] * rstd[r];
      dinp[static_cast<std::size_t>(r) * C + c] += rstd[r] * (dy[c] * weight[c] - n * sgn);
      dweight[c] += dy[c] * n;
    }
  }
}

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C,
                     float eps) {
  if (!simd::have_avx2_fma()) return rmsnorm_forward_ref(out, rstd, inp, weight, N, C, eps);
  parallel_for(N, 16, [&](std::size_t r0, std::size_t r1) {
    rms_forward_rows(out, rstd, inp, weight, r0, r1, C, eps);
  });
}

void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int N, int C) {
  if (!simd::have_avx2_fma()) return rmsnorm_backward_ref(dinp, dweight, dout, inp, weight, rstd, N, C);
  // Fixed split into `parts` row ranges, each with its own weight-gradient partial sums.
  const int parts = std::max(1, (N + kRmsBackwardPartRows - 1) / kRmsBackwardPartRows);
  thread_local std::vector<float> rms_partial;
  rms_partial.assign(static_cast<std::size_t>(parts) * C, 0.0f);
  float* partial_base = rms_partial.data();  // thread_local: workers must not name it themselves
  parallel_for(parts, 1, [&](std::size_t p0, std::size_t p1) {
    for (std::size_t p = p0; p < p1; ++p) {
      const std::size_t r0 = N * p / parts, r1 = N * (p + 1) / parts;
      rms_backward_rows(dinp, partial_base + p * C, dout, inp, weight, rstd, r0, r1, C);
    }
  });
  for (int p = 0; p < parts; ++p) {
    const float* pw = rms_partial.data() + static_cast<std::size_t>(p) * C;
    for (int c = 0; c < C; ++c) dweight[c] += pw[c];
  }
}

}  // namespace tz
