// Block quantize / dequantize kernels (format: quant/quant_format.hpp, docs/quantization.md).
//
//   quantize(x, dtype, count, q, opts)     x: `count` elements of dtype (f32 or bf16)
//                                          q: quantized_bytes(count, opts) bytes, fully written
//   dequantize(q, count, y, dtype, opts)   y: `count` elements of dtype, the dtype x went in with
//   dequantize_add(q, count, acc, opts)    acc[i] += value i (fp32), for reductions after dequantization
//
// Each has a plain scalar `_ref` twin that defines the result. The dispatched versions pick at run
// time the fastest path this CPU can run (QuantPath) and produce bitwise the same codes, scales and
// values as the reference: the fast paths use the same fp32 operations in the same order, and hand
// the rare blocks that need care (NaN/inf, subnormal scales) to the scalar code.
// All functions are thread-safe and allocate nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/dtype.hpp"
#include "quant/quant_format.hpp"

namespace tz {

QuantStats quantize(const void* x, DType dtype, std::size_t count, std::uint8_t* q, const QuantOptions& opts);
void dequantize(const std::uint8_t* q, std::size_t count, void* y, DType dtype, const QuantOptions& opts);
void dequantize_add(const std::uint8_t* q, std::size_t count, float* acc, const QuantOptions& opts);

QuantStats quantize_ref(const void* x, DType dtype, std::size_t count, std::uint8_t* q,
                        const QuantOptions& opts);
void dequantize_ref(const std::uint8_t* q, std::size_t count, void* y, DType dtype, const QuantOptions& opts);
void dequantize_add_ref(const std::uint8_t* q, std::size_t count, float* acc, const QuantOptions& opts);

// Implementations the dispatcher chooses from. `portable` is plain C++ written so that any compiler
// vectorizes it for the baseline ISA; `avx512` needs AVX-512 F/BW/VL and the BF16 conversions.
enum class QuantPath : std::uint8_t { reference, portable, avx512 };
std::string_view quant_path_name(QuantPath path);

bool quant_path_supported(QuantPath path);  // can this CPU run it?
QuantPath best_quant_path();                // the fastest supported path
QuantPath active_quant_path();              // the one quantize()/dequantize() use now
// Forces a path (tests and benchmarks compare paths); InternalError if unsupported. Process-wide.
void set_quant_path(QuantPath path);

}  // namespace tz
