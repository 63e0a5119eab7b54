// The optimizer's weight-decay runs (optim/decay_segment.hpp) of any slice of the model's flat
// parameter buffer, from the per-tensor flags of the model's layout: the seam between the model,
// which knows its tensors, and AdamW, which knows only runs of elements.
#pragma once

#include <cstddef>
#include <vector>

#include "device/decay_segment.hpp"
#include "model/parameter_layout.hpp"

namespace tz {

// The runs that intersect [offset, offset + numel) of the flat buffer, in order, clipped to it, with
// offsets relative to `offset`; adjacent runs with the same flag are merged.
std::vector<DecaySegment> decay_segments(const ParameterLayout& layout, std::size_t offset,
                                         std::size_t numel);

}  // namespace tz
