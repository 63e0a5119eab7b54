// AdamW (fast vs fp64 reference, slice independence, decay only where the table says), the schedule
// and the clipping pieces.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "core/parallel_for.hpp"
#include "device/cpu/adamw.hpp"
#include "engine/decay_segments.hpp"
#include "model/parameter_layout.hpp"
#include "optim/grad_clip.hpp"
#include "optim/lr_schedule.hpp"

namespace tz {
namespace {

constexpr double kAdamVsRef =
    1e-5;  // max relative difference (|p| + 1e-3) of fp32 vs the fp64 reference, 5 steps

std::vector<float> randn(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

TEST(AdamW, MatchesReferenceAndIsSliceIndependent) {
  ParameterLayout l({.n_layer = 2, .n_embd = 12, .n_head = 3, .n_positions = 9, .vocab_size = 31});
  const std::size_t n = l.total_numel();
  AdamWParams hp{.lr = 1e-2f, .weight_decay = 0.1f};
  auto p_fast = randn(n, 1), p_ref = p_fast, p_sliced = p_fast;
  std::vector<float> m1(n, 0), v1(n, 0), m2(n, 0), v2(n, 0), m3(n, 0), v3(n, 0);
  const auto all = decay_segments(l, 0, n);
  set_parallel_threads(2);
  for (int step = 1; step <= 5; ++step) {
    auto g = randn(n, 100 + step);
    adamw_update(p_fast.data(), g.data(), m1.data(), v1.data(), all, n, step, hp, 0.5f);
    adamw_update_ref(p_ref.data(), g.data(), m2.data(), v2.data(), all, n, step, hp, 0.5f);
    // The same update in three uneven shards, as the engine runs it.
    const std::size_t cuts[] = {0, 517, 518, n};
    for (int s = 0; s < 3; ++s) {
      const std::size_t o = cuts[s], k = cuts[s + 1] - cuts[s];
      adamw_update(p_sliced.data() + o, g.data() + o, m3.data() + o, v3.data() + o, decay_segments(l, o, k),
                   k, step, hp, 0.5f);
    }
  }
  set_parallel_threads(1);
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i)
    worst = std::max(worst, std::abs(double(p_fast[i]) - p_ref[i]) / (std::abs(p_ref[i]) + 1e-3));
  EXPECT_LT(worst, kAdamVsRef);
  EXPECT_EQ(p_fast, p_sliced);
}

TEST(AdamW, DecaysOnlyFlaggedTensors) {
  ParameterLayout l({.n_layer = 1, .n_embd = 4, .n_head = 1, .n_positions = 3, .vocab_size = 5});
  const std::size_t n = l.total_numel();
  std::vector<float> p(n, 1.0f), g(n, 0.0f), m(n, 0), v(n, 0);
  adamw_update(p.data(), g.data(), m.data(), v.data(), decay_segments(l, 0, n), n, 1,
               {.lr = 0.5f, .weight_decay = 0.2f});
  for (const auto& t : l.tensors()) EXPECT_FLOAT_EQ(p[t.offset], t.weight_decay ? 0.9f : 1.0f) << t.name;
}

TEST(AdamW, FirstStepMovesEachWeightByLr) {
  // With zero state, step 1 gives m/(sqrt(v)) = sign(g): every weight moves by lr (eps aside).
  std::vector<float> p = {1, 2, 3}, g = {0.5f, -2, 1e-3f}, m(3, 0), v(3, 0);
  std::vector<DecaySegment> seg = {{0, 3, false}};
  adamw_update(p.data(), g.data(), m.data(), v.data(), seg, 3, 1, {.lr = 0.1f, .eps = 0});
  EXPECT_FLOAT_EQ(p[0], 0.9f);
  EXPECT_FLOAT_EQ(p[1], 2.1f);
  EXPECT_FLOAT_EQ(p[2], 2.9f);
}

// The count predicts the update: for finite, overflowing and non-finite inputs alike it equals the
// number of elements the update leaves with a non-finite parameter, m or v, and it writes nothing.
TEST(AdamW, NonfiniteCountPredictsTheUpdate) {
  ParameterLayout l({.n_layer = 1, .n_embd = 8, .n_head = 2, .n_positions = 5, .vocab_size = 13});
  const std::size_t n = l.total_numel();
  const auto seg = decay_segments(l, 0, n);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  set_parallel_threads(2);
  for (int c = 0; c < 5; ++c) {
    auto p = randn(n, 7 + c), g = randn(n, 17 + c), m = randn(n, 27 + c), v = randn(n, 37 + c);
    for (auto& x : v) x = std::abs(x);
    AdamWParams hp{.lr = 1e-2f, .weight_decay = 0.1f};
    switch (c) {
      case 0:  // all finite: nothing
        break;
      case 1:  // a gradient whose square overflows fp32 (v -> inf), another inf, one NaN
        g[3] = 1e30f, g[n / 2] = inf, g[n - 1] = nan;
        break;
      case 2:  // non-finite state: m, v, a parameter; a negative v (sqrt of a negative)
        m[1] = nan, v[5] = inf, p[9] = -inf, v[11] = -1.0f;
        break;
      case 3:  // a learning rate that overflows every weight
        hp.lr = 3e38f;
        break;
      case 4:  // a weight that overflows with its update
        p[2] = -3.4e38f, hp.lr = 1e37f, hp.weight_decay = 0;
        break;
    }
    const auto p0 = p, m0 = m, v0 = v;
    const std::size_t predicted =
        adamw_nonfinite_count(p.data(), g.data(), m.data(), v.data(), seg, n, 3, hp, 0.5f);
    const auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
      return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;  // NaNs included
    };
    EXPECT_TRUE(same_bits(p, p0) && same_bits(m, m0) && same_bits(v, v0))
        << "case " << c << ": nothing written";
    adamw_update(p.data(), g.data(), m.data(), v.data(), seg, n, 3, hp, 0.5f);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i)
      bad += std::isfinite(p[i]) && std::isfinite(m[i]) && std::isfinite(v[i]) ? 0 : 1;
    EXPECT_EQ(predicted, bad) << "case " << c;
    EXPECT_EQ(bad == 0, c == 0) << "case " << c;
  }
  set_parallel_threads(1);
}

