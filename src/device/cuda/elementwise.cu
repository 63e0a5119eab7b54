// The conversions and elementwise passes of the CUDA kernel table, one thread per element (grid-stride),
// and the fp64 sum of squares. Bitwise the cpu backend's: each element is the same one or two fp32
// operations (no contraction: the CUDA sources build with -fmad=false), the bf16 rounding is the same
// integer arithmetic on the bits, and the sum of squares adds in the cpu backend's order (below).
#include <algorithm>
#include <vector>

#include "device/cuda/cuda_check.hpp"
#include "device/cuda/launchers.hpp"

namespace tz::cuda {
namespace {

constexpr int kThreads = 256;

// Blocks for n elements, grid-stride beyond (the grid's x dimension is capped far below its limit).
unsigned blocks_for(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::min<std::size_t>(std::max<std::size_t>(b, 1), 65535u * 16));
}

__device__ inline std::uint16_t narrow_bits(float f) {  // core/bf16.hpp's bf16_bits_from_float_bits
  const std::uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ inline float widen_bits(std::uint16_t h) {
  return __uint_as_float(static_cast<std::uint32_t>(h) << 16);
}

#define TZ_GRID_STRIDE(i, n)                                                        \
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < (n); \
       i += std::size_t{gridDim.x} * blockDim.x)

__global__ void narrow_kernel(std::uint16_t* out, const float* in, std::size_t n) {
  TZ_GRID_STRIDE(i, n) out[i] = narrow_bits(in[i]);
}
__global__ void widen_kernel(float* out, const std::uint16_t* in, std::size_t n) {
  TZ_GRID_STRIDE(i, n) out[i] = widen_bits(in[i]);
}
__global__ void add_f32_kernel(float* out, const float* a, const float* b, std::size_t n) {
  TZ_GRID_STRIDE(i, n) out[i] = a[i] + b[i];
}
__global__ void add_bf16_kernel(std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                                std::size_t n) {
  TZ_GRID_STRIDE(i, n) out[i] = narrow_bits(widen_bits(a[i]) + widen_bits(b[i]));
}
__global__ void add_f64_kernel(double* out, const double* a, const double* b, std::size_t n) {
  TZ_GRID_STRIDE(i, n) out[i] = a[i] + b[i];
}
__global__ void accumulate_f32_kernel(float* acc, const float* x, std::size_t n) {
  TZ_GRID_STRIDE(i, n) acc[i] += x[i];
}
__global__ void accumulate_bf16_kernel(float* acc, const std::uint16_t* x, std::size_t n) {
  TZ_GRID_STRIDE(i, n) acc[i] += widen_bits(x[i]);
}
__global__ void narrow_and_clear_kernel(std::uint16_t* out, float* in, std::size_t n) {
  TZ_GRID_STRIDE(i, n) {
    out[i] = narrow_bits(in[i]);
    in[i] = 0.0f;
  }
}

// The cpu backend's order: blocks of 64 Ki elements; in each, 8 fp64 lanes, lane k summing elements
// 8j + k in order, the tail of a block that is not a whole number of octets going to lane 0; the lanes
// summed in order. One thread per (block, lane); the host sums the blocks in order.
constexpr std::size_t kSquareBlock = std::size_t{1} << 16;
__global__ void sum_of_squares_lanes(double* lanes, const float* x, std::size_t n) {
  const std::size_t t = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  const std::size_t block = t / 8, lane = t % 8;
  const std::size_t begin = block * kSquareBlock;
  if (begin >= n) return;
  const std::size_t len = n - begin < kSquareBlock ? n - begin : kSquareBlock;
  const float* p = x + begin;
  const std::size_t octets = len / 8;
  double acc = 0;
#pragma unroll 16
  for (std::size_t j = 0; j < octets; ++j) {
    const double v = p[8 * j + lane];
    acc += v * v;
  }
  if (lane == 0)
    for (std::size_t i = octets * 8; i < len; ++i) acc += double(p[i]) * p[i];
  lanes[t] = acc;
}

}  // namespace

