// AdamW on CUDA: one thread per element (grid-stride), each element's run of decay found by a binary
// search of the runs' offsets. The per-element arithmetic is device/cpu/adamw.cpp's adamw_element,
// operation for operation, with the step's constants computed once on the host by the cpu backend's
// own function; the CUDA sources build with -fmad=false and sqrtf and '/' are IEEE correctly rounded
// (nvcc's defaults), so every p, m and v is bitwise the cpu backend's. The state bound is a max/min over
// the elements with NaNs flagged apart (as the cpu backend keeps it): block-wise in shared memory, then
// over the blocks on the host, so it is independent of the order too.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "device/cuda/cuda_check.hpp"
#include "device/cuda/launchers.hpp"

namespace tz::cuda {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 4096;

struct Element {
  float p, m, v;
};

__device__ inline Element adamw_element(float p, float g, float m, float v, const AdamWConstants& k) {
  float gi = g * k.grad_scale;
  if (k.use_l2) gi += k.l2 * p;
  const float mi = k.b1 * m + (1.0f - k.b1) * gi;
  const float vi = k.b2 * v + (1.0f - k.b2) * gi * gi;
  return {p * k.decay_factor - k.step_size * mi / (sqrtf(vi) * k.inv_sqrt_bc2 + k.eps), mi, vi};
}

__device__ inline const DecayRun& run_of(const DecayRun* runs, std::size_t count, std::size_t i) {
  std::size_t lo = 0, hi = count;  // the last run whose offset <= i
  while (hi - lo > 1) {
    const std::size_t mid = (lo + hi) / 2;
    if (runs[mid].offset <= i)
      lo = mid;
    else
      hi = mid;
  }
  return runs[lo];
}

struct Bound {  // one block's: maxima, minimum, and NaN flags
  float abs_p, abs_m, v, v_min;
  int nan_p, nan_m, nan_v;
};

__global__ void adamw_update_kernel(float* p, const float* g, float* m, float* v, const DecayRun* runs,
                                    std::size_t run_count, std::size_t n, AdamWConstants k0,
                                    AdamWConstants k1, Bound* bounds) {
  Bound b{0.0f, 0.0f, 0.0f, 0.0f, 0, 0, 0};
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const Element e = adamw_element(p[i], g[i], m[i], v[i], run_of(runs, run_count, i).decay ? k1 : k0);
    m[i] = e.m;
    v[i] = e.v;
    p[i] = e.p;
    b.abs_p = fmaxf(b.abs_p, fabsf(e.p));
    b.abs_m = fmaxf(b.abs_m, fabsf(e.m));
    b.v = fmaxf(b.v, e.v);
    b.v_min = fminf(b.v_min, e.v);
    b.nan_p |= e.p != e.p;
    b.nan_m |= e.m != e.m;
    b.nan_v |= e.v != e.v;
  }
  __shared__ Bound shared[kThreads];
  shared[threadIdx.x] = b;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      Bound& a = shared[threadIdx.x];
      const Bound& o = shared[threadIdx.x + stride];
      a.abs_p = fmaxf(a.abs_p, o.abs_p);
      a.abs_m = fmaxf(a.abs_m, o.abs_m);
      a.v = fmaxf(a.v, o.v);
      a.v_min = fminf(a.v_min, o.v_min);
      a.nan_p |= o.nan_p;
      a.nan_m |= o.nan_m;
      a.nan_v |= o.nan_v;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) bounds[blockIdx.x] = shared[0];
}

