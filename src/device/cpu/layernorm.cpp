// LayerNorm over the last dimension (C) of N rows, eps given (1e-5 for GPT-2):
//   mean = sum(x)/C, rstd = 1/sqrt(sum((x-mean)^2)/C + eps), n = (x-mean) rstd, y = n w + b.
// Backward, with g = dy w:  dx += rstd (g - mean(g) - n mean(g n)),  dw += dy n,  db += dy.
// Without bias (b null, db null) y = n w and no db is summed.
// The fast path splits rows over the kernel threads. Backward sums the weight gradients of fixed
// 64-row parts (a count set by N alone, never by the thread count) into a scratch each, then adds the
// parts in order, so the result is bitwise the same for any thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/parallel_for.hpp"
#include "device/cpu/layers.hpp"
#include "device/cpu/simd.hpp"

namespace tz {
namespace {

constexpr int kBackwardPartRows = 64;  // rows per weight-gradient partial sum

TZ_AVX2 void ln_forward_rows(float* out, float* mean, float* rstd, const float* inp, const float* w,
                             const float* b, std::size_t r0, std::size_t r1, int C, float eps) {
  for (std::size_t r = r0; r < r1; ++r) {
    const float* x = inp + r * C;
    float* y = out + r * C;
    __m256 acc = _mm256_setzero_ps();
    int c = 0;
    for (; c + 8 <= C; c += 8) acc = _mm256_add_ps(acc, _mm256_loadu_ps(x + c));
    float s = simd::hsum256(acc);
    for (; c < C; ++c) s += x[c];
    const float m = s / C;
    const __m256 vm = _mm256_set1_ps(m);
    acc = _mm256_setzero_ps();
    for (c = 0; c + 8 <= C; c += 8) {
      __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + c), vm);
      acc = _mm256_fmadd_ps(d, d, acc);
    }
    float v = simd::hsum256(acc);
    for (; c < C; ++c) v += (x[c] - m) * (x[c] - m);
    const float rs = 1.0f / std::sqrt(v / C + eps);
    // The same operations in the same order as the scalar tail (no fused multiply-add), so every
    // element is the _ref's formula rounded the same way wherever C splits into vectors.
    const __m256 vrs = _mm256_set1_ps(rs);
    for (c = 0; c + 8 <= C; c += 8) {
      const __m256 n = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + c), vm), vrs);
      const __m256 nw = _mm256_mul_ps(n, _mm256_loadu_ps(w + c));
      _mm256_storeu_ps(y + c, b ? _mm256_add_ps(nw, _mm256_loadu_ps(b + c)) : nw);
    }
    for (; c < C; ++c) y[c] = b ? (x[c] - m) * rs * w[c] + b[c] : (x[c] - m) * rs * w[c];
    mean[r] = m;
    rstd[r] = rs;
  }
}

TZ_AVX2 void ln_backward_rows(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                              const float* w, const float* mean, const float* rstd, std::size_t r0,
                              std::size_t r1, int C) {
  for (std::size_t r = r0; r < r1; ++r) {
    const float* dy = dout + r * C;
    const float* x = inp + r * C;
    float* dx = dinp + r * C;
    const float m = mean[r], rs = rstd[r];
    const __m256 vm = _mm256_set1_ps(m), vrs = _mm256_set1_ps(rs);
    __m256 acc_g = _mm256_setzero_ps(), acc_gn = _mm256_setzero_ps();
    int c = 0;
    for (; c + 8 <= C; c += 8) {
      __m256 n = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + c), vm), vrs);
      __m256 g = _mm256_mul_ps(_mm256_loadu_ps(dy + c), _mm256_loadu_ps(w + c));
      acc_g = _mm256_add_ps(acc_g, g);
      acc_gn = _mm256_fmadd_ps(g, n, acc_gn);
    }
    float sg = simd::hsum256(acc_g), sgn = simd::hsum256(acc_gn);
    for (; c < C; ++c) {
      float n = (x[c] - m) * rs, g = dy[c] * w[c];
      sg += g;
      sgn += g * n;
    }
    const float mg = sg / C, mgn = sgn / C;
    // Vector body: the scalar tail's operations in its order (no fused multiply-add).
    const __m256 vmg = _mm256_set1_ps(mg), vmgn = _mm256_set1_ps(mgn);
    for (c = 0; c + 8 <= C; c += 8) {
      const __m256 dyv = _mm256_loadu_ps(dy + c);
      const __m256 n = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + c), vm), vrs);
      const __m256 g = _mm256_mul_ps(dyv, _mm256_loadu_ps(w + c));
      const __m256 t = _mm256_sub_ps(_mm256_sub_ps(g, vmg), _mm256_mul_ps(n, vmgn));
      _mm256_storeu_ps(dx + c, _mm256_add_ps(_mm256_loadu_ps(dx + c), _mm256_mul_ps(vrs, t)));
      _mm256_storeu_ps(dw + c, _mm256_add_ps(_mm256_loadu_ps(dw + c), _mm256_mul_ps(dyv, n)));
      if (db) _mm256_storeu_ps(db + c, _mm256_add_ps(_mm256_loadu_ps(db + c), dyv));
    }
    for (; c < C; ++c) {
      float n = (x[c] - m) * rs;
      float g = dy[c] * w[c];
      dx[c] += rs * (g - mg - n * mgn);
      dw[c] += dy[c] * n;
      if (db) db[c] += dy[c];
    }
  }
}

}  // namespace

