// Kernel throughput against memcpy, the block-size sweep and the CPU line (quant_throughput.hpp).
#include "bench/quant_throughput.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "core/bf16.hpp"
#include "core/cpu_features.hpp"
#include "core/error.hpp"
#include "core/timing.hpp"

namespace tz {
namespace {

// Gaussian values with one outlier (x30) in 1000, as gradients and weights have.
std::vector<float> test_values(std::size_t n) {
  std::mt19937 rng(42);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_int_distribution<int> outlier(0, 999);
  std::vector<float> x(n);
  for (auto& v : x) v = g(rng) * (outlier(rng) == 0 ? 30.0f : 1.0f);
  return x;
}

// Median times of `kernel` and of a memcpy of `bytes` from src to dst, run alternately. The memcpy
// buffers live as long as the measurement, so no run pays for page faults.
std::pair<double, double> time_against_memcpy(int reps, std::size_t bytes, const std::uint8_t* src,
                                              std::uint8_t* dst, const auto& kernel) {
  std::vector<double> tk, tm;
  kernel();  // warm: caches, branch predictors
  std::memcpy(dst, src, bytes);
  for (int r = 0; r < reps; ++r) {
    tk.push_back(seconds_of(kernel));
    tm.push_back(seconds_of([&] { std::memcpy(dst, src, bytes); }));
  }
  return {median(tk), median(tm)};
}

struct RowSamples {
  std::vector<double> kernel_GBps, memcpy_GBps, ratio;
};

}  // namespace

void validate_quant_throughput_options(const QuantThroughputOptions& o) {
  if (o.elements < 1 || o.elements > kMaxQuantBenchElements)
    fail_input("bench quant: elements must be in [1, {}], got {}", kMaxQuantBenchElements, o.elements);
  if (o.reps < 1 || o.reps > kMaxQuantBenchReps)
    fail_input("bench quant: reps must be in [1, {}], got {}", kMaxQuantBenchReps, o.reps);
  if (o.runs < 1 || o.runs > kMaxQuantBenchRuns)
    fail_input("bench quant: runs must be in [1, {}], got {}", kMaxQuantBenchRuns, o.runs);
  validate_quant_options({.block_size = o.block_size});
}

std::vector<QuantThroughputRow> measure_quant_throughput(const QuantThroughputOptions& o) {
  validate_quant_throughput_options(o);
  const std::size_t n = o.elements;
  const auto xf = test_values(n);
  std::vector<bf16> xh(n), yh(n);
  for (std::size_t i = 0; i < n; ++i) xh[i] = to_bf16(xf[i]);
  std::vector<float> yf(n), acc(n, 0.0f);
  std::vector<std::uint8_t> copy_src(n * sizeof(float), 1), copy_dst(n * sizeof(float), 2);

  // The rows, in the order printed; each keeps its own codes so that dequantize decodes what the
  // quantizer of its dtype wrote.
  struct RowSpec {
    std::string op;
    QuantBits bits;
    DType dtype;
    std::function<void()> kernel;
  };
  std::vector<RowSpec> specs;
  std::vector<std::vector<std::uint8_t>> codes;
  codes.reserve(4);
  for (QuantBits bits : {QuantBits::int8, QuantBits::int4}) {
    const QuantOptions q{.bits = bits, .block_size = o.block_size};
    for (DType dtype : {DType::f32, DType::bf16}) {
      const void* x = dtype == DType::f32 ? static_cast<const void*>(xf.data()) : xh.data();
      void* y = dtype == DType::f32 ? static_cast<void*>(yf.data()) : yh.data();
      std::uint8_t* c = codes.emplace_back(quantized_bytes(n, q)).data();
      quantize(x, dtype, n, c, q);
      specs.push_back({"quantize", bits, dtype, [=] { quantize(x, dtype, n, c, q); }});
      specs.push_back({"dequantize", bits, dtype, [=] { dequantize(c, n, y, dtype, q); }});
      if (dtype == DType::f32)
        specs.push_back({"dequantize_add", bits, dtype, [=, a = acc.data()] { dequantize_add(c, n, a, q); }});
    }
  }

  std::vector<RowSamples> samples(specs.size());
  for (int run = 0; run < o.runs; ++run)
    for (std::size_t r = 0; r < specs.size(); ++r) {
      const std::size_t bytes = n * dtype_bytes(specs[r].dtype);
      const auto [tk, tm] =
          time_against_memcpy(o.reps, bytes, copy_src.data(), copy_dst.data(), specs[r].kernel);
      samples[r].kernel_GBps.push_back(double(bytes) / tk / 1e9);
      samples[r].memcpy_GBps.push_back(double(bytes) / tm / 1e9);
      samples[r].ratio.push_back(tm / tk);
    }

  std::vector<QuantThroughputRow> rows;
  for (std::size_t r = 0; r < specs.size(); ++r) {
    const auto& s = samples[r];
    rows.push_back({.isa = active_quant_isa(),
                    .op = specs[r].op,
                    .bits = specs[r].bits,
                    .dtype = specs[r].dtype,
                    .tensor_bytes = double(n) * dtype_bytes(specs[r].dtype),
                    .kernel_GBps = median(s.kernel_GBps),
                    .memcpy_GBps = median(s.memcpy_GBps),
                    .ratio = median(s.ratio),
                    .ratio_min = *std::min_element(s.ratio.begin(), s.ratio.end()),
                    .ratio_max = *std::max_element(s.ratio.begin(), s.ratio.end())});
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

std::string cpu_vector_extensions() {
  return cpu_description();
}

std::string format_quant_throughput(const std::vector<QuantThroughputRow>& rows) {
  std::string out =
      fmt::format("{:<8} {:<15} {:<5} {:<5} {:>10} {:>12} {:>12} {:>7} {:>13}\n", "isa", "op", "bits",
                  "dtype", "tensor_MiB", "kernel_GBps", "memcpy_GBps", "ratio", "ratio_range");
  for (const auto& r : rows)
    out += fmt::format("{:<8} {:<15} {:<5} {:<5} {:>10.1f} {:>12.2f} {:>12.2f} {:>7.2f} {:>6.2f}-{:<6.2f}\n",
                       quant_isa_name(r.isa), r.op, quant_bits_name(r.bits), dtype_name(r.dtype),
                       r.tensor_bytes / (1 << 20), r.kernel_GBps, r.memcpy_GBps, r.ratio, r.ratio_min,
                       r.ratio_max);
  return out;
}

std::string format_block_size_sweep(const std::vector<BlockSizeRow>& rows) {
  std::string out = fmt::format("{:<5} {:>6} {:>14} {:>16} {:>14} {:>14}\n", "bits", "block", "rms_rel_error",
                                "max_error_steps", "bytes_vs_bf16", "quantize_GBps");
  for (const auto& r : rows)
    out += fmt::format("{:<5} {:>6} {:>14.3e} {:>16.4f} {:>14.4f} {:>14.2f}\n", quant_bits_name(r.bits),
                       r.block_size, r.rms_rel_error, r.max_error_steps, r.bytes_vs_bf16, r.quantize_GBps);
  return out;
}

}  // namespace tz
