// Reference block quantizer and dequantizer: one element at a time, straight from the format rules
// in device/cpu/block_kernels.hpp. Every faster path is tested bitwise against these; quantize_ref and
// its twins (block_quantize_dispatch.cpp) run this table.
// Products are rounded to fp32 before they are added (no fused multiply-add, in every path).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>
#include <cmath>

#include "device/cpu/block_kernels.hpp"
#include "device/cpu/block_quantize.hpp"

namespace tz {
namespace {

using quant_detail::choose_block_scale;

template <typename T>
QuantStats quantize_ref_typed(const T* x, std::size_t count, std::uint8_t* q, const QuantOptions& opts) {
  QuantStats stats;
  const std::size_t block = opts.block_size;
  for (std::size_t start = 0; start < count; start += block) {
    const std::size_t n = std::min(block, count - start);
    float amax = 0.0f;
    bool nonfinite = false;
    for (std::size_t i = 0; i < n; ++i) {
      const float v = quant_detail::load_f32(x + start + i);
      if (!std::isfinite(v))
        nonfinite = true;
      else
        amax = std::max(amax, std::fabs(v));
    }
    const auto s = choose_block_scale(amax, nonfinite, quant_qmax(opts.bits));
    quant_detail::encode_block_scalar(x + start, n, s, q, opts);
    q += quant_block_bytes(opts);
    ++stats.blocks;
    if (nonfinite) ++stats.nonfinite_blocks;
  }
  return stats;
}

template <typename T>
void dequantize_ref_typed(const std::uint8_t* q, std::size_t count, T* y, const QuantOptions& opts) {
  for (std::size_t start = 0; start < count; start += opts.block_size) {
    quant_detail::decode_block_scalar(q, std::min(opts.block_size, count - start), y + start, opts.bits);
    q += quant_block_bytes(opts);
  }
}

void dequantize_add_ref_blocks(const std::uint8_t* q, std::size_t count, float* acc,
                               const QuantOptions& opts) {
  for (std::size_t start = 0; start < count; start += opts.block_size) {
    quant_detail::decode_add_block_scalar(q, std::min(opts.block_size, count - start), acc + start,
                                          opts.bits);
    q += quant_block_bytes(opts);
  }
}

}  // namespace

namespace quant_detail {
const QuantKernels& reference_kernels() {
  static constexpr QuantKernels k =
      make_quant_kernels<quantize_ref_typed<float>, quantize_ref_typed<bf16>, dequantize_ref_typed<float>,
                         dequantize_ref_typed<bf16>, dequantize_add_ref_blocks>();
  return k;
}
}  // namespace quant_detail

}  // namespace tz
