// The engine's ParamSource (model/param_source.hpp): it serves the model's range acquisitions from
// gathered shards and sends each range's gradient to its G shard as soon as it is final.
//
// Gathers. The model acquires ranges in a fixed order (model/range_schedule.hpp); forward position p
// uses gather buffer p mod K, K = 1 + prefetch_depth; backward position j uses buffer
// (nF - 1 - j) mod K, a descending ring, so the first `reused` backward positions find the forward's
// last gathered ranges still in their buffers (the step schedule counts no traffic for them; see
// plan/step_schedule.hpp). Acquiring position i issues the gathers of positions i..i+depth of the
// same pass that are not issued yet, so the next ranges travel (and, with qwZ, are quantized and
// dequantized on the host stream) while this one computes; every buffer a gather writes was released
// before (only one range is acquired at a time).
//   forward  all-gather of the W_fwd shard over W_fwd's domain (qwZ INT8 when enabled), issued
//            behind the range's weight refresh of the previous step (begin_forward's Works), so
//            the refresh is waited for where the range is first used; with hpZ, the W_bwd secondary
//            shard is then copied out of the gathered range (no traffic)
//   backward all-gather of the W_bwd secondary shard over its domain, or of W_fwd as in forward
// A replicated W is read from the local shard (after its refresh). The model reads the gather buffer
// itself: in fp32 mode all of it; in bf16 mode its weight matrices, which the matrix products widen
// as they pack them, while the range's other tensors (LayerNorm, biases, wpe: a small part) are
// widened into one fp32 compute buffer (model/param_source.hpp).
//
// Gradients. grad_buffer(r) hands out a zeroed fp32 full-range buffer from a small pool (or, when G
// is replicated, the G buffer itself: accumulation in place; in bf16 mode the narrowing into the
// send buffer clears it for its next range in the same pass); grads_ready(r) starts the
// reduce-scatter over G's domain (in the compute dtype, or qgZ INT4) into a shard-sized buffer and,
// behind it on the gradient host stream (quant/host_stream.hpp), the addition of the result into the
// fp32 G shard. On the step's last micro-batch that addition makes the range's G shard final, and
// the engine's on_grad_final(range, work) hears of it at once (with the Work after which it holds),
// to start the range's boundary reduction during the backward. finish_backward() waits for all.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "comm/mesh.hpp"
#include "core/quant_format.hpp"
#include "device/kernels.hpp"
#include "engine/collective_issuer.hpp"
#include "engine/sharded_state.hpp"
#include "model/param_source.hpp"

namespace tz {

class EngineParamSource final : public ParamSource {
 public:
  // Called on the last micro-batch when a range's G shard is final once `ready` completes.
  using GradFinal = std::function<void(int range, const Work& ready)>;

  EngineParamSource(ShardedState& state, const ParameterLayout& params, CollectiveIssuer& issuer,
                    std::vector<int> forward_order, std::vector<int> backward_order, int reused_in_backward,
                    GradFinal on_grad_final);
  ~EngineParamSource() override;

  // `weights_ready[r]`: the Work after which range r's W_fwd shard holds the current weights (the
  // previous step's refresh); empty: all current.
  void begin_forward(const std::vector<Work>& weights_ready);
  // `last`: the step's last micro-batch (its gradients make the G shards final).
  void begin_backward(bool last);
  // Waits for every gradient reduction of this backward (and its addition into the G shard).
  void finish_backward();
  // Fault injection for tests: `value` goes into this rank's next gradient sent (the first element
  // of `range`, or with -1 of the first non-empty range reported ready).
  void poison_next_gradient(float value, int range = -1) {
    poison_ = true;
    poison_value_ = value;
    poison_range_ = range;
  }

  AcquiredParams acquire_params(int range) override;
  void release_params(int range) override;
  float* grad_buffer(int range) override;
  void grads_ready(int range) override;

  // Working memory this source allocated (gather ring, compute buffer, gradient pool), in bytes.
  std::size_t gather_buffer_bytes() const;
  std::size_t grad_buffer_bytes() const;
  // Seconds the model waited in acquire_params for a gather to arrive (not hidden by prefetch).
  double exposed_gather_seconds() const { return exposed_gather_s_; }
  // Seconds the forward waited in acquire_params for a range's weight refresh (not hidden).
  double exposed_refresh_seconds() const { return exposed_refresh_s_; }
  // Non-finite quantization blocks seen by qwZ/qgZ on this rank (of the collectives completed).
  std::size_t nonfinite_quant_blocks() const { return nonfinite_blocks_; }

 private:
  struct Acquisition {
    int range = 0;
    bool gather = true;  // false: reused from the forward pass's buffer
    int buffer = 0;
  };
  struct GradSlot {
    int range = -1;
    DeviceBuffer<float> full;     // (padded range) fp32, what the model accumulates into
    std::size_t dirty_numel = 0;  // full[i] is 0 for every i >= dirty_numel
    WeightBuffer send;            // compute-dtype copy sent in bf16 mode
    WeightBuffer shard;           // compute-dtype (or fp32 for qgZ) reduced shard
    QuantStats stats;             // of the reduction, complete once `work` is
    Work work;                    // the reduction and the addition into the G shard
    bool in_flight = false;
  };

  void issue_gather(int pos);
  void wait_gather(int pos);
  void wait_refresh(int range);
  GradSlot& free_slot();
  void complete(GradSlot& slot);
  Kernels& kernels() { return state_.backend().kernels(); }

  ShardedState& state_;
  const ShardLayout& layout_;
  const ParameterLayout& params_;
  CollectiveIssuer& issuer_;
  const DType dtype_;
  const int depth_;
  const bool qgz_;
  std::vector<Acquisition> forward_, backward_;
  GradFinal on_grad_final_;

  bool in_backward_ = false;
  bool last_ = false;
  bool poison_ = false;
  float poison_value_ = 0;
  int poison_range_ = -1;
  const std::vector<Work>* weights_ready_ = nullptr;
  std::size_t cursor_ = 0;  // next acquisition of the current pass
  std::size_t issued_ = 0;  // gathers issued for positions < issued_ of the current pass
  std::vector<WeightBuffer> ring_;
  std::vector<Work> ring_work_;
  std::vector<QuantStats> ring_stats_;
  struct Run {
    std::size_t offset = 0, numel = 0;  // within a range, elements
  };
  DeviceBuffer<float> compute_;  // fp32 copy of the acquired range's non-matrix tensors (bf16 mode)
  std::vector<std::vector<Run>> fp32_runs_;  // per range: what compute_ holds (bf16 mode)
  std::vector<std::unique_ptr<GradSlot>> slots_;
  std::deque<GradSlot*> in_flight_;
  double exposed_gather_s_ = 0;
  double exposed_refresh_s_ = 0;
  std::size_t nonfinite_blocks_ = 0;
};

}  // namespace tz
