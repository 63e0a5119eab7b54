// Block quantization of the CUDA kernel table (format: core/quant_format.hpp): quantize, dequantize and
// dequantize_add, for f32 and bf16 elements, INT8 and INT4 codes.
//
// Thread mapping.
//   quantize: one thread block per quantization block, grid-stride over the blocks when there are more
//     than the grid holds. The block's threads take the maximum of |x| over its real elements as an
//     unsigned max of the bit patterns (warp shuffles, then one word per warp in shared memory), every
//     thread derives the same scale from it, then each thread writes whole 32-bit words of codes (4 INT8
//     or 8 INT4 codes), padding codes zero. Thread 0 writes the scale and counts a NaN/inf block with an
//     integer atomicAdd on a device counter that the launcher reads back.
//   dequantize, dequantize_add: one thread per 32-bit word of codes (grid-stride), writing its 4 or 8
//     elements that lie below `count`.
//
// Results are bitwise the cpu reference's (device/cpu/block_quantize_ref.cpp, block_kernels.hpp), codes,
// scales, padding and values, because each element goes through the same correctly rounded fp32
// operations in the same order (the CUDA sources build with -fmad=false; the operations are spelled
// with the _rn intrinsics so that no flag can turn them approximate or contract them):
//   - the maximum of |x| over finite elements equals the unsigned max of the bit patterns of |x|, any
//     pattern >= 0x7f800000 flagging NaN/inf (a max is exact in any order);
//   - scale = amax / qmax (IEEE division), nudged one ulp by the same fp64 comparisons (exact products);
//     1 / scale by IEEE division; a code is rintf (round half even, as nearbyint in the default
//     rounding mode) of x * (1 / scale) or, for a subnormal scale, of x / scale, clamped; subnormals are
//     kept (the CUDA sources do not build with -ftz=true);
//   - a value is code * scale, to bf16 by the integer round-to-nearest-even of core/bf16.hpp;
//   - NaN results: the GPU returns one canonical NaN (0x7fffffff) from any operation with a NaN, where
//     the x86 CPU returns the NaN operand, quieted, or its default NaN 0xffc00000 for 0 * inf and
//     inf - inf. The values of blocks whose scale is NaN or inf therefore follow x86's rules explicitly
//     (bq_value, bq_add below), including the operand order GCC gives the reference's acc += value
//     (the value's NaN wins when both are NaN).
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"
#include "core/quant_format.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/launchers.hpp"

