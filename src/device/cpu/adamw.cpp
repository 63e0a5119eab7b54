#include "device/cpu/adamw.hpp"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>

#include "core/cpu_features.hpp"
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

using AdamWConstants = AdamWStepConstants;

// The new (p, m, v) of one element: the one formula of the update and of its non-finite count. The
// AVX2 loop below repeats it operation for operation (no fused multiply-add: the baseline ISA has
// none and the AVX2 target enables none), so both paths give the same bits.
struct AdamWElement {
  float p, m, v;
};
template <bool L2>
inline AdamWElement adamw_element(float p, float g, float m, float v, const AdamWConstants& k) {
  float gi = g * k.grad_scale;
  if constexpr (L2) gi += k.l2 * p;
  const float mi = k.b1 * m + (1.0f - k.b1) * gi;
  const float vi = k.b2 * v + (1.0f - k.b2) * gi * gi;
  return {p * k.decay_factor - k.step_size * mi / (std::sqrt(vi) * k.inv_sqrt_bc2 + k.eps), mi, vi};
}

bool uses_l2(const AdamWParams& hp, bool decay) {
  return adamw_uses_l2(hp, decay);
}
AdamWConstants constants_for(const AdamWParams& hp, bool decay, int step, float grad_scale) {
  return adamw_step_constants(hp, decay, step, grad_scale);
}

