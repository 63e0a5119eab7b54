// Adam with L2 weight decay (DeepSpeed's "Adam" with adam_w_mode false, torch.optim.Adam): the decay
// enters the gradient, g = grad * scale + wd * p, and there is no decoupled step. Fast against the
// fp64 reference, and one step against the formula.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "device/cpu/adamw.hpp"
#include "engine/decay_segments.hpp"
#include "model/parameter_layout.hpp"

namespace tz {
namespace {

constexpr double kAdamL2VsRef = 1e-5;

TEST(AdamL2, MatchesReference) {
  ParameterLayout l({.n_layer = 2, .n_embd = 12, .n_head = 3, .n_positions = 9, .vocab_size = 31});
  const std::size_t n = l.total_numel();
  std::mt19937 gen(3);
  std::normal_distribution<float> d;
  std::vector<float> p(n);
  for (auto& x : p) x = d(gen);
  auto q = p;
  std::vector<float> m1(n, 0), v1(n, 0), m2(n, 0), v2(n, 0), g(n);
  const AdamWParams hp{.lr = 1e-2f, .weight_decay = 0.3f, .decoupled = false};
  const auto segs = decay_segments(l, 0, n);
  for (int step = 1; step <= 4; ++step) {
    for (auto& x : g) x = d(gen);
    adamw_update(p.data(), g.data(), m1.data(), v1.data(), segs, n, step, hp, 0.7f);
    adamw_update_ref(q.data(), g.data(), m2.data(), v2.data(), segs, n, step, hp, 0.7f);
  }
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i)
    worst = std::max(worst, std::abs(double(p[i]) - q[i]) / (std::abs(q[i]) + 1e-3));
  EXPECT_LT(worst, kAdamL2VsRef);
}

TEST(AdamL2, OneStepFollowsTheFormula) {
  // Step 1 from zero state: m = (1-b1) g', v = (1-b2) g'^2, p -= lr m/(1-b1) / (sqrt(v/(1-b2)) + eps)
  // = p - lr sign(g') (up to eps), with g' = g + wd p where decayed. A zero gradient still moves a
  // decayed weight (its L2 term), unlike AdamW's decoupled step, which would give p (1 - lr wd).
  std::vector<float> p = {2.0f, 2.0f}, g = {0.0f, 0.0f}, m(2, 0), v(2, 0);
  std::vector<DecaySegment> seg = {{0, 1, true}, {1, 1, false}};
  adamw_update(p.data(), g.data(), m.data(), v.data(), seg, 2, 1,
               {.lr = 0.1f, .weight_decay = 0.5f, .decoupled = false});
  EXPECT_NEAR(p[0], 1.9f, 1e-6);  // g' = 0.5 * 2 = 1 > 0: moves by lr
  EXPECT_FLOAT_EQ(p[1], 2.0f);    // not decayed, zero gradient: no move (m = 0)
  EXPECT_FLOAT_EQ(m[0], 0.1f);    // (1 - 0.9) g'
}

}  // namespace
}  // namespace tz
