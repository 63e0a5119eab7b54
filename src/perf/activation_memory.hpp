// Activation memory per rank of one micro-batch (b sequences of s tokens, hidden h, a heads, L
// layers, vocabulary V), in bytes, for 16-bit activations. Per transformer layer the stored
// activations are s*b*h*(34 + 5*a*s/h) bytes (Korthikanti et al. 2022, "Reducing Activation
// Recomputation in Large Transformer Models", eq. (1): attention 11sbh + 5as^2b, MLP 19sbh, two
// layernorms 4sbh; dropout masks included). With full recomputation only each layer's input
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
