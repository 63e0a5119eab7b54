// `tierzero bench quant`: block quantizer throughput (single thread, GB/s of the unquantized tensor)
// as a ratio to memcpy of the same bytes in the same run, per quantizer ISA, with the CPU's vector
// extensions printed first; and the block-size sweep.
#include <fmt/format.h>

#include <vector>

#include "bench/quant_throughput.hpp"
#include "cli/bench_registry.hpp"
#include "cli/cli_options.hpp"
#include "device/cpu/block_quantize.hpp"

namespace tz::cli {
namespace {

struct BenchQuantArgs {
  QuantThroughputOptions throughput;
  std::string isa = "all";
  bool sweep = false;
};

// The ISAs `--isa` names: one, the best ("auto"), or every fast one this CPU runs ("all"; the ones it
// lacks are listed as skipped). Naming one the CPU lacks is an error.
std::vector<QuantIsa> isas_to_run(const std::string& name) {
  if (name == "auto") return {best_quant_isa()};
  if (name != "all") {
    const QuantIsa isa = parse_quant_isa(name);
    require_quant_isa(isa, detect_quant_cpu_features());
    return {isa};
  }
  std::vector<QuantIsa> out;
  for (QuantIsa isa : {QuantIsa::avx512, QuantIsa::avx2, QuantIsa::portable}) {
    if (quant_isa_supported(isa))
      out.push_back(isa);
    else
      fmt::print("isa {}: skipped, this CPU lacks {}\n", quant_isa_name(isa),
                 quant_isa_missing_features(isa, detect_quant_cpu_features()));
  }
  return out;
}

int run_bench_quant(const BenchQuantArgs& args) {
  const auto& t = args.throughput;
  validate_quant_throughput_options(t);
  fmt::print("{}\nquantizer ISA chosen at run time: {}\n", cpu_vector_extensions(),
             quant_isa_name(best_quant_isa()));
  const QuantIsa saved = active_quant_isa();
  const std::vector<QuantIsa> isas = isas_to_run(args.isa);
  for (QuantIsa isa : isas) {
    set_quant_isa(isa);
    fmt::print(
        "isa {}: {} elements, block {}, single thread; ratio = kernel / memcpy of the same bytes, each the "
        "median of {} alternating calls; median (and range) of {} run(s)\n{}\n",
        quant_isa_name(isa), t.elements, t.block_size, t.reps, t.runs,
        format_quant_throughput(measure_quant_throughput(t)));
  }
  if (args.sweep) {
    set_quant_isa(isas.empty() ? saved : isas.front());
    fmt::print("block-size sweep (isa {}, {} elements, gaussian with 1/1000 outliers x30):\n{}",
               quant_isa_name(active_quant_isa()), t.elements,
               format_block_size_sweep(
                   sweep_quant_block_sizes(t.elements, t.reps, {32, 64, 128, 256, 512, 1024, 2048, 4096})));
  }
  set_quant_isa(saved);
  return 0;
}

const bool bench_quant_registered = register_bench(
    {"quant",
     "Block quantize/dequantize throughput (INT8/INT4, fp32/bf16) as a ratio to memcpy, per ISA; block-size "
     "sweep",
     [](CLI::App& sub) -> RunFn {
       auto args = std::make_shared<BenchQuantArgs>();
       OptionSet o(sub, "bench quant");
       o.integer("--elements", args->throughput.elements, 1, static_cast<long long>(kMaxQuantBenchElements),
                 "elements per call");
       o.integer("--reps", args->throughput.reps, 1, kMaxQuantBenchReps,
                 "timed calls per row and run (median)");
       o.integer("--runs", args->throughput.runs, 1, kMaxQuantBenchRuns,
                 "repeats of the whole table (median of the ratios)");
       o.integer("--block-size", args->throughput.block_size, 1, static_cast<long long>(kMaxQuantBlockSize),
                 "elements per scale");
       o.choice("--isa", args->isa, {"all", "auto", "avx512", "avx2", "portable", "reference"},
                "quantizer ISA: all (every fast one this CPU runs), auto (the one chosen at run time), "
                "avx512, avx2, "
                "portable, reference; one the CPU lacks is an error");
       o.flag("--sweep", args->sweep, "also sweep block sizes (error, bytes, speed)");
       return [args] { return run_bench_quant(*args); };
     }});

}  // namespace
}  // namespace tz::cli
