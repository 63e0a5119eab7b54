// Softmax + cross-entropy over the vocabulary on the GPU, fused (N rows of V logits;
// device/cpu/cross_entropy.cpp):
//   probs = softmax(logits),  loss_i = logsumexp(logits_i) - logits_i[target_i]
//   dlogits = probs * dloss, then dlogits[target] -= dloss (the cpu backend's fast path's two steps)
// Threads: forward is one block of kThreads per row: the max (exact in any order), e = exp(x - max)
// kept in probs, their sum in fp64 per thread combined by a fixed tree, then probs *= 1/sum; losses
// (N floats) come back to the host and are summed there in row order in fp64, / N, as on the cpu.
// Backward is one thread per element (grid-stride).
// Against the cpu backend: backward is bitwise (the same two fp32 operations). Forward's exp and sum
// differ (CUDA's expf within 2 ulp and an fp64 sum, against the cpu's polynomial exp, relative error
// about 2e-7, summed in fp32 lanes): probs within 1e-5 relative (about 5e-6 at V = 50304, from the
// cpu's fp32 sums; probs that are not normal floats aside), losses and the mean loss within
// |diff| <= 1e-5 (1 + |ref|).
// A target outside [0, V) is an InternalError naming it: the row's loss is skipped (and backward's
// subtraction), the first such row recorded on the device and read back after the stream finishes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "device/cuda/cuda_check.hpp"
#include "device/cuda/launchers.hpp"

namespace tz::cuda {
namespace {

constexpr int kThreads = 256;  // a multiple of 32
constexpr int kWarps = kThreads / 32;
constexpr unsigned long long kNoBadTarget = ~0ull;

// The first bad target by row: (row << 32) | bits of the target, so atomicMin keeps the lowest row.
__device__ void record_bad_target(unsigned long long* first_bad, std::size_t row, std::int32_t target) {
  atomicMin(first_bad, (static_cast<unsigned long long>(row) << 32) | static_cast<std::uint32_t>(target));
}

// The block's max / sum of v (every thread gets it), in a fixed order; `scratch` holds kWarps values.
__device__ float block_max(float v, float* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  __syncthreads();
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float m = scratch[0];
  for (int w = 1; w < kWarps; ++w) m = fmaxf(m, scratch[w]);
  return m;
}
__device__ double block_sum(double v, double* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  __syncthreads();
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < kWarps; ++w) total += scratch[w];
  return total;
}

// grid: N rows; block: kThreads.
__global__ void softmax_cross_entropy_forward_kernel(float* losses, float* probs, const float* logits,
                                                     const std::int32_t* targets, int V,
                                                     unsigned long long* first_bad) {
  __shared__ float max_scratch[kWarps];
  __shared__ double sum_scratch[kWarps];
  const std::size_t r = blockIdx.x;
  const float* x = logits + r * V;
  float* p = probs + r * V;
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < V; j += blockDim.x) mx = fmaxf(mx, x[j]);
  mx = block_max(mx, max_scratch);
  double s = 0.0;
  for (int j = threadIdx.x; j < V; j += blockDim.x) {
    const float e = expf(x[j] - mx);
    p[j] = e;
    s += e;
  }
  const float sum = static_cast<float>(block_sum(s, sum_scratch));
  const float inv = 1.0f / sum;
  for (int j = threadIdx.x; j < V; j += blockDim.x) p[j] *= inv;  // this thread's own e values
  if (threadIdx.x == 0) {
    const std::int32_t t = targets[r];
    if (t < 0 || t >= V) {
      record_bad_target(first_bad, r, t);
      return;
    }
    losses[r] = mx + logf(sum) - x[t];
  }
}

__global__ void softmax_cross_entropy_backward_kernel(float* dlogits, const float* probs,
                                                      const std::int32_t* targets, float dloss, int V,
                                                      std::size_t n, unsigned long long* first_bad) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t r = i / V;
    const int j = static_cast<int>(i % V);
    const std::int32_t t = targets[r];
    float d = probs[i] * dloss;
    if (j == t) d -= dloss;
    dlogits[i] = d;
    if (j == 0 && (t < 0 || t >= V)) record_bad_target(first_bad, r, t);
  }
}

// A device word for the first bad target, freed on the stream.
class BadTargetFlag {
 public:
  explicit BadTargetFlag(cudaStream_t s) : s_(s) {
    check(cudaMallocAsync(reinterpret_cast<void**>(&p_), sizeof(*p_), s), "cross entropy: flag alloc");
    check(cudaMemsetAsync(p_, 0xff, sizeof(*p_), s), "cross entropy: flag clear");
  }
  ~BadTargetFlag() { cudaFreeAsync(p_, s_); }
  BadTargetFlag(const BadTargetFlag&) = delete;
  BadTargetFlag& operator=(const BadTargetFlag&) = delete;
  unsigned long long* get() const { return p_; }
  // Enqueues the read back into `host`; valid once the stream has finished.
  void read_async(unsigned long long* host) const {
    check(cudaMemcpyAsync(host, p_, sizeof(*host), cudaMemcpyDeviceToHost, s_),
          "cross entropy: flag read back");
  }

 private:
  cudaStream_t s_;
  unsigned long long* p_ = nullptr;
};

long long bad_target_value(unsigned long long bad) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(bad & 0xffffffffu));
}

}  // namespace

double softmax_cross_entropy_forward(cudaStream_t s, float* losses, float* probs, const float* logits,
                                     const std::int32_t* targets, int N, int V) {
  if (N <= 0) return std::numeric_limits<double>::quiet_NaN();  // the cpu backend's 0 / 0
  BadTargetFlag flag(s);
  softmax_cross_entropy_forward_kernel<<<static_cast<unsigned>(N), kThreads, 0, s>>>(losses, probs, logits,
                                                                                     targets, V, flag.get());
  check(cudaGetLastError(), "softmax_cross_entropy_forward");
  unsigned long long bad = kNoBadTarget;
  flag.read_async(&bad);
  std::vector<float> host(static_cast<std::size_t>(N));
  check(cudaMemcpyAsync(host.data(), losses, host.size() * sizeof(float), cudaMemcpyDeviceToHost, s),
        "softmax_cross_entropy_forward: read losses");
  check(cudaStreamSynchronize(s), "softmax_cross_entropy_forward");
  if (bad != kNoBadTarget)
    fail("softmax_cross_entropy_forward: target outside the vocabulary", bad_target_value(bad));
  double sum = 0;
  for (float l : host) sum += l;
  return sum / N;
}

void softmax_cross_entropy_backward(cudaStream_t s, float* dlogits, const float* probs,
                                    const std::int32_t* targets, float dloss, int N, int V) {
  const std::size_t n = static_cast<std::size_t>(N) * static_cast<std::size_t>(std::max(V, 0));
  if (n == 0) return;
  BadTargetFlag flag(s);
  const std::size_t blocks = std::min<std::size_t>((n + kThreads - 1) / kThreads, 65535u * 16);
  softmax_cross_entropy_backward_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(
      dlogits, probs, targets, dloss, V, n, flag.get());
  check(cudaGetLastError(), "softmax_cross_entropy_backward");
  unsigned long long bad = kNoBadTarget;
  flag.read_async(&bad);
  check(cudaStreamSynchronize(s), "softmax_cross_entropy_backward");
  if (bad != kNoBadTarget)
    fail("softmax_cross_entropy_backward: target outside the vocabulary", bad_target_value(bad));
}

}  // namespace tz::cuda
