#include "engine/sharded_state.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "device/kernels.hpp"
#include "model/gpt_init.hpp"

namespace tz {

void to_compute_dtype(DevicePtr<std::byte> out, DType dtype, DevicePtr<const float> in, std::size_t n) {
  if (dtype == DType::f32) {
    copy_on_device(out, as_bytes(in), n * sizeof(float));
    return;
  }
  TZ_CHECK(dtype == DType::bf16, "compute dtype {}", dtype_name(dtype));
  out.backend()->kernels().narrow_to_bf16(device_cast<bf16>(out), in, n);
}

ShardedState::ShardedState(Backend& backend, const ShardLayout& layout, const ParameterLayout& params,
                           int rank, std::uint64_t seed)
    : backend_(backend), layout_(layout), rank_(rank) {
  TZ_CHECK_EQ(layout.num_ranges(), params.num_ranges());
  const DType dtype = tz::compute_dtype(layout.plan().options().dtype_mode);
  w_fwd_ = WeightBuffer(backend, dtype, layout.state_shard_numel(ModelState::w_fwd));
  if (layout.plan().has_secondary_weights())
    w_bwd_ = WeightBuffer(backend, dtype, layout.state_shard_numel(ModelState::w_bwd));
  grad_ = DeviceBuffer<float>(backend, layout.state_shard_numel(ModelState::grad));
  master_ = DeviceBuffer<float>(backend, layout.state_shard_numel(ModelState::optim));
  m_ = DeviceBuffer<float>(backend, master_.size());
  v_ = DeviceBuffer<float>(backend, master_.size());

  // Initial values of a shard: the GPT-2 init of the flat-buffer elements it covers (computed on the
  // host, then uploaded); padding stays 0.
  std::vector<float> tmp;
  DeviceBuffer<float> staged;
  auto init = [&](ModelState s, int r) {
    const ShardSpan sp = span(s, r);
    tmp.assign(sp.numel, 0.0f);
    if (sp.valid_numel > 0)
      gpt2_init_slice(tmp.data(), params, seed, params.range(r).offset + sp.offset, sp.valid_numel);
  };
  auto init_weights = [&](ModelState s, WeightBuffer& w, int r) {
    init(s, r);
    if (staged.size() < tmp.size()) staged = DeviceBuffer<float>(backend, tmp.size());
    upload(staged.data(), tmp.data(), tmp.size());
    to_compute_dtype(w.at(local(s, r)), dtype, staged.data(), tmp.size());
  };
  for (int r = 0; r < layout.num_ranges(); ++r) {
    init(ModelState::optim, r);
    upload(master_.at(local(ModelState::optim, r)), tmp.data(), tmp.size());
    init_weights(ModelState::w_fwd, w_fwd_, r);
    if (w_bwd_.numel() > 0) init_weights(ModelState::w_bwd, w_bwd_, r);
  }
}

}  // namespace tz
