// Inference with a key/value cache: the model of model/gpt.hpp (any family) run one position at a time,
// so that each new token costs one forward of one position instead of a forward of the whole prefix.
//
// Terms: C width, H query heads and KV key/value heads of D = C / H, L blocks, V vocabulary,
// P = n_positions, t the position being computed (0-based). The cache holds, per block, the keys and
// values of positions 0..t-1: K[l], V[l] of (P, KV D) floats (grouped-query attention caches its
// key/value heads only), written as each position is computed (keys after their rotation) and never
// recomputed. One position (step):
//   x = wte[token] (+ wpe[t] with learned positions)                          (C)
//   per block l: a = n_1(x); [q | k | v] = a W_qkv (+ b); rotate q, k by t; K[l][t] = k, V[l][t] = v;
//                per query head h (key/value head h / (H / KV)): p_s = softmax_s(q . K[l][s] / sqrt(D))
//                over s <= t; y = sum_s p_s V[l][s];  r = x + y W_proj (+ b);
//                x = r + down(act(n_2(r or x) W_fc (+ b)))   (the parallel residual reads x)
//   logits = n_f(x) W_head^T                                                  (V)
// It reuses the model's layers (device/cpu/layers.hpp) with N = 1 row. Work per position: the
// parameters once (about 2 x the parameter count FLOPs) plus 4 L H D (t + 1) for attention; memory:
// the parameters (read, not copied), 2 L P KV D floats of cache and, with rotary positions, the
// (P, R/2) cos and sin tables. decode_logits_ref is the plain twin: the whole prefix recomputed by
// Gpt::forward.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/parameter_layout.hpp"

namespace tz {

class GptDecoder {
 public:
  // `params` is the model's flat fp32 buffer (ParameterLayout order); it must outlive the decoder.
  GptDecoder(const ParameterLayout& layout, const float* params, int threads = 1);

  // Forward of `token` at position positions_done(); returns the (V) logits of the next token, valid
  // until the next call. InputError once n_positions positions are done, or for a token outside the
  // vocabulary.
  const float* step(std::int32_t token);
  // Forgets the cache: the next step is position 0.
  void reset() { pos_ = 0; }
  int positions_done() const { return pos_; }
  // Positions computed since construction (all resets included): one per step, whatever the prefix.
  long long positions_computed() const { return computed_; }
  const ParameterLayout& layout() const { return layout_; }

 private:
  void attend(int layer);  // atty_ = attention of qkv_'s query over the cache of `layer`
  // out = n(inp), the config's norm with weight w and bias b (null: none).
  void norm(float* out, const float* inp, const float* w, const float* b);

  const ParameterLayout& layout_;
  const float* params_;
  int threads_;
  int pos_ = 0;
  long long computed_ = 0;
  std::vector<float> k_cache_, v_cache_;  // (L, P, KV D) each
  std::vector<float> rot_cos_, rot_sin_;  // (P, R/2) each; empty with learned positions
  std::vector<float> x_, ln_, mean_, rstd_, qkv_, atty_, res_, fch_, fch_act_, logits_;
};

// The logits after the last of `tokens` (1 <= size <= n_positions), by running the whole prefix
// through Gpt::forward (batch 1): what GptDecoder::step must return at that position.
std::vector<float> decode_logits_ref(const ParameterLayout& layout, const float* params,
                                     std::span<const std::int32_t> tokens);

}  // namespace tz
