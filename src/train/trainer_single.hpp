// The single-process reference trainer: one Gpt over the whole flat buffers (ResidentParams), with
// gradient accumulation, global-norm clipping, the warmup + cosine schedule and AdamW. The sharded
// engine's tests compare their losses against it, and the model benchmark times its step (`tierzero
// train` always runs the sharded engine, a world of one included).
// One step: zero grads; for k < grad_accum: forward + backward(grad_scale = 1 / grad_accum) on the next
// micro-batch; norm = sqrt(sum of squares of all grads); lr = lr_at(step); AdamW with the clip scale.
// To stand in for an N-rank run with micro-batch B, feed it batch N B from
// DataLoader::union_of_ranks (rank-ordered rows; the mean loss over N B rows equals the ranks' mean).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "data/batch_fn.hpp"
#include "device/cpu/adamw.hpp"
#include "device/decay_segment.hpp"
#include "model/gpt.hpp"
#include "optim/lr_schedule.hpp"

namespace tz {

struct TrainOptions {
  int batch = 8;       // B, sequences per micro-batch
  int seq = 128;       // T
  int grad_accum = 1;  // micro-batches per optimizer step
  AdamWParams adamw;   // lr is taken from `schedule` each step
  LrSchedule schedule;
  float grad_clip = 1.0f;     // max global norm; <= 0 disables clipping
  std::uint64_t seed = 1337;  // initialisation (gpt2_init) and data order
  int threads = 1;
  bool recompute = false;
  bool profile = false;         // the model sums its layer times (model().profile())
  bool fuse_epilogues = false;  // GptOptions::fuse_epilogues (off by default, as there)
};

struct StepRecord {
  int step = 0;          // 0-based
  float loss = 0;        // mean over the step's grad_accum x B x T positions
  double grad_norm = 0;  // global norm before clipping
  float lr = 0;
  double seconds = 0;            // wall time of the step
  double optimizer_seconds = 0;  // of which: zeroing the gradients, their norm and AdamW
  double tokens_per_s = 0;
  double gflops = 0;  // training_step_flops / seconds / 1e9
};

class SingleTrainer {
 public:
  SingleTrainer(const GptConfig& config, const TrainOptions& options);

  StepRecord step(const BatchFn& next_batch);

  const ParameterLayout& layout() const { return model_.layout(); }
  Gpt& model() { return model_; }
  std::span<float> params() { return params_; }
  std::span<const float> grads() const { return grads_; }
  int steps_done() const { return step_; }

 private:
  TrainOptions options_;
  Gpt model_;
  std::vector<float> params_, grads_, m_, v_;
  std::vector<DecaySegment> segments_;
  std::vector<std::int32_t> inputs_, targets_;
  int step_ = 0;
};

// Runs `steps` steps over a DataLoader(tokens, B, T, rank 0, world 1, seed); calls on_step after each.
std::vector<StepRecord> train_single(const GptConfig& config, std::span<const std::int32_t> tokens, int steps,
                                     const TrainOptions& options,
                                     const std::function<void(const StepRecord&)>& on_step = {});

}  // namespace tz
