#include "optim/adamw.hpp"

#include <cmath>

#include "core/error.hpp"
#include "model/thread_pool.hpp"

namespace tz {
namespace {

void check_segments(std::span<const DecaySegment> segments, std::size_t n) {
  std::size_t covered = 0;
  for (const auto& s : segments) {
    TZ_CHECK_EQ(s.offset, covered);
    covered += s.numel;
  }
  TZ_CHECK_EQ(covered, n);
}

// One run with a fixed decay flag; written so that gcc vectorizes it (no reductions, no branches).
void adamw_run(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v,
               std::size_t n, float decay_factor, float b1, float b2, float step_size, float inv_sqrt_bc2,
               float eps, float grad_scale) {
  for (std::size_t i = 0; i < n; ++i) {
    float gi = g[i] * grad_scale;
    float mi = b1 * m[i] + (1.0f - b1) * gi;
    float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * decay_factor - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps);
  }
}

}  // namespace

void adamw_update(float* params, const float* grads, float* m, float* v,
                  std::span<const DecaySegment> segments, std::size_t n, int step, const AdamWParams& hp,
                  float grad_scale) {
  check_segments(segments, n);
  TZ_CHECK_GE(step, 1);
  const float bc1 = 1.0f - std::pow(hp.beta1, static_cast<float>(step));
  const float bc2 = 1.0f - std::pow(hp.beta2, static_cast<float>(step));
  const float step_size = hp.lr / bc1, inv_sqrt_bc2 = 1.0f / std::sqrt(bc2);
  for (const auto& s : segments) {
    const float decay_factor = s.decay ? 1.0f - hp.lr * hp.weight_decay : 1.0f;
    parallel_for(s.numel, 1 << 15, [&](std::size_t b, std::size_t e) {
      const std::size_t o = s.offset + b;
      adamw_run(params + o, grads + o, m + o, v + o, e - b, decay_factor, hp.beta1, hp.beta2, step_size,
                inv_sqrt_bc2, hp.eps, grad_scale);
    });
  }
}

void adamw_update_ref(float* params, const float* grads, float* m, float* v,
                      std::span<const DecaySegment> segments, std::size_t n, int step, const AdamWParams& hp,
                      float grad_scale) {
  check_segments(segments, n);
  const double bc1 = 1.0 - std::pow(double(hp.beta1), step), bc2 = 1.0 - std::pow(double(hp.beta2), step);
  for (const auto& s : segments)
    for (std::size_t i = s.offset; i < s.offset + s.numel; ++i) {
      double g = double(grads[i]) * grad_scale;
      double p = params[i];
      if (s.decay) p *= 1.0 - double(hp.lr) * hp.weight_decay;
      double mi = hp.beta1 * double(m[i]) + (1.0 - hp.beta1) * g;
      double vi = hp.beta2 * double(v[i]) + (1.0 - hp.beta2) * g * g;
      m[i] = static_cast<float>(mi);
      v[i] = static_cast<float>(vi);
      params[i] = static_cast<float>(p - hp.lr / bc1 * mi / (std::sqrt(vi) / std::sqrt(bc2) + hp.eps));
    }
}

}  // namespace tz
