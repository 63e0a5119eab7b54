#include "engine/decay_segments.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace tz {

std::vector<DecaySegment> decay_segments(const ParameterLayout& layout, std::size_t offset,
                                         std::size_t numel) {
  TZ_CHECK_LE(offset + numel, layout.total_numel());
  std::vector<DecaySegment> out;
  const std::size_t end = offset + numel;
  const auto& tensors = layout.tensors();
  // Tensors are sorted by offset: find the first that ends after `offset`.
  auto it = std::upper_bound(tensors.begin(), tensors.end(), offset,
                             [](std::size_t off, const ParamTensor& t) { return off < t.offset + t.numel; });
  for (; it != tensors.end() && it->offset < end; ++it) {
    const std::size_t b = std::max(offset, it->offset), e = std::min(end, it->offset + it->numel);
    if (!out.empty() && out.back().decay == it->weight_decay) {
      out.back().numel += e - b;
    } else {
      out.push_back({b - offset, e - b, it->weight_decay});
    }
  }
  return out;
}

}  // namespace tz
