// Run-time choice of the block quantizer path: the best the CPU supports (AVX-512 with BF16, else the
// portable code), chosen once; tests and benchmarks may force another (set_quant_path).
#include <atomic>

#include "core/error.hpp"
#include "quant/block_kernels.hpp"
#include "quant/block_quantize.hpp"

namespace tz {
namespace {

using quant_detail::QuantKernels;

const QuantKernels& kernels_of(QuantPath path) {
  switch (path) {
    case QuantPath::reference:
      return quant_detail::reference_kernels();
    case QuantPath::portable:
      return quant_detail::portable_kernels();
    case QuantPath::avx512: {
      const QuantKernels* k = quant_detail::avx512_kernels();
      TZ_CHECK(k != nullptr, "the AVX-512 quantizer is not built for this target");
      return *k;
    }
  }
  TZ_CHECK(false, "unknown QuantPath {}", static_cast<int>(path));
  return quant_detail::reference_kernels();
}

std::atomic<const QuantKernels*>& active_kernels() {
  static std::atomic<const QuantKernels*> k{&kernels_of(best_quant_path())};
  return k;
}

std::atomic<QuantPath>& active_path() {
  static std::atomic<QuantPath> p{best_quant_path()};
  return p;
}

}  // namespace

std::string_view quant_path_name(QuantPath path) {
  switch (path) {
    case QuantPath::reference:
      return "reference";
    case QuantPath::portable:
      return "portable";
    case QuantPath::avx512:
      return "avx512";
  }
  return "?";
}

bool quant_path_supported(QuantPath path) {
  if (path != QuantPath::avx512) return true;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (quant_detail::avx512_kernels() == nullptr) return false;
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

QuantPath best_quant_path() {
  static const QuantPath best =
      quant_path_supported(QuantPath::avx512) ? QuantPath::avx512 : QuantPath::portable;
  return best;
}

QuantPath active_quant_path() {
  return active_path().load();
}

void set_quant_path(QuantPath path) {
  TZ_CHECK(quant_path_supported(path), "quantizer path {} is not supported on this CPU",
           quant_path_name(path));
  active_kernels().store(&kernels_of(path));
  active_path().store(path);
}

QuantStats quantize(const void* x, DType dtype, std::size_t count, std::uint8_t* q,
                    const QuantOptions& opts) {
  return active_kernels().load()->quantize(x, dtype, count, q, opts);
}

void dequantize(const std::uint8_t* q, std::size_t count, void* y, DType dtype, const QuantOptions& opts) {
  active_kernels().load()->dequantize(q, count, y, dtype, opts);
}

void dequantize_add(const std::uint8_t* q, std::size_t count, float* acc, const QuantOptions& opts) {
  active_kernels().load()->dequantize_add(q, count, acc, opts);
}

}  // namespace tz
