// Causal multi-head self-attention on a packed qkv (B, T, 3C) on the GPU (device/cpu/attention.cpp).
// For a sequence b and head h (hs = C/H; q_t, k_s, v_s are rows of hs floats with row stride 3C):
//   P[t,s] = softmax over s <= t of q_t . k_s / sqrt(hs),  o_t = sum_{s<=t} P[t,s] v_s
// backward:  dP[t,s] = dO_t . v_s,  dS[t,s] = P[t,s] (dP[t,s] - sum_s' P[t,s'] dP[t,s']) / sqrt(hs),
//            dq_t = sum_{s<=t} dS[t,s] k_s,  dk_s = sum_{t>=s} dS[t,s] q_t,  dv_s = sum_{t>=s} P[t,s] dO_t.
// The products are cuBLAS fp32 strided-batched SGEMMs (default math: no TF32) over the B*H heads, on
// head-major copies of q, k, v (and dO) made by a permute kernel in stream-ordered scratch:
//   forward:  att = Q K^T / sqrt(hs) (all T x T, straight into att), a causal softmax kernel in place
//             (a warp per row: max and sum by warp shuffles, 0 written for s > t), O = P V, unpermuted
//             into out (B, T, C).
//   backward: dP = dO V^T; a softmax-backward kernel (a warp per row) writes dS (0 for s > t) over dP
//             and a copy of P with 0 for s > t (att's entries s > t are unspecified by the contract);
//             dV = P^T dO, dQ = dS K, dK = dS^T Q, unpermuted into dqkv.
// No atomics; cuBLAS's fp32 products and the warp-shuffle reductions run in a fixed order, so every
// result is the same run to run.
// Against the cpu backend (which tiles the products through its gemm and uses a polynomial exp): the
// sums run in another order and exp is CUDA's expf, so results agree within |diff| <= 1e-5 (1 + |ref|)
// for inputs of order 1 and T up to 1024 (the error grows like the sum's length, sqrt(T) typically).
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "device/cuda/cublas_handle.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/launchers.hpp"

namespace tz::cuda {
namespace {

constexpr int kPermuteThreads = 256;
constexpr int kRowThreads = 256;  // a warp per row
constexpr int kRowsPerBlock = kRowThreads / 32;

unsigned blocks_for(std::size_t n, int threads) {
  const std::size_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(std::min<std::size_t>(blocks, 1u << 20));  // grid-stride beyond
}

// in (B, T, P, H, hs) -> out (P, B, H, T, hs): P parts of C = H*hs columns each (qkv: P = 3; dout: 1).
__global__ void permute_kernel(float* out, const float* in, int B, int T, int P, int H, int hs) {
  const std::size_t C = static_cast<std::size_t>(H) * hs, n = static_cast<std::size_t>(B) * T * P * C;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t col = i % C, row = i / C;  // row = (b*T + t)*P + p
    const std::size_t p = row % P, bt = row / P, t = bt % T, b = bt / T;
    const std::size_t h = col / hs, j = col % hs;
    out[(((p * B + b) * H + h) * T + t) * hs + j] = in[i];
  }
}

// The inverse: in (P, B, H, T, hs) -> out (B, T, P, H, hs); every element of out written.
__global__ void unpermute_kernel(float* out, const float* in, int B, int T, int P, int H, int hs) {
  const std::size_t C = static_cast<std::size_t>(H) * hs, n = static_cast<std::size_t>(B) * T * P * C;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t col = i % C, row = i / C;
    const std::size_t p = row % P, bt = row / P, t = bt % T, b = bt / T;
    const std::size_t h = col / hs, j = col % hs;
    out[i] = in[(((p * B + b) * H + h) * T + t) * hs + j];
  }
}

