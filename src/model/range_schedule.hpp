// The order in which the model acquires and releases parameter ranges and reports gradients (the
// protocol documented in param_source.hpp), as a pure function of the config. The sharded engine
// prefetches from it: the range after the one in use is the next to gather.
#pragma once

#include <vector>

#include "model/gpt_config.hpp"

namespace tz {

struct RangeEvent {
  enum class Kind { acquire, release, grads_ready };
  Kind kind = Kind::acquire;
  int range = 0;
  bool operator==(const RangeEvent&) const = default;
};

// Every ParamSource call of one forward (with targets) or one backward, in order.
std::vector<RangeEvent> forward_range_events(const GptConfig& config);
std::vector<RangeEvent> backward_range_events(const GptConfig& config);

// The acquire events only: forward = E, B_0..B_{L-1}, F, E; backward = E, F, B_{L-1}..B_0 (the
// tied embedding serves the LM head at the end of the forward and the start of the backward). With
// an untied head (range H = "lm_head"): forward = E, B_0..B_{L-1}, F, H; backward = H, F,
// B_{L-1}..B_0, E.
std::vector<int> forward_acquire_order(const GptConfig& config);
std::vector<int> backward_acquire_order(const GptConfig& config);
// The grads_ready events of one backward: F, B_{L-1}..B_0, E (untied: H first).
std::vector<int> grads_ready_order(const GptConfig& config);

}  // namespace tz
