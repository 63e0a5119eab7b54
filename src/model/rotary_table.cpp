#include "model/rotary_table.hpp"

#include <cmath>
#include <numbers>

#include "core/error.hpp"

namespace tz {

std::vector<float> rotary_inverse_frequencies(const GptConfig& c) {
  const int R = c.rotary_dims();
  TZ_CHECK(c.positions == PositionKind::rotary && R >= 2,
           "rotary tables of a model without rotary positions");
  std::vector<float> inv(static_cast<std::size_t>(R / 2));
  for (int j = 0; j < R / 2; ++j) {
    // Hugging Face: base ** (arange(0, R, 2).float() / R) in fp32, then 1 / that in fp32.
    const float exponent = static_cast<float>(2 * j) / static_cast<float>(R);
    const float power = std::pow(static_cast<float>(c.rope_theta), exponent);
    inv[j] = 1.0f / power;
  }
  if (c.rope_scaling == RopeScalingKind::llama3) {
    const double factor = c.rope_scaling_factor, low = c.rope_low_freq_factor, high = c.rope_high_freq_factor;
    const double old_context = c.rope_original_positions;
    const double low_wavelen = old_context / low, high_wavelen = old_context / high;
    for (float& f : inv) {
      const double wavelen = 2 * std::numbers::pi / f;
      if (wavelen > low_wavelen) {
        f = static_cast<float>(f / factor);
      } else if (!(wavelen < high_wavelen)) {  // the band between: blend the scaled and the kept frequency
        const double smooth = (old_context / wavelen - low) / (high - low);
        f = static_cast<float>((1 - smooth) * f / factor + smooth * f);
      }
    }
  }
  return inv;
}

RotaryTables rotary_tables(const GptConfig& c, int T) {
  const std::vector<float> inv = rotary_inverse_frequencies(c);
  RotaryTables t;
  t.half = static_cast<int>(inv.size());
  t.cos.resize(static_cast<std::size_t>(T) * t.half);
  t.sin.resize(t.cos.size());
  for (int p = 0; p < T; ++p)
    for (int j = 0; j < t.half; ++j) {
      const float angle = static_cast<float>(p) * inv[j];  // fp32, as Hugging Face's product
      t.cos[static_cast<std::size_t>(p) * t.half + j] =
          static_cast<float>(std::cos(static_cast<double>(angle)));
      t.sin[static_cast<std::size_t>(p) * t.half + j] =
          static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  return t;
}

}  // namespace tz