// Butterfly reductions: every lane ends with the same value (each step adds the same two operands).
__device__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// A warp per row of att (rows = B*H*T, row = (b*H + h)*T + t): the scaled scores of s <= t become
// their softmax in place; entries s > t are written 0.
__global__ void causal_softmax_kernel(float* att, int T, std::size_t rows) {
  const std::size_t row = static_cast<std::size_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp
  const int lane = threadIdx.x % 32, t = static_cast<int>(row % T);
  float* a = att + row * T;
  float mx = -INFINITY;
  for (int s = lane; s <= t; s += 32) mx = fmaxf(mx, a[s]);
  mx = warp_max(mx);
  float sum = 0.0f;
  for (int s = lane; s <= t; s += 32) {
    const float e = expf(a[s] - mx);
    a[s] = e;
    sum += e;
  }
  const float inv = 1.0f / warp_sum(sum);
  for (int s = lane; s < T; s += 32) a[s] = s <= t ? a[s] * inv : 0.0f;
}

// A warp per row: ds holds dP on entry and dS = P (dP - sum_s P dP) * scale on return (0 for s > t);
// pm gets P with 0 for s > t.
__global__ void softmax_backward_kernel(float* ds, float* pm, const float* att, int T, std::size_t rows,
                                        float scale) {
  const std::size_t row = static_cast<std::size_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x % 32, t = static_cast<int>(row % T);
  const float* p = att + row * T;
  float* d = ds + row * T;
  float* m = pm + row * T;
  float pdp = 0.0f;
  for (int s = lane; s <= t; s += 32) pdp += p[s] * d[s];
  const float total = warp_sum(pdp);
  for (int s = lane; s < T; s += 32) {
    const bool in = s <= t;
    const float ps = in ? p[s] : 0.0f;
    d[s] = in ? ps * (d[s] - total) * scale : 0.0f;
    m[s] = ps;
  }
}

// Row-major per head: C_i = alpha op(A_i) op(B_i) as cuBLAS's column-major C_i^T = op(B_i)^T op(A_i)^T.
// Here every operand is passed directly in cuBLAS's terms: C (m x n, ldc) = alpha op(A) op(B).
void batched_gemm(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k,
                  float alpha, const float* A, int lda, long long stride_a, const float* B, int ldb,
                  long long stride_b, float* C, int ldc, long long stride_c, int batch, const char* what) {
  const float beta = 0.0f;
  check_cublas(cublasSgemmStridedBatched(handle, op_a, op_b, m, n, k, &alpha, A, lda, stride_a, B, ldb,
                                         stride_b, &beta, C, ldc, stride_c, batch),
               what);
}

