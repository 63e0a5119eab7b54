// The model's step with its elementwise work fused into the products (GptOptions::fuse_epilogues:
// GELU in the first MLP product's epilogue, GELU's derivative in the input gradient of the second,
// the residual adds in the attention and MLP output products) against the same step with the
// separate kernels: loss, logits and every gradient bit for bit, for GPT-2 (tanh GELU), a NeoX-style
// model (exact GELU, parallel residual, rotary) and a Llama-style one (SwiGLU stays separate, its
// residual adds fuse), on the cpu and emulated backends, with recomputation and bf16 weights.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "core/bf16.hpp"
#include "device/backend.hpp"
#include "model/gpt.hpp"
#include "model/gpt_init.hpp"
#include "support/device_params.hpp"

namespace tz {
namespace {

constexpr int kFusedB = 2, kFusedT = 7;

GptConfig fused_test_config(const std::string& family) {
  GptConfig c{.n_layer = 2, .n_embd = 24, .n_head = 3, .n_positions = 16, .vocab_size = 29};
  if (family == "neox") {
    c.family = ModelFamily::gpt_neox;
    c.positions = PositionKind::rotary;
    c.rotary_fraction = 0.5;
    c.mlp = MlpKind::gelu_exact;
    c.residual = ResidualKind::parallel;
    c.tied_embeddings = false;
  } else if (family == "llama") {
    c.family = ModelFamily::llama;
    c.norm = NormKind::rmsnorm;
    c.norm_bias = false;
    c.positions = PositionKind::rotary;
    c.n_kv_head = 1;
    c.qkv_bias = c.attn_out_bias = c.mlp_bias = false;
    c.mlp = MlpKind::swiglu;
    c.mlp_hidden = 40;
    c.tied_embeddings = false;
  }
  c.validate("the fused-epilogue test config");
  return c;
}

struct FusedRun {
  float loss = 0;
  std::vector<float> logits, grads;
};

FusedRun run_step(const GptConfig& cfg, GptOptions options, bool bf16_matrices) {
  Gpt model(cfg, kFusedB, kFusedT, options);
  std::vector<float> params(model.layout().total_numel());
  gpt2_init(params.data(), model.layout(), 5);
  std::mt19937 gen(9);
  std::vector<std::int32_t> tokens, targets;
  for (int i = 0; i < kFusedB * kFusedT; ++i) {
    tokens.push_back(static_cast<std::int32_t>(gen() % cfg.vocab_size));
    targets.push_back(static_cast<std::int32_t>(gen() % cfg.vocab_size));
  }
  test::DeviceParams src(backend(options.device), model.layout(), params, bf16_matrices);
  FusedRun out;
  out.loss = model.forward(src, tokens.data(), targets.data());
  out.logits = model.logits();
  model.backward(src, 1.0f);
  out.grads = src.grads();
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(GptFusedEpilogues, FusedStepEqualsTheUnfusedStepBitwise) {
  for (const std::string family : {"gpt2", "neox", "llama"})
    for (DeviceKind kind : {DeviceKind::cpu, DeviceKind::emulated})
      for (int threads : {1, 2})
        for (bool recompute : {false, true})
          for (bool bf16 : {false, true}) {
            const std::string what = family + " on " + std::string(device_kind_name(kind)) + ", " +
                                     std::to_string(threads) + " thread(s), recompute " +
                                     std::to_string(recompute) + ", bf16 " + std::to_string(bf16);
            const GptConfig cfg = fused_test_config(family);
            GptOptions o{.device = kind, .threads = threads, .recompute = recompute};
            o.fuse_epilogues = true;
            const FusedRun fused = run_step(cfg, o, bf16);
            o.fuse_epilogues = false;
            const FusedRun plain = run_step(cfg, o, bf16);
            EXPECT_EQ(std::memcmp(&fused.loss, &plain.loss, sizeof(float)), 0) << what;
            EXPECT_TRUE(same_bits(fused.logits, plain.logits)) << what;
            EXPECT_TRUE(same_bits(fused.grads, plain.grads)) << what;
            EXPECT_GT(fused.loss, 0.0f) << what;
          }
}

}  // namespace
}  // namespace tz
