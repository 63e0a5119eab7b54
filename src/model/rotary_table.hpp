// The rotary position tables of a model with rotary positions: for each position t and each rotated
// pair j < R/2 (R = GptConfig::rotary_dims()), cos and sin of t * inv_freq[j], as Hugging Face computes
// them: inv_freq[j] = 1 / theta^(2j / R) in fp32, Llama 3's frequency rescaling when the config has it
// (wavelengths beyond original_positions / low_freq_factor divided by factor, those below
// original_positions / high_freq_factor kept, a smooth blend between), the angle t * inv_freq[j] rounded
// to fp32, then its cosine and sine. The rotary kernels (device/cpu/layers.hpp) read them per row.
#pragma once

#include <vector>

#include "model/gpt_config.hpp"

namespace tz {

// R/2 inverse frequencies, fp32 values (Llama 3 rescaling applied).
std::vector<float> rotary_inverse_frequencies(const GptConfig& config);

struct RotaryTables {
  int half = 0;            // R / 2 pairs per head
  std::vector<float> cos;  // (T, half)
  std::vector<float> sin;  // (T, half)
};
// Tables for positions 0 .. T-1 (InternalError unless the config has rotary positions).
RotaryTables rotary_tables(const GptConfig& config, int T);

}  // namespace tz
