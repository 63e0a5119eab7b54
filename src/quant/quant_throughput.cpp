// Kernel throughput against memcpy, and the block-size sweep (quant_throughput.hpp).
#include "quant/quant_throughput.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "core/bf16.hpp"

namespace tz {
namespace {

double seconds_of(const auto& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Gaussian values with one outlier (x30) in 1000, as gradients and weights have.
std::vector<float> test_values(std::size_t n) {
  std::mt19937 rng(42);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_int_distribution<int> outlier(0, 999);
  std::vector<float> x(n);
  for (auto& v : x) v = g(rng) * (outlier(rng) == 0 ? 30.0f : 1.0f);
  return x;
}

// Median times of `kernel` and of a memcpy of `bytes`, run alternately.
std::pair<double, double> time_against_memcpy(int reps, std::size_t bytes, const auto& kernel) {
  std::vector<std::uint8_t> src(bytes, 1), dst(bytes, 2);
  std::vector<double> tk, tm;
  kernel();  // warm: page faults and caches
  std::memcpy(dst.data(), src.data(), bytes);
  for (int r = 0; r < reps; ++r) {
    tk.push_back(seconds_of(kernel));
    tm.push_back(seconds_of([&] { std::memcpy(dst.data(), src.data(), bytes); }));
  }
  return {median(tk), median(tm)};
}

}  // namespace

std::vector<QuantThroughputRow> measure_quant_throughput(const QuantThroughputOptions& o) {
  std::vector<QuantThroughputRow> rows;
  const std::size_t n = o.elements;
  const auto xf = test_values(n);
  std::vector<bf16> xh(n);
  for (std::size_t i = 0; i < n; ++i) xh[i] = to_bf16(xf[i]);
  std::vector<float> yf(n);
  std::vector<bf16> yh(n);
  for (QuantBits bits : {QuantBits::int8, QuantBits::int4}) {
    const QuantOptions q{.bits = bits, .block_size = o.block_size};
    std::vector<std::uint8_t> codes(quantized_bytes(n, q));
    for (DType dtype : {DType::f32, DType::bf16}) {
      const void* x = dtype == DType::f32 ? static_cast<const void*>(xf.data()) : xh.data();
      void* y = dtype == DType::f32 ? static_cast<void*>(yf.data()) : yh.data();
      const double in_bytes = double(n) * dtype_bytes(dtype);
      auto [tq, tmq] = time_against_memcpy(o.reps, n * dtype_bytes(dtype),
                                           [&] { quantize(x, dtype, n, codes.data(), q); });
      rows.push_back({"quantize", bits, dtype, in_bytes, in_bytes / tq / 1e9, in_bytes / tmq / 1e9});
      auto [td, tmd] = time_against_memcpy(o.reps, n * dtype_bytes(dtype),
                                           [&] { dequantize(codes.data(), n, y, dtype, q); });
      rows.push_back({"dequantize", bits, dtype, in_bytes, in_bytes / td / 1e9, in_bytes / tmd / 1e9});
    }
  }
  return rows;
}

std::vector<BlockSizeRow> sweep_quant_block_sizes(std::size_t n, int reps,
                                                  const std::vector<std::size_t>& sizes) {
  std::vector<BlockSizeRow> rows;
  const auto x = test_values(n);
  double sum_x2 = 0;
  for (float v : x) sum_x2 += double(v) * v;
  std::vector<float> y(n);
  for (QuantBits bits : {QuantBits::int8, QuantBits::int4})
    for (std::size_t block : sizes) {
      const QuantOptions q{.bits = bits, .block_size = block};
      std::vector<std::uint8_t> codes(quantized_bytes(n, q));
      std::vector<double> t;
      for (int r = 0; r < reps; ++r)
        t.push_back(seconds_of([&] { quantize(x.data(), DType::f32, n, codes.data(), q); }));
      dequantize(codes.data(), n, y.data(), DType::f32, q);
      double sum_e2 = 0, max_steps = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const double e = double(y[i]) - x[i];
        sum_e2 += e * e;
        float scale;
        std::memcpy(&scale, codes.data() + (i / block) * quant_block_bytes(q), sizeof scale);
        if (scale > 0) max_steps = std::max(max_steps, std::fabs(e) / scale);
      }
      rows.push_back({block, bits, std::sqrt(sum_e2 / sum_x2), max_steps, double(codes.size()) / (2.0 * n),
                      double(n) * 4 / median(t) / 1e9});
    }
  return rows;
}

std::string format_quant_throughput(const std::vector<QuantThroughputRow>& rows) {
  std::string out = fmt::format("{:<11} {:<5} {:<5} {:>10} {:>12} {:>12} {:>9}\n", "op", "bits", "dtype",
                                "tensor_MiB", "kernel_gbps", "memcpy_gbps", "ratio");
  for (const auto& r : rows)
    out += fmt::format("{:<11} {:<5} {:<5} {:>10.1f} {:>12.2f} {:>12.2f} {:>9.2f}\n", r.op,
                       quant_bits_name(r.bits), dtype_name(r.dtype), r.tensor_bytes / (1 << 20),
                       r.kernel_gbps, r.memcpy_gbps, r.kernel_gbps / r.memcpy_gbps);
  return out;
}

std::string format_block_size_sweep(const std::vector<BlockSizeRow>& rows) {
  std::string out = fmt::format("{:<5} {:>6} {:>14} {:>16} {:>14} {:>14}\n", "bits", "block", "rms_rel_error",
                                "max_error_steps", "bytes_vs_bf16", "quantize_gbps");
  for (const auto& r : rows)
    out += fmt::format("{:<5} {:>6} {:>14.3e} {:>16.4f} {:>14.4f} {:>14.2f}\n", quant_bits_name(r.bits),
                       r.block_size, r.rms_rel_error, r.max_error_steps, r.bytes_vs_bf16, r.quantize_gbps);
  return out;
}

}  // namespace tz
