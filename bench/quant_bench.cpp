// Block quantizer throughput (single thread, GB/s of input, against memcpy of the same bytes in the
// same run) on every quantizer path this CPU supports, and the block-size sweep behind the default.
//   build/bench/tz_quant_bench [elements] [reps]
// `tierzero bench quant` prints the same tables with options.
#include <fmt/format.h>

#include <cstdlib>

#include "quant/block_quantize.hpp"
#include "quant/quant_throughput.hpp"

int main(int argc, char** argv) {
  tz::QuantThroughputOptions opts;
  if (argc > 1) opts.elements = std::strtoull(argv[1], nullptr, 10);
  if (argc > 2) opts.reps = std::atoi(argv[2]);
  for (tz::QuantPath path : {tz::QuantPath::avx512, tz::QuantPath::portable}) {
    if (!tz::quant_path_supported(path)) continue;
    tz::set_quant_path(path);
    fmt::print("path {}: {} elements, block {}, median of {}\n{}\n", tz::quant_path_name(path), opts.elements,
               opts.block_size, opts.reps, tz::format_quant_throughput(tz::measure_quant_throughput(opts)));
  }
  tz::set_quant_path(tz::best_quant_path());
  fmt::print("block-size sweep (path {}, 4 Mi elements, gaussian with 1/1000 outliers x30):\n{}",
             tz::quant_path_name(tz::best_quant_path()),
             tz::format_block_size_sweep(tz::sweep_quant_block_sizes(
                 std::size_t{4} << 20, opts.reps, {32, 64, 128, 256, 512, 1024, 2048, 4096})));
  return 0;
}
