// Softmax + cross-entropy over the vocabulary, fused (N rows of V logits):
//   probs = softmax(logits),  loss_i = logsumexp(logits_i) - logits_i[target_i]
//   dlogits = (probs - onehot(target)) * dloss
// The loss uses logsumexp rather than -log(prob) so it stays exact when the target's prob underflows.
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/parallel_for.hpp"
#include "device/cpu/layers.hpp"
#include "device/cpu/simd.hpp"

namespace tz {
namespace {

TZ_AVX2 float softmax_row_lse_avx2(float* p, const float* x, int V) {
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int j = 0;
  for (; j + 8 <= V; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + j));
  float mx = simd::hmax256(vmax);
  for (; j < V; ++j) mx = std::max(mx, x[j]);
  const __m256 vm = _mm256_set1_ps(mx);
  __m256 acc = _mm256_setzero_ps();
  for (j = 0; j + 8 <= V; j += 8) {
    __m256 e = simd::exp256(_mm256_sub_ps(_mm256_loadu_ps(x + j), vm));
    _mm256_storeu_ps(p + j, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = simd::hsum256(acc);
  for (; j < V; ++j) {
    p[j] = std::exp(x[j] - mx);
    sum += p[j];
  }
  const __m256 inv = _mm256_set1_ps(1.0f / sum);
  for (j = 0; j + 8 <= V; j += 8) _mm256_storeu_ps(p + j, _mm256_mul_ps(_mm256_loadu_ps(p + j), inv));
  for (; j < V; ++j) p[j] *= 1.0f / sum;
  return mx + std::log(sum);
}

float softmax_row_lse_ref(float* p, const float* x, int V) {
  float mx = x[0];
  for (int j = 1; j < V; ++j) mx = std::max(mx, x[j]);
  double sum = 0;
  for (int j = 0; j < V; ++j) {
    p[j] = std::exp(x[j] - mx);
    sum += p[j];
  }
  for (int j = 0; j < V; ++j) p[j] = static_cast<float>(p[j] / sum);
  return mx + static_cast<float>(std::log(sum));
}

void check_target(std::int32_t t, int V) {
  TZ_CHECK(t >= 0 && t < V, "target {} outside vocabulary {}", t, V);
}

}  // namespace

double softmax_cross_entropy_forward(float* losses, float* probs, const float* logits,
                                     const std::int32_t* targets, int N, int V) {
  parallel_for(N, 8, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      check_target(targets[r], V);
      const float* x = logits + r * V;
      float lse = simd::have_avx2_fma() ? softmax_row_lse_avx2(probs + r * V, x, V)
                                        : softmax_row_lse_ref(probs + r * V, x, V);
      losses[r] = lse - x[targets[r]];
    }
  });
  double sum = 0;
  for (int r = 0; r < N; ++r) sum += losses[r];
  return sum / N;
}

void softmax_cross_entropy_backward(float* dlogits, const float* probs, const std::int32_t* targets,
                                    float dloss, int N, int V) {
  parallel_for(N, 8, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const float* p = probs + r * V;
      float* d = dlogits + r * V;
      for (int j = 0; j < V; ++j) d[j] = p[j] * dloss;
      d[targets[r]] -= dloss;
    }
  });
}

double softmax_cross_entropy_forward_ref(float* losses, float* probs, const float* logits,
                                         const std::int32_t* targets, int N, int V) {
  double sum = 0;
  for (int r = 0; r < N; ++r) {
    check_target(targets[r], V);
    const float* x = logits + static_cast<std::size_t>(r) * V;
    losses[r] = softmax_row_lse_ref(probs + static_cast<std::size_t>(r) * V, x, V) - x[targets[r]];
    sum += losses[r];
  }
  return sum / N;
}

void softmax_cross_entropy_backward_ref(float* dlogits, const float* probs, const std::int32_t* targets,
                                        float dloss, int N, int V) {
  for (int r = 0; r < N; ++r)
    for (int j = 0; j < V; ++j)
      dlogits[static_cast<std::size_t>(r) * V + j] =
          (probs[static_cast<std::size_t>(r) * V + j] - (j == targets[r] ? 1.0f : 0.0f)) * dloss;
}

}  // namespace tz
