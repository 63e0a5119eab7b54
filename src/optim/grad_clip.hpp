// Global-norm gradient clipping in two pieces so that a sharded engine can compute the norm once
// over all shards: sum_of_squares() on each slice (fp64, summed over shards, then all-reduced), then
// clip_scale() of the global norm, which AdamW multiplies into every gradient (adamw_update's
// grad_scale). Same rule as torch.nn.utils.clip_grad_norm_: scale = min(1, max_norm / (norm + 1e-6)).
#pragma once

#include <cstddef>

#include "device/cpu/sum_of_squares.hpp"

namespace tz {

// max_norm <= 0 disables clipping (returns 1).
float clip_scale(double global_norm, float max_norm);

}  // namespace tz
