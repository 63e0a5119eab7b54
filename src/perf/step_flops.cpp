#include "perf/step_flops.hpp"

#include "model/flops.hpp"

namespace tz::perf {

double layer_forward_flops(const GptConfig& c, int seq_len) {
  const double s = seq_len, h = c.n_embd;
  return 2 * s * block_linear_weights(c) + 4 * s * s * h;
}

double head_forward_flops(const GptConfig& c, int seq_len) {
  return 2.0 * seq_len * c.n_embd * double(c.vocab_size);
}

StepFlops step_flops(const GptConfig& c, int seq_len, int micro_batch, int accumulation, bool recompute) {
  const double model = training_step_flops(c, micro_batch, seq_len) * accumulation;
  const double sequences = double(micro_batch) * accumulation;
  const double recomputed = recompute ? c.n_layer * layer_forward_flops(c, seq_len) * sequences : 0.0;
  return StepFlops{.model = model, .executed = model + recomputed};
}

}  // namespace tz::perf
