// Inference with a key/value cache: the GPT of model/gpt.hpp run one position at a time, so that each
// new token costs one forward of one position instead of a forward of the whole prefix.
//
// Terms: C width, H heads of hs = C / H, L blocks, V vocabulary, P = n_positions, t the position
// being computed (0-based). The cache holds, per block, the keys and values of positions 0..t-1:
// K[l], V[l] of (P, C) floats, written as each position is computed and never recomputed.
// One position (step):
//   x = wte[token] + wpe[t]                                                   (C)
//   per block l: a = ln_1(x); [q | k | v] = a W_qkv + b (3C); K[l][t] = k, V[l][t] = v;
//                per head: p_s = softmax_s(q . K[l][s] / sqrt(hs)) over s <= t; y = sum_s p_s V[l][s];
//                x += y W_proj + b;  x += gelu(ln_2(x) W_fc + b) W_mlp + b
//   logits = ln_f(x) wte^T                                                    (V)
// It reuses the model's kernels (model/layers.hpp) with N = 1 row; only the attention of one query
// over the cache is its own loop. Work per position: the parameters once (about 2 x 12 L C^2 FLOPs)
// plus 4 L C (t + 1) for attention; memory: the parameters (read, not copied) and 2 L P C floats of
// cache. decode_logits_ref is the plain twin: the whole prefix recomputed by Gpt::forward.
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

  const ParameterLayout& layout_;
  const float* params_;
  int threads_;
  int pos_ = 0;
  long long computed_ = 0;
  std::vector<float> k_cache_, v_cache_;  // (L, P, C) each
  std::vector<float> x_, ln_, mean_, rstd_, qkv_, atty_, res_, fch_, fch_gelu_, logits_;
};

// The logits after the last of `tokens` (1 <= size <= n_positions), by running the whole prefix
// through Gpt::forward (batch 1): what GptDecoder::step must return at that position.
std::vector<float> decode_logits_ref(const ParameterLayout& layout, const float* params,
                                     std::span<const std::int32_t> tokens);

}  // namespace tz
