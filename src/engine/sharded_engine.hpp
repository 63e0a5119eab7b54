// The sharded training engine: trains the GPT model under any partition plan on a Mesh (docs/engine.md). One
// step:
//   1. per micro-batch: forward and backward through EngineParamSource, which gathers each range's
//      weights just in time (prefetching the next ones) and reduces each range's gradient into the G
//      shard as soon as it is final; gradients are scaled by 1 / (accumulation x world) so that the
//      sums across ranks are the mean over the global batch. After the last forward the loss starts
//      its all-reduce over the world;
//   2. pipelined step boundary: on the last micro-batch each range's G -> O reduce-scatter over
//      (tG, tO] and its all-reduce across the replicas of O (tiers above tO) start the moment its G
//      shard is final, during the backward; once every range is reduced, the global gradient norm
//      (from the O shards, each element counted once) is agreed, then the non-finite vote: every rank
//      counts where it saw inf/NaN this step (its loss, the norm, the blocks qwZ/qgZ quantized, the
//      elements AdamW would make non-finite, checked before anything is written) and the counts are
//      summed over the world, so every rank skips together when any is non-zero (and stops after
//      max_nonfinite_steps); else AdamW runs range by range on the O shard (clipping
//      by the global norm) and each range's refresh of the W shards from its new master weights
//      (all-gather over (tW, tO]) is issued at once, left in flight: the next step's forward waits
//      for it where it first uses the range, so it overlaps that step's compute.
// Every collective it issues is one of the plan's StepSchedule (plan/step_schedule.hpp), in the
// schedule's order, so the traffic ledger of a step equals StepSchedule::bytes_per_tier() exactly
// (tested), and so does the issue order (EngineOptions::trace_collectives).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "comm/mesh.hpp"
#include "core/cpu_terms.hpp"
#include "data/batch_fn.hpp"
#include "device/adamw_args.hpp"
#include "device/kernels.hpp"
#include "engine/collective_issuer.hpp"
#include "engine/engine_param_source.hpp"
#include "engine/sharded_state.hpp"
#include "engine/step_trace.hpp"
#include "model/gpt.hpp"
#include "optim/lr_schedule.hpp"
#include "plan/memory_plan.hpp"
#include "plan/step_graph.hpp"
#include "plan/step_schedule.hpp"

