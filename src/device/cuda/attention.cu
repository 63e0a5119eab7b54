// Causal self-attention with grouped-query heads on a packed qkv (B, T, (H + 2 KV) D) on the GPU
// (device/cpu/attention.cpp). Query head h reads key/value head h / G, G = H / KV. For a sequence b and
// query head h (hs = D; q_t, k_s, v_s are rows of hs floats, k and v those of h's key/value head):
//   P[t,s] = softmax over s <= t of q_t . k_s / sqrt(hs),  o_t = sum_{s<=t} P[t,s] v_s,
//   lse_t = log sum_{s<=t} exp(q_t . k_s / sqrt(hs))  (kept for backward: B H T floats, no T x T)
// backward, with P recomputed as exp(S - lse) and D_t = dO_t . o_t:
//   dP[t,s] = dO_t . v_s,  dS[t,s] = P[t,s] (dP[t,s] - D_t) / sqrt(hs),
//   dq_t = sum_{s<=t} dS[t,s] k_s,  dk_s = sum_{t>=s} dS[t,s] q_t,  dv_s = sum_{t>=s} P[t,s] dO_t.
// Tiled by query rows: the B*H heads are processed together, kRowTile query rows [t0, t1) at a time
// (fewer when B H T is large, so the scratch stays under kScratchFloats), against keys [0, t1) only:
// causal blocks above the diagonal are never computed, and the scores of one tile (B H x rows x t1)
// are the only T-long scratch, so memory is linear in T. The products are cuBLAS fp32 strided-batched
// SGEMMs (default math: no TF32) over the heads, on head-major copies of q, k, v (and dO) made by a
// gather kernel in stream-ordered scratch. K and V are expanded to the H query heads there (each
// key/value head copied to the G query heads of its group), so the products are those of multi-head
// attention; backward computes dK, dV per query head likewise and a gather kernel sums each group's G
// of them, in head order, into the key/value head's dk, dv. Grouping thus saves nothing on the GPU
// (scratch and products are those of H heads); it costs the expanded copies' traffic only:
//   forward:  S = Q_tile K^T / sqrt(hs); a causal softmax kernel (a warp per row: max and sum by warp
//             shuffles) turns S into P in place and writes lse; O_tile = P V; O unpermuted into out.
//   backward: per tile, S recomputed; a kernel writes P = exp(S - lse) (0 for s > t); dP = dO_tile V^T;
//             a kernel writes dS over dP; dV += P^T dO_tile, dQ_tile = dS K, dK += dS^T Q_tile;
//             dq written and dk, dv summed per group into dqkv. D comes from out and dout by a warp-per-row
//             kernel.
// No atomics; cuBLAS's fp32 products and the warp-shuffle reductions run in a fixed order, so every
// result is the same run to run.
// Against the cpu backend (which tiles its products differently and uses a polynomial exp): the sums
// run in another order and exp is CUDA's expf, so results agree within |diff| <= 1e-5 (1 + |ref|)
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
constexpr int kRowTile = 256;                      // query rows per tile
constexpr std::size_t kScratchFloats = 64u << 20;  // a tile's scores at most (256 MiB), when rows allow

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

// q, k, v of a grouped-query qkv (B, T, (H + 2 KV) D) -> out (3, B, H, T, D): k and v expanded to the
// H query heads (query head h gets key/value head h / (H / KV)). Indexed by the output, so every
// element of out is written once.
__global__ void gather_qkv_kernel(float* out, const float* qkv, int B, int T, int H, int KV, int D) {
  const std::size_t n = 3 * static_cast<std::size_t>(B) * H * T * D,
                    ld = static_cast<std::size_t>(H + 2 * KV) * D;
  const int G = H / KV;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::size_t r = i / D;
    const std::size_t j = i % D, t = r % T;
    r /= T;
    const std::size_t h = r % H;
    r /= H;
    const std::size_t b = r % B, p = r / B, kv = h / G;
    const std::size_t col = p == 0 ? h * D : p == 1 ? (H + kv) * D : (H + KV + kv) * D;
    out[i] = qkv[(b * T + t) * ld + col + j];
  }
}

