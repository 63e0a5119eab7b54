// Causal multi-head self-attention on a packed qkv (B, T, 3C). For each sequence b and head h
// (Q, K, V are T x hs slices of qkv with row stride 3C; P is the T x T probability matrix):
//   S = Q K^T / sqrt(hs) (row t keeps keys s <= t),  P = softmax_rows(S),  O = P V
// backward:  dP = dO V^T,  dV = P^T dO,  dS = P * (dP - rowsum(P * dP)) / sqrt(hs),
//            dQ = dS K,  dK = dS^T Q.
// Causal tiling: rows are taken in tiles of kTile; a tile of rows [t0, t1) needs keys [0, t1) only, so
// every product runs on the lower-left part of the matrix (about 5/8 of the dense work at T = 256).
// Each (b, h) pair is independent; pairs are spread over the kernel threads, each running its
// products on its own thread (gemm with serial set). Bytes: qkv read once forward and twice backward; P (B H
// T T floats) written forward, read backward.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/parallel_for.hpp"
#include "device/cpu/gemm.hpp"
#include "device/cpu/layers.hpp"
#include "device/cpu/simd.hpp"

namespace tz {
namespace {

constexpr int kTile = 64;

// Softmax of a[0..n) in place (n >= 1).
TZ_AVX2 void softmax_row_avx2(float* a, int n) {
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int j = 0;
  for (; j + 8 <= n; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(a + j));
  float mx = simd::hmax256(vmax);
  for (; j < n; ++j) mx = std::max(mx, a[j]);
  const __m256 vm = _mm256_set1_ps(mx);
  __m256 acc = _mm256_setzero_ps();
  for (j = 0; j + 8 <= n; j += 8) {
    __m256 e = simd::exp256(_mm256_sub_ps(_mm256_loadu_ps(a + j), vm));
    _mm256_storeu_ps(a + j, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = simd::hsum256(acc);
  for (; j < n; ++j) {
    a[j] = std::exp(a[j] - mx);
    sum += a[j];
  }
  const __m256 inv = _mm256_set1_ps(1.0f / sum);
  for (j = 0; j + 8 <= n; j += 8) _mm256_storeu_ps(a + j, _mm256_mul_ps(_mm256_loadu_ps(a + j), inv));
  for (; j < n; ++j) a[j] *= 1.0f / sum;
}

void softmax_row_ref(float* a, int n) {
  float mx = a[0];
  for (int j = 1; j < n; ++j) mx = std::max(mx, a[j]);
  float sum = 0;
  for (int j = 0; j < n; ++j) {
    a[j] = std::exp(a[j] - mx);
    sum += a[j];
  }
  for (int j = 0; j < n; ++j) a[j] *= 1.0f / sum;
}

// dS = P * (dP - sum(P * dP)) * scale over a[0..n), written into dp.
TZ_AVX2 void softmax_backward_row_avx2(float* dp, const float* p, int n, float scale) {
  __m256 acc = _mm256_setzero_ps();
  int j = 0;
  for (; j + 8 <= n; j += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(p + j), _mm256_loadu_ps(dp + j), acc);
  float s = simd::hsum256(acc);
  for (; j < n; ++j) s += p[j] * dp[j];
  const __m256 vs = _mm256_set1_ps(s), vscale = _mm256_set1_ps(scale);
  for (j = 0; j + 8 <= n; j += 8) {
    __m256 d = _mm256_sub_ps(_mm256_loadu_ps(dp + j), vs);
    _mm256_storeu_ps(dp + j, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(p + j), d), vscale));
  }
  for (; j < n; ++j) dp[j] = p[j] * (dp[j] - s) * scale;
}

void softmax_backward_row_ref(float* dp, const float* p, int n, float scale) {
  float s = 0;
  for (int j = 0; j < n; ++j) s += p[j] * dp[j];
  for (int j = 0; j < n; ++j) dp[j] = p[j] * (dp[j] - s) * scale;
}

void head_forward(float* out, float* att, const float* qkv, int b, int h, int T, int C, int H) {
  const int hs = C / H, ld = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const float* q = qkv + static_cast<std::size_t>(b) * T * ld + h * hs;
  const float* k = q + C;
  const float* v = q + 2 * C;
  float* a = att + (static_cast<std::size_t>(b) * H + h) * T * T;
  float* o = out + static_cast<std::size_t>(b) * T * C + h * hs;
  const bool fast = simd::have_avx2_fma();
  for (int t0 = 0; t0 < T; t0 += kTile) {
    const int t1 = std::min(T, t0 + kTile), m = t1 - t0;
    float* at = a + static_cast<std::size_t>(t0) * T;
    gemm({.trans_b = true,
          .M = m,
          .N = t1,
          .K = hs,
          .alpha = scale,
          .A = q + static_cast<std::size_t>(t0) * ld,
          .lda = ld,
          .B = k,
          .ldb = ld,
          .C = at,
          .ldc = T,
          .serial = true});
    for (int t = t0; t < t1; ++t) {
      float* row = a + static_cast<std::size_t>(t) * T;
      fast ? softmax_row_avx2(row, t + 1) : softmax_row_ref(row, t + 1);
      std::fill(row + t + 1, row + t1, 0.0f);
    }
    gemm({.M = m,
          .N = hs,
          .K = t1,
          .A = at,
          .lda = T,
          .B = v,
          .ldb = ld,
          .C = o + static_cast<std::size_t>(t0) * C,
          .ldc = C,
          .serial = true});
  }
}

void head_backward(float* dqkv, const float* dout, const float* qkv, const float* att, float* dp, int b,
                   int h, int T, int C, int H) {
  const int hs = C / H, ld = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::size_t base = static_cast<std::size_t>(b) * T * ld + h * hs;
  const float *q = qkv + base, *k = q + C, *v = q + 2 * C;
  float *dq = dqkv + base, *dk = dq + C, *dv = dq + 2 * C;
  const float* a = att + (static_cast<std::size_t>(b) * H + h) * T * T;
  const float* dO = dout + static_cast<std::size_t>(b) * T * C + h * hs;
  for (int t = 0; t < T; ++t) {
    std::memset(dk + static_cast<std::size_t>(t) * ld, 0, sizeof(float) * hs);
    std::memset(dv + static_cast<std::size_t>(t) * ld, 0, sizeof(float) * hs);
  }
  const bool fast = simd::have_avx2_fma();
  for (int t0 = 0; t0 < T; t0 += kTile) {
    const int t1 = std::min(T, t0 + kTile), m = t1 - t0;
    const float* at = a + static_cast<std::size_t>(t0) * T;
    const float* dOt = dO + static_cast<std::size_t>(t0) * C;
    gemm({.trans_b = true,
          .M = m,
          .N = t1,
          .K = hs,
          .A = dOt,
          .lda = C,
          .B = v,
          .ldb = ld,
          .C = dp,
          .ldc = T,
          .serial = true});
    gemm({.trans_a = true,
          .M = t1,
          .N = hs,
          .K = m,
          .A = at,
          .lda = T,
          .B = dOt,
          .ldb = C,
          .beta = 1.0f,
          .C = dv,
          .ldc = ld,
          .serial = true});
    for (int t = t0; t < t1; ++t) {
      float* row = dp + static_cast<std::size_t>(t - t0) * T;
      const float* prow = a + static_cast<std::size_t>(t) * T;
      fast ? softmax_backward_row_avx2(row, prow, t + 1, scale)
           : softmax_backward_row_ref(row, prow, t + 1, scale);
      std::fill(row + t + 1, row + t1, 0.0f);
    }
    gemm({.M = m,
          .N = hs,
          .K = t1,
          .A = dp,
          .lda = T,
          .B = k,
          .ldb = ld,
          .C = dq + static_cast<std::size_t>(t0) * ld,
          .ldc = ld,
          .serial = true});
    gemm({.trans_a = true,
          .M = t1,
          .N = hs,
          .K = m,
          .A = dp,
          .lda = T,
          .B = q + static_cast<std::size_t>(t0) * ld,
          .ldb = ld,
          .beta = 1.0f,
          .C = dk,
          .ldc = ld,
          .serial = true});
  }
}

}  // namespace

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int H) {
  parallel_for(static_cast<std::size_t>(B) * H, 1, [&](std::size_t p0, std::size_t p1) {
    for (std::size_t p = p0; p < p1; ++p)
      head_forward(out, att, qkv, static_cast<int>(p / H), static_cast<int>(p % H), T, C, H);
  });
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T,
                        int C, int H) {
  parallel_for(static_cast<std::size_t>(B) * H, 1, [&](std::size_t p0, std::size_t p1) {
    thread_local std::vector<float> dp;  // this worker's kTile x T scratch, kept across calls
    if (dp.size() < static_cast<std::size_t>(kTile) * T) dp.resize(static_cast<std::size_t>(kTile) * T);
    for (std::size_t p = p0; p < p1; ++p)
      head_backward(dqkv, dout, qkv, att, dp.data(), static_cast<int>(p / H), static_cast<int>(p % H), T, C,
                    H);
  });
}

