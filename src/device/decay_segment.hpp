// A run of elements of a flat parameter buffer that share one weight-decay flag: what AdamW needs to
// know about the tensors it updates. The model's parameter layout produces them for any slice
// (ParameterLayout::decay_segments); `offset` is relative to the start of that slice.
#pragma once

#include <cstddef>

namespace tz {

struct DecaySegment {
  std::size_t offset = 0;
  std::size_t numel = 0;
  bool decay = false;
};

}  // namespace tz
