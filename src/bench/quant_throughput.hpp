// Measurements behind `tierzero bench quant` and bench/quant_bench.cpp (numbers, not pass/fail):
//   - kernel throughput, single thread, in GB/s of the unquantized tensor (fp32 or bf16: the input
//     of quantize, the output of dequantize; the fp32 accumulator of dequantize_add), next to a
//     memcpy of those same bytes timed alternately in the same run (median of `reps` each), so the
//     ratio kernel / memcpy holds on a noisy machine; `runs` repeats the whole table and reports
//     the median (and the spread) of each row's ratio over the runs;
//   - a block-size sweep: error (RMS over RMS of the input, and largest error in quantization steps)
//     on gaussian data with rare outliers, bytes against bf16, and quantize speed; it justifies
//     kDefaultQuantBlockSize (docs/quantization.md);
//   - the CPU's vector extensions, printed beside every table.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/quant_format.hpp"
#include "device/cpu/block_quantize.hpp"

namespace tz {

struct QuantThroughputOptions {
  std::size_t elements = std::size_t{16} << 20;  // 64 MiB of fp32: well beyond the caches
  int reps = 7;                                  // timed calls per row and run (median)
  int runs = 1;                                  // repeats of the whole table (median of ratios)
  std::size_t block_size = kDefaultQuantBlockSize;
};
inline constexpr std::size_t kMaxQuantBenchElements = std::size_t{1} << 28;  // ~5.6 GB of buffers
inline constexpr int kMaxQuantBenchReps = 1000;
inline constexpr int kMaxQuantBenchRuns = 100;

// InputError naming the option and its value if out of range.
void validate_quant_throughput_options(const QuantThroughputOptions& opts);

struct QuantThroughputRow {
  QuantIsa isa;
  std::string op;  // "quantize", "dequantize" or "dequantize_add"
  QuantBits bits;
  DType dtype;              // the unquantized side (dequantize_add: the fp32 accumulator)
  double tensor_bytes = 0;  // unquantized bytes per call
  double kernel_GBps = 0;   // tensor bytes / median kernel time (median over runs)
  double memcpy_GBps = 0;   // tensor bytes / median memcpy time of the same bytes (median over runs)
  double ratio = 0;         // kernel / memcpy: median over runs of each run's ratio
  double ratio_min = 0;     // smallest and largest of the runs' ratios
  double ratio_max = 0;
};

// Runs on the active quantizer ISA (set_quant_isa to compare them).
std::vector<QuantThroughputRow> measure_quant_throughput(const QuantThroughputOptions& opts);

struct BlockSizeRow {
  std::size_t block_size = 0;
  QuantBits bits;
  double rms_rel_error = 0;    // RMS(y - x) / RMS(x)
  double max_error_steps = 0;  // max |y - x| / scale of its block (<= kQuantHalfStepBudget)
  double bytes_vs_bf16 = 0;    // quantized bytes / bf16 bytes
  double quantize_GBps = 0;    // fp32 input, single thread
};

std::vector<BlockSizeRow> sweep_quant_block_sizes(std::size_t elements, int reps,
                                                  const std::vector<std::size_t>& block_sizes);

// "cpu: <model name>" (where /proc/cpuinfo tells it) and the SIMD extensions this CPU reports
// (sse2 ... avx2, fma, avx512*), on one line.
std::string cpu_vector_extensions();

// Plain-text tables of the rows above (one row per line, a header first).
std::string format_quant_throughput(const std::vector<QuantThroughputRow>& rows);
std::string format_block_size_sweep(const std::vector<BlockSizeRow>& rows);

}  // namespace tz
