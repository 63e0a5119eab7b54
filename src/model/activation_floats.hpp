// The activation memory the model of model/gpt.hpp allocates, computed without allocating: exactly the
// floats Gpt(config, B, T, {.recompute}) holds (Gpt::activation_floats(); a test checks the two agree
// for every family). In double, so that sizes from input (a micro-batch of 10^9) are compared with the
// machine's memory before anything is allocated, never wrapped. With QKV = (H + 2 KV) D the attention
// product's width, F the MLP width and FC = F (GELU) or 2 F (SwiGLU's gate and up):
//   per position kept by every block:  4 C + QKV + FC + F + 4 floats, plus attention's row statistic
//                                      (H per row: tiled attention keeps no T x T probabilities)
//   residual streams:                  (L + 1) N C;  final norm N C + 2 N;  logits and probs 2 N V
//   backward scratch:                  N + 3 N C + N QKV + N FC (losses, dres, dln, datty, dqkv, dfch),
//                                      plus N F with SwiGLU (its activation's gradient)
// with N = B T; recomputation keeps one block's activations instead of L. GPT-2: 15 C per position per
// block, 10 N C + N scratch.
#pragma once

#include "model/gpt_config.hpp"

namespace tz {

double gpt_activation_floats(const GptConfig& config, double batch, double seq, bool recompute);

}  // namespace tz
