// The activation memory the GPT of model/gpt.hpp allocates, computed without allocating: exactly the
// floats Gpt(config, B, T, {.recompute}) holds (Gpt::activation_floats(); a test checks the two agree).
// In double, so that sizes from input (a micro-batch of 10^9) are compared with the machine's memory
// before anything is allocated, never wrapped.
//   per position kept by every block:  15 C + 4 floats, plus attention's row statistic (H per row:
//                                      tiled attention keeps no T x T probabilities)
//   residual streams:                  (L + 1) N C;  final LayerNorm N C + 2 N;  logits and probs 2 N V
//   backward scratch:                  N + 10 N C (losses, dres, dln, dqkv 3C, datty, dfch 4C)
// with N = B T; recomputation keeps one block's activations instead of L.
#pragma once

#include "model/gpt_config.hpp"

namespace tz {

double gpt_activation_floats(const GptConfig& config, double batch, double seq, bool recompute);

}  // namespace tz
