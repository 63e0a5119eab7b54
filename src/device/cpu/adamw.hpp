// AdamW with decoupled weight decay (Loshchilov & Hutter), exactly as torch.optim.AdamW computes it,
// on any slice of the flat buffers (the sharded engine runs it on its shard). For element i at step
// s (1-based), g = grads[i] * grad_scale (grad_scale carries the clipping factor):
//   p -= lr * wd * p                       (only where the decay flag is set)
//   m  = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr / (1 - b1^s) * m / (sqrt(v) / sqrt(1 - b2^s) + eps)
// With decoupled = false it is Adam with L2 regularisation instead, as torch.optim.Adam and DeepSpeed's
// Adam with adam_w_mode false compute it: no decoupled step, the decay enters the gradient,
//   g = grads[i] * grad_scale + wd * p     (only where the decay flag is set)
// Reads params, grads, m, v and writes params, m, v: 5 x 4 bytes + 3 x 4 bytes per element. The loop
// runs 8 elements at a time on AVX2 (chosen at run time), bitwise equal to the portable loop.
#pragma once

#include <cstddef>
#include <span>

#include "device/adamw_args.hpp"
#include "device/decay_segment.hpp"

namespace tz {

// Updates n elements. `segments` are the decay runs of this slice (ParameterLayout::decay_segments
// with the slice's offset and n): offsets relative to the slice, covering [0, n). step >= 1.
// Returns the bound of the state it wrote (taken in the same pass, from registers).
AdamWStateBound adamw_update(float* params, const float* grads, float* m, float* v,
                             std::span<const DecaySegment> segments, std::size_t n, int step,
                             const AdamWParams& hp, float grad_scale = 1.0f);
void adamw_update_ref(float* params, const float* grads, float* m, float* v,
                      std::span<const DecaySegment> segments, std::size_t n, int step, const AdamWParams& hp,
                      float grad_scale = 1.0f);

// How many of the n elements adamw_update, given the same arguments, would leave with a non-finite
// parameter, m or v (same arithmetic, nothing written): the engine asks before updating, so a step
// whose optimizer state would overflow (or already holds inf/NaN) is skipped with the state intact.
std::size_t adamw_nonfinite_count(const float* params, const float* grads, const float* m, const float* v,
                                  std::span<const DecaySegment> segments, std::size_t n, int step,
                                  const AdamWParams& hp, float grad_scale = 1.0f);

// The constants of one step for elements of one decay flag, computed once on the host: every backend's
// kernel takes these, so the per-element arithmetic (adamw_element in adamw.cpp) is all that remains.
struct AdamWStepConstants {
  float decay_factor;  // 1 - lr * wd where decoupled decay applies, else 1
  float l2;            // Adam's L2 coefficient where it applies (adamw_uses_l2), else 0
  float b1, b2, step_size, inv_sqrt_bc2, eps, grad_scale;
};
// Whether Adam's L2 term enters the gradient: not decoupled, a decaying element, wd != 0.
bool adamw_uses_l2(const AdamWParams& hp, bool decay);
AdamWStepConstants adamw_step_constants(const AdamWParams& hp, bool decay, int step, float grad_scale);

namespace adamw_detail {  // the two paths of adamw_update's loop, for tests
bool have_avx2();
void force_portable(bool on);  // have_avx2() answers false while on
}  // namespace adamw_detail

}  // namespace tz