namespace tz::cuda {
namespace {

constexpr int kMaxThreads = 256;  // per thread block of the quantizer
constexpr int kWarps = kMaxThreads / 32;
constexpr int kDecodeThreads = 256;
constexpr unsigned kMaxGrid = 65535u * 16;
constexpr std::uint32_t kQuietNan = 0x7fc00000u;    // std::numeric_limits<float>::quiet_NaN() on x86
constexpr std::uint32_t kDefaultNan = 0xffc00000u;  // what x86 makes of 0 * inf and inf - inf

enum BqKind : int { kBqZero, kBqNormal, kBqSubnormal, kBqNonfinite };

struct BqScale {
  int kind;
  float scale;  // stored in the block header
  float inv;    // 1 / scale for a normal scale, else 0
};

// quant_detail::choose_block_scale, on the bits of amax (max of |x| bit patterns; >= 0x7f800000 when the
// block holds a NaN or inf).
__device__ BqScale bq_choose_scale(std::uint32_t amax_bits, int qmax) {
  if (amax_bits >= 0x7f800000u) return {kBqNonfinite, __uint_as_float(kQuietNan), 0.0f};
  if (amax_bits == 0) return {kBqZero, 0.0f, 0.0f};
  const float amax = __uint_as_float(amax_bits);
  float scale = __fdiv_rn(amax, static_cast<float>(qmax));
  // q * scale must stay finite for every |q| <= qmax: nextafter(scale, 0) of a positive scale.
  if (__dmul_rn(static_cast<double>(scale), static_cast<double>(qmax)) > static_cast<double>(FLT_MAX))
    scale = __uint_as_float(__float_as_uint(scale) - 1u);
  if (scale < FLT_MIN) {
    // Subnormal: nextafter(scale, 1) of a scale in [0, FLT_MIN) so that qmax codes reach amax.
    if (scale == 0.0f ||
        __dmul_rn(static_cast<double>(scale), static_cast<double>(qmax)) < static_cast<double>(amax))
      scale = __uint_as_float(__float_as_uint(scale) + 1u);
    return {kBqSubnormal, scale, 0.0f};
  }
  return {kBqNormal, scale, __fdiv_rn(1.0f, scale)};
}

// quant_detail::encode_block_scalar's code of one element (scale normal or subnormal).
__device__ int bq_code(float v, const BqScale& s, int qmax) {
  const float r = s.kind == kBqNormal ? rintf(__fmul_rn(v, s.inv)) : rintf(__fdiv_rn(v, s.scale));
  const int q = static_cast<int>(r);
  return q > qmax ? qmax : (q < -qmax ? -qmax : q);
}

__device__ float bq_load(const float* p) {
  return *p;
}
__device__ float bq_load(const bf16_bits* p) {
  return __uint_as_float(static_cast<std::uint32_t>(*p) << 16);
}
__device__ std::uint32_t bq_abs_bits(const float* p) {
  return __float_as_uint(*p) & 0x7fffffffu;
}
__device__ std::uint32_t bq_abs_bits(const bf16_bits* p) {
  return static_cast<std::uint32_t>(*p & 0x7fffu) << 16;
}

// 32-bit words of the quantized buffer: direct when the buffer is 4-byte aligned (then every scale and
// code word is: block sizes are multiples of 32), else byte by byte (little-endian, as on the host).
template <bool Aligned>
__device__ std::uint32_t bq_load_word(const std::uint8_t* p) {
  if constexpr (Aligned) {
    return *reinterpret_cast<const std::uint32_t*>(p);
  } else {
    return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) |
           (std::uint32_t{p[3]} << 24);
  }
}
template <bool Aligned>
__device__ void bq_store_word(std::uint8_t* p, std::uint32_t w) {
  if constexpr (Aligned) {
    *reinterpret_cast<std::uint32_t*>(p) = w;
  } else {
    for (int k = 0; k < 4; ++k) p[k] = static_cast<std::uint8_t>(w >> (8 * k));
  }
}

// Codes per 32-bit word.
template <bool Int4>
constexpr int kCodesPerWord = Int4 ? 8 : 4;

template <typename T, bool Int4, bool Aligned>
__global__ void __launch_bounds__(kMaxThreads)
    quantize_kernel(std::uint8_t* q, const T* x, std::size_t count, std::size_t blocks, unsigned block_size,
                    unsigned long long* nonfinite_blocks) {
  constexpr int kPerWord = kCodesPerWord<Int4>;
  constexpr int qmax = Int4 ? 7 : 127;
  __shared__ std::uint32_t warp_max[kWarps];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const unsigned code_bytes = Int4 ? block_size / 2 : block_size;
  const unsigned words = code_bytes / 4;
  const std::size_t block_bytes = sizeof(QuantBlockHeader) + code_bytes;
  for (std::size_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const std::size_t start = b * block_size;
    const unsigned n = static_cast<unsigned>(count - start < block_size ? count - start : block_size);
    const T* xb = x + start;
    std::uint32_t m = 0;
    for (unsigned i = threadIdx.x; i < n; i += blockDim.x) m = max(m, bq_abs_bits(xb + i));
    for (int off = 16; off > 0; off /= 2) m = max(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (lane == 0) warp_max[warp] = m;
    __syncthreads();
    std::uint32_t amax_bits = 0;
    for (unsigned w = 0; w < warps; ++w) amax_bits = max(amax_bits, warp_max[w]);
    __syncthreads();  // warp_max is rewritten by the next block of the grid stride
    const BqScale s = bq_choose_scale(amax_bits, qmax);
    std::uint8_t* block = q + b * block_bytes;
    if (threadIdx.x == 0) {
      bq_store_word<Aligned>(block, __float_as_uint(s.scale));
      if (s.kind == kBqNonfinite) atomicAdd(nonfinite_blocks, 1ull);
    }
    std::uint8_t* codes = block + sizeof(QuantBlockHeader);
    const bool coded = s.kind == kBqNormal || s.kind == kBqSubnormal;
    for (unsigned w = threadIdx.x; w < words; w += blockDim.x) {
      std::uint32_t word = 0;
      const unsigned e0 = w * kPerWord;
      if (coded && e0 < n) {
#pragma unroll
        for (int j = 0; j < kPerWord; ++j) {
          if (e0 + j >= n) break;
          const int c = bq_code(bq_load(xb + e0 + j), s, qmax);
          if constexpr (Int4)
            word |= (static_cast<std::uint32_t>(c) & 0xFu) << (4 * j);
          else
            word |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(static_cast<std::int8_t>(c)))
                    << (8 * j);
        }
      }
      bq_store_word<Aligned>(codes + 4 * w, word);
    }
  }
}

// quant_detail::decode_block_scalar's value code * scale, with x86's NaN results: a NaN scale comes
// back quieted, 0 * inf is the default NaN (the GPU would give 0x7fffffff for both).
__device__ float bq_value(int code, float scale) {
  const std::uint32_t bits = __float_as_uint(scale);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return __uint_as_float(bits | 0x00400000u);
  if ((bits & 0x7fffffffu) == 0x7f800000u && code == 0) return __uint_as_float(kDefaultNan);
  return __fmul_rn(static_cast<float>(code), scale);
}

// acc + v with x86's NaN results, in the order GCC compiles the reference's acc[i] += v: v's NaN when
// v is NaN, else acc's (quieted), inf - inf the default NaN.
__device__ float bq_add(float acc, float v) {
  const std::uint32_t vb = __float_as_uint(v), ab = __float_as_uint(acc);
  if ((vb & 0x7fffffffu) > 0x7f800000u) return __uint_as_float(vb | 0x00400000u);
  if ((ab & 0x7fffffffu) > 0x7f800000u) return __uint_as_float(ab | 0x00400000u);
  const float sum = __fadd_rn(acc, v);
  return sum != sum ? __uint_as_float(kDefaultNan) : sum;
}

// core/bf16.hpp's to_bf16 on the bits: round to nearest even, NaN quiet.
__device__ bf16_bits bq_narrow(float f) {
  const std::uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<bf16_bits>((u >> 16) | 0x40u);
  return static_cast<bf16_bits>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

__device__ void bq_store(float* p, float v) {
  *p = v;
}
__device__ void bq_store(bf16_bits* p, float v) {
  *p = bq_narrow(v);
}

template <bool Int4>
__device__ int bq_code_of_word(std::uint32_t word, int j) {
  if constexpr (Int4)
    return static_cast<int>(((word >> (4 * j)) & 0xFu) ^ 8u) - 8;  // sign-extend the nibble
  else
    return static_cast<int>(static_cast<std::int8_t>(static_cast<std::uint8_t>(word >> (8 * j))));
}

// Out is float or bf16_bits (dequantize), or Add: acc[e] = acc[e] + value (dequantize_add, float).
template <typename Out, bool Add, bool Int4, bool Aligned>
__global__ void __launch_bounds__(kDecodeThreads)
    decode_kernel(Out* y, const std::uint8_t* q, std::size_t count, std::size_t words, unsigned block_size) {
  constexpr int kPerWord = kCodesPerWord<Int4>;
  const unsigned words_per_block = (Int4 ? block_size / 2 : block_size) / 4;
  const std::size_t block_bytes = sizeof(QuantBlockHeader) + std::size_t{words_per_block} * 4;
  for (std::size_t g = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; g < words;
       g += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t b = g / words_per_block;
    const unsigned w = static_cast<unsigned>(g - b * words_per_block);
    const std::size_t e0 = b * block_size + std::size_t{w} * kPerWord;
    if (e0 >= count) continue;
    const std::uint8_t* block = q + b * block_bytes;
    const float scale = __uint_as_float(bq_load_word<Aligned>(block));
    const std::uint32_t word = bq_load_word<Aligned>(block + sizeof(QuantBlockHeader) + 4 * std::size_t{w});
    const int m = count - e0 < kPerWord ? static_cast<int>(count - e0) : kPerWord;
#pragma unroll
    for (int j = 0; j < kPerWord; ++j) {
      if (j >= m) break;
      const float v = bq_value(bq_code_of_word<Int4>(word, j), scale);
      if constexpr (Add)
        y[e0 + j] = bq_add(y[e0 + j], v);
      else
        bq_store(y + e0 + j, v);
    }
  }
}

// The checks of the cpu dispatcher (block_quantize_dispatch.cpp): options (InputError from core), then
// buffers; a dtype other than f32 and bf16 is refused by the launchers.
void bq_check_call(const char* what, const QuantOptions& opts, std::size_t count, const void* in,
                   const void* out) {
  validate_quant_options(opts);
  if (count > 0 && (in == nullptr || out == nullptr)) fail(what, static_cast<long long>(count));
}

bool bq_aligned(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 4 == 0;
}

unsigned bq_grid(std::size_t units, unsigned per_unit_threads) {
  const std::size_t b = (units + per_unit_threads - 1) / per_unit_threads;
  return static_cast<unsigned>(std::clamp<std::size_t>(b, 1, kMaxGrid));
}

template <typename T, bool Int4>
void launch_quantize(cudaStream_t s, std::uint8_t* q, const T* x, std::size_t count, std::size_t blocks,
                     unsigned block_size, unsigned long long* counter) {
  // Threads: a quarter of the block (one word of INT8 codes each), whole warps, at most kMaxThreads.
  const unsigned threads = std::min<unsigned>(kMaxThreads, (block_size / 4 + 31) / 32 * 32);
  const unsigned grid = bq_grid(blocks, 1);
  if (bq_aligned(q))
    quantize_kernel<T, Int4, true><<<grid, threads, 0, s>>>(q, x, count, blocks, block_size, counter);
  else
    quantize_kernel<T, Int4, false><<<grid, threads, 0, s>>>(q, x, count, blocks, block_size, counter);
}

template <typename Out, bool Add, bool Int4>
void launch_decode(cudaStream_t s, Out* y, const std::uint8_t* q, std::size_t count, unsigned block_size) {
  const std::size_t blocks = (count + block_size - 1) / block_size;
  const std::size_t words = blocks * ((Int4 ? block_size / 2 : block_size) / 4);
  const unsigned grid = bq_grid(words, kDecodeThreads);
  if (bq_aligned(q))
    decode_kernel<Out, Add, Int4, true><<<grid, kDecodeThreads, 0, s>>>(y, q, count, words, block_size);
  else
    decode_kernel<Out, Add, Int4, false><<<grid, kDecodeThreads, 0, s>>>(y, q, count, words, block_size);
}

// The device counter of nonfinite blocks, freed on the stream.
struct BqCounter {
  cudaStream_t stream;
  unsigned long long* ptr = nullptr;
  explicit BqCounter(cudaStream_t s) : stream(s) {
    check(cudaMallocAsync(reinterpret_cast<void**>(&ptr), sizeof *ptr, s), "quantize: alloc");
    check(cudaMemsetAsync(ptr, 0, sizeof *ptr, s), "quantize: clear counter");
  }
  ~BqCounter() { cudaFreeAsync(ptr, stream); }
  BqCounter(const BqCounter&) = delete;
  BqCounter& operator=(const BqCounter&) = delete;
};

}  // namespace

QuantStats quantize(cudaStream_t s, std::uint8_t* q, const void* x, std::size_t count, DType dtype,
                    const QuantOptions& opts) {
  bq_check_call("quantize: null buffer for a count of elements", opts, count, x, q);
  if (dtype != DType::f32 && dtype != DType::bf16)
    fail("quantize: dtype is not quantizable (f32 or bf16); dtype", static_cast<long long>(dtype));
  const std::size_t blocks = quant_blocks(count, opts);
  if (blocks == 0) return {};
  const auto block_size = static_cast<unsigned>(opts.block_size);
  const bool int4 = opts.bits == QuantBits::int4;
  BqCounter counter(s);
  if (dtype == DType::f32) {
    const auto* xf = static_cast<const float*>(x);
    int4 ? launch_quantize<float, true>(s, q, xf, count, blocks, block_size, counter.ptr)
         : launch_quantize<float, false>(s, q, xf, count, blocks, block_size, counter.ptr);
  } else {
    const auto* xb = static_cast<const bf16_bits*>(x);
    int4 ? launch_quantize<bf16_bits, true>(s, q, xb, count, blocks, block_size, counter.ptr)
         : launch_quantize<bf16_bits, false>(s, q, xb, count, blocks, block_size, counter.ptr);
  }
  check(cudaGetLastError(), "quantize: launch");
  unsigned long long nonfinite = 0;
  check(cudaMemcpyAsync(&nonfinite, counter.ptr, sizeof nonfinite, cudaMemcpyDeviceToHost, s),
        "quantize: read back");
  check(cudaStreamSynchronize(s), "quantize");
  return {.blocks = blocks, .nonfinite_blocks = static_cast<std::size_t>(nonfinite)};
}

void dequantize(cudaStream_t s, void* y, DType dtype, const std::uint8_t* q, std::size_t count,
                const QuantOptions& opts) {
  bq_check_call("dequantize: null buffer for a count of elements", opts, count, q, y);
  if (dtype != DType::f32 && dtype != DType::bf16)
    fail("dequantize: dtype is not quantizable (f32 or bf16); dtype", static_cast<long long>(dtype));
  if (count == 0) return;
  const auto block_size = static_cast<unsigned>(opts.block_size);
  const bool int4 = opts.bits == QuantBits::int4;
  if (dtype == DType::f32) {
    auto* yf = static_cast<float*>(y);
    int4 ? launch_decode<float, false, true>(s, yf, q, count, block_size)
         : launch_decode<float, false, false>(s, yf, q, count, block_size);
  } else {
    auto* yb = static_cast<bf16_bits*>(y);
    int4 ? launch_decode<bf16_bits, false, true>(s, yb, q, count, block_size)
         : launch_decode<bf16_bits, false, false>(s, yb, q, count, block_size);
  }
  check(cudaGetLastError(), "dequantize: launch");
}

void dequantize_add(cudaStream_t s, float* acc, const std::uint8_t* q, std::size_t count,
                    const QuantOptions& opts) {
  bq_check_call("dequantize_add: null buffer for a count of elements", opts, count, q, acc);
  if (count == 0) return;
  const auto block_size = static_cast<unsigned>(opts.block_size);
  opts.bits == QuantBits::int4 ? launch_decode<float, true, true>(s, acc, q, count, block_size)
                               : launch_decode<float, true, false>(s, acc, q, count, block_size);
  check(cudaGetLastError(), "dequantize_add: launch");
}

}  // namespace tz::cuda
