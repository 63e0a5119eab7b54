// AdamW (fast vs fp64 reference, slice independence, decay only where the table says), the schedule
// and the clipping pieces.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "model/parameter_layout.hpp"
#include "model/thread_pool.hpp"
#include "optim/adamw.hpp"
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
  const auto all = l.decay_segments(0, n);
  set_kernel_threads(2);
  for (int step = 1; step <= 5; ++step) {
    auto g = randn(n, 100 + step);
    adamw_update(p_fast.data(), g.data(), m1.data(), v1.data(), all, n, step, hp, 0.5f);
    adamw_update_ref(p_ref.data(), g.data(), m2.data(), v2.data(), all, n, step, hp, 0.5f);
    // The same update in three uneven shards, as the engine runs it.
    const std::size_t cuts[] = {0, 517, 518, n};
    for (int s = 0; s < 3; ++s) {
      const std::size_t o = cuts[s], k = cuts[s + 1] - cuts[s];
      adamw_update(p_sliced.data() + o, g.data() + o, m3.data() + o, v3.data() + o, l.decay_segments(o, k), k,
                   step, hp, 0.5f);
    }
  }
  set_kernel_threads(1);
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
  adamw_update(p.data(), g.data(), m.data(), v.data(), l.decay_segments(0, n), n, 1,
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
  set_kernel_threads(2);
  const double fast = sum_of_squares(x.data(), x.size());
  set_kernel_threads(1);
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
