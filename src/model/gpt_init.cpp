#include "model/gpt_init.hpp"

#include <algorithm>
#include <cmath>

#include "core/counter_rng.hpp"
#include "core/error.hpp"

namespace tz {

void gpt2_init_slice(float* out, const ParameterLayout& layout, std::uint64_t seed, std::size_t offset,
                     std::size_t n) {
  TZ_CHECK_LE(offset + n, layout.total_numel());
  const double std_base = 0.02;
  const double std_residual = 0.02 / std::sqrt(2.0 * layout.config().n_layer);
  const std::size_t end = offset + n;
  for (const ParamTensor& t : layout.tensors()) {
    const std::size_t b = std::max(offset, t.offset), e = std::min(end, t.offset + t.numel);
    if (b >= e) continue;
    const bool is_weight = t.shape.size() == 2;
    const bool residual = t.name.ends_with("attn.proj.weight") || t.name.ends_with("mlp.proj.weight");
    const bool ln_gain =
        t.name.ends_with("ln_1.weight") || t.name.ends_with("ln_2.weight") || t.name == "ln_f.weight";
    for (std::size_t i = b; i < e; ++i) {
      float v = 0.0f;
      if (is_weight)
        v = static_cast<float>(counter_normal(seed, i) * (residual ? std_residual : std_base));
      else if (ln_gain)
        v = 1.0f;
      out[i - offset] = v;
    }
  }
}

void gpt2_init(float* params, const ParameterLayout& layout, std::uint64_t seed) {
  gpt2_init_slice(params, layout, seed, 0, layout.total_numel());
}

}  // namespace tz
