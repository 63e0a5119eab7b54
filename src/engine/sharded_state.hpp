// The model states one rank holds under a partition plan, allocated exactly from the ShardLayout
// (plan/shard_layout.hpp): for every range, back to back in range order,
//   W_fwd    the primary weight shard, in the compute dtype (bf16, or fp32 in fp32 mode)
//   W_bwd    the secondary weight shard (hpZ) when W_bwd is coarser than W_fwd, else empty
//   G        the fp32 gradient shard, accumulated over micro-batches
//   O        fp32 master weights, AdamW m and v
// Initialisation writes the same GPT-2 initial values a single process would (gpt2_init_slice by flat
// offset), so any plan starts from the same model. Padding elements are zero and stay zero.
// Every state lives in device memory of the engine's backend (device/backend.hpp): the host reaches
// it through the backend's copies and kernels only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/device_buffer.hpp"
#include "model/parameter_layout.hpp"
#include "plan/shard_layout.hpp"

namespace tz {

// Device memory of elements of the compute dtype (f32 or bf16), addressed in elements.
class WeightBuffer {
 public:
  WeightBuffer() = default;
  WeightBuffer(Backend& backend, DType dtype, std::size_t numel)
      : dtype_(dtype), bytes_(backend, numel * dtype_bytes(dtype)) {}
  DType dtype() const { return dtype_; }
  std::size_t numel() const { return bytes_.size() / dtype_bytes(dtype_); }
  std::size_t bytes() const { return bytes_.size(); }
  DevicePtr<std::byte> at(std::size_t element) { return bytes_.at(element * dtype_bytes(dtype_)); }
  DevicePtr<const std::byte> at(std::size_t element) const {
    return bytes_.at(element * dtype_bytes(dtype_));
  }

 private:
  DType dtype_ = DType::f32;
  DeviceBuffer<std::byte> bytes_;
};

// Converts n fp32 elements on the device to a compute dtype (a copy for f32, rounding for bf16).
void to_compute_dtype(DevicePtr<std::byte> out, DType dtype, DevicePtr<const float> in, std::size_t n);

class ShardedState {
 public:
  ShardedState(Backend& backend, const ShardLayout& layout, const ParameterLayout& params, int rank,
               std::uint64_t seed);

  const ShardLayout& layout() const { return layout_; }
  Backend& backend() const { return backend_; }
  int rank() const { return rank_; }
  DType compute_dtype() const { return w_fwd_.dtype(); }

  WeightBuffer& w_fwd() { return w_fwd_; }
  WeightBuffer& w_bwd() { return w_bwd_; }
  DeviceBuffer<float>& grad() { return grad_; }
  DeviceBuffer<float>& master() { return master_; }
  DeviceBuffer<float>& adam_m() { return m_; }
  DeviceBuffer<float>& adam_v() { return v_; }
  const DeviceBuffer<float>& master() const { return master_; }
  const DeviceBuffer<float>& adam_m() const { return m_; }
  const DeviceBuffer<float>& adam_v() const { return v_; }

  // Element offset of range r's shard inside the local buffer of state s.
  std::size_t local(ModelState s, int range) const { return layout_.local_offset(s, range); }
  ShardSpan span(ModelState s, int range) const { return layout_.shard(s, range, rank_); }

  // Bytes allocated per state (the memory plan predicts these exactly).
  std::size_t w_fwd_bytes() const { return w_fwd_.bytes(); }
  std::size_t w_bwd_bytes() const { return w_bwd_.bytes(); }
  std::size_t grad_bytes() const { return grad_.bytes(); }
  std::size_t optim_bytes() const { return master_.bytes() + m_.bytes() + v_.bytes(); }

 private:
  Backend& backend_;
  const ShardLayout& layout_;
  int rank_;
  WeightBuffer w_fwd_, w_bwd_;
  DeviceBuffer<float> grad_, master_, m_, v_;
};

}  // namespace tz