// The AVX2 loop repeats the portable one operation for operation: the same bits for p, m, v and the
// bound (NaN where a NaN was written), decoupled and L2, on lengths that leave every tail, with values that
// overflow and NaN.
TEST(AdamW, Avx2PathEqualsPortablePathBitwise) {
  if (!adamw_detail::have_avx2()) GTEST_SKIP() << "this CPU has no AVX2";
  ParameterLayout l({.n_layer = 2, .n_embd = 12, .n_head = 3, .n_positions = 9, .vocab_size = 31});
  const std::size_t n = l.total_numel();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
    return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  for (bool decoupled : {true, false})
    for (std::size_t len : {n, std::size_t{7}, std::size_t{8}, std::size_t{9}, std::size_t{23}}) {
      auto p = randn(len, 1), g = randn(len, 2), m = randn(len, 3), v = randn(len, 4);
      for (auto& x : v) x = std::abs(x);
      if (len > 20) g[3] = 1e30f, g[5] = inf, m[6] = nan, v[20] = -1.0f;
      auto p2 = p, g2 = g, m2 = m, v2 = v;
      const AdamWParams hp{.lr = 1e-2f, .weight_decay = 0.1f, .decoupled = decoupled};
      const auto seg = decay_segments(l, 0, len);
      const std::size_t fast_bad =
          adamw_nonfinite_count(p.data(), g.data(), m.data(), v.data(), seg, len, 3, hp, 0.5f);
      adamw_detail::force_portable(true);
      const std::size_t slow_bad =
          adamw_nonfinite_count(p.data(), g.data(), m.data(), v.data(), seg, len, 3, hp, 0.5f);
      adamw_detail::force_portable(false);
      const AdamWStateBound fast =
          adamw_update(p.data(), g.data(), m.data(), v.data(), seg, len, 3, hp, 0.5f);
      adamw_detail::force_portable(true);
      const AdamWStateBound slow =
          adamw_update(p2.data(), g2.data(), m2.data(), v2.data(), seg, len, 3, hp, 0.5f);
      adamw_detail::force_portable(false);
      const std::string what = std::to_string(len) + (decoupled ? " decoupled" : " L2");
      EXPECT_TRUE(same_bits(p, p2) && same_bits(m, m2) && same_bits(v, v2)) << what;
      // The count on both paths, and against what the update wrote.
      std::size_t written_bad = 0;
      for (std::size_t i = 0; i < len; ++i)
        written_bad += std::isfinite(p[i]) && std::isfinite(m[i]) && std::isfinite(v[i]) ? 0 : 1;
      EXPECT_EQ(fast_bad, slow_bad) << what;
      EXPECT_EQ(fast_bad, written_bad) << what;
      if (len > 20) {
        EXPECT_GE(fast_bad, 3u) << what;  // the inf gradient, the NaN m, the negative v
      }
      // The bound: the same value, or NaN on both paths (which NaN is not specified).
      const float bf[] = {fast.abs_p, fast.abs_m, fast.v, fast.v_min},
                  bs[] = {slow.abs_p, slow.abs_m, slow.v, slow.v_min};
      for (int j = 0; j < 4; ++j)
        EXPECT_TRUE(bf[j] == bs[j] || (std::isnan(bf[j]) && std::isnan(bs[j])))
            << what << ": bound " << j << ": " << bf[j] << " vs " << bs[j];
    }
}

