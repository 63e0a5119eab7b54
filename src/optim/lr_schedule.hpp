// Learning rate as a pure function of the optimizer step s (0-based, the step about to be taken).
//
// cosine (tierzero's own, nanoGPT's get_lr):
//   s < warmup:            max_lr * (s + 1) / warmup
//   warmup <= s < decay:   min_lr + 0.5 (1 + cos(pi r)) (max_lr - min_lr),  r = (s - warmup) / (decay -
//   warmup) s >= decay:            min_lr
//
// DeepSpeed's three warmup schedules (deepspeed.runtime.lr_schedules), exactly, with i = s playing
// DeepSpeed's last_batch_iteration and W = max(2, warmup_steps) as DeepSpeed clamps it:
//   warmup fraction  g(i) = ln(i + 1) / ln(W)   (warmup_type log)   or   i / W   (linear)
//   WarmupLR:        i < W: min_lr + (max_lr - min_lr) g(i);  else max_lr
//   WarmupDecayLR:   i < W: as WarmupLR;  else min_lr + (max_lr - min_lr) max(0, (T - i) / max(1, T - W))
//   WarmupCosineLR:  ratio(i) = warmup_min_ratio + (1 - warmup_min_ratio) g(i)         for i < W
//                    ratio(i) = max(0, c + (1 - c) (1 + cos(pi (i - W + 1) / (T - W))) / 2)  else,
//                    c = cos_min_ratio; lr = max_lr ratio(i)
// with T = decay_steps (DeepSpeed's total_num_steps). Like DeepSpeed's, WarmupCosineLR keeps following
// its cosine past T (it rises again) and WarmupDecayLR stays at min_lr. DeepSpeed's engine steps its
// scheduler after each optimizer step, so its step s runs at the value of iteration s - 1 (and its
// first at the scheduler's initial lr); tierzero's step s runs at iteration s (docs/deepspeed.md).
#pragma once

#include <string>
#include <string_view>

namespace tz {

enum class LrScheduleKind { cosine, warmup, warmup_decay, warmup_cosine };
enum class WarmupType { log, linear };

// "cosine", "WarmupLR", "WarmupDecayLR", "WarmupCosineLR".
std::string_view lr_schedule_name(LrScheduleKind kind);

struct LrSchedule {
  float max_lr = 6e-4f;    // the peak: cosine and WarmupCosineLR the optimizer's lr; else warmup_max_lr
  float min_lr = 6e-5f;    // cosine: the floor; WarmupLR, WarmupDecayLR: warmup_min_lr
  int warmup_steps = 0;    // warmup_num_steps
  int decay_steps = 1000;  // cosine: step at which the floor is reached; DeepSpeed: total_num_steps
  LrScheduleKind kind = LrScheduleKind::cosine;
  WarmupType warmup_type = WarmupType::log;  // DeepSpeed kinds
  float warmup_min_ratio = 0;                // WarmupCosineLR
  float cos_min_ratio = 1e-4f;               // WarmupCosineLR
};

float lr_at(const LrSchedule& schedule, int step);

}  // namespace tz
