// `tierzero bench qcomm`: qwZ and qgZ beside the unquantized all-gather and reduce-scatter, with the
// bytes per tier from the traffic ledger. Under mpirun it runs on the MPI world; `--threads N` runs
// N ranks as threads in this process instead (one machine, no launcher).
#include <fmt/format.h>

#include "cli/bench_registry.hpp"
#include "comm/mpi/mpi_world.hpp"
#include "comm/thread_world.hpp"
#include "core/error.hpp"
#include "quant/quant_comm_bench.hpp"

namespace tz::cli {
namespace {

struct BenchQcommArgs {
  std::string topology = "frontier-mini";
  bool emulate = false;
  int threads = 0;
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

int run_bench_qcomm(BenchQcommArgs args) {
  if (args.threads > 0) {
    try {
      const Topology topo = Topology::load(args.topology).resolve(args.threads);
      args.bench.tiers = parse_tiers(topo, args.tiers);
      run_thread_mesh(topo, [&](Mesh& mesh) {
        const nlohmann::json result = run_quant_comm_bench(mesh, args.bench);
        if (mesh.world().rank() == 0) print_result(args, result);
      });
      return 0;
    } catch (const InputError& e) {
      fmt::print(stderr, "tierzero: error: {}\n", e.what());
      return 2;
    }
  }
  MpiSession session;
  std::unique_ptr<Communicator> world;
  try {
    world = make_mpi_world();
    const Topology topo = Topology::load(args.topology).resolve(world->size());
    check_hosts(topo, *world, args.emulate);
    args.bench.tiers = parse_tiers(topo, args.tiers);
    const int rank = world->rank();
    Mesh mesh(topo, std::move(world));
    const nlohmann::json result = run_quant_comm_bench(mesh, args.bench);
    if (rank == 0) print_result(args, result);
    return 0;
  } catch (const InputError& e) {
    if (!world || world->rank() == 0) fmt::print(stderr, "tierzero: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    return abort_world(fmt::format("bench qcomm failed: {}", e.what()), 3);
  }
}

const bool registered = register_bench(
    {"qcomm", "qwZ / qgZ beside unquantized all-gather / reduce-scatter: time and bytes per tier",
     [](CLI::App& sub) -> RunFn {
       auto args = std::make_shared<BenchQcommArgs>();
       sub.add_option("--topology", args->topology, "topology preset or JSON file")->capture_default_str();
       sub.add_flag("--emulate", args->emulate, "allow a multi-node topology on one machine (MPI)");
       sub.add_option("--threads", args->threads, "run N ranks as threads instead of the MPI world");
       sub.add_option("--tiers", args->tiers, "tiers of the group (names, comma-separated; default all)")
           ->delimiter(',');
       sub.add_option("--sizes", args->bench.shard_elements, "elements per shard (comma-separated)")
           ->delimiter(',')
           ->capture_default_str();
       sub.add_option("--iters", args->bench.iters, "timed iterations (median)")->capture_default_str();
       sub.add_option("--qwz-block", args->bench.qwz.block_size, "qwZ block size")->capture_default_str();
       sub.add_option("--qgz-block", args->bench.qgz.block_size, "qgZ block size")->capture_default_str();
       sub.add_option("--format", args->format, "text or json")
           ->check(CLI::IsMember({"text", "json"}))
           ->capture_default_str();
       return [args] { return run_bench_qcomm(*args); };
     }});

}  // namespace
}  // namespace tz::cli
