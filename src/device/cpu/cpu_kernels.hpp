// The cpu backend's kernel table (device/kernels.hpp): tierzero's CPU paths on host memory.
#pragma once

#include "device/kernels.hpp"

namespace tz {

class CpuKernels final : public Kernels {
 public:
  void narrow_to_bf16(DevicePtr<bf16> out, DevicePtr<const float> in, std::size_t n) override;
  void widen_from_bf16(DevicePtr<float> out, DevicePtr<const bf16> in, std::size_t n) override;
  void reduce_add(DevicePtr<std::byte> out, DevicePtr<const std::byte> a, DevicePtr<const std::byte> b,
                  std::size_t n, DType dtype) override;
  void accumulate(DevicePtr<float> acc, DevicePtr<const std::byte> x, std::size_t n, DType dtype) override;
  void narrow_and_clear(DevicePtr<bf16> out, DevicePtr<float> in, std::size_t n) override;
  double sum_of_squares(DevicePtr<const float> x, std::size_t n) override;
  AdamWStateBound adamw_update(DevicePtr<float> params, DevicePtr<const float> grads, DevicePtr<float> m,
                               DevicePtr<float> v, std::span<const DecaySegment> segments, std::size_t n,
                               int step, const AdamWParams& hp, float grad_scale) override;
  std::size_t adamw_nonfinite_count(DevicePtr<const float> params, DevicePtr<const float> grads,
                                    DevicePtr<const float> m, DevicePtr<const float> v,
                                    std::span<const DecaySegment> segments, std::size_t n, int step,
                                    const AdamWParams& hp, float grad_scale) override;
  QuantStats quantize(DevicePtr<std::uint8_t> q, DevicePtr<const std::byte> x, std::size_t count, DType dtype,
                      const QuantOptions& opts) override;
  void dequantize(DevicePtr<std::byte> y, DType dtype, DevicePtr<const std::uint8_t> q, std::size_t count,
                  const QuantOptions& opts) override;
  void dequantize_add(DevicePtr<float> acc, DevicePtr<const std::uint8_t> q, std::size_t count,
                      const QuantOptions& opts) override;
  void gemm(const GemmArgs& args) override;
};

}  // namespace tz
