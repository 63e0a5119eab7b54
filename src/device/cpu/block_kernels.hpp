// Internal to the quantization kernels: the per-block rules every path shares (scale choice, code
// packing, the scalar encoder used for the rare blocks the fast paths hand back), and the table of
// entry points of each path. The rules here ARE the format of core/quant_format.hpp; the reference
// (block_quantize_ref.cpp) is written with them and nothing else.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/bf16.hpp"
#include "core/dtype.hpp"
#include "core/quant_format.hpp"

namespace tz::quant_detail {

enum class ScaleKind : std::uint8_t { zero, normal, subnormal, nonfinite };

struct BlockScale {
  ScaleKind kind;
  float scale;  // stored in the block header
  float inv;    // 1 / scale for a normal scale (multiplying by it is how codes are computed), else 0
};

// The scale of a block from its largest magnitude `amax` (over finite elements) and whether it holds
// a NaN or inf.
inline BlockScale choose_block_scale(float amax, bool nonfinite, int qmax) {
  if (nonfinite) return {ScaleKind::nonfinite, std::numeric_limits<float>::quiet_NaN(), 0.0f};
  if (amax == 0.0f) return {ScaleKind::zero, 0.0f, 0.0f};
  float scale = amax / static_cast<float>(qmax);
  // q * scale must stay finite for every |q| <= qmax (amax near FLT_MAX).
  if (static_cast<double>(scale) * qmax > static_cast<double>(FLT_MAX)) scale = std::nextafter(scale, 0.0f);
  if (scale < FLT_MIN) {
    // Subnormal: m / qmax lost precision; round up so that qmax codes still reach amax.
    if (scale == 0.0f || static_cast<double>(scale) * qmax < static_cast<double>(amax))
      scale = std::nextafter(scale, 1.0f);
    return {ScaleKind::subnormal, scale, 0.0f};
  }
  return {ScaleKind::normal, scale, 1.0f / scale};
}

// Fast paths take blocks whose header scale is 0 or normal; NaN and subnormal scales go the scalar way.
inline bool scale_is_plain(float scale) {
  return scale == 0.0f || std::isnormal(scale);
}

inline float load_f32(const float* p) {
  return *p;
}
inline float load_f32(const bf16* p) {
  return to_float(*p);
}
inline void store_value(float* p, float v) {
  *p = v;
}
inline void store_value(bf16* p, float v) {
  *p = to_bf16(v);
}

inline float read_scale(const std::uint8_t* block) {
  float s;
  std::memcpy(&s, block, sizeof s);
  return s;
}
inline void write_scale(std::uint8_t* block, float s) {
  std::memcpy(block, &s, sizeof s);
}

inline int clamp_code(float r, int qmax) {
  const int q = static_cast<int>(r);
  return q > qmax ? qmax : (q < -qmax ? -qmax : q);
}

inline void put_code(std::uint8_t* codes, std::size_t i, int q, QuantBits bits) {
  if (bits == QuantBits::int8) {
    codes[i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(q));
  } else {
    const auto nib = static_cast<std::uint8_t>(q & 0xF);
    std::uint8_t& b = codes[i / 2];
    b = (i % 2 == 0) ? static_cast<std::uint8_t>((b & 0xF0) | nib)
                     : static_cast<std::uint8_t>((b & 0x0F) | (nib << 4));
  }
}

inline int get_code(const std::uint8_t* codes, std::size_t i, QuantBits bits) {
  if (bits == QuantBits::int8) return static_cast<std::int8_t>(codes[i]);
  const unsigned nib = (i % 2 == 0) ? (codes[i / 2] & 0xFu) : (codes[i / 2] >> 4);
  return static_cast<int>(nib ^ 8u) - 8;  // sign-extend the nibble
}

// Writes one whole block (header + codes, padding codes zero) for n <= block_size elements whose
// scale has been chosen. The scalar definition of the codes.
template <typename T>
void encode_block_scalar(const T* x, std::size_t n, const BlockScale& s, std::uint8_t* block,
                         const QuantOptions& opts) {
  write_scale(block, s.scale);
  std::uint8_t* codes = block + sizeof(QuantBlockHeader);
  std::memset(codes, 0, quant_code_bytes(opts));
  if (s.kind == ScaleKind::zero || s.kind == ScaleKind::nonfinite) return;
  const int qmax = quant_qmax(opts.bits);
  for (std::size_t i = 0; i < n; ++i) {
    const float v = load_f32(x + i);
    const float r = s.kind == ScaleKind::normal ? std::nearbyint(v * s.inv) : std::nearbyint(v / s.scale);
    put_code(codes, i, clamp_code(r, qmax), opts.bits);
  }
}

// Decodes n <= block_size values of one block (scalar definition): value = code * scale.
template <typename T>
void decode_block_scalar(const std::uint8_t* block, std::size_t n, T* y, QuantBits bits) {
  const float scale = read_scale(block);
  const std::uint8_t* codes = block + sizeof(QuantBlockHeader);
  for (std::size_t i = 0; i < n; ++i)
    store_value(y + i, static_cast<float>(get_code(codes, i, bits)) * scale);
}

inline void decode_add_block_scalar(const std::uint8_t* block, std::size_t n, float* acc, QuantBits bits) {
  const float scale = read_scale(block);
  const std::uint8_t* codes = block + sizeof(QuantBlockHeader);
  for (std::size_t i = 0; i < n; ++i) acc[i] += static_cast<float>(get_code(codes, i, bits)) * scale;
}

// The table of one ISA's kernels: operation x element type. A kernel trusts its arguments: the
// dispatcher (block_quantize_dispatch.cpp) has checked the options, the dtype and the buffers once,
// for every path, before it calls one.
using QuantizeKernel = QuantStats (*)(const void* x, std::size_t count, std::uint8_t* q,
                                      const QuantOptions& opts);
using DequantizeKernel = void (*)(const std::uint8_t* q, std::size_t count, void* y,
                                  const QuantOptions& opts);
using DequantizeAddKernel = void (*)(const std::uint8_t* q, std::size_t count, float* acc,
                                     const QuantOptions& opts);

// The element types a block is quantized from and dequantized to, as indices of the table.
inline constexpr std::size_t kQuantDtypeF32 = 0;
inline constexpr std::size_t kQuantDtypeBf16 = 1;
inline constexpr std::size_t kQuantDtypes = 2;

struct QuantKernels {
  QuantizeKernel quantize[kQuantDtypes];
  DequantizeKernel dequantize[kQuantDtypes];
  DequantizeAddKernel dequantize_add;  // the accumulator is always fp32
};

template <typename T>
using QuantizeTyped = QuantStats (*)(const T* x, std::size_t count, std::uint8_t* q,
                                     const QuantOptions& opts);
template <typename T>
using DequantizeTyped = void (*)(const std::uint8_t* q, std::size_t count, T* y, const QuantOptions& opts);

template <typename T, QuantizeTyped<T> Fn>
QuantStats quantize_erased(const void* x, std::size_t count, std::uint8_t* q, const QuantOptions& opts) {
  return Fn(static_cast<const T*>(x), count, q, opts);
}
template <typename T, DequantizeTyped<T> Fn>
void dequantize_erased(const std::uint8_t* q, std::size_t count, void* y, const QuantOptions& opts) {
  Fn(q, count, static_cast<T*>(y), opts);
}

// One ISA's table from its typed kernels.
template <QuantizeTyped<float> QuantizeF32, QuantizeTyped<bf16> QuantizeBf16,
          DequantizeTyped<float> DequantizeF32, DequantizeTyped<bf16> DequantizeBf16,
          DequantizeAddKernel DequantizeAdd>
constexpr QuantKernels make_quant_kernels() {
  return {.quantize = {quantize_erased<float, QuantizeF32>, quantize_erased<bf16, QuantizeBf16>},
          .dequantize = {dequantize_erased<float, DequantizeF32>, dequantize_erased<bf16, DequantizeBf16>},
          .dequantize_add = DequantizeAdd};
}

// The tables of the paths; nullptr where the library was built for a target without that code
// (the x86 paths on other CPUs' builds). Whether this CPU can run a built path is the dispatcher's
// question (quant_isa_supported).
const QuantKernels& reference_kernels();
const QuantKernels& portable_kernels();
const QuantKernels* avx2_kernels();
const QuantKernels* avx512_kernels();

}  // namespace tz::quant_detail