// The bound adamw_update returns is the exact max |p|, max |m|, max v and min(0, min v) it wrote; a
// negative v shows in v_min, and the NaN it makes of its parameter (a square root) in abs_p.
TEST(AdamW, UpdateReturnsTheBoundOfWhatItWrote) {
  ParameterLayout l({.n_layer = 2, .n_embd = 12, .n_head = 3, .n_positions = 9, .vocab_size = 31});
  const std::size_t n = l.total_numel();
  for (bool negative_v : {false, true}) {
    auto p = randn(n, 3), g = randn(n, 4), m = randn(n, 5), v = randn(n, 6);
    for (auto& x : v) x = std::abs(x);
    if (negative_v) v[7] = -2.0f, g[7] = 0.0f;  // stays negative after the step
    set_parallel_threads(2);
    const AdamWStateBound b =
        adamw_update(p.data(), g.data(), m.data(), v.data(), decay_segments(l, 0, n), n, 2, {}, 0.5f);
    set_parallel_threads(1);
    AdamWStateBound want;
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isnan(p[i])) want.abs_p = std::max(want.abs_p, std::abs(p[i]));
      want.abs_m = std::max(want.abs_m, std::abs(m[i]));
      want.v = std::max(want.v, v[i]);
      want.v_min = std::min(want.v_min, v[i]);
    }
    if (negative_v) {
      EXPECT_TRUE(std::isnan(b.abs_p));
      EXPECT_LT(b.v_min, 0.0f);
    } else {
      EXPECT_EQ(b.abs_p, want.abs_p);
      EXPECT_EQ(b.v_min, 0.0f);
    }
    EXPECT_EQ(b.abs_m, want.abs_m) << negative_v;
    EXPECT_EQ(b.v, want.v) << negative_v;
    EXPECT_EQ(b.v_min, want.v_min) << negative_v;
  }
}

