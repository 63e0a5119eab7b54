#include "perf/activation_memory.hpp"

namespace tz::perf {

double layer_activation_bytes(const GptConfig& c, int seq_len, int micro_batch) {
  const double s = seq_len, b = micro_batch, h = c.n_embd, a = c.n_head;
  return s * b * h * (34 + 5 * a * s / h);
}

ActivationBytes activation_bytes(const GptConfig& c, int seq_len, int micro_batch, bool recompute) {
  const double s = seq_len, b = micro_batch, h = c.n_embd;
  const double layer = layer_activation_bytes(c, seq_len, micro_batch);
  ActivationBytes out;
  out.layers = recompute ? c.n_layer * 2 * s * b * h + layer : c.n_layer * layer;
  out.logits = 4 * s * b * double(c.vocab_size);
  return out;
}

}  // namespace tz::perf
