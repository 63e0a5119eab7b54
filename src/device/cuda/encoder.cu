// Token + position embedding on the GPU (device/cpu/layers.hpp defines it; N = B*T rows of C).
//   forward   one block per row i = b*T + t, threads over c: out[i,c] = wte[tokens[i],c] + wpe[t,c]
//             (wpe null with rotary positions: the token row alone),
//             wte fp32 or bf16 widened exactly (bits << 16): one fp32 add per element.
//   backward  dwte: the host reads the N tokens back and groups the rows by token, keeping row order
//             (a stable counting sort); one block per distinct token, threads over c, adds its rows'
//             dout into a register started at dwte[v,c], in row order, and stores once. dwpe: one
//             thread per (t, c) adds dout[b,t,c] for b = 0..B-1 in order. No atomics.
// Both are bitwise the cpu backend's (encoder.cpp): the same fp32 adds in the same order per element.
// A token outside [0, V) is an InternalError naming it: forward skips the row and records the first
// such row on the device (read back after the stream finishes); backward checks the tokens it reads
// back before touching a gradient. Both wait for the stream.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "device/cuda/cuda_check.hpp"
#include "device/cuda/launchers.hpp"

namespace tz::cuda {
namespace {

constexpr int kThreads = 128;
constexpr unsigned long long kNoBadToken = ~0ull;

// The first bad token by row: (row << 32) | bits of the token, so atomicMin keeps the lowest row.
__device__ void record_bad_token(unsigned long long* first_bad, std::size_t row, std::int32_t token) {
  atomicMin(first_bad, (static_cast<unsigned long long>(row) << 32) | static_cast<std::uint32_t>(token));
}

// grid: N rows; block: threads over C.
__global__ void encoder_forward_kernel(float* out, const std::int32_t* tokens, const float* wte_f32,
                                       const std::uint16_t* wte_b16, const float* wpe, int T, int C, int V,
                                       unsigned long long* first_bad) {
  const std::size_t i = blockIdx.x;
  const std::int32_t token = tokens[i];
  if (token < 0 || token >= V) {
    if (threadIdx.x == 0) record_bad_token(first_bad, i, token);
    return;
  }
  const std::size_t row = static_cast<std::size_t>(token) * C;
  const float* p = wpe == nullptr ? nullptr : wpe + (i % T) * C;  // null: rotary positions
  float* o = out + i * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float e = wte_b16 != nullptr ? __uint_as_float(static_cast<std::uint32_t>(wte_b16[row + c]) << 16)
                                       : wte_f32[row + c];
    o[c] = p != nullptr ? e + p[c] : e;
  }
}

// grid: one block per distinct token (group g holds rows[begin[g] .. begin[g+1]) in row order).
__global__ void encoder_backward_wte_kernel(float* dwte, const float* dout, const std::int32_t* group_token,
                                            const std::int32_t* group_begin, const std::int32_t* rows,
                                            int C) {
  const int g = blockIdx.x;
  const int r0 = group_begin[g], r1 = group_begin[g + 1];
  float* e = dwte + static_cast<std::size_t>(group_token[g]) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float acc = e[c];
    for (int r = r0; r < r1; ++r) acc += dout[static_cast<std::size_t>(rows[r]) * C + c];
    e[c] = acc;
  }
}

// One thread per (t, c) of dwpe's first T rows.
__global__ void encoder_backward_wpe_kernel(float* dwpe, const float* dout, int B, int T, int C) {
  const std::size_t j = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (j >= static_cast<std::size_t>(T) * C) return;
  float acc = dwpe[j];
  for (int b = 0; b < B; ++b) acc += dout[static_cast<std::size_t>(b) * T * C + j];
  dwpe[j] = acc;
}

// A device word for the first bad token, freed on the stream.
class BadTokenFlag {
 public:
  explicit BadTokenFlag(cudaStream_t s) : s_(s) {
    check(cudaMallocAsync(reinterpret_cast<void**>(&p_), sizeof(*p_), s), "encoder: flag alloc");
    check(cudaMemsetAsync(p_, 0xff, sizeof(*p_), s), "encoder: flag clear");
  }
  ~BadTokenFlag() { cudaFreeAsync(p_, s_); }
  BadTokenFlag(const BadTokenFlag&) = delete;
  BadTokenFlag& operator=(const BadTokenFlag&) = delete;
  unsigned long long* get() const { return p_; }
  // Waits for the stream; the first bad token, or kNoBadToken.
  unsigned long long read() const {
    unsigned long long v = kNoBadToken;
    check(cudaMemcpyAsync(&v, p_, sizeof(v), cudaMemcpyDeviceToHost, s_), "encoder: flag read back");
    check(cudaStreamSynchronize(s_), "encoder: flag read back");
    return v;
  }

