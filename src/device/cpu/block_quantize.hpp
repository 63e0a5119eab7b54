// Block quantize / dequantize kernels (format: core/quant_format.hpp, docs/quantization.md).
//
//   quantize(x, dtype, count, q, opts)     x: `count` elements of dtype (f32 or bf16)
//                                          q: quantized_bytes(count, opts) bytes, fully written
//   dequantize(q, count, y, dtype, opts)   y: `count` elements of dtype, the dtype x went in with
//   dequantize_add(q, count, acc, opts)    acc[i] += value i (fp32), for reductions after dequantization
//
// Each has a plain scalar `_ref` twin that defines the result. The dispatched versions run the
// kernels of one instruction set (QuantIsa), by default the fastest this CPU can run, chosen at
// first use; every ISA produces bitwise the same codes, scales and values as the reference: the
// fast paths use the same fp32 operations in the same order, and hand the rare blocks that need
// care (NaN/inf, subnormal scales) to the scalar code. Options, dtype and buffers are checked once,
// in one place, for every ISA (InputError naming the value).
// All functions are thread-safe and allocate nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/dtype.hpp"
#include "core/quant_format.hpp"

namespace tz {

QuantStats quantize(const void* x, DType dtype, std::size_t count, std::uint8_t* q, const QuantOptions& opts);
void dequantize(const std::uint8_t* q, std::size_t count, void* y, DType dtype, const QuantOptions& opts);
void dequantize_add(const std::uint8_t* q, std::size_t count, float* acc, const QuantOptions& opts);

// The checks every quantizer call passes on every backend and ISA, before anything runs: usable
// options, and buffers present for a non-empty call; and a dtype that quantizes (f32 or bf16).
// InputError naming `op` and the value.
void check_quant_call(std::string_view op, const QuantOptions& opts, std::size_t count, const void* in,
                      const void* out);
void check_quantizable(std::string_view op, DType dtype);

QuantStats quantize_ref(const void* x, DType dtype, std::size_t count, std::uint8_t* q,
                        const QuantOptions& opts);
void dequantize_ref(const std::uint8_t* q, std::size_t count, void* y, DType dtype, const QuantOptions& opts);
void dequantize_add_ref(const std::uint8_t* q, std::size_t count, float* acc, const QuantOptions& opts);

// Instruction sets the dispatcher chooses from:
//   reference  the `_ref` functions (scalar, one element at a time);
//   portable   plain C++ that any compiler vectorizes for the baseline ISA (SSE2 on x86-64, NEON);
//   avx2       AVX2 intrinsics, 8 lanes (x86-64 CPUs with AVX2);
//   avx512     AVX-512 F/BW/VL with the BF16 conversions, 16 lanes.
enum class QuantIsa : std::uint8_t { reference, portable, avx2, avx512 };
inline constexpr QuantIsa kAllQuantIsas[] = {QuantIsa::reference, QuantIsa::portable, QuantIsa::avx2,
                                             QuantIsa::avx512};
std::string_view quant_isa_name(QuantIsa isa);
// The ISA of that name ("reference", "portable", "avx2", "avx512"); InputError naming it otherwise.
QuantIsa parse_quant_isa(std::string_view name);

// The CPU features the ISAs need (as __builtin_cpu_supports names them, which also checks that the
// operating system saves the vector registers).
struct QuantCpuFeatures {
  bool avx2 = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512bf16 = false;
};
QuantCpuFeatures detect_quant_cpu_features();  // this CPU's
// The features `isa` needs that `cpu` lacks, space-separated; empty when it can run there.
std::string quant_isa_missing_features(QuantIsa isa, const QuantCpuFeatures& cpu);
// Throws InputError naming `isa` and what it misses if it cannot run on `cpu` or is not built
// into this library (the x86 ISAs on other targets).
void require_quant_isa(QuantIsa isa, const QuantCpuFeatures& cpu);

bool quant_isa_supported(QuantIsa isa);  // built, and this CPU can run it
QuantIsa best_quant_isa();               // the fastest supported ISA
QuantIsa active_quant_isa();             // the one quantize() / dequantize() use now
// Forces an ISA, process-wide (tests and benchmarks compare them); InputError if this CPU lacks it.
void set_quant_isa(QuantIsa isa);
// "auto" restores best_quant_isa(); any other name as parse_quant_isa. Returns the ISA now active.
QuantIsa select_quant_isa(std::string_view name);

}  // namespace tz
