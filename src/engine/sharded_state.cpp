#include "engine/sharded_state.hpp"

#include <algorithm>
#include <cstring>

#include "core/bf16_convert.hpp"
#include "core/error.hpp"
#include "model/gpt_init.hpp"

namespace tz {

void to_compute_dtype(std::byte* out, DType dtype, const float* in, std::size_t n) {
  if (dtype == DType::f32) {
    if (n > 0) std::memcpy(out, in, n * sizeof(float));
    return;
  }
  TZ_CHECK(dtype == DType::bf16, "compute dtype {}", dtype_name(dtype));
  bf16_from_floats(reinterpret_cast<bf16*>(out), in, n);
}

ShardedState::ShardedState(const ShardLayout& layout, const ParameterLayout& params, int rank,
                           std::uint64_t seed)
    : layout_(layout), rank_(rank) {
  TZ_CHECK_EQ(layout.num_ranges(), params.num_ranges());
  const DType dtype = tz::compute_dtype(layout.plan().options().dtype_mode);
  w_fwd_ = WeightBuffer(dtype, layout.state_shard_numel(ModelState::w_fwd));
  if (layout.plan().has_secondary_weights())
    w_bwd_ = WeightBuffer(dtype, layout.state_shard_numel(ModelState::w_bwd));
  grad_.assign(layout.state_shard_numel(ModelState::grad), 0.0f);
  master_.assign(layout.state_shard_numel(ModelState::optim), 0.0f);
  m_.assign(master_.size(), 0.0f);
  v_.assign(master_.size(), 0.0f);

  // Initial values of a shard: the GPT-2 init of the flat-buffer elements it covers; padding stays 0.
  std::vector<float> tmp;
  auto init = [&](ModelState s, int r, float* out) {
    const ShardSpan sp = span(s, r);
    std::fill(out, out + sp.numel, 0.0f);
    if (sp.valid_numel > 0)
      gpt2_init_slice(out, params, seed, params.range(r).offset + sp.offset, sp.valid_numel);
  };
  for (int r = 0; r < layout.num_ranges(); ++r) {
    init(ModelState::optim, r, master_.data() + local(ModelState::optim, r));
    tmp.resize(span(ModelState::w_fwd, r).numel);
    init(ModelState::w_fwd, r, tmp.data());
    to_compute_dtype(w_fwd_.at(local(ModelState::w_fwd, r)), dtype, tmp.data(), tmp.size());
    if (w_bwd_.numel() > 0) {
      tmp.resize(span(ModelState::w_bwd, r).numel);
      init(ModelState::w_bwd, r, tmp.data());
      to_compute_dtype(w_bwd_.at(local(ModelState::w_bwd, r)), dtype, tmp.data(), tmp.size());
    }
  }
}

}  // namespace tz
