// Reference block quantizer and dequantizer: one element at a time, straight from the format rules
// in quant/block_kernels.hpp. Every faster path is tested bitwise against these.
// Products are rounded to fp32 before they are added (no fused multiply-add, in every path).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cmath>

#include "core/error.hpp"
#include "quant/block_kernels.hpp"
#include "quant/block_quantize.hpp"

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

}  // namespace

QuantStats quantize_ref(const void* x, DType dtype, std::size_t count, std::uint8_t* q,
                        const QuantOptions& opts) {
  validate_quant_options(opts);
  switch (dtype) {
    case DType::f32:
      return quantize_ref_typed(static_cast<const float*>(x), count, q, opts);
    case DType::bf16:
      return quantize_ref_typed(static_cast<const bf16*>(x), count, q, opts);
    default:
      fail_input("quantize: dtype {} is not quantizable (f32 or bf16)", dtype_name(dtype));
  }
}

void dequantize_ref(const std::uint8_t* q, std::size_t count, void* y, DType dtype,
                    const QuantOptions& opts) {
  validate_quant_options(opts);
  switch (dtype) {
    case DType::f32:
      return dequantize_ref_typed(q, count, static_cast<float*>(y), opts);
    case DType::bf16:
      return dequantize_ref_typed(q, count, static_cast<bf16*>(y), opts);
    default:
      fail_input("dequantize: dtype {} is not quantizable (f32 or bf16)", dtype_name(dtype));
  }
}

void dequantize_add_ref(const std::uint8_t* q, std::size_t count, float* acc, const QuantOptions& opts) {
  validate_quant_options(opts);
  for (std::size_t start = 0; start < count; start += opts.block_size) {
    quant_detail::decode_add_block_scalar(q, std::min(opts.block_size, count - start), acc + start,
                                          opts.bits);
    q += quant_block_bytes(opts);
  }
}

namespace quant_detail {
const QuantKernels& reference_kernels() {
  static const QuantKernels k{quantize_ref, dequantize_ref, dequantize_add_ref};
  return k;
}
}  // namespace quant_detail

}  // namespace tz
