#include "train/trainer_single.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.hpp"
#include "data/data_loader.hpp"
#include "engine/decay_segments.hpp"
#include "model/flops.hpp"
#include "model/gpt_init.hpp"
#include "optim/grad_clip.hpp"

namespace tz {

SingleTrainer::SingleTrainer(const GptConfig& config, const TrainOptions& options)
    : options_(options),
      model_(config, options.batch, options.seq,
             {.threads = options.threads,
              .recompute = options.recompute,
              .profile = options.profile,
              .fuse_epilogues = options.fuse_epilogues}) {
  if (options.grad_accum < 1)
    fail_input("train: gradient_accumulation_steps must be >= 1, got {}", options.grad_accum);
  const std::size_t n = model_.layout().total_numel();
  params_.resize(n);
  grads_.assign(n, 0.0f);
  m_.assign(n, 0.0f);
  v_.assign(n, 0.0f);
  gpt2_init(params_.data(), model_.layout(), options.seed);
  segments_ = decay_segments(model_.layout(), 0, n);
  inputs_.resize(static_cast<std::size_t>(options.batch) * options.seq);
  targets_.resize(inputs_.size());
}

StepRecord SingleTrainer::step(const BatchFn& next_batch) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  std::fill(grads_.begin(), grads_.end(), 0.0f);
  const auto t_zeroed = Clock::now();
  ResidentParams source(model_.layout(), params_.data(), grads_.data());
  double loss = 0;
  for (int k = 0; k < options_.grad_accum; ++k) {
    next_batch(inputs_.data(), targets_.data());
    loss += model_.forward(source, inputs_.data(), targets_.data());
    model_.backward(source, 1.0f / static_cast<float>(options_.grad_accum));
  }
  const auto t_model = Clock::now();
  StepRecord r;
  r.step = step_;
  r.loss = static_cast<float>(loss / options_.grad_accum);
  r.grad_norm = std::sqrt(sum_of_squares(grads_.data(), grads_.size()));
  r.lr = lr_at(options_.schedule, step_);
  AdamWParams hp = options_.adamw;
  hp.lr = r.lr;
  adamw_update(params_.data(), grads_.data(), m_.data(), v_.data(), segments_, params_.size(), step_ + 1, hp,
               clip_scale(r.grad_norm, options_.grad_clip));
  ++step_;
  const auto t1 = Clock::now();
  r.seconds = std::chrono::duration<double>(t1 - t0).count();
  r.optimizer_seconds = std::chrono::duration<double>((t_zeroed - t0) + (t1 - t_model)).count();
  const double tokens = static_cast<double>(options_.grad_accum) * options_.batch * options_.seq;
  r.tokens_per_s = tokens / r.seconds;
  r.gflops = options_.grad_accum * training_step_flops(model_.config(), options_.batch, options_.seq) /
             r.seconds / 1e9;
  return r;
}

std::vector<StepRecord> train_single(const GptConfig& config, std::span<const std::int32_t> tokens, int steps,
                                     const TrainOptions& options,
                                     const std::function<void(const StepRecord&)>& on_step) {
  SingleTrainer trainer(config, options);
  DataLoader loader(tokens, options.batch, options.seq, 0, 1, options.seed);
  std::vector<StepRecord> out;
  for (int s = 0; s < steps; ++s) {
    out.push_back(trainer.step([&](std::int32_t* in, std::int32_t* tg) { loader.next(in, tg); }));
    if (on_step) on_step(out.back());
  }
  return out;
}

}  // namespace tz
