// `tierzero bench qcomm`: qwZ and qgZ beside the unquantized all-gather and reduce-scatter, with the
// bytes per tier from the traffic ledger. Under mpirun it runs on the MPI world; `--thread-ranks N` runs
// N ranks as threads in this process instead (one machine, no launcher).
#include <fmt/format.h>
#include <unistd.h>

#include "bench/quant_comm_bench.hpp"
#include "cli/bench_registry.hpp"
#include "cli/cli_options.hpp"
#include "cli/run_world.hpp"
#include "core/error.hpp"

namespace tz::cli {
namespace {

struct BenchQcommArgs {
  std::string topology = "flat";
  bool emulate = false;
  int thread_ranks = 0;
  double timeout_s = 300;
  std::vector<std::string> tiers;  // tier names; empty = all
  std::string format = "text";
  QuantCommBenchOptions bench;
};

TierSet parse_tiers(const Topology& topo, const std::vector<std::string>& names) {
  if (names.empty()) return tiers_up_to(topo.num_tiers() - 1);
  TierSet s = 0;
  for (const auto& n : names) s |= tier_bit(topo.tier_index(n));
  return s;
}

void print_result(const BenchQcommArgs& args, const nlohmann::json& result) {
  if (args.format == "json")
    fmt::print("{}\n", result.dump(2));
  else
    fmt::print("{}", format_quant_comm_bench(result));
  std::fflush(stdout);
}

// Per size the benchmark holds fp32 and bf16 copies of a shard and of the full group tensor:
// 12 bytes x elements x (group + 1) per rank (quant_comm_bench.cpp).
void check_buffers_fit(const BenchQcommArgs& args, int world) {
  const int ranks_on_host = args.thread_ranks > 0 ? args.thread_ranks : launch_local_size();
  const double have = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE)) / ranks_on_host;
  for (std::size_t n : args.bench.shard_elements) {
    const double need = 12.0 * double(n) * (world + 1);
    if (need > have)
      fail_input(
          "--sizes {}: {} elements per shard on {} ranks need {:.3g} GiB of buffers per rank, but a rank "
          "here "
          "may use {:.3g} GiB",
          n, n, world, need / double(1ull << 30), have / double(1ull << 30));
  }
}

int run_bench_qcomm(BenchQcommArgs args) {
  return run_on_world({.topology = args.topology,
                       .emulate = args.emulate,
                       .timeout_s = args.timeout_s,
                       .threads = args.thread_ranks},
                      [&](Mesh& mesh) {
                        check_buffers_fit(args, mesh.world().size());
                        QuantCommBenchOptions bench = args.bench;
                        bench.tiers = parse_tiers(mesh.topology(), args.tiers);
                        const nlohmann::json result = run_quant_comm_bench(mesh, bench);
                        if (mesh.world().rank() == 0) print_result(args, result);
                      });
}

const bool bench_qcomm_registered = register_bench(
    {"qcomm", "qwZ / qgZ beside unquantized all-gather / reduce-scatter: time and bytes per tier",
     [](CLI::App& sub) -> RunFn {
       auto args = std::make_shared<BenchQcommArgs>();
       OptionSet o(sub, "bench qcomm");
       o.text("--topology", args->topology, "topology preset or JSON file");
       o.flag("--emulate", args->emulate, "allow a multi-node topology on one machine (MPI)");
       o.integer("--thread-ranks,--threads", args->thread_ranks, 0, 256,
                 "run N ranks as threads in this process instead of the MPI world (--threads is an alias)",
                 "0: the MPI world");
       o.text("--tiers", args->tiers, "tiers of the group (names, comma-separated)", "every tier")
           ->delimiter(',');
       o.integer("--sizes", args->bench.shard_elements, 1, 1 << 26, "elements per shard (comma-separated)");
       o.integer("--iters", args->bench.iters, 1, 100000, "timed iterations (median)");
       o.integer("--qwz-block", args->bench.qwz.block_size, 1, static_cast<long long>(kMaxQuantBlockSize),
                 "qwZ block size");
       o.integer("--qgz-block", args->bench.qgz.block_size, 1, static_cast<long long>(kMaxQuantBlockSize),
                 "qgZ block size");
       o.choice("--format", args->format, {"text", "json"}, "output format");
       o.real("--timeout", args->timeout_s, 0, 86400, "seconds before a collective is reported as hung", "",
              true);
       return [args] { return run_bench_qcomm(*args); };
     }});

}  // namespace
}  // namespace tz::cli
