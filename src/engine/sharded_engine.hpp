// The sharded training engine: trains the GPT model under any partition plan on a Mesh (DESIGN
// sections 3-4). One step:
//   1. per micro-batch: forward and backward through EngineParamSource, which gathers each range's
//      weights just in time (prefetching the next ones) and reduces each range's gradient into the G
//      shard as soon as it is final; gradients are scaled by 1 / (accumulation x world) so that the
//      sums across ranks are the mean over the global batch;
//   2. step boundary: G shard -> O shard (reduce-scatter over (tG, tO]), all-reduce across the
//      replicas of O (tiers above tO), the global gradient norm from the O shards (each element
//      counted once), a world-wide agreement on non-finite values (all ranks skip together), AdamW
//      with clipping on the O shard in fp32, and the refresh of the W shards from the new master
//      weights (all-gather over (tW, tO]); then the loss is averaged over the world.
// Every collective it issues is one of the plan's StepSchedule (plan/step_schedule.hpp), so the
// traffic ledger of a step equals StepSchedule::bytes_per_tier() exactly (tested).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/mesh.hpp"
#include "engine/engine_param_source.hpp"
#include "engine/sharded_state.hpp"
#include "model/gpt.hpp"
#include "model/trainer_single.hpp"
#include "optim/adamw.hpp"
#include "optim/lr_schedule.hpp"
#include "plan/memory_plan.hpp"
#include "plan/step_schedule.hpp"

namespace tz {

struct EngineOptions {
  int seq = 128;  // T; the micro-batch size and accumulation come from the plan's options
  AdamWParams adamw;
  LrSchedule schedule;
  float grad_clip = 1.0f;  // <= 0: no clipping
  std::uint64_t seed = 1337;
  int threads = 1;
  bool recompute = false;
  int max_nonfinite_steps = 3;  // skipped steps tolerated; one more stops every rank together
  // Fault injection for tests: on this rank at this step, a NaN is written into the gradient.
  int inject_nan_step = -1;
  int inject_nan_rank = -1;
};

struct EngineStep {
  int step = 0;
  float loss = 0;        // mean over the global batch of this step
  double grad_norm = 0;  // global norm before clipping
  float lr = 0;
  bool skipped = false;  // non-finite loss or norm somewhere: no update was made
  double seconds = 0;
  double tokens_per_s = 0;  // global tokens (all ranks) per second
  double gflops = 0;        // this rank's model FLOPs per second / 1e9
  double exposed_gather_s = 0;
  std::map<std::string, TierTraffic> traffic;  // this rank's bytes per tier during the step
};

// Bytes this rank allocated, by kind (the memory plan predicts the state part exactly).
struct EngineMemory {
  std::size_t w_fwd = 0, w_bwd = 0, grad = 0, optim = 0;
  std::size_t gather_buffers = 0, grad_buffers = 0, boundary_buffers = 0, activations = 0;
  std::size_t states() const { return w_fwd + w_bwd + grad + optim; }
  std::size_t total() const {
    return states() + gather_buffers + grad_buffers + boundary_buffers + activations;
  }
};

class ShardedEngine {
 public:
  // `plan` is validated against the mesh's topology and world; the model is initialised from `seed`
  // exactly as a single process would be.
  ShardedEngine(Mesh& mesh, const GptConfig& config, const PartitionPlan& plan, const EngineOptions& options);

  // One optimizer step over plan.options().grad_accum_steps micro-batches of (B, T) from next_batch.
  EngineStep step(const BatchFn& next_batch);

  const ShardLayout& layout() const { return *layout_; }
  const StepSchedule& schedule() const { return *schedule_; }
  const ParameterLayout& params() const { return model_.layout(); }
  MemoryPlan predicted_memory() const;
  EngineMemory allocated_memory() const;
  int skipped_steps() const { return skipped_; }
  int steps_done() const { return step_; }

  // The fp32 master weights as one flat, unpadded buffer (model layout), on every rank. Collective.
  std::vector<float> gather_master_params();

 private:
  void all_reduce_scalar(double* value, TierSet tiers);
  void boundary(EngineStep& out, double local_loss);

  Mesh& mesh_;
  EngineOptions options_;
  Gpt model_;
  std::unique_ptr<ShardLayout> layout_;
  std::unique_ptr<StepSchedule> schedule_;
  std::unique_ptr<ShardedState> state_;
  std::unique_ptr<EngineParamSource> source_;
  std::vector<float> o_grad_;  // gradient of the O shard when G and O differ
  WeightBuffer refresh_;       // master weights in the compute dtype, to be gathered into W
  std::vector<std::int32_t> inputs_, targets_;
  int step_ = 0;
  int skipped_ = 0;
};

}  // namespace tz
