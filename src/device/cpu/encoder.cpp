// Token + position embedding. Forward reads one row of wte per token and the row of wpe for its
// position; backward scatters the output gradient back into those rows (B*T*C adds each way). A model
// with rotary positions has no wpe (null): forward copies the token rows, backward leaves dwpe null.
#include "core/error.hpp"
#include "core/parallel_for.hpp"
#include "device/cpu/layers.hpp"

namespace tz {

void encoder_forward(float* out, const std::int32_t* tokens, WeightRef wte, const float* wpe, int B, int T,
                     int C) {
  parallel_for(static_cast<std::size_t>(B) * T, 64, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const std::size_t row = static_cast<std::size_t>(tokens[i]) * C;
      float* o = out + i * C;
      if (wte.b16 != nullptr) {
        const bf16* e = wte.b16 + row;
        for (int c = 0; c < C; ++c) o[c] = to_float(e[c]);
      } else {
        const float* e = wte.f32 + row;
        for (int c = 0; c < C; ++c) o[c] = e[c];
      }
      if (wpe == nullptr) continue;
      const float* p = wpe + (i % T) * C;
      for (int c = 0; c < C; ++c) o[c] += p[c];
    }
  });
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens, int B, int T,
                      int C) {
  // Rows with the same token (or position) add into one row: serial over rows, vectorized over C.
  for (std::size_t i = 0; i < static_cast<std::size_t>(B) * T; ++i) {
    float* e = dwte + static_cast<std::size_t>(tokens[i]) * C;
    const float* d = dout + i * C;
    for (int c = 0; c < C; ++c) e[c] += d[c];
    if (dwpe == nullptr) continue;
    float* p = dwpe + (i % T) * C;
    for (int c = 0; c < C; ++c) p[c] += d[c];
  }
}

}  // namespace tz