__global__ void adamw_nonfinite_kernel(const float* p, const float* g, const float* m, const float* v,
                                       const DecayRun* runs, std::size_t run_count, std::size_t n,
                                       AdamWConstants k0, AdamWConstants k1, unsigned long long* counts) {
  unsigned long long bad = 0;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const Element e = adamw_element(p[i], g[i], m[i], v[i], run_of(runs, run_count, i).decay ? k1 : k0);
    bad += isfinite(e.p) && isfinite(e.m) && isfinite(e.v) ? 0 : 1;
  }
  __shared__ unsigned long long shared[kThreads];
  shared[threadIdx.x] = bad;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) counts[blockIdx.x] = shared[0];
}

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(std::clamp<std::size_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

// The runs in device memory for one launch, with a scratch of `out_bytes` after them; freed on the
// stream by the destructor.
struct LaunchScratch {
  cudaStream_t stream;
  char* base = nullptr;
  std::size_t runs_bytes;
  LaunchScratch(cudaStream_t s, const DecayRun* runs, std::size_t run_count, std::size_t out_bytes)
      : stream(s), runs_bytes((run_count * sizeof(DecayRun) + 255) / 256 * 256) {
    check(cudaMallocAsync(reinterpret_cast<void**>(&base), runs_bytes + out_bytes, s), "adamw: alloc");
    check(cudaMemcpyAsync(base, runs, run_count * sizeof(DecayRun), cudaMemcpyHostToDevice, s),
          "adamw: runs");
  }
  ~LaunchScratch() { cudaFreeAsync(base, stream); }
  LaunchScratch(const LaunchScratch&) = delete;
  LaunchScratch& operator=(const LaunchScratch&) = delete;
  const DecayRun* runs() const { return reinterpret_cast<const DecayRun*>(base); }
  void* out() const { return base + runs_bytes; }
};

}  // namespace

AdamWBound adamw_update(cudaStream_t s, float* params, const float* grads, float* m, float* v,
                        const DecayRun* runs, std::size_t run_count, std::size_t n,
                        const AdamWConstants constants[2]) {
  AdamWBound bound{0.0f, 0.0f, 0.0f, 0.0f};
  if (n == 0) return bound;
  const unsigned blocks = blocks_for(n);
  LaunchScratch scratch(s, runs, run_count, blocks * sizeof(Bound));
  auto* bounds = static_cast<Bound*>(scratch.out());
  adamw_update_kernel<<<blocks, kThreads, 0, s>>>(params, grads, m, v, scratch.runs(), run_count, n,
                                                  constants[0], constants[1], bounds);
  check(cudaGetLastError(), "adamw_update");
  std::vector<Bound> host(blocks);
  check(cudaMemcpyAsync(host.data(), bounds, blocks * sizeof(Bound), cudaMemcpyDeviceToHost, s),
        "adamw_update: read back");
  check(cudaStreamSynchronize(s), "adamw_update");
  bool nan_p = false, nan_m = false, nan_v = false;
  for (const Bound& b : host) {
    bound.abs_p = std::max(bound.abs_p, b.abs_p);
    bound.abs_m = std::max(bound.abs_m, b.abs_m);
    bound.v = std::max(bound.v, b.v);
    bound.v_min = std::min(bound.v_min, b.v_min);
    nan_p |= b.nan_p != 0;
    nan_m |= b.nan_m != 0;
    nan_v |= b.nan_v != 0;
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (nan_p) bound.abs_p = nan;
  if (nan_m) bound.abs_m = nan;
  if (nan_v) bound.v = bound.v_min = nan;
  return bound;
}

std::size_t adamw_nonfinite_count(cudaStream_t s, const float* params, const float* grads, const float* m,
                                  const float* v, const DecayRun* runs, std::size_t run_count, std::size_t n,
                                  const AdamWConstants constants[2]) {
  if (n == 0) return 0;
  const unsigned blocks = blocks_for(n);
  LaunchScratch scratch(s, runs, run_count, blocks * sizeof(unsigned long long));
  auto* counts = static_cast<unsigned long long*>(scratch.out());
  adamw_nonfinite_kernel<<<blocks, kThreads, 0, s>>>(params, grads, m, v, scratch.runs(), run_count, n,
                                                     constants[0], constants[1], counts);
  check(cudaGetLastError(), "adamw_nonfinite_count");
  std::vector<unsigned long long> host(blocks);
  check(cudaMemcpyAsync(host.data(), counts, blocks * sizeof(unsigned long long), cudaMemcpyDeviceToHost, s),
        "adamw_nonfinite_count: read back");
  check(cudaStreamSynchronize(s), "adamw_nonfinite_count");
  std::size_t bad = 0;
  for (unsigned long long c : host) bad += static_cast<std::size_t>(c);
  return bad;
}

}  // namespace tz::cuda
