// LayerNorm over the last dimension (C) of N rows on the GPU, eps given (device/cpu/layernorm.cpp):
//   mean = sum(x)/C, rstd = 1/sqrt(sum((x-mean)^2)/C + eps), n = (x-mean) rstd, y = n w + b;
//   backward, g = dy w:  dx += rstd (g - mean(g) - n mean(g n)),  dw += dy n,  db += dy.
// Without bias (b null, db null) y = n w and no db is summed.
// Threads: forward and backward's dx use one block of kThreads per row, each thread striding over c,
// its partial sums combined by a fixed tree (warp shuffles, then the warps in order). The weight
// gradients follow the cpu backend's fast path: fixed 64-row parts (a count set by N alone), one
// thread per (part, c) summing its part's rows in order from 0, then one thread per c adding the parts
// in order onto dw, db. No atomics: every result is the same run to run.
// Against the cpu backend: db is bitwise the cpu backend's AVX2 path (the same fp32 adds in the same
// order; its portable path adds row by row instead, within fp32 rounding); mean, rstd, out, dx and dw
// sum in another order (and the cpu may contract a product into an FMA), so they agree within
// |diff| <= 1e-5 (1 + |ref|) for rows whose spread is not tiny next to their mean.
// RMSNorm (device/cpu/rmsnorm.cpp) runs on the same plan without the mean: rstd = 1/sqrt(sum(x^2)/C +
// eps), y = x rstd w; backward dx += rstd (g - n mean(g n)), dw += dy n in the same 64-row parts. Its
// rstd, out, dx and dw sum in another order than the cpu backend's: within 1e-5 (1 + |ref|).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "device/cuda/cuda_check.hpp"
#include "device/cuda/launchers.hpp"

namespace tz::cuda {
namespace {

constexpr int kThreads = 256;  // a multiple of 32
constexpr int kWarps = kThreads / 32;
constexpr int kBackwardPartRows = 64;  // the cpu backend's rows per weight-gradient partial sum

// The block's sum of v (every thread gets it), in a fixed order; `scratch` holds kWarps floats.
__device__ float block_sum(float v, float* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kWarps; ++w) total += scratch[w];
  return total;
}

// grid: N rows; block: kThreads.
__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* inp,
                                         const float* weight, const float* bias, int C, float eps) {
  __shared__ float scratch[kWarps];
  const std::size_t r = blockIdx.x;
  const float* x = inp + r * C;
  float s = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) s += x[c];
  const float m = block_sum(s, scratch) / C;
  float v = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float d = x[c] - m;
    v += d * d;
  }
  const float rs = 1.0f / sqrtf(block_sum(v, scratch) / C + eps);
  float* y = out + r * C;
  if (bias)
    for (int c = threadIdx.x; c < C; c += blockDim.x) y[c] = (x[c] - m) * rs * weight[c] + bias[c];
  else
    for (int c = threadIdx.x; c < C; c += blockDim.x) y[c] = (x[c] - m) * rs * weight[c];
  if (threadIdx.x == 0) {
    mean[r] = m;
    rstd[r] = rs;
  }
}

// grid: N rows; block: kThreads. dinp accumulates.
__global__ void layernorm_backward_dx_kernel(float* dinp, const float* dout, const float* inp,
                                             const float* weight, const float* mean, const float* rstd,
                                             int C) {
  __shared__ float scratch[kWarps];
  const std::size_t r = blockIdx.x;
  const float* dy = dout + r * C;
  const float* x = inp + r * C;
  const float m = mean[r], rs = rstd[r];
  float sg = 0.0f, sgn = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float n = (x[c] - m) * rs, g = dy[c] * weight[c];
    sg += g;
    sgn += g * n;
  }
  const float mg = block_sum(sg, scratch) / C;
  const float mgn = block_sum(sgn, scratch) / C;
  float* dx = dinp + r * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float n = (x[c] - m) * rs, g = dy[c] * weight[c];
    dx[c] += rs * (g - mg - n * mgn);
  }
}

// One thread per (part p, column c): partial[p] = {sum dy n, sum dy} over the part's rows, in order.
__global__ void layernorm_backward_parts_kernel(float* partial, const float* dout, const float* inp,
                                                const float* mean, const float* rstd, int N, int C,
                                                int parts) {
  const std::size_t j = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (j >= static_cast<std::size_t>(parts) * C) return;
  const std::size_t p = j / C;
  const int c = static_cast<int>(j % C);
  const std::size_t r0 = N * p / parts, r1 = N * (p + 1) / parts;
  float dw = 0.0f, db = 0.0f;
  for (std::size_t r = r0; r < r1; ++r) {
    const float dy = dout[r * C + c];
    const float n = (inp[r * C + c] - mean[r]) * rstd[r];
    dw += dy * n;
    db += dy;
  }
  float* pw = partial + p * 2 * C;
  pw[c] = dw;
  pw[C + c] = db;
}

// One thread per column: dweight, dbias (if not null) += the parts in order.
__global__ void layernorm_backward_sum_parts_kernel(float* dweight, float* dbias, const float* partial, int C,
                                                    int parts) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float dw = dweight[c], db = dbias ? dbias[c] : 0.0f;
  for (int p = 0; p < parts; ++p) {
    const float* pw = partial + static_cast<std::size_t>(p) * 2 * C;
    dw += pw[c];
    db += pw[C + c];
  }
  dweight[c] = dw;
  if (dbias) dbias[c] = db;
}

