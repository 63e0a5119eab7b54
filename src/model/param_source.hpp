// How the model reaches its parameters and gradients: range by range, through a ParamSource, so the
// sharded engine can gather a range just before it is used and reduce-scatter its gradient as soon as
// it is final. Single-process training uses ResidentParams (the whole flat buffer in memory).
//
// Call order (exactly; range_schedule.hpp lists it as data and the tests check the model keeps to it).
// E = embeddings range, B_i = block i, F = final LayerNorm range. At most one range is acquired at a
// time; every acquire is followed by its release before the next acquire.
//   forward : acquire E, encoder (wte, wpe), release E;
//             for i = 0..L-1: acquire B_i, block i forward, release B_i;
//             acquire F, final LayerNorm, release F;
//             acquire E, LM head (logits = x wte^T) and loss, release E.
//   backward: grad_buffer(r) may be called for any range from the first backward op on and must stay
//             valid until grads_ready(r).
//             acquire E, LM head backward (accumulates dwte), release E;
//             acquire F, final LayerNorm backward, release F, grads_ready F;
//             for i = L-1..0: acquire B_i, [recompute block i forward], block i backward, release B_i,
//             grads_ready B_i;
//             encoder backward (needs no parameters: dwte, dwpe scatter), grads_ready E.
// Backward ACCUMULATES (+=) into grad_buffer(r): gradient accumulation over micro-batches is the
// caller's zeroing policy. grads_ready(r) fires once per backward (per micro-batch).
//
// An acquired range comes in fp32, or (a source that holds it in bf16) also in bf16: then the model
// reads the range's weight matrices (ParamTensor::weight_matrix) from the bf16 copy, widening as the
// products pack them, and only the other tensors (LayerNorm, biases, wpe) from the fp32 one. That
// spares a sharded rank widening every gathered matrix into fp32 before each use; the results are
// bitwise the same, widening being exact.
#pragma once

#include <cstddef>

#include "core/bf16.hpp"
#include "model/parameter_layout.hpp"

namespace tz {

struct AcquiredParams {
  // The range's numel values; with b16 set, only the tensors that are not weight matrices.
  const float* f32 = nullptr;
  const bf16* b16 = nullptr;  // null, or the whole range in bf16
};

class ParamSource {
 public:
  virtual ~ParamSource() = default;
  // Called before a range is used (forward or backward); the pointers stay valid until
  // release_params(range).
  virtual AcquiredParams acquire_params(int range) = 0;
  // The model is done with the range for now.
  virtual void release_params(int range) = 0;
  // Where backward accumulates (+=) this range's gradients: numel floats.
  virtual float* grad_buffer(int range) = 0;
  // This range's gradients are final for this micro-batch.
  virtual void grads_ready(int range) = 0;
};

// The whole flat buffer resident: acquire returns params + range offset. Does not own the buffers.
class ResidentParams final : public ParamSource {
 public:
  ResidentParams(const ParameterLayout& layout, const float* params, float* grads)
      : layout_(layout), params_(params), grads_(grads) {}
  AcquiredParams acquire_params(int range) override { return {params_ + layout_.range(range).offset}; }
  void release_params(int) override {}
  float* grad_buffer(int range) override { return grads_ + layout_.range(range).offset; }
  void grads_ready(int) override {}

 private:
  const ParameterLayout& layout_;
  const float* params_;
  float* grads_;
};

}  // namespace tz
