#include "perf/activation_memory.hpp"

namespace tz::perf {

double layer_activation_bytes(const GptConfig& c, int seq_len, int micro_batch) {
  const double s = seq_len, b = micro_batch, h = c.n_embd, a = c.n_head, F = c.mlp_width();
  const double g = double(c.kv_heads()) / c.n_head;  // K and V as a fraction of Q
  const double attention = s * b * h * (7 + 4 * g) + 5 * a * s * s * b;
  const double mlp = 3 * s * b * h + (c.mlp == MlpKind::swiglu ? 6 : 4) * s * b * F;
  const double norms = (c.residual == ResidualKind::parallel ? 2 : 4) * s * b * h;
  return attention + mlp + norms;
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
