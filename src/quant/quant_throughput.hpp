// Measurements behind `tierzero bench quant` and bench/quant_bench.cpp (numbers, not pass/fail):
//   - kernel throughput, single thread, in GB/s of the unquantized tensor (fp32 or bf16: the input
//     of quantize, the output of dequantize), next to a memcpy of those same bytes timed alternately
//     in the same run (median of `reps` each), so the ratio holds on a noisy machine;
//   - a block-size sweep: error (RMS over RMS of the input, and largest error in quantization steps)
//     on gaussian data with rare outliers, bytes against bf16, and quantize speed; it justifies
//     kDefaultQuantBlockSize (docs/quantization.md).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "quant/block_quantize.hpp"
#include "quant/quant_format.hpp"

namespace tz {

struct QuantThroughputOptions {
  std::size_t elements = std::size_t{16} << 20;  // 64 MiB of fp32: well beyond the caches
  int reps = 7;
  std::size_t block_size = kDefaultQuantBlockSize;
};

struct QuantThroughputRow {
  std::string op;  // "quantize" or "dequantize"
  QuantBits bits;
  DType dtype;              // the unquantized side
  double tensor_bytes = 0;  // unquantized bytes per call
  double kernel_gbps = 0;   // tensor bytes / median kernel time
  double memcpy_gbps = 0;   // tensor bytes / median memcpy time of the same bytes
};

// Runs on the active quantizer path (set_quant_path to compare paths).
std::vector<QuantThroughputRow> measure_quant_throughput(const QuantThroughputOptions& opts);

struct BlockSizeRow {
  std::size_t block_size = 0;
  QuantBits bits;
  double rms_rel_error = 0;    // RMS(y - x) / RMS(x)
  double max_error_steps = 0;  // max |y - x| / scale of its block (<= kQuantHalfStepBudget)
  double bytes_vs_bf16 = 0;    // quantized bytes / bf16 bytes
  double quantize_gbps = 0;    // fp32 input, single thread
};

std::vector<BlockSizeRow> sweep_quant_block_sizes(std::size_t elements, int reps,
                                                  const std::vector<std::size_t>& block_sizes);

// Plain-text tables of the rows above (one row per line, a header first).
std::string format_quant_throughput(const std::vector<QuantThroughputRow>& rows);
std::string format_block_size_sweep(const std::vector<BlockSizeRow>& rows);

}  // namespace tz
