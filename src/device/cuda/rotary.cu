// Rotary position embedding on the GPU (device/cpu/rotary.cpp defines it): in place on the q and k heads
// of a grouped-query qkv (B, T, (H + 2 KV) D), Hugging Face's half-split pairs (j, j + R/2), j < R/2:
//   x[j]' = x[j] c - x[j + R/2] s,  x[j + R/2]' = x[j + R/2] c + x[j] s,  c = cos[t, j], s = sin[t, j];
// backward the transpose (s negated). A thread per pair, grid-stride; the multiplies and adds are
// written out as in the cpu path and compiled without contraction into FMAs, so the two agree bitwise.
#include <algorithm>
#include <cstdint>

#include "device/cuda/cuda_check.hpp"
#include "device/cuda/launchers.hpp"

namespace tz::cuda {
namespace {

constexpr int kRotaryThreads = 256;

__global__ void rotary_kernel(float* qkv, const float* cos, const float* sin, int B, int T, int H, int KV,
                              int D, int R, float sign) {
  const int half = R / 2, heads = H + KV;
  const std::size_t n = static_cast<std::size_t>(B) * T * heads * half;
  const std::size_t ld = static_cast<std::size_t>(H + 2 * KV) * D;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t j = i % half, r = i / half, h = r % heads, bt = r / heads, t = bt % T;
    float* x = qkv + bt * ld + h * D + j;
    const float c = cos[t * half + j], s = __fmul_rn(sign, sin[t * half + j]);
    const float x0 = x[0], y0 = x[half];
    x[0] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(y0, s));
    x[half] = __fadd_rn(__fmul_rn(y0, c), __fmul_rn(x0, s));
  }
}

void rotary(cudaStream_t s, float* qkv, const float* cos, const float* sin, int B, int T, int H, int KV,
            int D, int R, float sign, const char* what) {
  const std::size_t n = static_cast<std::size_t>(std::max(B, 0)) * std::max(T, 0) * (H + KV) * (R / 2);
  if (n == 0) return;
  const auto blocks =
      static_cast<unsigned>(std::min<std::size_t>((n + kRotaryThreads - 1) / kRotaryThreads, 1u << 20));
  rotary_kernel<<<blocks, kRotaryThreads, 0, s>>>(qkv, cos, sin, B, T, H, KV, D, R, sign);
  check(cudaGetLastError(), what);
}

}  // namespace

void rotary_forward(cudaStream_t s, float* qkv, const float* cos, const float* sin, int B, int T, int H,
                    int KV, int D, int R) {
  rotary(s, qkv, cos, sin, B, T, H, KV, D, R, 1.0f, "rotary_forward");
}

void rotary_backward(cudaStream_t s, float* dqkv, const float* cos, const float* sin, int B, int T, int H,
                     int KV, int D, int R) {
  rotary(s, dqkv, cos, sin, B, T, H, KV, D, R, -1.0f, "rotary_backward");
}

}  // namespace tz::cuda