// The backward's inverse: in (3, B, H, T, D) holds dq, dk, dv per query head; dqkv (B, T, (H + 2 KV) D)
// gets dq, and for each key/value head the sum of its group's G dk (dv) rows in head order.
__global__ void gather_dqkv_kernel(float* dqkv, const float* in, int B, int T, int H, int KV, int D) {
  const std::size_t W = static_cast<std::size_t>(H + 2 * KV) * D, n = static_cast<std::size_t>(B) * T * W;
  const std::size_t part = static_cast<std::size_t>(B) * H * T * D;
  const int G = H / KV;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t col = i % W, bt = i / W, t = bt % T, b = bt / T, j = col % D, head = col / D;
    // head < H: query head; then KV key heads, then KV value heads.
    std::size_t p = 0, h0 = head, heads = 1;
    if (head >= static_cast<std::size_t>(H)) {
      const std::size_t kvh = head - H;
      p = kvh < static_cast<std::size_t>(KV) ? 1 : 2;
      h0 = (kvh % KV) * G;
      heads = G;
    }
    const float* src = in + p * part + ((b * H + h0) * T + t) * D + j;
    float acc = 0.0f;
    for (std::size_t g = 0; g < heads; ++g) acc += src[g * T * D];
    dqkv[i] = acc;
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

// A warp per row of a tile's scores S (rows = B*H*m, row r = bh*m + i, query t = t0 + i, n keys
// [0, n) with row stride n): S becomes P in place (0 for s > t); lse[bh*T + t] written.
__global__ void causal_softmax_kernel(float* att, float* lse, int T, int t0, int m, int n, std::size_t rows) {
  const std::size_t row = static_cast<std::size_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp
  const int lane = threadIdx.x % 32, i = static_cast<int>(row % m), t = t0 + i;
  const std::size_t bh = row / m;
  float* a = att + row * n;
  float mx = -INFINITY;
  for (int s = lane; s <= t; s += 32) mx = fmaxf(mx, a[s]);
  mx = warp_max(mx);
  float sum = 0.0f;
  for (int s = lane; s <= t; s += 32) {
    const float e = expf(a[s] - mx);
    a[s] = e;
    sum += e;
  }
  sum = warp_sum(sum);
  const float inv = 1.0f / sum;
  for (int s = lane; s < n; s += 32) a[s] = s <= t ? a[s] * inv : 0.0f;
  if (lane == 0) lse[bh * T + t] = mx + logf(sum);
}

// A warp per row, as above: p holds S on entry and P = exp(S - lse) on return; ds holds dP on entry and
// dS = P (dP - D) * scale on return; both 0 for s > t.
__global__ void softmax_backward_kernel(float* ds, float* p, const float* lse, const float* dsum, int T,
                                        int t0, int m, int n, std::size_t rows, float scale) {
  const std::size_t row = static_cast<std::size_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x % 32, i = static_cast<int>(row % m), t = t0 + i;
  const std::size_t stat = (row / m) * T + t;
  const float l = lse[stat], dt = dsum[stat];
  float* pr = p + row * n;
  float* d = ds + row * n;
  for (int s = lane; s < n; s += 32) {
    const bool in = s <= t;
    const float ps = in ? expf(pr[s] - l) : 0.0f;
    d[s] = in ? ps * (d[s] - dt) * scale : 0.0f;
    pr[s] = ps;
  }
}

// A warp per (b, t, h): dsum[(b*H + h)*T + t] = dO_t . o_t over the head's hs columns (rows of C).
__global__ void row_dot_kernel(float* dsum, const float* dout, const float* out, int B, int T, int H,
                               int hs) {
  const std::size_t rows = static_cast<std::size_t>(B) * T * H;
  const std::size_t row = static_cast<std::size_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x % 32;
  const std::size_t h = row % H, bt = row / H, t = bt % T, b = bt / T;
  const float* x = dout + row * hs;  // (b*T + t)*C + h*hs = row*hs
  const float* y = out + row * hs;
  float acc = 0.0f;
  for (int j = lane; j < hs; j += 32) acc += x[j] * y[j];
  acc = warp_sum(acc);
  if (lane == 0) dsum[(b * H + h) * T + t] = acc;
}

// Row-major per head: C_i = alpha op(A_i) op(B_i) + beta C_i as cuBLAS's column-major C_i^T = op(B_i)^T
// op(A_i)^T. Here every operand is passed directly in cuBLAS's terms: C (m x n, ldc) = alpha op(A) op(B).
void batched_gemm(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k,
                  float alpha, const float* A, int lda, long long stride_a, const float* B, int ldb,
                  long long stride_b, float beta, float* C, int ldc, long long stride_c, int batch,
                  const char* what) {
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

// Query rows per tile: kRowTile, fewer when the heads' scores would pass kScratchFloats (at least 32).
int row_tile(int BH, int T) {
  const std::size_t per_row = static_cast<std::size_t>(BH) * T;
  const std::size_t fit = std::max<std::size_t>(32, kScratchFloats / std::max<std::size_t>(per_row, 1));
  return static_cast<int>(
      std::min<std::size_t>({static_cast<std::size_t>(kRowTile), fit, static_cast<std::size_t>(T)}));
}

}  // namespace

void attention_forward(cudaStream_t s, float* out, float* lse, const float* qkv, int B, int T, int H, int KV,
                       int D) {
  if (static_cast<std::size_t>(B) * H * T == 0) return;
  const int hs = D, BH = B * H, ld = hs, R = row_tile(BH, T);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::size_t NC = static_cast<std::size_t>(B) * T * H * D;
  const long long head = static_cast<long long>(T) * hs;
  // q, k, v (B, H, T, hs) each (k, v expanded to the query heads); o; one tile's scores (B H, R, T) at most.
  Scratch scratch(4 * NC + static_cast<std::size_t>(BH) * R * T, s, "attention_forward: scratch");
  float *q = scratch.get(), *k = q + NC, *v = k + NC, *o = v + NC, *att = o + NC;
  gather_qkv_kernel<<<blocks_for(3 * NC, kPermuteThreads), kPermuteThreads, 0, s>>>(q, qkv, B, T, H, KV, D);
  check(cudaGetLastError(), "attention_forward: gather qkv");
  CublasStreamGuard guard(s);
  for (int t0 = 0; t0 < T; t0 += R) {
    const int m = std::min(R, T - t0), n = t0 + m;  // rows [t0, t0+m) against keys [0, n)
    const long long tile = static_cast<long long>(m) * n;
    const std::size_t rows = static_cast<std::size_t>(BH) * m;
    // S^T (column-major, n x m) = K Q_tile^T * scale: S[i, s] = q_{t0+i} . k_s * scale.
    batched_gemm(guard.handle(), CUBLAS_OP_T, CUBLAS_OP_N, n, m, hs, scale, k, ld, head,
                 q + static_cast<std::size_t>(t0) * hs, ld, head, 0.0f, att, n, tile, BH,
                 "attention_forward: scores");
    causal_softmax_kernel<<<blocks_for(rows, kRowsPerBlock), kRowThreads, 0, s>>>(att, lse, T, t0, m, n,
                                                                                  rows);
    check(cudaGetLastError(), "attention_forward: softmax");
    // O_tile^T (hs x m) = V^T P^T: o_t = sum_s P[t, s] v_s (P[t, s] = 0 for s > t).
    batched_gemm(guard.handle(), CUBLAS_OP_N, CUBLAS_OP_N, hs, m, n, 1.0f, v, ld, head, att, n, tile, 0.0f,
                 o + static_cast<std::size_t>(t0) * hs, ld, head, BH, "attention_forward: P V");
  }
  unpermute_kernel<<<blocks_for(NC, kPermuteThreads), kPermuteThreads, 0, s>>>(out, o, B, T, 1, H, hs);
  check(cudaGetLastError(), "attention_forward: unpermute");
}

void attention_backward(cudaStream_t s, float* dqkv, const float* dout, const float* qkv, const float* out,
                        const float* lse, int B, int T, int H, int KV, int D) {
  const std::size_t stats = static_cast<std::size_t>(B) * H * T;
  if (stats == 0) return;
  const int hs = D, BH = B * H, ld = hs, R = row_tile(BH, T);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::size_t NC = static_cast<std::size_t>(B) * T * H * D, A = static_cast<std::size_t>(BH) * R * T;
  const long long head = static_cast<long long>(T) * hs;
  // q, k, v, dO, dq, dk, dv (B, H, T, hs) each (k, v, dk, dv per query head); D (B, H, T); one tile's P
  // and dS (B H, R, T) at most.
  Scratch scratch(7 * NC + stats + 2 * A, s, "attention_backward: scratch");
  float *q = scratch.get(), *k = q + NC, *v = k + NC, *dO = v + NC;
  float *dq = dO + NC, *dk = dq + NC, *dv = dk + NC, *dsum = dv + NC, *p = dsum + stats, *ds = p + A;
  gather_qkv_kernel<<<blocks_for(3 * NC, kPermuteThreads), kPermuteThreads, 0, s>>>(q, qkv, B, T, H, KV, D);
  check(cudaGetLastError(), "attention_backward: gather qkv");
  permute_kernel<<<blocks_for(NC, kPermuteThreads), kPermuteThreads, 0, s>>>(dO, dout, B, T, 1, H, hs);
  check(cudaGetLastError(), "attention_backward: permute dout");
  row_dot_kernel<<<blocks_for(stats, kRowsPerBlock), kRowThreads, 0, s>>>(dsum, dout, out, B, T, H, hs);
  check(cudaGetLastError(), "attention_backward: D");
  check(cudaMemsetAsync(dk, 0, 2 * NC * sizeof(float), s), "attention_backward: clear dk, dv");
  CublasStreamGuard guard(s);
  for (int t0 = 0; t0 < T; t0 += R) {
    const int m = std::min(R, T - t0), n = t0 + m;
    const long long tile = static_cast<long long>(m) * n;
    const std::size_t rows = static_cast<std::size_t>(BH) * m, first = static_cast<std::size_t>(t0) * hs;
    batched_gemm(guard.handle(), CUBLAS_OP_T, CUBLAS_OP_N, n, m, hs, scale, k, ld, head, q + first, ld, head,
                 0.0f, p, n, tile, BH, "attention_backward: scores");
    // dP^T (column-major, n x m) = V dO_tile^T: dP[i, s] = dO_{t0+i} . v_s.
    batched_gemm(guard.handle(), CUBLAS_OP_T, CUBLAS_OP_N, n, m, hs, 1.0f, v, ld, head, dO + first, ld, head,
                 0.0f, ds, n, tile, BH, "attention_backward: dP");
    softmax_backward_kernel<<<blocks_for(rows, kRowsPerBlock), kRowThreads, 0, s>>>(ds, p, lse, dsum, T, t0,
                                                                                    m, n, rows, scale);
    check(cudaGetLastError(), "attention_backward: softmax");
    // dV[0, n)^T (hs x n) += dO_tile^T P: dv_s += sum_t P[t, s] dO_t.
    batched_gemm(guard.handle(), CUBLAS_OP_N, CUBLAS_OP_T, hs, n, m, 1.0f, dO + first, ld, head, p, n, tile,
                 1.0f, dv, ld, head, BH, "attention_backward: dV");
    // dQ_tile^T (hs x m) = K^T dS^T: dq_t = sum_s dS[t, s] k_s.
    batched_gemm(guard.handle(), CUBLAS_OP_N, CUBLAS_OP_N, hs, m, n, 1.0f, k, ld, head, ds, n, tile, 0.0f,
                 dq + first, ld, head, BH, "attention_backward: dQ");
    // dK[0, n)^T (hs x n) += Q_tile^T dS: dk_s += sum_t dS[t, s] q_t.
    batched_gemm(guard.handle(), CUBLAS_OP_N, CUBLAS_OP_T, hs, n, m, 1.0f, q + first, ld, head, ds, n, tile,
                 1.0f, dk, ld, head, BH, "attention_backward: dK");
  }
  const std::size_t Q = static_cast<std::size_t>(B) * T * (H + 2 * KV) * D;
  gather_dqkv_kernel<<<blocks_for(Q, kPermuteThreads), kPermuteThreads, 0, s>>>(dqkv, dq, B, T, H, KV, D);
  check(cudaGetLastError(), "attention_backward: gather dqkv");
}

}  // namespace tz::cuda
