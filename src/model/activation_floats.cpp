#include "model/activation_floats.hpp"

namespace tz {

double gpt_activation_floats(const GptConfig& c, double B, double T, bool recompute) {
  const double N = B * T, C = c.n_embd, L = c.n_layer, V = c.vocab_size, H = c.n_head;
  const double QKV = static_cast<double>(c.n_head + 2 * c.kv_heads()) * c.head_size();
  const double F = static_cast<double>(c.mlp_width());
  const bool swiglu = c.mlp == MlpKind::swiglu;
  const double FC = swiglu ? 2 * F : F;
  const double per_block = N * (4 * C + QKV + FC + F) + 4 * N + B * H * T;
  const double kept_blocks = recompute ? 1 : L;
  const double residual = (L + 1) * N * C;
  const double final_ln = N * C + 2 * N;
  const double logits = 2 * N * V;
  const double scratch = N + 3 * N * C + N * QKV + N * FC + (swiglu ? N * F : 0);
  return residual + kept_blocks * per_block + final_ln + logits + scratch;
}

}  // namespace tz
