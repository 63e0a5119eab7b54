// `tierzero bench comm`: collective benchmarks per tier, flat and hierarchical, beside native MPI
// (comm/mpi/comm_bench.hpp). Run it under mpirun; a plain run is a world of one rank.
#include <fmt/format.h>

#include "cli/bench_registry.hpp"
#include "comm/mpi/comm_bench.hpp"
#include "comm/mpi/mpi_world.hpp"
#include "core/error.hpp"

namespace tz::cli {
namespace {

struct BenchCommArgs {
  std::string topology = "frontier-mini";
  bool emulate = false;
  std::string dtype = "f32";
  std::string format = "text";
  double timeout_s = 300;
  CommBenchOptions bench;
};

int run_bench_comm(BenchCommArgs args) {
  MpiSession session;
  std::unique_ptr<Communicator> world;
  try {
    args.bench.dtype = args.dtype == "bf16" ? DType::bf16 : DType::f32;
    CommOptions options;
    options.timeout_s = args.timeout_s;
    world = make_mpi_world(options);
    Topology topo = Topology::load(args.topology);
    topo = topo.resolve(world->size());
    check_hosts(topo, *world, args.emulate);
    const int rank = world->rank();
    Mesh mesh(topo, std::move(world));
    const nlohmann::json result = run_comm_bench(mesh, args.bench);
    if (rank == 0) {
      if (args.format == "json")
        fmt::print("{}\n", result.dump(2));
      else
        fmt::print("{}", format_comm_bench(result));
      std::fflush(stdout);
    }
    return 0;
  } catch (const InputError& e) {
    // Inputs are the same on every rank, so every rank fails alike: rank 0 speaks for all.
    if (!world || world->rank() == 0) fmt::print(stderr, "tierzero: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    return abort_world(fmt::format("bench comm failed: {}", e.what()), 3);
  }
}

const bool registered = register_bench(
    {"comm", "Collectives per tier (flat and hierarchical) beside native MPI: time, algbw, busbw",
     [](CLI::App& sub) -> RunFn {
       auto args = std::make_shared<BenchCommArgs>();
       sub.add_option("--topology", args->topology, "topology preset or JSON file")->capture_default_str();
       sub.add_flag("--emulate", args->emulate, "allow a multi-node topology on one machine");
       sub.add_option("--min-bytes", args->bench.min_bytes, "smallest size (one rank's full tensor)")
           ->capture_default_str();
       sub.add_option("--max-bytes", args->bench.max_bytes, "largest size")->capture_default_str();
       sub.add_option("--step-factor", args->bench.step_factor, "size multiplier between rows")
           ->capture_default_str();
       sub.add_option("--iters", args->bench.iters, "at most this many timed iterations per round")
           ->capture_default_str();
       sub.add_option("--round-seconds", args->bench.round_s, "target duration of a timed round")
           ->capture_default_str();
       sub.add_option("--warmup", args->bench.warmup, "untimed iterations")->capture_default_str();
       sub.add_option("--rounds", args->bench.rounds, "alternating tierzero/native rounds; medians reported")
           ->capture_default_str();
       sub.add_option("--ops", args->bench.ops, "collectives to run")
           ->delimiter(',')
           ->check(CLI::IsMember({"all_gather", "reduce_scatter", "all_reduce", "all_to_all", "broadcast"}))
           ->capture_default_str();
       sub.add_option("--groups", args->bench.groups,
                      "groups to run: tier names, world, world-hier (default all)")
           ->delimiter(',');
       sub.add_option("--dtype", args->dtype, "f32 or bf16")
           ->check(CLI::IsMember({"f32", "bf16"}))
           ->capture_default_str();
       sub.add_option("--format", args->format, "text or json")
           ->check(CLI::IsMember({"text", "json"}))
           ->capture_default_str();
       sub.add_option("--timeout", args->timeout_s, "seconds before a collective is reported as hung")
           ->capture_default_str();
       return [args] { return run_bench_comm(*args); };
     }});

}  // namespace
}  // namespace tz::cli