// One run with a fixed decay flag, one element at a time; returns the bound of what it wrote. The
// running maxima drop NaNs (std::max keeps its first operand), so NaNs are flagged apart, per field.
template <bool L2>
AdamWStateBound adamw_run_portable(float* __restrict p, const float* __restrict g, float* __restrict m,
                                   float* __restrict v, std::size_t n, const AdamWConstants& k) {
  AdamWStateBound b;
  bool nan_p = false, nan_m = false, nan_v = false;
  for (std::size_t i = 0; i < n; ++i) {
    const AdamWElement e = adamw_element<L2>(p[i], g[i], m[i], v[i], k);
    m[i] = e.m;
    v[i] = e.v;
    p[i] = e.p;
    b.abs_p = std::max(b.abs_p, std::fabs(e.p));
    b.abs_m = std::max(b.abs_m, std::fabs(e.m));
    b.v = std::max(b.v, e.v);
    b.v_min = std::min(b.v_min, e.v);
    nan_p |= e.p != e.p;
    nan_m |= e.m != e.m;
    nan_v |= e.v != e.v;
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (nan_p) b.abs_p = nan;
  if (nan_m) b.abs_m = nan;
  if (nan_v) b.v = b.v_min = nan;
  return b;
}

// adamw_element for 8 elements (gcc does not vectorize the scalar loops: std::sqrt sets errno).
struct AdamWConstants8 {
  __m256 df, l2, b1, b2, c1, c2, ss, ibc, eps, gs;
};
__attribute__((target("avx2"))) inline AdamWConstants8 broadcast(const AdamWConstants& k) {
  return {_mm256_set1_ps(k.decay_factor), _mm256_set1_ps(k.l2),           _mm256_set1_ps(k.b1),
          _mm256_set1_ps(k.b2),           _mm256_set1_ps(1.0f - k.b1),    _mm256_set1_ps(1.0f - k.b2),
          _mm256_set1_ps(k.step_size),    _mm256_set1_ps(k.inv_sqrt_bc2), _mm256_set1_ps(k.eps),
          _mm256_set1_ps(k.grad_scale)};
}
struct AdamWElement8 {
  __m256 p, m, v;
};
template <bool L2>
__attribute__((target("avx2"))) inline AdamWElement8 adamw_element8(const float* p, const float* g,
                                                                    const float* m, const float* v,
                                                                    const AdamWConstants8& k) {
  const __m256 pi = _mm256_loadu_ps(p);
  __m256 gi = _mm256_mul_ps(_mm256_loadu_ps(g), k.gs);
  if constexpr (L2) gi = _mm256_add_ps(gi, _mm256_mul_ps(k.l2, pi));
  const __m256 mi = _mm256_add_ps(_mm256_mul_ps(k.b1, _mm256_loadu_ps(m)), _mm256_mul_ps(k.c1, gi));
  const __m256 vi =
      _mm256_add_ps(_mm256_mul_ps(k.b2, _mm256_loadu_ps(v)), _mm256_mul_ps(_mm256_mul_ps(k.c2, gi), gi));
  const __m256 den = _mm256_add_ps(_mm256_mul_ps(_mm256_sqrt_ps(vi), k.ibc), k.eps);
  return {_mm256_sub_ps(_mm256_mul_ps(pi, k.df), _mm256_div_ps(_mm256_mul_ps(k.ss, mi), den)), mi, vi};
}

// adamw_run_portable, 8 elements at a time.
template <bool L2>
__attribute__((target("avx2"))) AdamWStateBound adamw_run_avx2(float* __restrict p, const float* __restrict g,
                                                               float* __restrict m, float* __restrict v,
                                                               std::size_t n, const AdamWConstants& k) {
  const AdamWConstants8 k8 = broadcast(k);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  // Max and min lose a NaN that comes before a number, so NaNs are flagged apart, per field.
  __m256 bp = _mm256_setzero_ps(), bm = bp, bv = bp, lo = bp, nan_p = bp, nan_m = bp, nan_v = bp;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const AdamWElement8 e = adamw_element8<L2>(p + i, g + i, m + i, v + i, k8);
    _mm256_storeu_ps(m + i, e.m);
    _mm256_storeu_ps(v + i, e.v);
    _mm256_storeu_ps(p + i, e.p);
    bp = _mm256_max_ps(bp, _mm256_and_ps(e.p, abs_mask));
    bm = _mm256_max_ps(bm, _mm256_and_ps(e.m, abs_mask));
    bv = _mm256_max_ps(bv, e.v);
    lo = _mm256_min_ps(lo, e.v);
    nan_p = _mm256_or_ps(nan_p, _mm256_cmp_ps(e.p, e.p, _CMP_UNORD_Q));
    nan_m = _mm256_or_ps(nan_m, _mm256_cmp_ps(e.m, e.m, _CMP_UNORD_Q));
    nan_v = _mm256_or_ps(nan_v, _mm256_cmp_ps(e.v, e.v, _CMP_UNORD_Q));
  }
  alignas(32) float lanes[4][8];
  _mm256_store_ps(lanes[0], bp);
  _mm256_store_ps(lanes[1], bm);
  _mm256_store_ps(lanes[2], bv);
  _mm256_store_ps(lanes[3], lo);
  AdamWStateBound b = adamw_run_portable<L2>(p + i, g + i, m + i, v + i, n - i, k);
  for (int j = 0; j < 8; ++j)
    b.merge({.abs_p = lanes[0][j], .abs_m = lanes[1][j], .v = lanes[2][j], .v_min = lanes[3][j]});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (_mm256_movemask_ps(nan_p) != 0) b.abs_p = nan;
  if (_mm256_movemask_ps(nan_m) != 0) b.abs_m = nan;
  if (_mm256_movemask_ps(nan_v) != 0) b.v = b.v_min = nan;
  return b;
}

template <bool L2>
AdamWStateBound adamw_run(float* p, const float* g, float* m, float* v, std::size_t n,
                          const AdamWConstants& k) {
  if (adamw_detail::have_avx2()) return adamw_run_avx2<L2>(p, g, m, v, n, k);
  return adamw_run_portable<L2>(p, g, m, v, n, k);
}

template <bool L2>
std::size_t adamw_nonfinite_run_portable(const float* __restrict p, const float* __restrict g,
                                         const float* __restrict m, const float* __restrict v, std::size_t n,
                                         const AdamWConstants& k) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const AdamWElement e = adamw_element<L2>(p[i], g[i], m[i], v[i], k);
    bad += std::isfinite(e.p) && std::isfinite(e.m) && std::isfinite(e.v) ? 0 : 1;
  }
  return bad;
}

