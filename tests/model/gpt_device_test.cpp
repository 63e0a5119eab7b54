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
#include "support/device_params.hpp"

namespace tz {
namespace {

const GptConfig kDeviceTestCfg{.n_layer = 2, .n_embd = 32, .n_head = 4, .n_positions = 16, .vocab_size = 37};
constexpr int kDeviceTestB = 2, kDeviceTestT = 9;

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
  test::DeviceParams src(backend(kind), model.layout(), params, bf16_matrices);
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
