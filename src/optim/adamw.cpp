#include "optim/adamw.hpp"

#include <atomic>
#include <cmath>

#include "core/error.hpp"
#include "core/parallel_for.hpp"

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

// The new (p, m, v) of one element: the one formula of the update and of its non-finite count.
// L2: Adam's weight decay l2 * p enters the gradient (decay_factor is then 1).
struct AdamWElement {
  float p, m, v;
};
template <bool L2>
inline AdamWElement adamw_element(float p, float g, float m, float v, float decay_factor, float l2, float b1,
                                  float b2, float step_size, float inv_sqrt_bc2, float eps,
                                  float grad_scale) {
  float gi = g * grad_scale;
  if constexpr (L2) gi += l2 * p;
  const float mi = b1 * m + (1.0f - b1) * gi;
  const float vi = b2 * v + (1.0f - b2) * gi * gi;
  return {p * decay_factor - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps), mi, vi};
}

// One run with a fixed decay flag; written so that gcc vectorizes it (no reductions, no branches).
template <bool L2>
void adamw_run(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v,
               std::size_t n, float decay_factor, float l2, float b1, float b2, float step_size,
               float inv_sqrt_bc2, float eps, float grad_scale) {
  for (std::size_t i = 0; i < n; ++i) {
    const AdamWElement e = adamw_element<L2>(p[i], g[i], m[i], v[i], decay_factor, l2, b1, b2, step_size,
                                             inv_sqrt_bc2, eps, grad_scale);
    m[i] = e.m;
    v[i] = e.v;
    p[i] = e.p;
  }
}

template <bool L2>
std::size_t adamw_nonfinite_run(const float* __restrict p, const float* __restrict g,
                                const float* __restrict m, const float* __restrict v, std::size_t n,
                                float decay_factor, float l2, float b1, float b2, float step_size,
                                float inv_sqrt_bc2, float eps, float grad_scale) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const AdamWElement e = adamw_element<L2>(p[i], g[i], m[i], v[i], decay_factor, l2, b1, b2, step_size,
                                             inv_sqrt_bc2, eps, grad_scale);
    bad += std::isfinite(e.p) && std::isfinite(e.m) && std::isfinite(e.v) ? 0 : 1;
  }
  return bad;
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
    const bool l2 = !hp.decoupled && s.decay && hp.weight_decay != 0.0f;
    const float decay_factor = s.decay && hp.decoupled ? 1.0f - hp.lr * hp.weight_decay : 1.0f;
    parallel_for(s.numel, 1 << 15, [&](std::size_t b, std::size_t e) {
      const std::size_t o = s.offset + b;
      if (l2)
        adamw_run<true>(params + o, grads + o, m + o, v + o, e - b, 1.0f, hp.weight_decay, hp.beta1, hp.beta2,
                        step_size, inv_sqrt_bc2, hp.eps, grad_scale);
      else
        adamw_run<false>(params + o, grads + o, m + o, v + o, e - b, decay_factor, 0.0f, hp.beta1, hp.beta2,
                         step_size, inv_sqrt_bc2, hp.eps, grad_scale);
    });
  }
}

std::size_t adamw_nonfinite_count(const float* params, const float* grads, const float* m, const float* v,
                                  std::span<const DecaySegment> segments, std::size_t n, int step,
                                  const AdamWParams& hp, float grad_scale) {
  check_segments(segments, n);
  TZ_CHECK_GE(step, 1);
  const float bc1 = 1.0f - std::pow(hp.beta1, static_cast<float>(step));
  const float bc2 = 1.0f - std::pow(hp.beta2, static_cast<float>(step));
  const float step_size = hp.lr / bc1, inv_sqrt_bc2 = 1.0f / std::sqrt(bc2);
  std::atomic<std::size_t> bad{0};
  for (const auto& s : segments) {
    // The same segment rule as adamw_update: decoupled decay scales p, Adam's L2 enters the gradient.
    const bool l2 = !hp.decoupled && s.decay && hp.weight_decay != 0.0f;
    const float decay_factor = s.decay && hp.decoupled ? 1.0f - hp.lr * hp.weight_decay : 1.0f;
    parallel_for(s.numel, 1 << 15, [&](std::size_t b, std::size_t e) {
      const std::size_t o = s.offset + b;
      bad += l2 ? adamw_nonfinite_run<true>(params + o, grads + o, m + o, v + o, e - b, 1.0f, hp.weight_decay,
                                            hp.beta1, hp.beta2, step_size, inv_sqrt_bc2, hp.eps, grad_scale)
                : adamw_nonfinite_run<false>(params + o, grads + o, m + o, v + o, e - b, decay_factor, 0.0f,
                                             hp.beta1, hp.beta2, step_size, inv_sqrt_bc2, hp.eps, grad_scale);
    });
  }
  return bad.load();
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
      if (s.decay && hp.decoupled) p *= 1.0 - double(hp.lr) * hp.weight_decay;
      if (s.decay && !hp.decoupled) g += double(hp.weight_decay) * p;
      double mi = hp.beta1 * double(m[i]) + (1.0 - hp.beta1) * g;
      double vi = hp.beta2 * double(v[i]) + (1.0 - hp.beta2) * g * g;
      m[i] = static_cast<float>(mi);
      v[i] = static_cast<float>(vi);
      params[i] = static_cast<float>(p - hp.lr / bc1 * mi / (std::sqrt(vi) / std::sqrt(bc2) + hp.eps));
    }
}

}  // namespace tz
