// DeepSpeed's WarmupLR, WarmupDecayLR and WarmupCosineLR, value by value against their documented
// definitions written out here from deepspeed.runtime.lr_schedules (i = last_batch_iteration,
// W = max(2, warmup_num_steps), g = ln(i+1)/ln(W) or i/W), and tierzero's own cosine.
#include <gtest/gtest.h>

#include <cmath>

#include "optim/lr_schedule.hpp"

namespace tz {
namespace {

constexpr double kLrTol = 2e-7;  // relative: the schedule runs in double; inputs and result are floats

void expect_lr(const LrSchedule& s, int i, double expected) {
  EXPECT_NEAR(lr_at(s, i), expected, kLrTol * std::max(1e-12, std::abs(expected)) + 1e-12)
      << lr_schedule_name(s.kind) << " at iteration " << i;
}

TEST(DeepSpeedSchedules, WarmupLrLogAndLinear) {
  LrSchedule s{.max_lr = 1.0f, .min_lr = 0.1f, .warmup_steps = 10, .kind = LrScheduleKind::warmup};
  for (int i : {0, 1, 3, 9}) expect_lr(s, i, 0.1 + 0.9 * std::log(i + 1.0) / std::log(10.0));
  for (int i : {10, 11, 500}) expect_lr(s, i, 1.0);
  s.warmup_type = WarmupType::linear;
  for (int i : {0, 1, 3, 9}) expect_lr(s, i, 0.1 + 0.9 * i / 10.0);
  expect_lr(s, 10, 1.0);
}

TEST(DeepSpeedSchedules, WarmupStepsBelowTwoCountAsTwo) {
  // DeepSpeed: warmup_num_steps = max(2, warmup_num_steps).
  for (int w : {0, 1, 2}) {
    LrSchedule s{.max_lr = 2.0f,
                 .min_lr = 0.0f,
                 .warmup_steps = w,
                 .kind = LrScheduleKind::warmup,
                 .warmup_type = WarmupType::linear};
    expect_lr(s, 0, 0.0);
    expect_lr(s, 1, 1.0);
    expect_lr(s, 2, 2.0);
  }
}

TEST(DeepSpeedSchedules, WarmupDecayLr) {
  LrSchedule s{.max_lr = 1.0f,
               .min_lr = 0.1f,
               .warmup_steps = 10,
               .decay_steps = 20,
               .kind = LrScheduleKind::warmup_decay,
               .warmup_type = WarmupType::linear};
  expect_lr(s, 4, 0.1 + 0.9 * 0.4);
  // After warmup: gamma = max(0, (T - i) / max(1, T - W)).
  for (int i : {10, 15, 19, 20}) expect_lr(s, i, 0.1 + 0.9 * std::max(0.0, (20.0 - i) / 10.0));
  expect_lr(s, 35, 0.1);
  // T == W: the divisor max(1, T - W) is 1.
  LrSchedule t = s;
  t.decay_steps = 10;
  expect_lr(t, 10, 0.1);
}

TEST(DeepSpeedSchedules, WarmupCosineLr) {
  const double lr = double(3e-3f), wmr = double(0.2f), c = double(0.1f);
  LrSchedule s{.max_lr = float(lr),
               .warmup_steps = 5,
               .decay_steps = 20,
               .kind = LrScheduleKind::warmup_cosine,
               .warmup_type = WarmupType::log,
               .warmup_min_ratio = float(wmr),
               .cos_min_ratio = float(c)};
  auto warm = [&](int i) { return lr * (wmr + (1 - wmr) * std::log(i + 1.0) / std::log(5.0)); };
  auto cosine = [&](int i) {
    const double x = double(i - 5 + 1) / double(20 - 5);
    return lr * std::max(0.0, c + (1 - c) * (1 + std::cos(M_PI * x)) / 2);
  };
  for (int i : {0, 1, 2, 4}) expect_lr(s, i, warm(i));
  for (int i : {5, 6, 12, 19}) expect_lr(s, i, cosine(i));
  expect_lr(s, 19, lr * c);      // the last step of total_num_steps is at the floor
  expect_lr(s, 25, cosine(25));  // past it the cosine rises again, as DeepSpeed's does
  EXPECT_GT(lr_at(s, 25), lr_at(s, 19));
}

TEST(DeepSpeedSchedules, TierzeroCosineIsNanoGptsGetLr) {
  LrSchedule s{.max_lr = 1.0f, .min_lr = 0.1f, .warmup_steps = 4, .decay_steps = 14};
  expect_lr(s, 0, 0.25);
  expect_lr(s, 3, 1.0);
  expect_lr(s, 9, 0.1 + 0.5 * (1 + std::cos(M_PI * 5 / 10.0)) * 0.9);
  expect_lr(s, 14, 0.1);
}

}  // namespace
}  // namespace tz