// All ones where x is finite: |x| <= FLT_MAX is false for inf and (an ordered compare) NaN.
__attribute__((target("avx2"))) inline __m256 finite8(__m256 x) {
  const __m256 abs_x = _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
  return _mm256_cmp_ps(abs_x, _mm256_set1_ps(std::numeric_limits<float>::max()), _CMP_LE_OQ);
}

template <bool L2>
__attribute__((target("avx2"))) std::size_t adamw_nonfinite_run_avx2(const float* __restrict p,
                                                                     const float* __restrict g,
                                                                     const float* __restrict m,
                                                                     const float* __restrict v, std::size_t n,
                                                                     const AdamWConstants& k) {
  const AdamWConstants8 k8 = broadcast(k);
  std::size_t bad = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    const AdamWElement8 e = adamw_element8<L2>(p + i, g + i, m + i, v + i, k8);
    const __m256 ok = _mm256_and_ps(_mm256_and_ps(finite8(e.p), finite8(e.m)), finite8(e.v));
    bad += 8 - static_cast<std::size_t>(__builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(ok))));
  }
  return bad + adamw_nonfinite_run_portable<L2>(p + i, g + i, m + i, v + i, n - i, k);
}

template <bool L2>
std::size_t adamw_nonfinite_run(const float* p, const float* g, const float* m, const float* v, std::size_t n,
                                const AdamWConstants& k) {
  if (adamw_detail::have_avx2()) return adamw_nonfinite_run_avx2<L2>(p, g, m, v, n, k);
  return adamw_nonfinite_run_portable<L2>(p, g, m, v, n, k);
}

std::atomic<bool> portable_forced{false};

}  // namespace

namespace adamw_detail {
bool have_avx2() {
  return cpu_features().avx2 && !portable_forced.load(std::memory_order_relaxed);
}
void force_portable(bool on) {
  portable_forced.store(on, std::memory_order_relaxed);
}
}  // namespace adamw_detail

bool adamw_uses_l2(const AdamWParams& hp, bool decay) {
  return !hp.decoupled && decay && hp.weight_decay != 0.0f;
}

AdamWStepConstants adamw_step_constants(const AdamWParams& hp, bool decay, int step, float grad_scale) {
  const float bc1 = 1.0f - std::pow(hp.beta1, static_cast<float>(step));
  const float bc2 = 1.0f - std::pow(hp.beta2, static_cast<float>(step));
  const bool l2 = adamw_uses_l2(hp, decay);
  return {.decay_factor = decay && hp.decoupled ? 1.0f - hp.lr * hp.weight_decay : 1.0f,
          .l2 = l2 ? hp.weight_decay : 0.0f,
          .b1 = hp.beta1,
          .b2 = hp.beta2,
          .step_size = hp.lr / bc1,
          .inv_sqrt_bc2 = 1.0f / std::sqrt(bc2),
          .eps = hp.eps,
          .grad_scale = grad_scale};
}

void AdamWStateBound::merge(const AdamWStateBound& o) {
  // A NaN on either side wins (vmaxps/vminps keep a NaN second operand; this keeps either).
  auto max_of = [](float a, float b) { return std::isnan(a) || a > b ? a : b; };
  auto min_of = [](float a, float b) { return std::isnan(a) || a < b ? a : b; };
  abs_p = max_of(abs_p, o.abs_p);
  abs_m = max_of(abs_m, o.abs_m);
  v = max_of(v, o.v);
  v_min = min_of(v_min, o.v_min);
}

