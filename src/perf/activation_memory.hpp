// Activation memory per rank of one micro-batch (b sequences of s tokens, hidden h, a heads, L
// layers, vocabulary V), in bytes, for 16-bit activations. Per transformer layer the stored
// activations are s*b*h*(34 + 5*a*s/h) bytes (Korthikanti et al. 2022, "Reducing Activation
// Recomputation in Large Transformer Models", eq. (1): attention 11sbh + 5as^2b, MLP 19sbh, two
// layernorms 4sbh; dropout masks included). Term by term for the other architectures (F the MLP
// width, g = KV / H the key/value heads' share of the query's):
//   attention  sbh (7 + 4g) + 5as^2b   norm output 2, Q 2, K 2g, V 2g, projection input 2, mask 1
//   MLP        3sbh + 4sbF (GELU: input 2, mask 1; activation input and output 2F each), or
//              3sbh + 6sbF (SwiGLU: gate, up and their product 2F each; silu recomputed)
//   norms      4sbh, or 2sbh with the parallel residual (both norms read the same input)
// RMSNorm keeps what LayerNorm keeps (its input); rotary positions keep nothing (a rotation's
// gradient is the inverse rotation). With full recomputation only each layer's input
// (2sbh bytes) is kept, and one layer's full activations live again while it is recomputed.
// The LM head keeps fp32 logits for the loss: 4sbV bytes (their gradient reuses the buffer).
#pragma once

#include "model/gpt_config.hpp"

namespace tz::perf {

struct ActivationBytes {
  double layers = 0;  // what the transformer layers keep for backward (peak)
  double logits = 0;
  double total() const { return layers + logits; }
};

double layer_activation_bytes(const GptConfig& c, int seq_len, int micro_batch);
ActivationBytes activation_bytes(const GptConfig& c, int seq_len, int micro_batch, bool recompute);

}  // namespace tz::perf