 private:
  cudaStream_t s_;
  unsigned long long* p_ = nullptr;
};

}  // namespace

void encoder_forward(cudaStream_t s, float* out, const std::int32_t* tokens, const float* wte_f32,
                     const bf16_bits* wte_b16, const float* wpe, int B, int T, int C, int V) {
  const std::size_t N = static_cast<std::size_t>(B) * T;
  if (N == 0 || C == 0) return;
  BadTokenFlag flag(s);
  encoder_forward_kernel<<<static_cast<unsigned>(N), kThreads, 0, s>>>(out, tokens, wte_f32, wte_b16, wpe, T,
                                                                       C, V, flag.get());
  check(cudaGetLastError(), "encoder_forward");
  const unsigned long long bad = flag.read();
  if (bad != kNoBadToken)
    fail("encoder_forward: token id outside the vocabulary",
         static_cast<std::int32_t>(static_cast<std::uint32_t>(bad & 0xffffffffu)));
}

void encoder_backward(cudaStream_t s, float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens,
                      int B, int T, int C, int V) {
  const std::size_t N = static_cast<std::size_t>(B) * T;
  if (N == 0 || C == 0) return;
  std::vector<std::int32_t> host_tokens(N);
  check(cudaMemcpyAsync(host_tokens.data(), tokens, N * sizeof(std::int32_t), cudaMemcpyDeviceToHost, s),
        "encoder_backward: read tokens");
  check(cudaStreamSynchronize(s), "encoder_backward: read tokens");
  for (std::int32_t t : host_tokens)
    if (t < 0 || t >= V) fail("encoder_backward: token id outside the vocabulary", t);

  // Stable grouping by token: groups in order of first appearance, rows in row order within a group.
  std::vector<std::int32_t> group_of(static_cast<std::size_t>(V), -1), group_token, group_count;
  for (std::int32_t t : host_tokens) {
    if (group_of[t] < 0) {
      group_of[t] = static_cast<std::int32_t>(group_token.size());
      group_token.push_back(t);
      group_count.push_back(0);
    }
    ++group_count[group_of[t]];
  }
  const std::size_t G = group_token.size();
  std::vector<std::int32_t> group_begin(G + 1, 0);
  for (std::size_t g = 0; g < G; ++g) group_begin[g + 1] = group_begin[g] + group_count[g];
  std::vector<std::int32_t> rows(N), next(group_begin.begin(), group_begin.end() - 1);
  for (std::size_t i = 0; i < N; ++i) rows[next[group_of[host_tokens[i]]]++] = static_cast<std::int32_t>(i);

  // One scratch: [group_token (G) | group_begin (G+1) | rows (N)].
  std::vector<std::int32_t> table;
  table.reserve(2 * G + 1 + N);
  table.insert(table.end(), group_token.begin(), group_token.end());
  table.insert(table.end(), group_begin.begin(), group_begin.end());
  table.insert(table.end(), rows.begin(), rows.end());
  std::int32_t* d_table = nullptr;
  check(cudaMallocAsync(reinterpret_cast<void**>(&d_table), table.size() * sizeof(std::int32_t), s),
        "encoder_backward: scratch");
  check(
      cudaMemcpyAsync(d_table, table.data(), table.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice, s),
      "encoder_backward: upload groups");
  encoder_backward_wte_kernel<<<static_cast<unsigned>(G), kThreads, 0, s>>>(dwte, dout, d_table, d_table + G,
                                                                            d_table + 2 * G + 1, C);
  check(cudaGetLastError(), "encoder_backward: dwte");
  const std::size_t TC = static_cast<std::size_t>(T) * C;
  if (dwpe != nullptr) {  // null: rotary positions, no position table
    encoder_backward_wpe_kernel<<<static_cast<unsigned>((TC + 255) / 256), 256, 0, s>>>(dwpe, dout, B, T, C);
    check(cudaGetLastError(), "encoder_backward: dwpe");
  }
  check(cudaFreeAsync(d_table, s), "encoder_backward: free scratch");
  // `table` is pageable host memory: the copy above has staged it before returning, but wait for the
  // stream anyway so the host buffer outlives the transfer on every driver.
  check(cudaStreamSynchronize(s), "encoder_backward");
}

}  // namespace tz::cuda
