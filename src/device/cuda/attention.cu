// Causal multi-head self-attention on a packed qkv (B, T, 3C) on the GPU (device/cpu/attention.cpp).
// For a sequence b and head h (hs = C/H; q_t, k_s, v_s are rows of hs floats with row stride 3C):
//   P[t,s] = softmax over s <= t of q_t . k_s / sqrt(hs),  o_t = sum_{s<=t} P[t,s] v_s
// backward:  dP[t,s] = dO_t . v_s,  dS[t,s] = P[t,s] (dP[t,s] - sum_s' P[t,s'] dP[t,s']) / sqrt(hs),
//            dq_t = sum_{s<=t} dS[t,s] k_s,  dk_s = sum_{t>=s} dS[t,s] q_t,  dv_s = sum_{t>=s} P[t,s] dO_t.
// Threads: forward is one block of kThreads per query row (b, h, t): a thread per key s for the
// scores, block reductions for the max and the sum, then the output's hs columns with the keys split
// over groups of threads (kThreads / hs groups, their partial sums added in group order). Backward
// runs three passes, so no two threads ever add into one element: dS per (b, h, t) row into a
// (B, H, T, T) scratch; dq per (b, h, t); dk and dv per (b, h, s), summing over t >= s. att's entries
// s > t are written as 0. No atomics: every result is the same run to run.
// Against the cpu backend (which tiles the products through its gemm and uses a polynomial exp): the
// sums run in another order and exp is CUDA's expf, so results agree within |diff| <= 1e-5 (1 + |ref|)
// for inputs of order 1 and T up to 1024 (the error grows like the sum's length, sqrt(T) typically).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "device/cuda/cuda_check.hpp"
#include "device/cuda/launchers.hpp"

namespace tz::cuda {
namespace {

constexpr int kThreads = 128;  // a multiple of 32
constexpr int kWarps = kThreads / 32;

// The block's max / sum of v (every thread gets it), in a fixed order; `scratch` holds kWarps floats.
__device__ float block_max(float v, float* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  __syncthreads();
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float m = scratch[0];
  for (int w = 1; w < kWarps; ++w) m = fmaxf(m, scratch[w]);
  return m;
}
__device__ float block_sum(float v, float* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  __syncthreads();
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kWarps; ++w) total += scratch[w];
  return total;
}

// dst[i] = sum_{j = j0}^{j1 - 1} w[j * w_stride] x[j * x_stride + i] for i < hs, by the whole block:
// j is split over kThreads / hs groups of threads (one thread per column in each), whose partial sums
// are added in group order; wider heads (hs > kThreads) take one thread per column, j in order. `red`
// holds kThreads floats of shared memory.
__device__ void weighted_row_sum(float* dst, const float* w, std::size_t w_stride, const float* x,
                                 std::size_t x_stride, int j0, int j1, int hs, float* red) {
  if (hs > kThreads) {
    for (int i = threadIdx.x; i < hs; i += kThreads) {
      float acc = 0.0f;
      for (int j = j0; j < j1; ++j) acc += w[j * w_stride] * x[j * x_stride + i];
      dst[i] = acc;
    }
    return;
  }
  const int groups = kThreads / hs, g = threadIdx.x / hs, i = threadIdx.x % hs;
  __syncthreads();  // red may still be read by a previous call
  if (g < groups) {
    float acc = 0.0f;
    for (int j = j0 + g; j < j1; j += groups) acc += w[j * w_stride] * x[j * x_stride + i];
    red[g * hs + i] = acc;
  }
  __syncthreads();
  if (threadIdx.x < hs) {
    float total = 0.0f;
    for (int k = 0; k < groups; ++k) total += red[k * hs + threadIdx.x];
    dst[threadIdx.x] = total;
  }
}

// The dot product of two rows of n floats, in order.
__device__ float dot(const float* a, const float* b, int n) {
  float d = 0.0f;
  for (int i = 0; i < n; ++i) d += a[i] * b[i];
  return d;
}

// grid: B*H*T query rows, blockIdx.x = (b*H + h)*T + t; block: kThreads; shared: hs + T + kThreads floats.
__global__ void attention_forward_kernel(float* out, float* att, const float* qkv, int T, int C, int H,
                                         float scale) {
  extern __shared__ float shared[];
  __shared__ float scratch[kWarps];
  const int hs = C / H;
  const std::size_t ld = 3 * static_cast<std::size_t>(C);
  const int t = blockIdx.x % T, bh = blockIdx.x / T, h = bh % H, b = bh / H;
  float* qs = shared;                                                       // hs
  float* p = shared + hs;                                                   // T
  float* red = p + T;                                                       // kThreads
  const float* base = qkv + static_cast<std::size_t>(b) * T * ld + h * hs;  // q_0 of this head
  const float* q = base + t * ld;
  for (int i = threadIdx.x; i < hs; i += kThreads) qs[i] = q[i];
  __syncthreads();
  float mx = -INFINITY;
  for (int s = threadIdx.x; s <= t; s += kThreads) {
    p[s] = dot(qs, base + s * ld + C, hs) * scale;
    mx = fmaxf(mx, p[s]);
  }
  mx = block_max(mx, scratch);
  float sum = 0.0f;
  for (int s = threadIdx.x; s <= t; s += kThreads) {
    p[s] = expf(p[s] - mx);
    sum += p[s];
  }
  const float inv = 1.0f / block_sum(sum, scratch);
  float* a = att + static_cast<std::size_t>(blockIdx.x) * T;
  for (int s = threadIdx.x; s < T; s += kThreads) {
    if (s <= t) p[s] *= inv;  // this thread's own e values
    a[s] = s <= t ? p[s] : 0.0f;
  }
  __syncthreads();
  weighted_row_sum(out + (static_cast<std::size_t>(b) * T + t) * C + h * hs, p, 1, base + 2 * C, ld, 0, t + 1,
                   hs, red);
}

// Pass 1. grid: B*H*T rows (as forward); shared: hs + T floats. dpreatt[row, s] = dS[t, s] for s <= t.
__global__ void attention_backward_ds_kernel(float* dpreatt, const float* dout, const float* qkv,
                                             const float* att, int T, int C, int H, float scale) {
  extern __shared__ float shared[];
  __shared__ float scratch[kWarps];
  const int hs = C / H;
  const std::size_t ld = 3 * static_cast<std::size_t>(C);
  const int t = blockIdx.x % T, bh = blockIdx.x / T, h = bh % H, b = bh / H;
  float* dos = shared;      // hs: dO_t
  float* dp = shared + hs;  // T
  const float* dO = dout + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
  for (int i = threadIdx.x; i < hs; i += kThreads) dos[i] = dO[i];
  __syncthreads();
  const float* v = qkv + static_cast<std::size_t>(b) * T * ld + 2 * C + h * hs;  // v_0 of this head
  const float* p = att + static_cast<std::size_t>(blockIdx.x) * T;
  float pdp = 0.0f;
  for (int s = threadIdx.x; s <= t; s += kThreads) {
    dp[s] = dot(dos, v + s * ld, hs);
    pdp += p[s] * dp[s];
  }
  const float total = block_sum(pdp, scratch);
  float* ds = dpreatt + static_cast<std::size_t>(blockIdx.x) * T;
  for (int s = threadIdx.x; s <= t; s += kThreads) ds[s] = p[s] * (dp[s] - total) * scale;
}

// Pass 2. grid: B*H*T rows; shared: kThreads floats. dq_t = sum_{s<=t} dS[t,s] k_s.
__global__ void attention_backward_dq_kernel(float* dqkv, const float* dpreatt, const float* qkv, int T,
                                             int C, int H) {
  extern __shared__ float red[];
  const int hs = C / H;
  const std::size_t ld = 3 * static_cast<std::size_t>(C);
  const int t = blockIdx.x % T, bh = blockIdx.x / T, h = bh % H, b = bh / H;
  const std::size_t head = static_cast<std::size_t>(b) * T * ld + h * hs;
  weighted_row_sum(dqkv + head + t * ld, dpreatt + static_cast<std::size_t>(blockIdx.x) * T, 1,
                   qkv + head + C, ld, 0, t + 1, hs, red);
}

// Pass 3. grid: B*H*T key rows, blockIdx.x = (b*H + h)*T + s; shared: kThreads floats.
// dk_s = sum_{t>=s} dS[t,s] q_t,  dv_s = sum_{t>=s} P[t,s] dO_t.
__global__ void attention_backward_dkv_kernel(float* dqkv, const float* dpreatt, const float* dout,
                                              const float* qkv, const float* att, int T, int C, int H) {
  extern __shared__ float red[];
  const int hs = C / H;
  const std::size_t ld = 3 * static_cast<std::size_t>(C);
  const int s = blockIdx.x % T, bh = blockIdx.x / T, h = bh % H, b = bh / H;
  const std::size_t head = static_cast<std::size_t>(b) * T * ld + h * hs;
  const std::size_t column = static_cast<std::size_t>(bh) * T * T + s;  // (b, h, t = 0, s)
  weighted_row_sum(dqkv + head + s * ld + C, dpreatt + column, T, qkv + head, ld, s, T, hs, red);
  weighted_row_sum(dqkv + head + s * ld + 2 * C, att + column, T,
                   dout + static_cast<std::size_t>(b) * T * C + h * hs, C, s, T, hs, red);
}

}  // namespace

