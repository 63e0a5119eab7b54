#include "perf/kernel_time.hpp"

#include <cmath>

#include "core/error.hpp"

namespace tz::perf {
namespace {

// quantized_bytes of plan/step_schedule.hpp for a possibly fractional count (a message's share).
double quantized(double n, int bits, std::size_t block) {
  TZ_CHECK(bits == 4 || bits == 8, "bits {}", bits);
  const double per_block = std::ceil(double(block) * bits / 8) + 4;
  return std::ceil(n / double(block)) * per_block;
}

}  // namespace

double quant_kernel_bytes_per_s(const DeviceSpec& device, double kernel_efficiency) {
  if (device.quant_GBps > 0) return device.quant_GBps * 1e9;
  return device.memory_bandwidth_GBps * 1e9 * kernel_efficiency;
}

double quantize_bytes_moved(double n, double value_bytes, int bits, std::size_t block) {
  return n <= 0 ? 0 : n * value_bytes + quantized(n, bits, block);
}

double dequantize_bytes_moved(double n, double value_bytes, int bits, std::size_t block) {
  return n <= 0 ? 0 : quantized(n, bits, block) + n * value_bytes;
}

double dequantize_reduce_bytes_moved(double n, int fanout, int bits, std::size_t block) {
  TZ_CHECK(fanout >= 1, "fanout {}", fanout);
  return n <= 0 ? 0 : quantized(n, bits, block) + n / fanout * 4.0;
}

}  // namespace tz::perf
