// Rotary position embedding (RoPE), in place on a grouped-query qkv (B, T, (H + 2 KV) D), in Hugging
// Face's half-split convention (rotate_half): in each of the H query heads and KV key heads, dims j and
// j + R/2 (j < R/2) form a pair rotated by the angle of position t and frequency j:
//   x[j]' = x[j] c - x[j + R/2] s,  x[j + R/2]' = x[j + R/2] c + x[j] s,  c = cos[t, j], s = sin[t, j];
// dims R .. D-1 of a head and the v heads pass. Backward is the transpose, a rotation by -angle (s
// negated): the gradient w.r.t. the unrotated q, k. A row costs 6 flops per pair, (H + KV) R/2 pairs;
// memory-bound (each rotated float read and written once, the tables' row read once per head).
// The fast path threads over rows and runs the pairs 8 at a time with AVX2 multiplies and adds. It is
// compiled for AVX2 without FMA, so the compiler cannot fuse them: it rounds exactly as the plain loop
// (and the CUDA kernel), and they agree bitwise.
#include <algorithm>

#include "core/error.hpp"
#include "core/parallel_for.hpp"
#include "device/cpu/layers.hpp"
#include "device/cpu/simd.hpp"

// AVX2 without FMA: a multiply-add must stay two roundings (see above).
#define TZ_AVX2_NO_FMA __attribute__((target("avx2")))

namespace tz {
namespace {

// The q and k heads of one row: x' = x c - y s', y' = y c + x s' over `half` pairs (s' = sign s).
void rotate_row_portable(float* row, const float* c, const float* s, int heads, int D, int half, float sign) {
  for (int h = 0; h < heads; ++h) {
    float* x = row + static_cast<std::size_t>(h) * D;
    float* y = x + half;
    for (int j = 0; j < half; ++j) {
      const float sj = sign * s[j], xj = x[j], yj = y[j];
      x[j] = xj * c[j] - yj * sj;
      y[j] = yj * c[j] + xj * sj;
    }
  }
}

TZ_AVX2_NO_FMA void rotate_row_avx2(float* row, const float* c, const float* s, int heads, int D, int half,
                                    float sign) {
  const __m256 vsign = _mm256_set1_ps(sign);
  for (int h = 0; h < heads; ++h) {
    float* x = row + static_cast<std::size_t>(h) * D;
    float* y = x + half;
    int j = 0;
    for (; j + 8 <= half; j += 8) {
      const __m256 vc = _mm256_loadu_ps(c + j), vs = _mm256_mul_ps(vsign, _mm256_loadu_ps(s + j));
      const __m256 vx = _mm256_loadu_ps(x + j), vy = _mm256_loadu_ps(y + j);
      _mm256_storeu_ps(x + j, _mm256_sub_ps(_mm256_mul_ps(vx, vc), _mm256_mul_ps(vy, vs)));
      _mm256_storeu_ps(y + j, _mm256_add_ps(_mm256_mul_ps(vy, vc), _mm256_mul_ps(vx, vs)));
    }
    for (; j < half; ++j) {
      const float sj = sign * s[j], xj = x[j], yj = y[j];
      x[j] = xj * c[j] - yj * sj;
      y[j] = yj * c[j] + xj * sj;
    }
  }
}

// Rows [r0, r1) of qkv; the q and k heads of a row are contiguous (H + KV heads of D floats).
template <typename RotateRow>
void rotate_rows(RotateRow rotate, float* qkv, const float* cos, const float* sin, std::size_t r0,
                 std::size_t r1, int T, int H, int KV, int D, int R, float sign) {
  const std::size_t ld = static_cast<std::size_t>(H + 2 * KV) * D;
  const int half = R / 2;
  for (std::size_t r = r0; r < r1; ++r) {
    const std::size_t t = r % static_cast<std::size_t>(T);
    rotate(qkv + r * ld, cos + t * half, sin + t * half, H + KV, D, half, sign);
  }
}

void rotary_fast(const char* what, float* qkv, const float* cos, const float* sin, int B, int T, int H,
                 int KV, int D, int R, float sign) {
  check_rotary_dims(what, H, KV, D, R);
  const std::size_t N = static_cast<std::size_t>(std::max(B, 0)) * static_cast<std::size_t>(std::max(T, 0));
  if (N == 0 || R == 0) return;
  // About 16 Ki pairs per chunk: enough work to pay for a thread's wake-up.
  const std::size_t pairs_per_row = static_cast<std::size_t>(H + KV) * (R / 2);
  const std::size_t grain = std::max<std::size_t>(1, (std::size_t{1} << 14) / pairs_per_row);
  const bool avx2 = simd::have_avx2_fma();
  parallel_for(N, grain, [&](std::size_t r0, std::size_t r1) {
    if (avx2)
      rotate_rows(rotate_row_avx2, qkv, cos, sin, r0, r1, T, H, KV, D, R, sign);
    else
      rotate_rows(rotate_row_portable, qkv, cos, sin, r0, r1, T, H, KV, D, R, sign);
  });
}

// The plain loops, one element pair at a time, straight from the definition.
void rotary_ref(const char* what, float* qkv, const float* cos, const float* sin, int B, int T, int H, int KV,
                int D, int R, bool transpose) {
  check_rotary_dims(what, H, KV, D, R);
  const int half = R / 2, ld = (H + 2 * KV) * D;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      float* row = qkv + (static_cast<std::size_t>(b) * T + t) * ld;
      for (int h = 0; h < H + KV; ++h)
        for (int j = 0; j < half; ++j) {
          float& x = row[h * D + j];
          float& y = row[h * D + j + half];
          const float c = cos[static_cast<std::size_t>(t) * half + j];
          const float s = transpose ? -sin[static_cast<std::size_t>(t) * half + j]
                                    : sin[static_cast<std::size_t>(t) * half + j];
          const float x0 = x, y0 = y;
          x = x0 * c - y0 * s;
          y = y0 * c + x0 * s;
        }
    }
}

}  // namespace

void check_rotary_dims(const char* what, int H, int KV, int D, int R) {
  if (H < 1 || KV < 1 || D < 1 || R < 0 || R > D || R % 2 != 0)
    throw InputError(
        fmt::format("{}: rotary dims {} with {} query heads, {} key/value heads of size {}: the "
                    "rotary dims must be even, at least 0 and at most the head size",
                    what, R, H, KV, D));
}

void rotary_forward(float* qkv, const float* cos, const float* sin, int B, int T, int H, int KV, int D,
                    int R) {
  rotary_fast("rotary_forward", qkv, cos, sin, B, T, H, KV, D, R, 1.0f);
}

void rotary_backward(float* dqkv, const float* cos, const float* sin, int B, int T, int H, int KV, int D,
                     int R) {
  rotary_fast("rotary_backward", dqkv, cos, sin, B, T, H, KV, D, R, -1.0f);
}

void rotary_forward_ref(float* qkv, const float* cos, const float* sin, int B, int T, int H, int KV, int D,
                        int R) {
  rotary_ref("rotary_forward_ref", qkv, cos, sin, B, T, H, KV, D, R, false);
}

void rotary_backward_ref(float* dqkv, const float* cos, const float* sin, int B, int T, int H, int KV, int D,
                         int R) {
  rotary_ref("rotary_backward_ref", dqkv, cos, sin, B, T, H, KV, D, R, true);
}

}  // namespace tz

#undef TZ_AVX2_NO_FMA
