#include "model/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/counter_rng.hpp"
#include "core/error.hpp"

namespace tz {

std::int32_t sample_token(std::span<const float> logits, const SampleOptions& o, std::uint64_t draw) {
  const int V = static_cast<int>(logits.size());
  TZ_CHECK(V > 0, "no logits");
  auto better = [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  if (o.temperature <= 0) {
    int best = 0;
    for (int i = 1; i < V; ++i)
      if (better(i, best)) best = i;
    return best;
  }
  const int k = o.top_k > 0 ? std::min(o.top_k, V) : V;
  std::vector<int> ids(static_cast<std::size_t>(V));
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), better);
  ids.resize(static_cast<std::size_t>(k));
  std::vector<double> p(ids.size());
  const double top = logits[ids[0]];
  double sum = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    p[i] = std::exp((double(logits[ids[i]]) - top) / o.temperature);
    sum += p[i];
  }
  const double u = counter_uniform(o.seed, draw) * sum;
  double acc = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    acc += p[i];
    if (u < acc) return ids[i];
  }
  return ids.back();
}

std::vector<std::int32_t> generate(GptDecoder& decoder, std::span<const std::int32_t> prompt, int max_new,
                                   const SampleOptions& options,
                                   const std::function<void(std::int32_t)>& on_token) {
  const int P = decoder.layout().config().n_positions;
  if (prompt.empty()) fail_input("generation: the prompt has no tokens");
  if (max_new < 0) fail_input("generation: {} new tokens asked", max_new);
  if (static_cast<long long>(prompt.size()) + max_new > P)
    fail_input(
        "generation: the prompt's {} tokens and --max-new-tokens {} exceed the model's {} positions "
        "(n_positions)",
        prompt.size(), max_new, P);
  decoder.reset();
  const float* logits = nullptr;
  for (std::int32_t t : prompt) logits = decoder.step(t);
  const std::size_t V = static_cast<std::size_t>(decoder.layout().config().vocab_size);
  std::vector<std::int32_t> out;
  for (int n = 0; n < max_new; ++n) {
    const std::int32_t next = sample_token({logits, V}, options, static_cast<std::uint64_t>(n));
    out.push_back(next);
    if (on_token) on_token(next);
    if (n + 1 < max_new) logits = decoder.step(next);
  }
  return out;
}

}  // namespace tz