// Whenever adamw_update_stays_finite says so, adamw_nonfinite_count is 0: random states, gradients and
// hyper-parameters over many orders of magnitude, up to overflow. Both answers occur often, so the
// check is not vacuous (and so do overflowing updates); the usual training case is proven, and eps = 0
// or a negative v never is.
TEST(AdamW, StaysFiniteNeverHidesANonfiniteUpdate) {
  std::mt19937 gen(11);
  auto log_uniform = [&](double lo, double hi) {
    return std::pow(10.0, std::uniform_real_distribution<double>(lo, hi)(gen));
  };
  const std::size_t n = 64;
  const std::vector<DecaySegment> seg = {{.offset = 0, .numel = 32, .decay = true},
                                         {.offset = 32, .numel = 32, .decay = false}};
  int proven = 0, nonfinite = 0, trials = 4000;
  for (int t = 0; t < trials; ++t) {
    std::vector<float> p(n), g(n), m(n), v(n);
    const double sp = log_uniform(-3, 36), sg = log_uniform(-3, 20), sm = log_uniform(-3, 24),
                 sv = log_uniform(-6, 36);
    std::normal_distribution<double> d;
    for (std::size_t i = 0; i < n; ++i) {
      p[i] = static_cast<float>(std::clamp(d(gen) * sp, -3e38, 3e38));
      g[i] = static_cast<float>(std::clamp(d(gen) * sg, -3e38, 3e38));
      m[i] = static_cast<float>(std::clamp(d(gen) * sm, -3e38, 3e38));
      v[i] = static_cast<float>(std::min(std::abs(d(gen)) * sv, 3e38));
    }
    if (t % 3 == 0)  // zero v and gradients on half the elements: the step is m / eps there
      for (std::size_t i = 1; i < n; i += 2) v[i] = g[i] = 0.0f;
    AdamWParams hp{.lr = static_cast<float>(log_uniform(-6, 12)),
                   .beta1 = static_cast<float>(std::uniform_real_distribution<double>(0, 0.999)(gen)),
                   .beta2 = static_cast<float>(std::uniform_real_distribution<double>(0, 0.9999)(gen)),
                   .eps = static_cast<float>(log_uniform(-16, 0)),
                   .weight_decay = static_cast<float>(log_uniform(-3, 1)),
                   .decoupled = gen() % 2 == 0};
    const int step = 1 + static_cast<int>(gen() % 1000);
    const float scale = static_cast<float>(std::uniform_real_distribution<double>(0.01, 1)(gen));
    AdamWStateBound b;
    double sumsq = 0;
    for (std::size_t i = 0; i < n; ++i) {
      b.abs_p = std::max(b.abs_p, std::abs(p[i]));
      b.abs_m = std::max(b.abs_m, std::abs(m[i]));
      b.v = std::max(b.v, v[i]);
      sumsq += double(g[i]) * g[i];
    }
    const std::size_t bad =
        adamw_nonfinite_count(p.data(), g.data(), m.data(), v.data(), seg, n, step, hp, scale);
    nonfinite += bad > 0 ? 1 : 0;
    if (!adamw_update_stays_finite(b, std::sqrt(sumsq), step, hp, scale)) continue;
    ++proven;
    ASSERT_EQ(bad, 0u) << "trial " << t;
  }
  EXPECT_GT(proven, trials / 10);
  EXPECT_GT(nonfinite, trials / 10);

  const AdamWStateBound usual{.abs_p = 2.0f, .abs_m = 0.1f, .v = 0.01f};
  EXPECT_TRUE(adamw_update_stays_finite(usual, 5.0, 1, {}, 1.0f));
  EXPECT_FALSE(adamw_update_stays_finite(usual, 5.0, 1, {.eps = 0.0f}, 1.0f));
  EXPECT_FALSE(adamw_update_stays_finite({.abs_p = 2.0f, .v_min = -1.0f}, 5.0, 1, {}, 1.0f));
  EXPECT_FALSE(adamw_update_stays_finite(usual, 1e20, 1, {}, 1.0f));  // g^2 near FLT_MAX
  EXPECT_FALSE(adamw_update_stays_finite(usual, std::numeric_limits<double>::infinity(), 1, {}, 1.0f));
}

TEST(LrSchedule, WarmupCosineFloor) {
  LrSchedule s{.max_lr = 1.0f, .min_lr = 0.1f, .warmup_steps = 4, .decay_steps = 14};
  EXPECT_FLOAT_EQ(lr_at(s, 0), 0.25f);
  EXPECT_FLOAT_EQ(lr_at(s, 3), 1.0f);
  EXPECT_FLOAT_EQ(lr_at(s, 4), 1.0f);
  EXPECT_NEAR(lr_at(s, 9), 0.55f, 1e-6);  // half way: midpoint of max and min
  EXPECT_FLOAT_EQ(lr_at(s, 14), 0.1f);
  EXPECT_FLOAT_EQ(lr_at(s, 1000), 0.1f);
  for (int i = 4; i < 14; ++i) EXPECT_GE(lr_at(s, i), lr_at(s, i + 1));
}

TEST(GradClip, SumOfSquaresAndScale) {
  auto x = randn(200003, 3);
  set_parallel_threads(2);
  const double fast = sum_of_squares(x.data(), x.size());
  set_parallel_threads(1);
  EXPECT_EQ(fast, sum_of_squares(x.data(), x.size())) << "independent of the thread count";
  EXPECT_NEAR(fast, sum_of_squares_ref(x.data(), x.size()), 1e-9 * fast);
  EXPECT_EQ(sum_of_squares(x.data(), 0), 0.0);
  // Sum over shards equals the whole.
  EXPECT_NEAR(sum_of_squares(x.data(), 1000) + sum_of_squares(x.data() + 1000, x.size() - 1000), fast,
              1e-9 * fast);
  EXPECT_FLOAT_EQ(clip_scale(0.5, 1.0f), 1.0f);
  EXPECT_NEAR(clip_scale(4.0, 1.0f), 0.25f, 1e-6);
  EXPECT_FLOAT_EQ(clip_scale(4.0, 0.0f), 1.0f);
}

}  // namespace
}  // namespace tz
