// The one dispatcher of the block quantizer: a table of kernels, ISA x operation x element type
// (quant_detail::QuantKernels, one per ISA), one validation path for all of them, and the run-time
// choice of the ISA: the best this CPU runs (AVX-512 with BF16, else AVX2, else the portable code),
// chosen at first use; tests and benchmarks may force another (set_quant_isa).
#include <atomic>

#include "core/error.hpp"
#include "device/cpu/block_kernels.hpp"
#include "device/cpu/block_quantize.hpp"

namespace tz {
namespace {

using quant_detail::QuantKernels;

// nullptr when the library was built without that ISA's code.
const QuantKernels* kernels_of(QuantIsa isa) {
  switch (isa) {
    case QuantIsa::reference:
      return &quant_detail::reference_kernels();
    case QuantIsa::portable:
      return &quant_detail::portable_kernels();
    case QuantIsa::avx2:
      return quant_detail::avx2_kernels();
    case QuantIsa::avx512:
      return quant_detail::avx512_kernels();
  }
  return nullptr;
}

std::atomic<QuantIsa>& active_isa() {
  static std::atomic<QuantIsa> isa{best_quant_isa()};
  return isa;
}
std::atomic<const QuantKernels*>& active_kernels() {
  static std::atomic<const QuantKernels*> k{kernels_of(active_isa().load())};
  return k;
}

// The table column of `dtype`, or InputError naming the operation and the dtype.
std::size_t dtype_slot(std::string_view op, DType dtype) {
  switch (dtype) {
    case DType::f32:
      return quant_detail::kQuantDtypeF32;
    case DType::bf16:
      return quant_detail::kQuantDtypeBf16;
    default:
      fail_input("{}: dtype {} is not quantizable (f32 or bf16)", op, dtype_name(dtype));
  }
}

QuantStats run_quantize(const QuantKernels& k, const void* x, DType dtype, std::size_t count, std::uint8_t* q,
                        const QuantOptions& opts) {
  check_quant_call("quantize", opts, count, x, q);
  return k.quantize[dtype_slot("quantize", dtype)](x, count, q, opts);
}

void run_dequantize(const QuantKernels& k, const std::uint8_t* q, std::size_t count, void* y, DType dtype,
                    const QuantOptions& opts) {
  check_quant_call("dequantize", opts, count, q, y);
  k.dequantize[dtype_slot("dequantize", dtype)](q, count, y, opts);
}

void run_dequantize_add(const QuantKernels& k, const std::uint8_t* q, std::size_t count, float* acc,
                        const QuantOptions& opts) {
  check_quant_call("dequantize_add", opts, count, q, acc);
  k.dequantize_add(q, count, acc, opts);
}

}  // namespace

void check_quant_call(std::string_view op, const QuantOptions& opts, std::size_t count, const void* in,
                      const void* out) {
  validate_quant_options(opts);
  if (count > 0 && (in == nullptr || out == nullptr))
    fail_input("{}: null {} buffer for {} elements", op, in == nullptr ? "input" : "output", count);
}

void check_quantizable(std::string_view op, DType dtype) {
  (void)dtype_slot(op, dtype);
}

std::string_view quant_isa_name(QuantIsa isa) {
  switch (isa) {
    case QuantIsa::reference:
      return "reference";
    case QuantIsa::portable:
      return "portable";
    case QuantIsa::avx2:
      return "avx2";
    case QuantIsa::avx512:
      return "avx512";
  }
  return "?";
}

QuantIsa parse_quant_isa(std::string_view name) {
  for (QuantIsa isa : kAllQuantIsas)
    if (name == quant_isa_name(isa)) return isa;
  fail_input("quantizer ISA '{}' is unknown (reference, portable, avx2, avx512)", name);
}

QuantCpuFeatures detect_quant_cpu_features() {
  QuantCpuFeatures f;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
#endif
  return f;
}

std::string quant_isa_missing_features(QuantIsa isa, const QuantCpuFeatures& cpu) {
  std::string missing;
  const auto need = [&missing](bool have, std::string_view name) {
    if (have) return;
    if (!missing.empty()) missing += ' ';
    missing += name;
  };
  if (isa == QuantIsa::avx2) need(cpu.avx2, "avx2");
  if (isa == QuantIsa::avx512) {
    need(cpu.avx512f, "avx512f");
    need(cpu.avx512bw, "avx512bw");
    need(cpu.avx512vl, "avx512vl");
    need(cpu.avx512bf16, "avx512bf16");
  }
  return missing;
}

void require_quant_isa(QuantIsa isa, const QuantCpuFeatures& cpu) {
  if (kernels_of(isa) == nullptr)
    fail_input("quantizer ISA {} is not built into this library (x86-64 with GCC or Clang only)",
               quant_isa_name(isa));
  const std::string missing = quant_isa_missing_features(isa, cpu);
  if (!missing.empty())
    fail_input("quantizer ISA {} cannot run on this CPU: it lacks {}", quant_isa_name(isa), missing);
}

bool quant_isa_supported(QuantIsa isa) {
  static const QuantCpuFeatures cpu = detect_quant_cpu_features();
  return kernels_of(isa) != nullptr && quant_isa_missing_features(isa, cpu).empty();
}

QuantIsa best_quant_isa() {
  static const QuantIsa best = quant_isa_supported(QuantIsa::avx512) ? QuantIsa::avx512
                               : quant_isa_supported(QuantIsa::avx2) ? QuantIsa::avx2
                                                                     : QuantIsa::portable;
  return best;
}

QuantIsa active_quant_isa() {
  return active_isa().load();
}

void set_quant_isa(QuantIsa isa) {
  require_quant_isa(isa, detect_quant_cpu_features());
  active_kernels().store(kernels_of(isa));
  active_isa().store(isa);
}

QuantIsa select_quant_isa(std::string_view name) {
  set_quant_isa(name == "auto" ? best_quant_isa() : parse_quant_isa(name));
  return active_quant_isa();
}

QuantStats quantize(const void* x, DType dtype, std::size_t count, std::uint8_t* q,
                    const QuantOptions& opts) {
  return run_quantize(*active_kernels().load(), x, dtype, count, q, opts);
}
void dequantize(const std::uint8_t* q, std::size_t count, void* y, DType dtype, const QuantOptions& opts) {
  run_dequantize(*active_kernels().load(), q, count, y, dtype, opts);
}
void dequantize_add(const std::uint8_t* q, std::size_t count, float* acc, const QuantOptions& opts) {
  run_dequantize_add(*active_kernels().load(), q, count, acc, opts);
}

QuantStats quantize_ref(const void* x, DType dtype, std::size_t count, std::uint8_t* q,
                        const QuantOptions& opts) {
  return run_quantize(quant_detail::reference_kernels(), x, dtype, count, q, opts);
}
void dequantize_ref(const std::uint8_t* q, std::size_t count, void* y, DType dtype,
                    const QuantOptions& opts) {
  run_dequantize(quant_detail::reference_kernels(), q, count, y, dtype, opts);
}
void dequantize_add_ref(const std::uint8_t* q, std::size_t count, float* acc, const QuantOptions& opts) {
  run_dequantize_add(quant_detail::reference_kernels(), q, count, acc, opts);
}

}  // namespace tz
