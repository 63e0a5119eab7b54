// Block quantizer throughput (single thread, GB/s of the tensor, as a ratio to memcpy of the same
// bytes in the same run) on every quantizer ISA this CPU runs, after the CPU's vector extensions,
// and the block-size sweep behind the default.
//   build/bench/tz_quant_bench [elements] [reps] [runs]
// `tierzero bench quant` prints the same tables with options (--isa to force one ISA).
#include <fmt/format.h>

#include <cstdlib>
#include <exception>
#include <string>

#include "bench/bench_args.hpp"
#include "bench/quant_throughput.hpp"
#include "device/cpu/block_quantize.hpp"

int main(int argc, char** argv) {
  if (argc > 4) {
    fmt::print(stderr, "usage: tz_quant_bench [elements] [reps] [runs]\n");
    return 2;
  }
  tz::QuantThroughputOptions opts;
  constexpr const char* kProgram = "tz_quant_bench";
  if (argc > 1)
    opts.elements = static_cast<std::size_t>(
        tz::bench_int_arg(kProgram, argv[1], "elements", static_cast<long long>(tz::kMaxQuantBenchElements)));
  if (argc > 2)
    opts.reps = static_cast<int>(tz::bench_int_arg(kProgram, argv[2], "reps", tz::kMaxQuantBenchReps));
  if (argc > 3)
    opts.runs = static_cast<int>(tz::bench_int_arg(kProgram, argv[3], "runs", tz::kMaxQuantBenchRuns));
  try {
    tz::validate_quant_throughput_options(opts);
    fmt::print("{}\n", tz::cpu_vector_extensions());
    for (tz::QuantIsa isa : {tz::QuantIsa::avx512, tz::QuantIsa::avx2, tz::QuantIsa::portable}) {
      if (!tz::quant_isa_supported(isa)) {
        fmt::print("isa {}: skipped, this CPU lacks {}\n", tz::quant_isa_name(isa),
                   tz::quant_isa_missing_features(isa, tz::detect_quant_cpu_features()));
        continue;
      }
      tz::set_quant_isa(isa);
      fmt::print("isa {}: {} elements, block {}, median of {} calls, {} run(s)\n{}\n",
                 tz::quant_isa_name(isa), opts.elements, opts.block_size, opts.reps, opts.runs,
                 tz::format_quant_throughput(tz::measure_quant_throughput(opts)));
    }
    tz::set_quant_isa(tz::best_quant_isa());
    fmt::print("block-size sweep (isa {}, 4 Mi elements, gaussian with 1/1000 outliers x30):\n{}",
               tz::quant_isa_name(tz::best_quant_isa()),
               tz::format_block_size_sweep(tz::sweep_quant_block_sizes(
                   std::size_t{4} << 20, opts.reps, {32, 64, 128, 256, 512, 1024, 2048, 4096})));
  } catch (const std::exception& e) {
    fmt::print(stderr, "tz_quant_bench: {}\n", e.what());
    return 2;
  }
  return 0;
}