void attention_forward(cudaStream_t s, float* out, float* att, const float* qkv, int B, int T, int C, int H) {
  const std::size_t rows = static_cast<std::size_t>(B) * H * T;
  if (rows == 0 || C <= 0) return;
  const int hs = C / H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::size_t shared = (static_cast<std::size_t>(hs) + T + kThreads) * sizeof(float);
  attention_forward_kernel<<<static_cast<unsigned>(rows), kThreads, shared, s>>>(out, att, qkv, T, C, H,
                                                                                 scale);
  check(cudaGetLastError(), "attention_forward");
}

void attention_backward(cudaStream_t s, float* dqkv, const float* dout, const float* qkv, const float* att,
                        int B, int T, int C, int H) {
  const std::size_t rows = static_cast<std::size_t>(B) * H * T;
  if (rows == 0 || C <= 0) return;
  const int hs = C / H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  float* dpreatt = nullptr;  // (B, H, T, T); entries s > t never written nor read
  check(cudaMallocAsync(reinterpret_cast<void**>(&dpreatt), rows * T * sizeof(float), s),
        "attention_backward: scratch");
  const unsigned grid = static_cast<unsigned>(rows);
  attention_backward_ds_kernel<<<grid, kThreads, (static_cast<std::size_t>(hs) + T) * sizeof(float), s>>>(
      dpreatt, dout, qkv, att, T, C, H, scale);
  check(cudaGetLastError(), "attention_backward: dS");
  attention_backward_dq_kernel<<<grid, kThreads, kThreads * sizeof(float), s>>>(dqkv, dpreatt, qkv, T, C, H);
  check(cudaGetLastError(), "attention_backward: dq");
  attention_backward_dkv_kernel<<<grid, kThreads, kThreads * sizeof(float), s>>>(dqkv, dpreatt, dout, qkv,
                                                                                 att, T, C, H);
  check(cudaGetLastError(), "attention_backward: dk, dv");
  check(cudaFreeAsync(dpreatt, s), "attention_backward: free scratch");
}

}  // namespace tz::cuda
