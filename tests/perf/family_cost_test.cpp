// The cost model per architecture: FLOPs per token and activation memory of a tiny Llama and a tiny
// GPT-NeoX against hand counts (GPT-2's formula for the same shapes as the reference), the head's
// compute on the untied head's range, and plan/predict over every new preset: parameters, gradients
// and optimizer state from the exact parameter count.
#include <gtest/gtest.h>

#include <cmath>

#include "model/flops.hpp"
#include "perf/activation_memory.hpp"
#include "perf/model_ranges.hpp"
#include "perf/step_cost.hpp"
#include "perf/step_flops.hpp"
#include "plan/partition_plan.hpp"
#include "topology/topology.hpp"

namespace tz::perf {
namespace {

// L 2, C 64, H 4 (D 16), T 32, V 100.
GptConfig family_gpt2() {
  return GptConfig{.n_layer = 2, .n_embd = 64, .n_head = 4, .n_positions = 32, .vocab_size = 100};
}
GptConfig family_llama() {  // 2 key/value heads, SwiGLU of 96, untied
  GptConfig c = family_gpt2();
  c.family = ModelFamily::llama;
  c.norm = NormKind::rmsnorm;
  c.norm_bias = false;
  c.positions = PositionKind::rotary;
  c.n_kv_head = 2;
  c.qkv_bias = c.attn_out_bias = c.mlp_bias = false;
  c.mlp = MlpKind::swiglu;
  c.mlp_hidden = 96;
  c.tied_embeddings = false;
  return c;
}
GptConfig family_neox() {  // rotary on a quarter, exact GELU of 4C, parallel residual, untied
  GptConfig c = family_gpt2();
  c.family = ModelFamily::gpt_neox;
  c.positions = PositionKind::rotary;
  c.rotary_fraction = 0.25;
  c.mlp = MlpKind::gelu_exact;
  c.residual = ResidualKind::parallel;
  c.tied_embeddings = false;
  return c;
}

TEST(FamilyCost, FlopsPerTokenByHand) {
  const int T = 32;
  // GPT-2: 72 L C^2 + 12 L T C + 6 V C.
  EXPECT_DOUBLE_EQ(training_flops_per_token(family_gpt2(), T),
                   72.0 * 2 * 64 * 64 + 12.0 * 2 * 32 * 64 + 6.0 * 100 * 64);
  // Llama: a block's linear weights W = Q 64x64 + K, V 2 x 64x32 + O 64x64 + 3 x 64x96 = 30720
  // (GPT-2's would be 49152); 6 L W + 12 L T C + 6 V C = 368640 + 49152 + 38400.
  EXPECT_DOUBLE_EQ(block_linear_weights(family_llama()), 30720);
  EXPECT_DOUBLE_EQ(training_flops_per_token(family_llama(), T), 368640.0 + 49152 + 38400);
  // NeoX: GPT-2's products (rotary, parallel residual, exact GELU and the untied head add none).
  EXPECT_DOUBLE_EQ(training_flops_per_token(family_neox(), T), training_flops_per_token(family_gpt2(), T));
  // The per-layer split the overlap model uses adds up to the same.
  for (const GptConfig& c : {family_gpt2(), family_llama(), family_neox()})
    EXPECT_DOUBLE_EQ(3 * (c.n_layer * layer_forward_flops(c, T) + head_forward_flops(c, T)),
                     training_step_flops(c, 1, T));
}

TEST(FamilyCost, ActivationBytesByHand) {
  const int s = 32, b = 2;  // sbh = 4096, 5 a s^2 b = 40960
  // GPT-2: 34 sbh + 5as^2b.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(family_gpt2(), s, b), 34 * 4096.0 + 40960);
  // Llama (g = 1/2): attention sbh (7 + 2) + 5as^2b; SwiGLU 3 sbh + 6 sbF (F = 96: sbF = 6144);
  // two norms 4 sbh.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(family_llama(), s, b),
                   9 * 4096.0 + 40960 + 3 * 4096 + 6 * 6144 + 4 * 4096);
  // NeoX: attention 11 sbh + 5as^2b, MLP 19 sbh, the parallel residual's norms read one input: 2 sbh.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(family_neox(), s, b), 11 * 4096.0 + 40960 + 19 * 4096 + 2 * 4096);
  // Logits 4 s b V whether the head is tied or not; recomputation keeps 2 sbh per layer plus one layer.
  const ActivationBytes a = activation_bytes(family_llama(), s, b, true);
  EXPECT_DOUBLE_EQ(a.logits, 4.0 * s * b * 100);
  EXPECT_DOUBLE_EQ(a.layers, 2 * 2 * 4096.0 + layer_activation_bytes(family_llama(), s, b));
}

TEST(FamilyCost, TheUntiedHeadsRangeCarriesTheHeadsCompute) {
  const ModelRanges mr = model_ranges(family_llama());
  EXPECT_EQ(mr.head, 4);
  EXPECT_EQ(mr.final_ln, 3);
  EXPECT_EQ(mr.names.at(4), "lm_head");
  EXPECT_EQ(mr.total_numel, family_llama().parameter_count());
  EXPECT_EQ(model_ranges(family_gpt2()).head, 0);
}

// Every new preset plans and prices: the state memory of plain ZeRO-3 is the exact parameter count's
// (fp32 gradient shards, fp32 master + Adam m and v), its activations the family's.
TEST(FamilyCost, NewPresetsPriceWithTheirExactCounts) {
  const Topology topo = Topology::load("frontier").resolve_outer(48);
  const double ranks = topo.world_size();
  for (const char* name :
       {"gpt-neox-20b", "pythia-160m", "llama-3.2-1b", "llama-3-8b", "tinyllama-1.1b", "smollm-135m"}) {
    const ModelShape m = load_model_shape(name);
    const PartitionPlan zero3 = PartitionPlan::preset("zero3", topo);
    const StepCost cost = predict_step(m, topo, zero3);
    const double params = double(m.config.parameter_count());
    // Each shard holds 1/ranks of every range (padded to divide): within a rank's padding per range.
    const double slack = double(model_ranges(m.config).names.size()) * ranks;
    EXPECT_NEAR(double(cost.memory.optim_bytes), 12 * params / ranks, 12 * slack) << name;
    EXPECT_NEAR(double(cost.memory.grad_bytes), 4 * params / ranks, 4 * slack) << name;
    EXPECT_EQ(double(cost.memory.activation_bytes),
              std::floor(activation_bytes(m.config, m.seq_len(), 1, true).total()))
        << name;
    EXPECT_GT(cost.step_s, 0) << name;
  }
}

}  // namespace
}  // namespace tz::perf
