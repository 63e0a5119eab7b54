// The per-slot work a benchmark holds the model's layers to (model/layer_work.hpp): the linear layers'
// products and attention's dense count add up to the step's FLOP formula for every family, the causal
// count is the dense one halved (plus the diagonal) with the recomputed scores, and the bytes of a
// small GPT-2 and a Llama are the ones worked out by hand.
#include <gtest/gtest.h>

#include "model/flops.hpp"
#include "model/layer_work.hpp"
#include "model/model_preset.hpp"

namespace tz {
namespace {

double product_flops(const LayerWork& w) {
  double f = 0;
  for (const LinearLayerWork& l : w.linears) f += 3.0 * 2.0 * w.N * l.C * l.OC * l.count;
  return f;
}

double slot_bytes(const LayerWork& w, LayerSlot s) {
  return w.bytes[static_cast<int>(s)];
}

TEST(LayerWork, ProductsAndDenseAttentionAreTheStepsFlopFormula) {
  for (const char* name :
       {"gpt-tiny", "gpt-small", "gpt2-small", "pythia-160m", "smollm-135m", "llama-3.2-1b"}) {
    const GptConfig c = load_model(name).config;
    for (int T : {1, 7, 64}) {
      const LayerWork w = layer_work(c, 3, T);
      const double formula = training_step_flops(c, 3, T);
      EXPECT_NEAR(product_flops(w) + w.attention_flops_dense, formula, 1e-12 * formula) << name << " T " << T;
    }
  }
}

TEST(LayerWork, CausalAttentionCountsThePairsAtOrBelowTheDiagonalAndTheRecomputedScores) {
  const GptConfig c = load_model("gpt-small").config;  // L6 C384 H6
  const LayerWork one = layer_work(c, 2, 1);
  // T = 1: one pair per head, 7 products of 2 D FLOPs; dense counts 6.
  EXPECT_DOUBLE_EQ(one.attention_flops_causal, 6.0 * 2 * 6 * 7 * 2 * 64);
  EXPECT_DOUBLE_EQ(one.attention_flops_dense, 6.0 * 2 * 6 * 6 * 2 * 64);
  const LayerWork w = layer_work(c, 2, 256);
  EXPECT_DOUBLE_EQ(w.attention_flops_causal / w.attention_flops_dense, (7.0 / 6.0) * (257.0 / 2) / 256);
}

TEST(LayerWork, Gpt2BytesAsWorkedOutByHand) {
  // gpt-tiny: L, C, V from the preset; B 2, T 8: N 16 rows, fewer than V, so 16 distinct wte rows.
  const GptConfig c = load_model("gpt-tiny").config;
  const double L = c.n_layer, C = c.n_embd, V = c.vocab_size, N = 16, T = 8, F = 4 * C;
  ASSERT_GT(V, N);
  const LayerWork w = layer_work(c, 2, 8);
  EXPECT_EQ(w.N, 16);
  ASSERT_EQ(w.linears.size(), 5u);
  EXPECT_EQ(w.linears[0].slot, LayerSlot::qkv);
  EXPECT_EQ(w.linears[0].OC, 3 * c.n_embd);
  EXPECT_EQ(w.linears[2].OC, 4 * c.n_embd);
  EXPECT_EQ(w.linears[3].C, 4 * c.n_embd);
  EXPECT_EQ(w.linears[4].OC, c.vocab_size);
  EXPECT_EQ(w.linears[4].count, 1);
  EXPECT_FALSE(w.linears[4].bias);
  EXPECT_DOUBLE_EQ(slot_bytes(w, LayerSlot::encoder),
                   4 * (N * C + T * C + N * C + 2 * N * C + 2 * T * C + N * C));
  EXPECT_DOUBLE_EQ(slot_bytes(w, LayerSlot::layernorm), 4 * (2 * L + 1) * (6 * N * C + 4 * N));
  EXPECT_DOUBLE_EQ(slot_bytes(w, LayerSlot::residual), 4 * 6 * L * N * C);
  EXPECT_DOUBLE_EQ(slot_bytes(w, LayerSlot::gelu), 4 * 5 * L * N * F);
  EXPECT_DOUBLE_EQ(slot_bytes(w, LayerSlot::attention), 0.0);  // learned positions: no rotary pass
  EXPECT_DOUBLE_EQ(slot_bytes(w, LayerSlot::cross_entropy), 4 * (4 * N * V + N));
  for (LayerSlot s :
       {LayerSlot::qkv, LayerSlot::attn_proj, LayerSlot::fc, LayerSlot::mlp_proj, LayerSlot::lm_head})
    EXPECT_EQ(slot_bytes(w, s), 0.0) << layer_slot_name(s);
  EXPECT_DOUBLE_EQ(w.optimizer_bytes, 36.0 * static_cast<double>(c.parameter_count()));
}

TEST(LayerWork, LlamaBytesAsWorkedOutByHand) {
  // smollm-135m: RMSNorm (one statistic a row), rotary, SwiGLU, no position table; B 1, T 4.
  const GptConfig c = load_model("smollm-135m").config;
  const double L = c.n_layer, C = c.n_embd, N = 4, F = static_cast<double>(c.mlp_width());
  const double H = c.n_head, KV = c.kv_heads(), R = c.rotary_dims();
  const LayerWork w = layer_work(c, 1, 4);
  EXPECT_EQ(w.linears[0].OC, (c.n_head + 2 * c.kv_heads()) * c.head_size());
  EXPECT_EQ(w.linears[2].OC, 2 * c.mlp_width());  // gate and up in one product
  EXPECT_DOUBLE_EQ(slot_bytes(w, LayerSlot::encoder), 4 * (N * C + N * C + 2 * N * C + N * C));
  EXPECT_DOUBLE_EQ(slot_bytes(w, LayerSlot::layernorm), 4 * (2 * L + 1) * (6 * N * C + 2 * N));
  EXPECT_DOUBLE_EQ(slot_bytes(w, LayerSlot::gelu), 4 * 8 * L * N * F);
  EXPECT_DOUBLE_EQ(slot_bytes(w, LayerSlot::attention), 4 * 4 * L * N * (H + KV) * R);
}

}  // namespace
}  // namespace tz
