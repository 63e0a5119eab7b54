#include "optim/lr_schedule.hpp"

#include <algorithm>
#include <cmath>

namespace tz {
namespace {

// DeepSpeed's warmup fraction g(i) over W = max(2, warmup) steps.
double warmup_fraction(const LrSchedule& s, int i, int W) {
  if (s.warmup_type == WarmupType::log) return std::log(static_cast<double>(i) + 1.0) / std::log(double(W));
  return static_cast<double>(i) / static_cast<double>(W);
}

float cosine(const LrSchedule& s, int step) {
  if (step < s.warmup_steps)
    return s.max_lr * static_cast<float>(step + 1) / static_cast<float>(s.warmup_steps);
  if (step >= s.decay_steps) return s.min_lr;
  const double r =
      static_cast<double>(step - s.warmup_steps) / static_cast<double>(s.decay_steps - s.warmup_steps);
  return static_cast<float>(s.min_lr + 0.5 * (1.0 + std::cos(M_PI * r)) * (s.max_lr - s.min_lr));
}

}  // namespace

std::string_view lr_schedule_name(LrScheduleKind kind) {
  switch (kind) {
    case LrScheduleKind::cosine:
      return "cosine";
    case LrScheduleKind::warmup:
      return "WarmupLR";
    case LrScheduleKind::warmup_decay:
      return "WarmupDecayLR";
    case LrScheduleKind::warmup_cosine:
      return "WarmupCosineLR";
  }
  return "?";
}

float lr_at(const LrSchedule& s, int step) {
  if (s.kind == LrScheduleKind::cosine) return cosine(s, step);
  const int i = step, W = std::max(2, s.warmup_steps), T = s.decay_steps;
  const double lo = s.min_lr, hi = s.max_lr;
  switch (s.kind) {
    case LrScheduleKind::warmup:
      return static_cast<float>(i < W ? lo + (hi - lo) * warmup_fraction(s, i, W) : hi);
    case LrScheduleKind::warmup_decay: {
      if (i < W) return static_cast<float>(lo + (hi - lo) * warmup_fraction(s, i, W));
      const double g = std::max(0.0, double(T - i) / std::max(1.0, double(T - W)));
      return static_cast<float>(lo + (hi - lo) * g);
    }
    case LrScheduleKind::warmup_cosine: {
      double ratio = 0;
      if (i < W) {
        ratio = s.warmup_min_ratio + (1.0 - s.warmup_min_ratio) * warmup_fraction(s, i, W);
      } else {
        const double c = s.cos_min_ratio;
        const double x = double(i - W + 1) / double(T - W);
        ratio = std::max(0.0, c + (1.0 - c) * (1.0 + std::cos(M_PI * x)) / 2.0);
      }
      return static_cast<float>(hi * ratio);
    }
    case LrScheduleKind::cosine:
      break;
  }
  return cosine(s, step);
}

}  // namespace tz
