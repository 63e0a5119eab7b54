// AdamW with decoupled weight decay (Loshchilov & Hutter), exactly as torch.optim.AdamW computes it,
// on any slice of the flat buffers (the sharded engine runs it on its shard). For element i at step
// s (1-based), g = grads[i] * grad_scale (grad_scale carries the clipping factor):
//   p -= lr * wd * p                       (only where the decay flag is set)
//   m  = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr / (1 - b1^s) * m / (sqrt(v) / sqrt(1 - b2^s) + eps)
// Reads params, grads, m, v and writes params, m, v: 5 x 4 bytes + 3 x 4 bytes per element.
#pragma once

#include <cstddef>
#include <span>

#include "model/parameter_layout.hpp"

namespace tz {

struct AdamWParams {
  float lr = 3e-4f;  // the step's learning rate (from the schedule)
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;
};

// Updates n elements. `segments` are the decay runs of this slice (ParameterLayout::decay_segments
// with the slice's offset and n): offsets relative to the slice, covering [0, n). step >= 1.
void adamw_update(float* params, const float* grads, float* m, float* v,
                  std::span<const DecaySegment> segments, std::size_t n, int step, const AdamWParams& hp,
                  float grad_scale = 1.0f);
void adamw_update_ref(float* params, const float* grads, float* m, float* v,
                      std::span<const DecaySegment> segments, std::size_t n, int step, const AdamWParams& hp,
                      float grad_scale = 1.0f);

}  // namespace tz
