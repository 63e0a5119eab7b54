// The whole model on each backend: parameters and gradients in the backend's memory (as the engine
// serves them), activations in it (GptOptions::device), every layer through its kernel table. On
// the strict emulated device a host access of any of them would fault; the loss, the logits and
// every gradient bit equal the cpu backend's, with and without recomputation, at 1 and 2 threads,
// and with bf16 weight matrices.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/bf16.hpp"
#include "device/backend.hpp"
#include "device/device_buffer.hpp"
#include "model/gpt.hpp"
#include "model/gpt_init.hpp"

namespace tz {
namespace {

const GptConfig kDeviceTestCfg{.n_layer = 2, .n_embd = 32, .n_head = 4, .n_positions = 16, .vocab_size = 37};
constexpr int kDeviceTestB = 2, kDeviceTestT = 9;

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

struct DeviceRun {
  double loss = 0;
  std::vector<float> logits, grads;
};

DeviceRun run_on(DeviceKind kind, GptOptions options, bool bf16_matrices) {
  options.device = kind;
  Gpt model(kDeviceTestCfg, kDeviceTestB, kDeviceTestT, options);
  std::vector<float> params(model.layout().total_numel());
  gpt2_init(params.data(), model.layout(), 11);
  if (bf16_matrices)
    for (auto& p : params) p = to_float(to_bf16(p));  // values bf16 holds exactly
  std::mt19937 gen(3);
  std::vector<std::int32_t> tokens, targets;
  for (int i = 0; i < kDeviceTestB * kDeviceTestT; ++i) {
    tokens.push_back(static_cast<std::int32_t>(gen() % kDeviceTestCfg.vocab_size));
    targets.push_back(static_cast<std::int32_t>(gen() % kDeviceTestCfg.vocab_size));
  }
  DeviceParams src(backend(kind), model.layout(), params, bf16_matrices);
  DeviceRun out;
  out.loss = model.forward(src, tokens.data(), targets.data());
  out.logits = model.logits();
  model.backward(src, 0.5f);
  out.grads = src.grads();
  return out;
}

struct DeviceCase {
  GptOptions options;
  bool bf16 = false;
};

class GptOnDevices : public ::testing::TestWithParam<DeviceCase> {};

TEST_P(GptOnDevices, EmulatedEqualsCpuBitwise) {
  const DeviceCase c = GetParam();
  const DeviceRun cpu = run_on(DeviceKind::cpu, c.options, c.bf16);
  const DeviceRun emu = run_on(DeviceKind::emulated, c.options, c.bf16);
  EXPECT_EQ(emu.loss, cpu.loss);
  EXPECT_EQ(emu.logits, cpu.logits);
  const ParameterLayout layout(kDeviceTestCfg);
  for (const auto& t : layout.tensors())
    EXPECT_TRUE(std::equal(emu.grads.begin() + t.offset, emu.grads.begin() + t.offset + t.numel,
                           cpu.grads.begin() + t.offset))
        << t.name;
  EXPECT_TRUE(std::any_of(cpu.grads.begin(), cpu.grads.end(), [](float g) { return g != 0; }));
}

INSTANTIATE_TEST_SUITE_P(Shapes, GptOnDevices,
                         ::testing::Values(DeviceCase{{.threads = 1}}, DeviceCase{{.threads = 2}},
                                           DeviceCase{{.threads = 1, .recompute = true}},
                                           DeviceCase{{.threads = 2, .recompute = true}, true},
                                           DeviceCase{{.threads = 1}, true}));

}  // namespace
}  // namespace tz
