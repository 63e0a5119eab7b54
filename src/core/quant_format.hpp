// Block quantization format (ZeRO++ qwZ / qgZ; docs/quantization.md): a numeric format like bf16,
// so it lives in core, where the collective planner (byte sizes) and the kernels (quant/) both see it.
//
// Terms. A tensor of `count` elements is cut into blocks of `block_size` elements (the last one may be
// partial; it is padded with zero codes). Each block stores one fp32 `scale` and one signed integer
// code per element, symmetric around zero: code q in [-qmax, qmax], value = q * scale, with
//   INT8: qmax = 127, one code per byte (two's complement);
//   INT4: qmax = 7, two codes per byte, element 2i in the low nibble and 2i+1 in the high nibble
//         (two's complement nibbles; -8 is never produced).
// Wire layout: blocks one after another, each a QuantBlockHeader (the scale) followed by its codes:
//   | scale (4 B) | block_size codes (INT8: block_size B, INT4: block_size/2 B) | scale | codes | ...
// so a quantized buffer of `count` elements is quant_blocks(count) * quant_block_bytes() bytes, and
// a buffer holding whole blocks can be cut, concatenated and moved as u8 without decoding it.
//
// Scale per block, with m = max |x| over the block's real elements:
//   - m finite and > 0: scale = m / qmax (fp32), nudged one ulp so that q * scale never overflows and,
//     for subnormal scales, so that qmax * scale >= m; code q = round-half-even(x * (1 / scale)) for a
//     normal scale, round-half-even(x / scale) for a subnormal one (whose reciprocal may overflow),
//     clamped to [-qmax, qmax].
//   - all zeros: scale = 0, codes 0 (the block dequantizes to +0).
//   - any NaN or inf in the block: scale = NaN, codes 0. The whole block dequantizes to NaN and the
//     quantizer counts it in QuantStats::nonfinite_blocks: NaN is never silently turned into a number.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tz {

enum class QuantBits : std::uint8_t { int8 = 8, int4 = 4 };

constexpr int quant_qmax(QuantBits bits) {
  return bits == QuantBits::int8 ? 127 : 7;
}
constexpr std::string_view quant_bits_name(QuantBits bits) {
  return bits == QuantBits::int8 ? "int8" : "int4";
}

// Default block size: see docs/quantization.md for the error and speed measurement behind it.
inline constexpr std::size_t kDefaultQuantBlockSize = 256;
// Block sizes must be multiples of this (SIMD width of the kernels, whole bytes for INT4 codes) and
// lie in [kQuantBlockAlign, kMaxQuantBlockSize].
inline constexpr std::size_t kQuantBlockAlign = 32;
inline constexpr std::size_t kMaxQuantBlockSize = 1 << 16;

struct QuantOptions {
  QuantBits bits = QuantBits::int8;
  std::size_t block_size = kDefaultQuantBlockSize;  // elements per fp32 scale
};

// What qwZ (weights, INT8) and qgZ (gradients, INT4) use unless told otherwise.
inline constexpr QuantOptions kQwzDefaultOptions{.bits = QuantBits::int8};
inline constexpr QuantOptions kQgzDefaultOptions{.bits = QuantBits::int4};

// The fixed part of every block: its scale. The codes follow it directly.
struct QuantBlockHeader {
  float scale;  // value = code * scale; 0 for an all-zero block, NaN for a block with NaN/inf
};
static_assert(sizeof(QuantBlockHeader) == 4 && alignof(QuantBlockHeader) == 4, "scale is one fp32");
static_assert(kQuantBlockAlign % 8 == 0, "INT4 codes of a block fill whole, 4-byte aligned words");

// Throws InputError naming the value if the options are unusable.
void validate_quant_options(const QuantOptions& opts);

constexpr std::size_t quant_code_bytes(const QuantOptions& o) {
  return o.bits == QuantBits::int8 ? o.block_size : o.block_size / 2;
}
constexpr std::size_t quant_block_bytes(const QuantOptions& o) {
  return sizeof(QuantBlockHeader) + quant_code_bytes(o);
}
constexpr std::size_t quant_blocks(std::size_t count, const QuantOptions& o) {
  return (count + o.block_size - 1) / o.block_size;
}
// Bytes of the quantized form of `count` elements (scales and padding included).
constexpr std::size_t quantized_bytes(std::size_t count, const QuantOptions& o) {
  return quant_blocks(count, o) * quant_block_bytes(o);
}

// What a quantizer saw: blocks written, and those holding NaN/inf (stored with scale NaN).
struct QuantStats {
  std::size_t blocks = 0;
  std::size_t nonfinite_blocks = 0;
  QuantStats& operator+=(const QuantStats& o) {
    blocks += o.blocks;
    nonfinite_blocks += o.nonfinite_blocks;
    return *this;
  }
};

// Named error budgets (tested in tests/quant). For a finite block with stored scale s, every element
// x comes back as y with
//   fp32 output: |y - x| <= s * kQuantHalfStepBudget
//   bf16 output: |y - x| <= s * kQuantHalfStepBudget + |y| * kBf16RoundingBudget + kBf16SubnormalUlp
// The half step is the rounding to the nearest code; the slack above 0.5 covers the fp32 roundings of
// 1/s, x/s and q*s (each <= 2^-24 relative, times at most qmax codes). bf16 output adds one rounding
// to bf16 (half an ulp: at most 2^-8 of |y| for normal values, 2^-134 absolute for subnormal ones).
inline constexpr double kQuantHalfStepBudget = 0.5 + 1e-4;
inline constexpr double kBf16RoundingBudget = 1.0 / 256;
inline constexpr double kBf16SubnormalUlp = 0x1p-133;

}  // namespace tz