void layernorm_forward_ref(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                           const float* bias, int N, int C, float eps) {
  for (int r = 0; r < N; ++r) {
    const float* x = inp + static_cast<std::size_t>(r) * C;
    float s = 0;
    for (int c = 0; c < C; ++c) s += x[c];
    float m = s / C, v = 0;
    for (int c = 0; c < C; ++c) v += (x[c] - m) * (x[c] - m);
    float rs = 1.0f / std::sqrt(v / C + eps);
    for (int c = 0; c < C; ++c)
      out[static_cast<std::size_t>(r) * C + c] = (x[c] - m) * rs * weight[c] + (bias ? bias[c] : 0.0f);
    mean[r] = m;
    rstd[r] = rs;
  }
}

void layernorm_backward_ref(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                            const float* weight, const float* mean, const float* rstd, int N, int C) {
  for (int r = 0; r < N; ++r) {
    const float* dy = dout + static_cast<std::size_t>(r) * C;
    const float* x = inp + static_cast<std::size_t>(r) * C;
    float sg = 0, sgn = 0;
    for (int c = 0; c < C; ++c) {
      float n = (x[c] - mean[r]) * rstd[r];
      sg += dy[c] * weight[c];
      sgn += dy[c] * weight[c] * n;
    }
    sg /= C;
    sgn /= C;
    for (int c = 0; c < C; ++c) {
      float n = (x[c] - mean[r]) * rstd[r];
      dinp[static_cast<std::size_t>(r) * C + c] += rstd[r] * (dy[c] * weight[c] - sg - n * sgn);
      dweight[c] += dy[c] * n;
      if (dbias) dbias[c] += dy[c];
    }
  }
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C, float eps) {
  if (!simd::have_avx2_fma()) return layernorm_forward_ref(out, mean, rstd, inp, weight, bias, N, C, eps);
  parallel_for(N, 16, [&](std::size_t r0, std::size_t r1) {
    ln_forward_rows(out, mean, rstd, inp, weight, bias, r0, r1, C, eps);
  });
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) {
  if (!simd::have_avx2_fma())
    return layernorm_backward_ref(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  // Fixed split into `parts` row ranges, each with its own weight-gradient partial sums.
  const int parts = std::max(1, (N + kBackwardPartRows - 1) / kBackwardPartRows);
  thread_local std::vector<float> partial;
  partial.assign(static_cast<std::size_t>(parts) * 2 * C, 0.0f);
  float* partial_base = partial.data();  // thread_local: workers must not name `partial` themselves
  parallel_for(parts, 1, [&](std::size_t p0, std::size_t p1) {
    for (std::size_t p = p0; p < p1; ++p) {
      std::size_t r0 = N * p / parts, r1 = N * (p + 1) / parts;
      float* pw = partial_base + p * 2 * C;
      ln_backward_rows(dinp, pw, dbias ? pw + C : nullptr, dout, inp, weight, mean, rstd, r0, r1, C);
    }
  });
  for (int p = 0; p < parts; ++p) {
    const float* pw = partial.data() + static_cast<std::size_t>(p) * 2 * C;
    for (int c = 0; c < C; ++c) {
      dweight[c] += pw[c];
      if (dbias) dbias[c] += pw[C + c];
    }
  }
}

}  // namespace tz