// Stream-ordered scratch for one launcher call, freed on the stream after the work that uses it.
class Scratch {
 public:
  Scratch(std::size_t floats, cudaStream_t s, const char* what) : s_(s) {
    check(cudaMallocAsync(reinterpret_cast<void**>(&p_), floats * sizeof(float), s), what);
  }
  ~Scratch() { cudaFreeAsync(p_, s_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  float* get() const { return p_; }

 private:
  float* p_ = nullptr;
  cudaStream_t s_;
};

}  // namespace

void attention_forward(cudaStream_t s, float* out, float* att, const float* qkv, int B, int T, int C, int H) {
  const std::size_t rows = static_cast<std::size_t>(B) * H * T;
  if (rows == 0 || C <= 0) return;
  const int hs = C / H, BH = B * H, ld = std::max(1, hs);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::size_t NC = static_cast<std::size_t>(B) * T * C;
  const long long head = static_cast<long long>(T) * hs, square = static_cast<long long>(T) * T;
  Scratch scratch(4 * NC, s, "attention_forward: scratch");  // q, k, v (B, H, T, hs) each; o
  float *q = scratch.get(), *k = q + NC, *v = k + NC, *o = v + NC;
  permute_kernel<<<blocks_for(3 * NC, kPermuteThreads), kPermuteThreads, 0, s>>>(q, qkv, B, T, 3, H, hs);
  check(cudaGetLastError(), "attention_forward: permute");
  CublasStreamGuard guard(s);
  // att^T (column-major, s x t) = K Q^T * scale: att[t, s] = q_t . k_s * scale.
  batched_gemm(guard.handle(), CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, scale, k, ld, head, q, ld, head, att, T,
               square, BH, "attention_forward: scores");
  causal_softmax_kernel<<<blocks_for(rows, kRowsPerBlock), kRowThreads, 0, s>>>(att, T, rows);
  check(cudaGetLastError(), "attention_forward: softmax");
  // O^T (hs x T) = V^T P^T: o_t = sum_s P[t, s] v_s (P[t, s] = 0 for s > t).
  batched_gemm(guard.handle(), CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, 1.0f, v, ld, head, att, T, square, o, ld,
               head, BH, "attention_forward: P V");
  unpermute_kernel<<<blocks_for(NC, kPermuteThreads), kPermuteThreads, 0, s>>>(out, o, B, T, 1, H, hs);
  check(cudaGetLastError(), "attention_forward: unpermute");
}

void attention_backward(cudaStream_t s, float* dqkv, const float* dout, const float* qkv, const float* att,
                        int B, int T, int C, int H) {
  const std::size_t rows = static_cast<std::size_t>(B) * H * T;
  if (rows == 0 || C <= 0) return;
  const int hs = C / H, BH = B * H, ld = std::max(1, hs);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::size_t NC = static_cast<std::size_t>(B) * T * C, A = rows * T;
  const long long head = static_cast<long long>(T) * hs, square = static_cast<long long>(T) * T;
  // q, k, v, dO, dq, dk, dv (B, H, T, hs) each; dS and the masked P (B, H, T, T) each.
  Scratch scratch(7 * NC + 2 * A, s, "attention_backward: scratch");
  float *q = scratch.get(), *k = q + NC, *v = k + NC, *dO = v + NC;
  float *dq = dO + NC, *dk = dq + NC, *dv = dk + NC, *ds = dv + NC, *pm = ds + A;
  permute_kernel<<<blocks_for(3 * NC, kPermuteThreads), kPermuteThreads, 0, s>>>(q, qkv, B, T, 3, H, hs);
  check(cudaGetLastError(), "attention_backward: permute qkv");
  permute_kernel<<<blocks_for(NC, kPermuteThreads), kPermuteThreads, 0, s>>>(dO, dout, B, T, 1, H, hs);
  check(cudaGetLastError(), "attention_backward: permute dout");
  CublasStreamGuard guard(s);
  // dP^T (column-major, s x t) = V dO^T: dP[t, s] = dO_t . v_s.
  batched_gemm(guard.handle(), CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, 1.0f, v, ld, head, dO, ld, head, ds, T,
               square, BH, "attention_backward: dP");
  softmax_backward_kernel<<<blocks_for(rows, kRowsPerBlock), kRowThreads, 0, s>>>(ds, pm, att, T, rows,
                                                                                  scale);
  check(cudaGetLastError(), "attention_backward: softmax");
  // dV^T (hs x T) = dO^T P: dv_s = sum_t P[t, s] dO_t.
  batched_gemm(guard.handle(), CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, 1.0f, dO, ld, head, pm, T, square, dv, ld,
               head, BH, "attention_backward: dV");
  // dQ^T (hs x T) = K^T dS^T: dq_t = sum_s dS[t, s] k_s.
  batched_gemm(guard.handle(), CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, 1.0f, k, ld, head, ds, T, square, dq, ld,
               head, BH, "attention_backward: dQ");
  // dK^T (hs x T) = Q^T dS: dk_s = sum_t dS[t, s] q_t.
  batched_gemm(guard.handle(), CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, 1.0f, q, ld, head, ds, T, square, dk, ld,
               head, BH, "attention_backward: dK");
  unpermute_kernel<<<blocks_for(3 * NC, kPermuteThreads), kPermuteThreads, 0, s>>>(dqkv, dq, B, T, 3, H, hs);
  check(cudaGetLastError(), "attention_backward: unpermute");
}

}  // namespace tz::cuda
