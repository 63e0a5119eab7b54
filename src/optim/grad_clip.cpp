#include "optim/grad_clip.hpp"

#include <algorithm>

namespace tz {
float clip_scale(double global_norm, float max_norm) {
  if (max_norm <= 0) return 1.0f;
  return static_cast<float>(std::min(1.0, max_norm / (global_norm + 1e-6)));
}

}  // namespace tz
