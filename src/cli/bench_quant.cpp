// `tierzero bench quant`: block quantizer throughput (single thread, GB/s of the unquantized tensor)
// next to memcpy of the same bytes in the same run, per quantizer path, and the block-size sweep.
#include <fmt/format.h>

#include "cli/bench_registry.hpp"
#include "quant/block_quantize.hpp"
#include "quant/quant_throughput.hpp"

namespace tz::cli {
namespace {

struct BenchQuantArgs {
  QuantThroughputOptions throughput;
  std::string path = "all";
  bool sweep = false;
};

int run_bench_quant(const BenchQuantArgs& args) {
  const QuantPath saved = active_quant_path();
  for (QuantPath path : {QuantPath::avx512, QuantPath::portable, QuantPath::reference}) {
    const bool wanted = args.path == quant_path_name(path) ||
                        (args.path == "all" && path != QuantPath::reference) ||
                        (args.path == "best" && path == best_quant_path());
    if (!wanted) continue;
    if (!quant_path_supported(path)) {
      fmt::print("path {}: not supported on this CPU\n", quant_path_name(path));
      continue;
    }
    set_quant_path(path);
    fmt::print("path {}: {} elements, block {}, median of {} (single thread)\n{}\n", quant_path_name(path),
               args.throughput.elements, args.throughput.block_size, args.throughput.reps,
               format_quant_throughput(measure_quant_throughput(args.throughput)));
  }
  set_quant_path(saved);
  if (args.sweep)
    fmt::print("block-size sweep (path {}, {} elements, gaussian with 1/1000 outliers x30):\n{}",
               quant_path_name(active_quant_path()), args.throughput.elements,
               format_block_size_sweep(sweep_quant_block_sizes(args.throughput.elements, args.throughput.reps,
                                                               {32, 64, 128, 256, 512, 1024, 2048, 4096})));
  return 0;
}

const bool registered = register_bench(
    {"quant", "Block quantize/dequantize throughput (INT8/INT4, fp32/bf16) against memcpy, block-size sweep",
     [](CLI::App& sub) -> RunFn {
       auto args = std::make_shared<BenchQuantArgs>();
       sub.add_option("--elements", args->throughput.elements, "elements per call")->capture_default_str();
       sub.add_option("--reps", args->throughput.reps, "timed repetitions (median)")->capture_default_str();
       sub.add_option("--block-size", args->throughput.block_size, "elements per scale")
           ->capture_default_str();
       sub.add_option("--path", args->path,
                      "quantizer path: all (fast ones), best, avx512, portable, reference")
           ->check(CLI::IsMember({"all", "best", "avx512", "portable", "reference"}))
           ->capture_default_str();
       sub.add_flag("--sweep", args->sweep, "also sweep block sizes (error, bytes, speed)");
       return [args] { return run_bench_quant(*args); };
     }});

}  // namespace
}  // namespace tz::cli
