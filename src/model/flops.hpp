// FLOPs of one training step (forward + backward) of the GPT model, the formula tierzero reports and
// the cost model uses. Counted: matrix products only, 2 FLOPs per multiply-add; LayerNorm, GELU,
// softmax, the loss and AdamW are not counted (they are O(tokens x C), not O(tokens x C^2)).
//   per token, forward:  L x (2 x 12 C^2)     the four linear layers (3C + C + 4C + 4C) x C weights
//                      + L x (2 x 2 T C)      attention scores Q K^T and the weighted sum A V, counted
//                                             dense (all T keys), the convention PyTorch users quote
//                      + 2 V C                the LM head
//   backward = 2 x forward (a product's gradient needs two products: d input and d weight)
//   step = B x T x (72 L C^2 + 12 L T C + 6 V C)
// The causal attention kernel skips the masked tiles, so it does less than the dense count; the
// dense count is kept so figures compare with other implementations (and with PyTorch's).
#pragma once

#include "model/gpt_config.hpp"

namespace tz {

// FLOPs for one token position of one sequence of length T (forward + backward).
inline double training_flops_per_token(const GptConfig& c, int T) {
  const double L = c.n_layer, C = c.n_embd, V = c.vocab_size;
  return 72.0 * L * C * C + 12.0 * L * T * C + 6.0 * V * C;
}

// FLOPs of one training step on B sequences of length T (one micro-batch; multiply by accumulation).
inline double training_step_flops(const GptConfig& c, int B, int T) {
  return static_cast<double>(B) * T * training_flops_per_token(c, T);
}

}  // namespace tz
