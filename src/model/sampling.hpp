// Choosing the next token from logits, and generating text with a GptDecoder (model/gpt_decode.hpp).
//   temperature 0: the most likely token (the lowest id among equal logits);
//   temperature T > 0: among the top_k most likely tokens (all when top_k is 0; ties broken by the
//     lower id), p_i = softmax(logit_i / T), and token i is drawn where the cumulative p first
//     exceeds u, a uniform number of the counter RNG (core/counter_rng.hpp) at (seed, draw), draw =
//     the index of the generated token. So a seed fixes the whole output, on any machine and thread
//     count, and token n does not depend on how many tokens were drawn before in other runs.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "model/gpt_decode.hpp"

namespace tz {

struct SampleOptions {
  double temperature = 1.0;  // 0: greedy
  int top_k = 0;             // 0: every token
  std::uint64_t seed = 1337;
};

std::int32_t sample_token(std::span<const float> logits, const SampleOptions& options, std::uint64_t draw);

// Feeds `prompt` (at least one token) through the decoder from position 0, then draws `max_new` tokens,
// each fed back as the next position; on_token sees each as it is drawn. Returns the drawn tokens.
// InputError when prompt + max_new exceeds the model's n_positions.
std::vector<std::int32_t> generate(GptDecoder& decoder, std::span<const std::int32_t> prompt, int max_new,
                                   const SampleOptions& options,
                                   const std::function<void(std::int32_t)>& on_token = {});

}  // namespace tz
