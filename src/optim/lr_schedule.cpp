#include "optim/lr_schedule.hpp"

#include <cmath>

namespace tz {

float lr_at(const LrSchedule& s, int step) {
  if (step < s.warmup_steps)
    return s.max_lr * static_cast<float>(step + 1) / static_cast<float>(s.warmup_steps);
  if (step >= s.decay_steps) return s.min_lr;
  const double r =
      static_cast<double>(step - s.warmup_steps) / static_cast<double>(s.decay_steps - s.warmup_steps);
  return static_cast<float>(s.min_lr + 0.5 * (1.0 + std::cos(M_PI * r)) * (s.max_lr - s.min_lr));
}

}  // namespace tz
