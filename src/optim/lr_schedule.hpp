// Learning rate: linear warmup, then cosine decay to a floor (nanoGPT's get_lr), a pure function of
// the step (0-based, the step about to be taken):
//   step < warmup:            max_lr * (step + 1) / warmup
//   warmup <= step < decay:   min_lr + 0.5 (1 + cos(pi r)) (max_lr - min_lr),  r = (step - warmup) / (decay -
//   warmup) step >= decay:            min_lr
#pragma once

namespace tz {

struct LrSchedule {
  float max_lr = 6e-4f;
  float min_lr = 6e-5f;
  int warmup_steps = 0;
  int decay_steps = 1000;  // step at which the cosine reaches min_lr
};

float lr_at(const LrSchedule& schedule, int step);

}  // namespace tz
