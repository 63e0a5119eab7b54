// The whole GPT on the GPU: parameters, gradients and activations in CUDA memory, every layer through
// the CUDA kernel table. Loss, logits and every parameter gradient agree with the cpu backend within
// fp32 rounding of the GPU's summation orders (cuBLAS products, block reductions), with and without
// recomputation and with bf16 weight matrices; at a GPT-2-like width too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "cuda/cuda_test_support.hpp"
#include "model/gpt.hpp"
#include "model/gpt_init.hpp"
#include "support/device_params.hpp"

namespace tz {
namespace {

struct GptCudaRun {
  double loss = 0;
  std::vector<float> logits, grads;
};

GptCudaRun gpt_run_on(DeviceKind kind, const GptConfig& cfg, int B, int T, GptOptions options,
                      bool bf16_matrices) {
  options.device = kind;
  Gpt model(cfg, B, T, options);
  std::vector<float> params(model.layout().total_numel());
  gpt2_init(params.data(), model.layout(), 11);
  if (bf16_matrices)
    for (auto& p : params) p = to_float(to_bf16(p));
  std::mt19937 gen(3);
  std::vector<std::int32_t> tokens, targets;
  for (int i = 0; i < B * T; ++i) {
    tokens.push_back(static_cast<std::int32_t>(gen() % cfg.vocab_size));
    targets.push_back(static_cast<std::int32_t>(gen() % cfg.vocab_size));
  }
  test::DeviceParams src(backend(kind), model.layout(), params, bf16_matrices);
  GptCudaRun out;
  out.loss = model.forward(src, tokens.data(), targets.data());
  out.logits = model.logits();
  model.backward(src, 0.5f);
  out.grads = src.grads();
  return out;
}

// max |a - b| / (max |b| + tiny) over a tensor: a relative error that small gradients cannot inflate.
double gpt_relative_error(const float* a, const float* b, std::size_t n) {
  double diff = 0, scale = 1e-30;
  for (std::size_t i = 0; i < n; ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return diff / scale;
}

struct GptCudaCase {
  GptConfig cfg;
  int B, T;
  GptOptions options;
  bool bf16;
};

class GptOnCuda : public ::testing::TestWithParam<GptCudaCase> {};

TEST_P(GptOnCuda, AgreesWithTheCpuBackend) {
  TZ_REQUIRE_CUDA();
  const GptCudaCase c = GetParam();
  const GptCudaRun cpu = gpt_run_on(DeviceKind::cpu, c.cfg, c.B, c.T, c.options, c.bf16);
  const GptCudaRun gpu = gpt_run_on(DeviceKind::cuda, c.cfg, c.B, c.T, c.options, c.bf16);
  EXPECT_NEAR(gpu.loss, cpu.loss, 1e-5 * std::abs(cpu.loss));
  ASSERT_EQ(gpu.logits.size(), cpu.logits.size());
  EXPECT_LT(gpt_relative_error(gpu.logits.data(), cpu.logits.data(), cpu.logits.size()), 1e-4);
  const ParameterLayout layout(c.cfg);
  for (const auto& t : layout.tensors())
    EXPECT_LT(gpt_relative_error(gpu.grads.data() + t.offset, cpu.grads.data() + t.offset, t.numel), 1e-3)
        << t.name;
  EXPECT_TRUE(std::any_of(gpu.grads.begin(), gpu.grads.end(), [](float g) { return g != 0; }));
}

const GptConfig kGptCudaTiny{.n_layer = 2, .n_embd = 32, .n_head = 4, .n_positions = 16, .vocab_size = 37};
const GptConfig kGptCudaWide{
    .n_layer = 2, .n_embd = 192, .n_head = 6, .n_positions = 128, .vocab_size = 1031};

INSTANTIATE_TEST_SUITE_P(Shapes, GptOnCuda,
                         ::testing::Values(GptCudaCase{kGptCudaTiny, 2, 9, {}, false},
                                           GptCudaCase{kGptCudaTiny, 2, 9, {.recompute = true}, false},
                                           GptCudaCase{kGptCudaTiny, 2, 9, {}, true},
                                           GptCudaCase{kGptCudaWide, 3, 128, {}, false},
                                           GptCudaCase{kGptCudaWide, 2, 100, {.recompute = true}, true}));

}  // namespace
}  // namespace tz