namespace tz {

struct EngineOptions {
  int seq = 128;  // T; the micro-batch size and accumulation come from the plan's options
  // Where the model state lives and the engine's kernels run (device/backend.hpp).
  DeviceKind device = DeviceKind::cpu;
  AdamWParams adamw;
  LrSchedule schedule;
  float grad_clip = 1.0f;  // <= 0: no clipping
  std::uint64_t seed = 1337;
  int threads = 1;
  bool recompute = false;
  int max_nonfinite_steps = 3;  // skipped steps tolerated; one more stops every rank together
  // Fault injection for tests: on this rank at this step, inject_grad_value (NaN unless set; a huge
  // finite value overflows the optimizer instead) is written into the gradient (the first one the
  // last backward reports ready) ...
  int inject_nan_step = -1;
  int inject_nan_rank = -1;
  float inject_grad_value = std::numeric_limits<float>::quiet_NaN();
  int inject_grad_range = -1;  // the range whose gradient gets it; -1: the first reported ready
  // ... or a NaN into the loss, the gradients staying finite ...
  int inject_nan_loss_step = -1;
  int inject_nan_loss_rank = -1;
  // ... or a NaN into the optimizer state (the first Adam m element of this rank's O shard) before
  // the update; it stays, so every later step is non-finite too.
  int inject_nan_optim_step = -1;
  int inject_nan_optim_rank = -1;
  // Record every scheduled collective as it is issued (EngineStep::issued), and every node of the
  // step graph as it runs (EngineStep::executed), for tests of the order.
  bool trace_collectives = false;
};

// The non-finite vote of a step: per place, this step's count on each rank, summed over the world
// (the same on every rank; the step is skipped when any is non-zero).
struct NonfiniteVote {
  std::uint64_t loss_ranks = 0;    // ranks whose loss (mean over their micro-batches) was inf/NaN
  std::uint64_t grad_ranks = 0;    // ranks whose global gradient norm was inf/NaN
  std::uint64_t quant_blocks = 0;  // blocks qwZ/qgZ quantized holding inf/NaN
  std::uint64_t optim_values = 0;  // O-shard elements AdamW would leave with an inf/NaN weight, m or v
  bool any() const { return loss_ranks + grad_ranks + quant_blocks + optim_values > 0; }
  bool operator==(const NonfiniteVote&) const = default;
};

struct EngineStep {
  int step = 0;
  float loss = 0;        // mean over the global batch of this step
  double grad_norm = 0;  // global norm before clipping
  float lr = 0;
  bool skipped = false;  // the non-finite vote was non-zero: no update was made on any rank
  double seconds = 0;
  double tokens_per_s = 0;  // global tokens (all ranks) per second
  double gflops = 0;        // this rank's model FLOPs per second / 1e9
  double exposed_gather_s = 0;
  // The step boundary's time not hidden behind compute: from the end of the last micro-batch's
  // backward compute to the end of the step (the last gradient reductions, G -> O, the norm and
  // non-finite agreement, AdamW, the weight refresh), plus what this step's forward waited for the
  // previous step's weight refresh.
  double exposed_boundary_s = 0;
  std::size_t nonfinite_quant_blocks = 0;  // blocks qwZ/qgZ quantized with NaN/inf on this rank
  NonfiniteVote nonfinite;                 // where inf/NaN was seen, over the world
  // This rank's bytes per tier: of the collectives the step issued, as their plans' steps record
  // them in the traffic ledger (the last ones, the weight refresh, complete after step() returns).
  // Its seconds are the ledger's: the summed durations of the collective steps that completed on
  // this rank since the previous step ended (its refresh included, this step's not; evaluation's
  // collectives excluded).
  std::map<std::string, TierTraffic> traffic;
  // The same collectives by kind, as the ledger records them (bytes, ops, summed durations).
  std::map<std::string, TierTraffic> by_kind;
  std::vector<IssuedCollective> issued;  // in issue order, with EngineOptions::trace_collectives
  // The step graph's nodes in the order this rank ran them (StepTrace), with trace_collectives.
  std::vector<int> executed;
  // This rank's CPU time by term since the previous step ended (core/cpu_terms.hpp): its thread's,
  // and that of the work it handed to other threads (collectives, host tasks, kernel-pool chunks)
  // that ran since; the weight refresh a step leaves in flight lands in the next step. The wait
  // term's wall time is cpu.wait_wall_s. docs/engine.md "What the engine adds".
  CpuTermSeconds cpu;
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

// The fp32 optimizer states a checkpoint holds (the O shard): master weights, AdamW m and v.
enum class OptimValue { master, adam_m, adam_v };

// Reads saved values: fills out[0, n) with elements [offset, offset + n) of range `range` of `which`
// (offsets into the range's real elements, the same in every layout). Called by restore().
using StateReader =
    std::function<void(OptimValue which, int range, std::size_t offset, std::size_t n, float* out)>;

class ShardedEngine {
 public:
  // `plan` is validated against the mesh's topology and world; the model is initialised from `seed`
  // exactly as a single process would be.
  ShardedEngine(Mesh& mesh, const GptConfig& config, const PartitionPlan& plan, const EngineOptions& options);
  ~ShardedEngine();
  ShardedEngine(const ShardedEngine&) = delete;
  ShardedEngine& operator=(const ShardedEngine&) = delete;

  // One optimizer step over plan.options().grad_accum_steps micro-batches of (B, T) from next_batch.
  EngineStep step(const BatchFn& next_batch);
  // Evaluation: the mean loss of `batches` micro-batches of (B, T) from next_batch, forward only,
  // through the same weight gathers as training, averaged over the world (the same value on every
  // rank). Changes no training state (weights, optimizer, gradients, step count). Collective.
  float evaluate(const BatchFn& next_batch, int batches);

