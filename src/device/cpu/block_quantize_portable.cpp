// Portable fast path of the block quantizer: plain C++ that compilers vectorize for the baseline ISA
// (SSE2 on x86-64, NEON on arm64), for CPUs without AVX-512. Same results as the reference, bit for
// bit, by the same fp32 operations:
//   - the block maximum is taken on the bit patterns of |x| (an unsigned max, which also flags NaN and
//     inf: any pattern >= 0x7f800000), equal to the reference's max of fabs over finite elements;
//   - round-half-even of a code c (|c| < 2^22) is (c + 1.5 * 2^23) - 1.5 * 2^23, which is what
//     nearbyint does in the default rounding mode, without a library call;
//   - values go out to bf16 by integer round-to-nearest-even (no NaN in the blocks handled here).
// Blocks with a NaN/inf or a subnormal scale are written by the scalar encoder (block_kernels.hpp).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>
#include <bit>
#include <type_traits>

#include "device/cpu/block_kernels.hpp"
#include "device/cpu/block_quantize.hpp"

namespace tz {
namespace {

using namespace quant_detail;

constexpr float kRoundMagic = 0x1.8p23f;  // adding and subtracting it rounds |c| < 2^22 half-even

inline std::uint32_t abs_bits(const float* p) {
  return std::bit_cast<std::uint32_t>(*p) & 0x7fffffffu;
}
inline std::uint32_t abs_bits(const bf16* p) {
  return static_cast<std::uint32_t>(p->bits & 0x7fffu) << 16;
}

inline std::uint16_t bf16_bits_rne(float v) {  // v finite
  const std::uint32_t u = std::bit_cast<std::uint32_t>(v);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

inline std::int8_t code_of(float v, float inv, int qmax) {
  const float r = (v * inv + kRoundMagic) - kRoundMagic;
  return static_cast<std::int8_t>(std::clamp(static_cast<int>(r), -qmax, qmax));
}

// Codes of one block with a normal scale: INT8 straight, INT4 via a chunk of INT8 codes.
template <typename T>
void encode_normal_block(const T* x, std::size_t n, float inv, std::uint8_t* codes,
                         const QuantOptions& opts) {
  const int qmax = quant_qmax(opts.bits);
  if (opts.bits == QuantBits::int8) {
    auto* c = reinterpret_cast<std::int8_t*>(codes);
    for (std::size_t i = 0; i < n; ++i) c[i] = code_of(load_f32(x + i), inv, qmax);
    std::fill(codes + n, codes + opts.block_size, std::uint8_t{0});
    return;
  }
  constexpr std::size_t kChunk = 64;  // elements per pass; block_size is a multiple of it or of 32
  std::int8_t tmp[kChunk];
  for (std::size_t start = 0; start < opts.block_size; start += kChunk) {
    const std::size_t len = std::min(kChunk, opts.block_size - start);
    const std::size_t m = start < n ? std::min(len, n - start) : 0;
    for (std::size_t j = 0; j < m; ++j) tmp[j] = code_of(load_f32(x + start + j), inv, qmax);
    std::fill(tmp + m, tmp + len, std::int8_t{0});
    std::uint8_t* out = codes + start / 2;
    for (std::size_t k = 0; k < len / 2; ++k)
      out[k] = static_cast<std::uint8_t>((tmp[2 * k] & 0xF) | ((tmp[2 * k + 1] & 0xF) << 4));
  }
}

template <typename T>
QuantStats quantize_typed(const T* x, std::size_t count, std::uint8_t* q, const QuantOptions& opts) {
  QuantStats stats;
  const int qmax = quant_qmax(opts.bits);
  for (std::size_t start = 0; start < count; start += opts.block_size) {
    const std::size_t n = std::min(opts.block_size, count - start);
    const T* xb = x + start;
    std::uint32_t amax_bits = 0;
    for (std::size_t i = 0; i < n; ++i) amax_bits = std::max(amax_bits, abs_bits(xb + i));
    const bool nonfinite = amax_bits >= 0x7f800000u;
    const auto s = choose_block_scale(std::bit_cast<float>(amax_bits), nonfinite, qmax);
    if (s.kind == ScaleKind::normal) {
      write_scale(q, s.scale);
      encode_normal_block(xb, n, s.inv, q + sizeof(QuantBlockHeader), opts);
    } else {
      encode_block_scalar(xb, n, s, q, opts);
    }
    q += quant_block_bytes(opts);
    ++stats.blocks;
    stats.nonfinite_blocks += nonfinite ? 1 : 0;
  }
  return stats;
}

// Values of one block with a plain scale (0 or normal), through `emit(i, value)`.
template <typename Emit>
void decode_plain_block(const std::uint8_t* codes, std::size_t n, float scale, QuantBits bits, Emit&& emit) {
  if (bits == QuantBits::int8) {
    const auto* c = reinterpret_cast<const std::int8_t*>(codes);
    for (std::size_t i = 0; i < n; ++i) emit(i, static_cast<float>(c[i]) * scale);
    return;
  }
  for (std::size_t k = 0; k < n / 2; ++k) {
    const unsigned b = codes[k];
    emit(2 * k, static_cast<float>(static_cast<int>((b & 0xFu) ^ 8u) - 8) * scale);
    emit(2 * k + 1, static_cast<float>(static_cast<int>((b >> 4) ^ 8u) - 8) * scale);
  }
  if (n % 2 == 1) emit(n - 1, static_cast<float>(get_code(codes, n - 1, bits)) * scale);
}

template <typename T>
void dequantize_typed(const std::uint8_t* q, std::size_t count, T* y, const QuantOptions& opts) {
  for (std::size_t start = 0; start < count; start += opts.block_size) {
    const std::size_t n = std::min(opts.block_size, count - start);
    const float scale = read_scale(q);
    T* yb = y + start;
    if (!scale_is_plain(scale)) {
      decode_block_scalar(q, n, yb, opts.bits);
    } else if constexpr (std::is_same_v<T, float>) {
      decode_plain_block(q + sizeof(QuantBlockHeader), n, scale, opts.bits,
                         [yb](std::size_t i, float v) { yb[i] = v; });
    } else {
      decode_plain_block(q + sizeof(QuantBlockHeader), n, scale, opts.bits,
                         [yb](std::size_t i, float v) { yb[i].bits = bf16_bits_rne(v); });
    }
    q += quant_block_bytes(opts);
  }
}

void dequantize_add_blocks(const std::uint8_t* q, std::size_t count, float* acc, const QuantOptions& opts) {
  for (std::size_t start = 0; start < count; start += opts.block_size) {
    const std::size_t n = std::min(opts.block_size, count - start);
    const float scale = read_scale(q);
    float* ab = acc + start;
    if (!scale_is_plain(scale)) {
      decode_add_block_scalar(q, n, ab, opts.bits);
    } else {
      decode_plain_block(q + sizeof(QuantBlockHeader), n, scale, opts.bits,
                         [ab](std::size_t i, float v) { ab[i] += v; });
    }
    q += quant_block_bytes(opts);
  }
}

}  // namespace

namespace quant_detail {
const QuantKernels& portable_kernels() {
  static constexpr QuantKernels k =
      make_quant_kernels<quantize_typed<float>, quantize_typed<bf16>, dequantize_typed<float>,
                         dequantize_typed<bf16>, dequantize_add_blocks>();
  return k;
}
}  // namespace quant_detail

}  // namespace tz
