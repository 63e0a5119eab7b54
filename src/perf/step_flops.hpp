// FLOPs of one training step, split the way the overlap model needs them (per transformer layer and
// for the LM head). The whole-step count is model/flops.hpp's (one formula; tests hold the split
// equal to it): for one sequence of s tokens, hidden h, L layers, vocabulary V and W weights in a
// block's linear layers (model/flops.hpp: GPT-2's 12h^2; grouped-query K/V and SwiGLU's three
// matrices change W, nothing else),
//   per layer, forward:  2sW (GPT-2: QKV 6sh^2, output projection 2sh^2, MLP 16sh^2)
//                        + 4s^2h (scores QK^T and A V, dense: causal masking not discounted)
//   LM head, forward:    2shV (tied or untied)
//   F = L(2sW + 4s^2h) + 2shV;  backward = 2F;  model FLOPs of a step = 3F per sequence.
// With full activation recomputation every transformer layer's forward runs again in backward
// (not the LM head): executed FLOPs = 3F + L(24sh^2 + 4s^2h). TFLOPS per device are reported from
// model FLOPs (recomputation lowers them, as in MFU), so plans compare on useful work.
#pragma once

#include "model/gpt_config.hpp"

namespace tz::perf {

double layer_forward_flops(const GptConfig& c, int seq_len);  // per sequence, one transformer layer
double head_forward_flops(const GptConfig& c, int seq_len);   // per sequence, LM head

struct StepFlops {
  double model = 0;     // 3F x sequences per rank per step
  double executed = 0;  // model FLOPs plus the recomputed layer forwards, if any
};
// Per rank, for a step of `accumulation` micro-batches of `micro_batch` sequences of length seq_len.
StepFlops step_flops(const GptConfig& c, int seq_len, int micro_batch, int accumulation, bool recompute);

}  // namespace tz::perf