void attention_forward_ref(float* out, float* att, const float* qkv, int B, int T, int C, int H) {
  const int hs = C / H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < T; ++t) {
        const float* q = qkv + (static_cast<std::size_t>(b) * T + t) * 3 * C + h * hs;
        float* a = att + ((static_cast<std::size_t>(b) * H + h) * T + t) * T;
        for (int s = 0; s <= t; ++s) {
          const float* k = qkv + (static_cast<std::size_t>(b) * T + s) * 3 * C + C + h * hs;
          float dot = 0;
          for (int i = 0; i < hs; ++i) dot += q[i] * k[i];
          a[s] = dot * scale;
        }
        softmax_row_ref(a, t + 1);
        for (int s = t + 1; s < T; ++s) a[s] = 0;
        float* o = out + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
        for (int i = 0; i < hs; ++i) o[i] = 0;
        for (int s = 0; s <= t; ++s) {
          const float* v = qkv + (static_cast<std::size_t>(b) * T + s) * 3 * C + 2 * C + h * hs;
          for (int i = 0; i < hs; ++i) o[i] += a[s] * v[i];
        }
      }
}

void attention_backward_ref(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T,
                            int C, int H) {
  const int hs = C / H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  std::fill(dqkv, dqkv + static_cast<std::size_t>(B) * T * 3 * C, 0.0f);
  std::vector<float> dp(T);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < T; ++t) {
        const std::size_t row = (static_cast<std::size_t>(b) * T + t) * 3 * C + h * hs;
        const float* a = att + ((static_cast<std::size_t>(b) * H + h) * T + t) * T;
        const float* dO = dout + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
        for (int s = 0; s <= t; ++s) {
          const std::size_t srow = (static_cast<std::size_t>(b) * T + s) * 3 * C + h * hs;
          float d = 0;
          for (int i = 0; i < hs; ++i) {
            d += dO[i] * qkv[srow + 2 * C + i];
            dqkv[srow + 2 * C + i] += a[s] * dO[i];
          }
          dp[s] = d;
        }
        softmax_backward_row_ref(dp.data(), a, t + 1, scale);
        for (int s = 0; s <= t; ++s) {
          const std::size_t srow = (static_cast<std::size_t>(b) * T + s) * 3 * C + h * hs;
          for (int i = 0; i < hs; ++i) {
            dqkv[row + i] += dp[s] * qkv[srow + C + i];
            dqkv[srow + C + i] += dp[s] * qkv[row + i];
          }
        }
      }
}

}  // namespace tz
