#include "model/layer_work.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace tz {

LayerWork layer_work(const GptConfig& c, int B, int T) {
  TZ_CHECK(B > 0 && T > 0, "layer_work: batch {} and sequence length {} must be positive", B, T);
  LayerWork w;
  const double N = static_cast<double>(B) * T, C = c.n_embd, L = c.n_layer, V = c.vocab_size;
  const double H = c.n_head, KV = c.kv_heads(), D = c.head_size(), F = static_cast<double>(c.mlp_width());
  const bool swiglu = c.mlp == MlpKind::swiglu;
  const int QKV = (c.n_head + 2 * c.kv_heads()) * c.head_size(), Fi = static_cast<int>(c.mlp_width());
  w.N = B * T;
  w.linears = {{LayerSlot::qkv, c.n_embd, QKV, c.n_layer, c.qkv_bias},
               {LayerSlot::attn_proj, c.n_head * c.head_size(), c.n_embd, c.n_layer, c.attn_out_bias},
               {LayerSlot::fc, c.n_embd, swiglu ? 2 * Fi : Fi, c.n_layer, c.mlp_bias},
               {LayerSlot::mlp_proj, Fi, c.n_embd, c.n_layer, c.mlp_bias},
               {LayerSlot::lm_head, c.n_embd, c.vocab_size, 1, false}};

  // Per query head and sequence: forward S = Q K^T and O = P V; backward the recomputed S, dP = dO V^T,
  // dV = P^T dO, dQ = dS K, dK = dS^T Q. 2 D FLOPs per (query, key) pair each.
  const double pairs_causal = static_cast<double>(T) * (T + 1) / 2, pairs_dense = static_cast<double>(T) * T;
  w.attention_flops_causal = L * B * H * 7 * 2 * D * pairs_causal;
  w.attention_flops_dense = L * B * H * 6 * 2 * D * pairs_dense;

  constexpr double f32 = 4;
  auto add = [&](LayerSlot s, double floats) { w.bytes[static_cast<int>(s)] += f32 * floats; };
  // Embedding: forward reads the distinct rows of wte (at most V) and the position rows, writes N x C;
  // backward reads d x and adds into those rows.
  const double rows = std::min(N, V), positions = c.positions == PositionKind::learned ? T * C : 0;
  add(LayerSlot::encoder, rows * C + positions + N * C + 2 * rows * C + 2 * positions + N * C);
  // Norms, 2 L + 1 of them: forward reads x, writes out and the row statistics (mean and 1/std, or 1/rms);
  // backward reads d out, x and the statistics and adds into d x.
  const double stats = c.norm == NormKind::rmsnorm ? N : 2 * N;
  add(LayerSlot::layernorm, (2 * L + 1) * ((2 * N * C + stats) + (4 * N * C + stats)));
  // Residual adds, two per block, forward only (backward's is the accumulation into d x above).
  add(LayerSlot::residual, 2 * L * 3 * N * C);
  // Activation: GELU reads N x F and writes it, backward reads pre-activation and d act, writes d pre;
  // SwiGLU reads both halves (2 N F) and writes N F, backward reads 2 N F + N F and writes 2 N F.
  add(LayerSlot::gelu, L * (swiglu ? 3 * N * F + 5 * N * F : 2 * N * F + 3 * N * F));
  // Rotary positions rotate R dimensions of the query and key heads in place, forward and backward.
  const double R = c.rotary_dims();
  add(LayerSlot::attention, L * 2 * 2 * N * (H + KV) * R);
  // Loss: forward reads the logits, writes the probabilities and the losses; backward reads the
  // probabilities and writes d logits.
  add(LayerSlot::cross_entropy, 2 * N * V + N + 2 * N * V);
  w.optimizer_bytes = 36.0 * static_cast<double>(c.parameter_count());
  return w;
}

}  // namespace tz