// RMSNorm, grid: N rows; block: kThreads. rstd = 1/sqrt(sum(x^2)/C + eps), y = x rstd w.
__global__ void rmsnorm_forward_kernel(float* out, float* rstd, const float* inp, const float* weight, int C,
                                       float eps) {
  __shared__ float scratch[kWarps];
  const std::size_t r = blockIdx.x;
  const float* x = inp + r * C;
  float ss = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) ss += x[c] * x[c];
  const float rs = 1.0f / sqrtf(block_sum(ss, scratch) / C + eps);
  float* y = out + r * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) y[c] = x[c] * rs * weight[c];
  if (threadIdx.x == 0) rstd[r] = rs;
}

// grid: N rows; block: kThreads. dx += rstd (g - n mean(g n)), g = dy w, n = x rstd.
__global__ void rmsnorm_backward_dx_kernel(float* dinp, const float* dout, const float* inp,
                                           const float* weight, const float* rstd, int C) {
  __shared__ float scratch[kWarps];
  const std::size_t r = blockIdx.x;
  const float* dy = dout + r * C;
  const float* x = inp + r * C;
  const float rs = rstd[r];
  float sgn = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) sgn += dy[c] * weight[c] * (x[c] * rs);
  const float mgn = block_sum(sgn, scratch) / C;
  float* dx = dinp + r * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) dx[c] += rs * (dy[c] * weight[c] - x[c] * rs * mgn);
}

// One thread per (part p, column c): partial[p] = sum dy n over the part's rows, in order.
__global__ void rmsnorm_backward_parts_kernel(float* partial, const float* dout, const float* inp,
                                              const float* rstd, int N, int C, int parts) {
  const std::size_t j = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (j >= static_cast<std::size_t>(parts) * C) return;
  const std::size_t p = j / C;
  const int c = static_cast<int>(j % C);
  const std::size_t r0 = N * p / parts, r1 = N * (p + 1) / parts;
  float dw = 0.0f;
  for (std::size_t r = r0; r < r1; ++r) dw += dout[r * C + c] * (inp[r * C + c] * rstd[r]);
  partial[p * C + c] = dw;
}

// One thread per column: dweight += the parts in order.
__global__ void rmsnorm_backward_sum_parts_kernel(float* dweight, const float* partial, int C, int parts) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float dw = dweight[c];
  for (int p = 0; p < parts; ++p) dw += partial[static_cast<std::size_t>(p) * C + c];
  dweight[c] = dw;
}

}  // namespace

void layernorm_forward(cudaStream_t s, float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int N, int C, float eps) {
  if (N <= 0 || C <= 0) return;
  layernorm_forward_kernel<<<static_cast<unsigned>(N), kThreads, 0, s>>>(out, mean, rstd, inp, weight, bias,
                                                                         C, eps);
  check(cudaGetLastError(), "layernorm_forward");
}

void layernorm_backward(cudaStream_t s, float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd, int N,
                        int C) {
  if (N <= 0 || C <= 0) return;
  layernorm_backward_dx_kernel<<<static_cast<unsigned>(N), kThreads, 0, s>>>(dinp, dout, inp, weight, mean,
                                                                             rstd, C);
  check(cudaGetLastError(), "layernorm_backward: dinp");
  const int parts = std::max(1, (N + kBackwardPartRows - 1) / kBackwardPartRows);
  const std::size_t cells = static_cast<std::size_t>(parts) * C;
  float* partial = nullptr;
  check(cudaMallocAsync(reinterpret_cast<void**>(&partial), cells * 2 * sizeof(float), s),
        "layernorm_backward: scratch");
  layernorm_backward_parts_kernel<<<static_cast<unsigned>((cells + 255) / 256), 256, 0, s>>>(
      partial, dout, inp, mean, rstd, N, C, parts);
  check(cudaGetLastError(), "layernorm_backward: parts");
  layernorm_backward_sum_parts_kernel<<<static_cast<unsigned>((C + 255) / 256), 256, 0, s>>>(
      dweight, dbias, partial, C, parts);
  check(cudaGetLastError(), "layernorm_backward: sum parts");
  check(cudaFreeAsync(partial, s), "layernorm_backward: free scratch");
}

void rmsnorm_forward(cudaStream_t s, float* out, float* rstd, const float* inp, const float* weight, int N,
                     int C, float eps) {
  if (N <= 0 || C <= 0) return;
  rmsnorm_forward_kernel<<<static_cast<unsigned>(N), kThreads, 0, s>>>(out, rstd, inp, weight, C, eps);
  check(cudaGetLastError(), "rmsnorm_forward");
}

void rmsnorm_backward(cudaStream_t s, float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, int N, int C) {
  if (N <= 0 || C <= 0) return;
  rmsnorm_backward_dx_kernel<<<static_cast<unsigned>(N), kThreads, 0, s>>>(dinp, dout, inp, weight, rstd, C);
  check(cudaGetLastError(), "rmsnorm_backward: dinp");
  const int parts = std::max(1, (N + kBackwardPartRows - 1) / kBackwardPartRows);
  const std::size_t cells = static_cast<std::size_t>(parts) * C;
  float* partial = nullptr;
  check(cudaMallocAsync(reinterpret_cast<void**>(&partial), cells * sizeof(float), s),
        "rmsnorm_backward: scratch");
  rmsnorm_backward_parts_kernel<<<static_cast<unsigned>((cells + 255) / 256), 256, 0, s>>>(partial, dout, inp,
                                                                                           rstd, N, C, parts);
  check(cudaGetLastError(), "rmsnorm_backward: parts");
  rmsnorm_backward_sum_parts_kernel<<<static_cast<unsigned>((C + 255) / 256), 256, 0, s>>>(dweight, partial,
                                                                                           C, parts);
  check(cudaGetLastError(), "rmsnorm_backward: sum parts");
  check(cudaFreeAsync(partial, s), "rmsnorm_backward: free scratch");
}

}  // namespace tz::cuda