void narrow_to_bf16(cudaStream_t s, bf16_bits* out, const float* in, std::size_t n) {
  if (n == 0) return;
  narrow_kernel<<<blocks_for(n), kThreads, 0, s>>>(out, in, n);
  check(cudaGetLastError(), "narrow_to_bf16");
}

void widen_from_bf16(cudaStream_t s, float* out, const bf16_bits* in, std::size_t n) {
  if (n == 0) return;
  widen_kernel<<<blocks_for(n), kThreads, 0, s>>>(out, in, n);
  check(cudaGetLastError(), "widen_from_bf16");
}

void widen_matrix(cudaStream_t s, float* out, const bf16_bits* in, std::size_t n) {
  widen_from_bf16(s, out, in, n);
}

void reduce_add(cudaStream_t s, void* out, const void* a, const void* b, std::size_t n, DType dtype) {
  if (n == 0) return;
  switch (dtype) {
    case DType::f32:
      add_f32_kernel<<<blocks_for(n), kThreads, 0, s>>>(
          static_cast<float*>(out), static_cast<const float*>(a), static_cast<const float*>(b), n);
      break;
    case DType::bf16:
      add_bf16_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<std::uint16_t*>(out),
                                                         static_cast<const std::uint16_t*>(a),
                                                         static_cast<const std::uint16_t*>(b), n);
      break;
    case DType::f64:
      add_f64_kernel<<<blocks_for(n), kThreads, 0, s>>>(
          static_cast<double*>(out), static_cast<const double*>(a), static_cast<const double*>(b), n);
      break;
    default:
      fail("reduce_add: a dtype that does not add (u8)", static_cast<long long>(dtype));
  }
  check(cudaGetLastError(), "reduce_add");
}

void accumulate(cudaStream_t s, float* acc, const void* x, std::size_t n, DType dtype) {
  if (n == 0) return;
  if (dtype == DType::f32)
    accumulate_f32_kernel<<<blocks_for(n), kThreads, 0, s>>>(acc, static_cast<const float*>(x), n);
  else if (dtype == DType::bf16)
    accumulate_bf16_kernel<<<blocks_for(n), kThreads, 0, s>>>(acc, static_cast<const std::uint16_t*>(x), n);
  else
    fail("accumulate: a dtype other than f32 and bf16", static_cast<long long>(dtype));
  check(cudaGetLastError(), "accumulate");
}

void narrow_and_clear(cudaStream_t s, bf16_bits* out, float* in, std::size_t n) {
  if (n == 0) return;
  narrow_and_clear_kernel<<<blocks_for(n), kThreads, 0, s>>>(out, in, n);
  check(cudaGetLastError(), "narrow_and_clear");
}

double sum_of_squares(cudaStream_t s, const float* x, std::size_t n) {
  if (n == 0) return 0.0;
  const std::size_t blocks = (n + kSquareBlock - 1) / kSquareBlock, threads = blocks * 8;
  double* lanes = nullptr;
  check(cudaMallocAsync(reinterpret_cast<void**>(&lanes), threads * sizeof(double), s),
        "sum_of_squares: alloc");
  sum_of_squares_lanes<<<static_cast<unsigned>((threads + 127) / 128), 128, 0, s>>>(lanes, x, n);
  check(cudaGetLastError(), "sum_of_squares");
  std::vector<double> host(threads);
  check(cudaMemcpyAsync(host.data(), lanes, threads * sizeof(double), cudaMemcpyDeviceToHost, s),
        "sum_of_squares: read back");
  check(cudaFreeAsync(lanes, s), "sum_of_squares: free");
  check(cudaStreamSynchronize(s), "sum_of_squares");
  double total = 0;
  for (std::size_t b = 0; b < blocks; ++b) {
    double block = 0;
    for (std::size_t k = 0; k < 8; ++k) block += host[b * 8 + k];
    total += block;
  }
  return total;
}

}  // namespace tz::cuda
