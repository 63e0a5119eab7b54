// FLOPs of one training step (forward + backward) of the model, the formula tierzero reports and
// the cost model uses. Counted: matrix products only, 2 FLOPs per multiply-add; norms, activations,
// rotary positions, softmax, the loss and AdamW are not counted (they are O(tokens x C), not
// O(tokens x C^2)). With W = the weights of one block's linear layers (block_linear_weights):
//   per token, forward:  L x 2 W                 the block's linear layers
//                      + L x (2 x 2 T C)         attention scores Q K^T and the weighted sum A V over
//                                                all H query heads (grouped-query attention shares
//                                                K and V, not the products), counted dense (all T
//                                                keys), the convention PyTorch users quote
//                      + 2 V C                   the LM head (tied or not)
//   backward = 2 x forward (a product's gradient needs two products: d input and d weight)
//   step = B x T x (6 L W + 12 L T C + 6 V C)
// W = C (H + 2 KV) D  query, key, value (KV key/value heads of size D = C / H)
//   + C C             attention output projection
//   + 2 C F           GELU MLP of width F (GPT-2, GPT-NeoX: F = 4C), or 3 C F for SwiGLU (Llama)
// GPT-2: W = 12 C^2, step = B T (72 L C^2 + 12 L T C + 6 V C). The parallel residual (GPT-NeoX)
// changes no product. The causal attention kernel skips the masked tiles, so it does less than the
// dense count; the dense count is kept so figures compare with other implementations.
#pragma once

#include "model/gpt_config.hpp"

namespace tz {

// Weights of one block's linear layers (biases not included: they are additions).
inline double block_linear_weights(const GptConfig& c) {
  const double C = c.n_embd, D = c.head_size(), H = c.n_head, KV = c.kv_heads(), F = c.mlp_width();
  const double mlp = (c.mlp == MlpKind::swiglu ? 3.0 : 2.0) * C * F;
  return C * (H + 2 * KV) * D + C * H * D + mlp;
}

// FLOPs for one token position of one sequence of length T (forward + backward).
inline double training_flops_per_token(const GptConfig& c, int T) {
  const double L = c.n_layer, C = c.n_embd, V = c.vocab_size;
  return 6.0 * L * block_linear_weights(c) + 12.0 * L * T * C + 6.0 * V * C;
}

// FLOPs of one training step on B sequences of length T (one micro-batch; multiply by accumulation).
inline double training_step_flops(const GptConfig& c, int B, int T) {
  return static_cast<double>(B) * T * training_flops_per_token(c, T);
}

}  // namespace tz