  const ShardLayout& layout() const { return *layout_; }
  const StepSchedule& schedule() const { return *schedule_; }
  // The step as a graph of operations (pipelined boundary): what step() runs, in its order.
  const StepGraph& graph() const { return *graph_; }
  const ParameterLayout& params() const { return model_.layout(); }
  MemoryPlan predicted_memory() const;
  EngineMemory allocated_memory() const;
  int skipped_steps() const { return skipped_; }
  int steps_done() const { return step_; }

  // The fp32 master weights as one flat, unpadded buffer (model layout), on every rank. Collective.
  std::vector<float> gather_master_params();

  // Checkpoint access (checkpoint/ saves and restores a run through these alone). This rank's O
  // shard of range r: its span in the padded range, and a host copy of elements [offset, offset + n)
  // of its real ones (span.valid_numel of them, the first of the span).
  ShardSpan optim_span(int range) const { return state_->span(ModelState::optim, range); }
  void read_optim_values(OptimValue which, int range, std::size_t offset, std::size_t n, float* out) const;
  // Replaces this rank's model state by a saved one: the O shard (master, m, v) and the weight shards
  // (W_fwd, and W_bwd with hpZ: the compute-dtype rounding of the master weights, exactly what the
  // last refresh wrote) from `read`, gradients zero, and the step and skipped-step counters; the next
  // step() continues the saved run. Local: no collective (W shards outside this rank's O shard are
  // read, not gathered).
  void restore(int steps_done, int skipped_steps, const StateReader& read);
  // Waits for the weight refresh step() leaves in flight (the next step's forward waits for it range
  // by range). The O state is final when step() returns; call this before reading or writing the
  // W shards from outside the engine. Not collective.
  void settle();

 private:
  // Starts range r's boundary reduction (G -> O, then across O's replicas) once `ready` is done.
  void start_boundary_reduce(int range, const Work& ready);
  void boundary(EngineStep& out, std::size_t quant_blocks);
  DevicePtr<float> o_grad(int range);
  Kernels& kernels() { return state_->backend().kernels(); }

  Mesh& mesh_;
  EngineOptions options_;
  Gpt model_;
  std::unique_ptr<ShardLayout> layout_;
  std::unique_ptr<StepSchedule> schedule_;
  std::unique_ptr<StepGraph> graph_;
  std::unique_ptr<StepTrace> trace_;
  std::unique_ptr<ShardedState> state_;
  std::unique_ptr<CollectiveIssuer> issuer_;
  std::unique_ptr<EngineParamSource> source_;
  DeviceBuffer<float> o_grad_;       // gradient of the O shard when G and O differ
  WeightBuffer refresh_;             // master weights in the compute dtype, to be gathered into W
  std::vector<Work> boundary_work_;  // per range: its O-shard gradient is final once done
  std::vector<Work> refresh_work_;   // per range: its W_fwd shard is current once done
  double local_loss_ = 0;
  // The step's scalars in device memory, as the collectives take them (a device-aware
  // communicator reads device buffers only): the loss sum (in flight during the last backward), the
  // grad norm's sum of squares, the non-finite vote, and evaluation's loss.
  static constexpr std::size_t kLossSlot = 0, kNormSlot = 1, kVoteSlot = 2,
                               kEvalLossSlot = kVoteSlot + kNonfiniteVoteCount,
                               kScalarSlots = kEvalLossSlot + 1;
  DeviceBuffer<double> scalars_;
  Work loss_work_;
  std::vector<std::int32_t> inputs_, targets_;
  int step_ = 0;
  int skipped_ = 0;
  // The bound of this rank's O shard as the last update wrote it; empty until an update has run or
  // after anything else wrote the state (restore, a fault injection). With it, a step whose update
  // provably stays finite skips the non-finite counting pass (adamw_update_stays_finite).
  std::optional<AdamWStateBound> optim_bound_;
  // The traffic ledger when the last step ended: a step reports what completed since (so every
  // collective lands in exactly one step, a refresh in the step after the one that issued it).
  TrafficSnapshot ledger_;
  // This rank's CPU time by term (shared with the threads that run its work), and its totals when
  // the last step ended.
  std::shared_ptr<CpuTermCounters> cpu_counters_ = std::make_shared<CpuTermCounters>();
  CpuTermSeconds cpu_at_last_step_;
};

}  // namespace tz
