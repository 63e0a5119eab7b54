// A ParamSource for model tests on a backend: the parameters and their gradients in device buffers,
// as the sharded engine serves them (fp32 values, and with bf16 matrices every range narrowed too).
#pragma once

#include <vector>

#include "core/bf16.hpp"
#include "device/device_buffer.hpp"
#include "model/gpt.hpp"

namespace tz::test {

// Serves every range from device buffers of one backend: fp32 values (all of them, or with bf16 the
// tensors that are not weight matrices) and, with bf16, the whole range narrowed.
class DeviceParams final : public ParamSource {
 public:
  DeviceParams(Backend& dev, const ParameterLayout& layout, const std::vector<float>& params,
               bool bf16_matrices)
      : layout_(layout), f32_(dev, params.size()), grads_(dev, params.size()) {
    upload(f32_.data(), params.data(), params.size());
    if (bf16_matrices) {
      std::vector<bf16> narrow(params.size());
      for (std::size_t i = 0; i < params.size(); ++i) narrow[i] = to_bf16(params[i]);
      b16_ = DeviceBuffer<bf16>(dev, params.size());
      upload(b16_.data(), narrow.data(), narrow.size());
    }
  }
  AcquiredParams acquire_params(int r) override {
    const std::size_t at = layout_.range(r).offset;
    return {f32_.at(at).address(), b16_.empty() ? nullptr : b16_.at(at).address()};
  }
  void release_params(int) override {}
  float* grad_buffer(int r) override { return grads_.at(layout_.range(r).offset).address(); }
  void grads_ready(int) override {}
  std::vector<float> grads() const { return download(grads_.data(), grads_.size()); }

 private:
  const ParameterLayout& layout_;
  DeviceBuffer<float> f32_;
  DeviceBuffer<bf16> b16_;
  DeviceBuffer<float> grads_;
};

}  // namespace tz::test