AdamWStateBound adamw_update(float* params, const float* grads, float* m, float* v,
                             std::span<const DecaySegment> segments, std::size_t n, int step,
                             const AdamWParams& hp, float grad_scale) {
  check_segments(segments, n);
  TZ_CHECK_GE(step, 1);
  AdamWStateBound bound;
  std::mutex bound_mutex;
  for (const auto& s : segments) {
    const bool l2 = uses_l2(hp, s.decay);
    const AdamWConstants k = constants_for(hp, s.decay, step, grad_scale);
    parallel_for(s.numel, 1 << 15, [&](std::size_t b, std::size_t e) {
      const std::size_t o = s.offset + b;
      const AdamWStateBound piece = l2 ? adamw_run<true>(params + o, grads + o, m + o, v + o, e - b, k)
                                       : adamw_run<false>(params + o, grads + o, m + o, v + o, e - b, k);
      const std::lock_guard lock(bound_mutex);
      bound.merge(piece);
    });
  }
  return bound;
}

bool adamw_update_stays_finite(const AdamWStateBound& state, double max_abs_grad, int step,
                               const AdamWParams& hp, float grad_scale) {
  // Every bound below is computed in double and must stay under kLimit, 10^8 below FLT_MAX: float
  // rounding of the real computation then cannot reach infinity.
  constexpr double kLimit = 1e30;
  auto ok = [](double x) { return std::isfinite(x) && x >= 0.0 && x < kLimit; };
  const double b1 = hp.beta1, b2 = hp.beta2, lr = hp.lr, wd = hp.weight_decay, eps = hp.eps;
  if (step < 1 || !(b1 >= 0.0 && b1 < 1.0) || !(b2 >= 0.0 && b2 < 1.0) || !(eps > 0.0) ||
      !std::isfinite(lr) || !std::isfinite(wd) || !std::isfinite(double(grad_scale)))
    return false;
  if (!ok(state.abs_p) || !ok(state.abs_m) || !ok(state.v) || !ok(state.v_min) || !ok(max_abs_grad))
    return false;  // v_min < 0: the square root of a negative
  const double P = state.abs_p;
  // |g| after scaling (and Adam's L2 term), then |m'| <= max(|m|, |g|), v' <= max(v, g^2).
  const double g =
      max_abs_grad * 1.01 * std::fabs(double(grad_scale)) + (hp.decoupled ? 0.0 : std::fabs(wd) * P);
  const double m_new = std::max(double(state.abs_m), g), v_new = std::max(double(state.v), g * g);
  // The step: |m'| / (sqrt(v') / sqrt(bc2) + eps) <= |m'| / eps, times the step size lr / bc1, both
  // as adamw_update rounds them (constants_for): finite and positive, or 0 * inf would make a NaN.
  const AdamWConstants k = constants_for(hp, true, step, grad_scale);
  if (!(std::isfinite(k.step_size) && k.inv_sqrt_bc2 > 0.0f && std::isfinite(k.inv_sqrt_bc2))) return false;
  const double decay = hp.decoupled ? std::max(1.0, std::fabs(double(k.decay_factor))) : 1.0;
  const double step_size = std::fabs(double(k.step_size));
  const double p_new = P * decay + step_size * m_new / eps;
  return ok(g) && ok(m_new) && ok(v_new) && ok(step_size) && ok(p_new);
}

std::size_t adamw_nonfinite_count(const float* params, const float* grads, const float* m, const float* v,
                                  std::span<const DecaySegment> segments, std::size_t n, int step,
                                  const AdamWParams& hp, float grad_scale) {
  check_segments(segments, n);
  TZ_CHECK_GE(step, 1);
  std::atomic<std::size_t> bad{0};
  for (const auto& s : segments) {
    const bool l2 = uses_l2(hp, s.decay);  // the same constants as adamw_update
    const AdamWConstants k = constants_for(hp, s.decay, step, grad_scale);
    parallel_for(s.numel, 1 << 15, [&](std::size_t b, std::size_t e) {
      const std::size_t o = s.offset + b;
      bad += l2 ? adamw_nonfinite_run<true>(params + o, grads + o, m + o, v + o, e - b, k)
                : adamw_nonfinite_run<false>(params + o, grads + o, m + o, v + o, e - b, k);
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
