// The work each layer slot (model/layer_profile.hpp) does in one training step of the model at B x T,
// forward and backward, as the limits a benchmark holds the slot's measured time to:
//   - linear layers: their shapes (the three products of each, device/gemm_args.hpp), to be timed
//     with a reference sgemm of the same shapes;
//   - attention: the products the causal kernel must do (keys s <= t only), counted with the one
//     product its backward adds by recomputing the scores, at a reference sgemm rate; its rotary
//     rotation as bytes;
//   - everything else (norms, activations, residual adds, embedding, loss, the optimizer): the bytes
//     the pass must read and write at least (each tensor once; fp32), at a reference memcpy rate.
// The counts describe the unfused step (GptOptions::fuse_epilogues off). Attention's dense count, the
// FLOP formula's (model/flops.hpp), is kept beside the causal one: the linear layers' products plus it
// equal training_step_flops.
#pragma once

#include <array>
#include <vector>

#include "model/gpt_config.hpp"
#include "model/layer_profile.hpp"

namespace tz {

// A linear layer out (N x OC) = inp (N x C) W^T + b that runs `count` times a step (once per block, or
// once for the LM head): forward, input grad and weight grad, 2 N C OC FLOPs each.
struct LinearLayerWork {
  LayerSlot slot;
  int C = 0, OC = 0, count = 0;
  bool bias = false;
};

struct LayerWork {
  int N = 0;  // rows of every linear layer: B T
  std::vector<LinearLayerWork> linears;
  double attention_flops_causal = 0;        // forward 2 + backward 5 products over the T (T + 1) / 2 pairs
  double attention_flops_dense = 0;         // the FLOP formula's: 6 products over all T^2 pairs
  std::array<double, kLayerSlots> bytes{};  // least bytes moved per slot, forward + backward
  double optimizer_bytes = 0;               // zeroing, the norm and AdamW: 36 bytes per parameter
};

LayerWork layer_work(const GptConfig& config, int B, int T);

}  // namespace tz
