// `tierzero bench comm`: collective benchmarks per tier, flat and hierarchical, beside native MPI
// (src/bench/comm_bench.hpp), printed in nccl-tests' layout (cli/comm_bench_table.hpp). Run it under
// mpirun; a plain run is a world of one rank. The two buffers of --max-bytes are checked against the
// memory a rank may use before they are allocated.
#include <fmt/format.h>
#include <unistd.h>

#include "bench/comm_bench.hpp"
#include "cli/bench_registry.hpp"
#include "cli/cli_options.hpp"
#include "cli/comm_bench_table.hpp"
#include "cli/run_world.hpp"
#include "core/error.hpp"

namespace tz::cli {
namespace {

struct BenchCommArgs {
  std::string topology = "flat";
  bool emulate = false;
  std::string dtype = "f32";
  std::string format = "text";
  double timeout_s = 300;
  std::string shared_memory = "on";
  std::string single_copy = "on";
  std::string shared_all_to_all = "auto";
  std::size_t shared_slot_bytes = CommOptions{}.shared_slot_bytes;
  CommBenchOptions bench;
};

// The groups to run when --groups is not given: every tier, then the whole world flat and
// hierarchical, except where those are the one tier's group again (a one-tier topology).
std::vector<std::string> default_groups(const Topology& topo) {
  std::vector<std::string> groups;
  for (const auto& t : topo.tiers()) groups.push_back(t.name);
  if (topo.num_tiers() > 1) {
    groups.push_back("world");
    groups.push_back("world-hier");
  }
  return groups;
}

void check_buffers_fit(const CommBenchOptions& b, int ranks_on_host) {
  const double need = 2.0 * (double(b.max_bytes) + 64.0 * 4);
  const double have =
      double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE)) / std::max(1, ranks_on_host);
  if (need > have)
    fail_input(
        "--max-bytes {}: the benchmark needs a send and a receive buffer of that size, {:.3g} GiB per rank, "
        "but a rank here may use {:.3g} GiB (this host's memory over its {} rank(s))",
        b.max_bytes, need / double(1ull << 30), have / double(1ull << 30), ranks_on_host);
  if (b.min_bytes > b.max_bytes)
    fail_input("--min-bytes {} is above --max-bytes {}", size_text(b.min_bytes), size_text(b.max_bytes));
}

int run_bench_comm(BenchCommArgs args) {
  args.bench.dtype = args.dtype == "bf16" ? DType::bf16 : DType::f32;
  return run_on_world({.topology = args.topology,
                       .emulate = args.emulate,
                       .timeout_s = args.timeout_s,
                       .shared_memory = args.shared_memory == "on",
                       .shared_slot_bytes = args.shared_slot_bytes,
                       .shared_single_copy = args.single_copy == "on",
                       .shared_all_to_all = parse_shared_all_to_all(args.shared_all_to_all)},
                      [&](Mesh& mesh) {
                        check_buffers_fit(args.bench, launch_local_size());
                        CommBenchOptions bench = args.bench;
                        if (bench.groups.empty()) bench.groups = default_groups(mesh.topology());
                        const nlohmann::json result = run_comm_bench(mesh, bench);
                        if (mesh.world().rank() == 0) {
                          if (args.format == "json")
                            fmt::print("{}\n", result.dump(2));
                          else
                            fmt::print("{}", format_comm_bench_table(result));
                          std::fflush(stdout);
                        }
                      });
}

const bool bench_comm_registered = register_bench(
    {"comm", "Collectives per tier (flat and hierarchical) beside native MPI, in nccl-tests' columns",
     [](CLI::App& sub) -> RunFn {
       auto args = std::make_shared<BenchCommArgs>();
       OptionSet o(sub, "bench comm");
       o.text("--topology", args->topology, "topology preset or JSON file");
       o.flag("--emulate", args->emulate, "allow a multi-node topology on one machine");
       o.size_bytes("--min-bytes", args->bench.min_bytes, 1, 1ull << 40,
                    "smallest size (one rank's full tensor; 4096, 64K, 1M, ...)");
       o.size_bytes("--max-bytes", args->bench.max_bytes, 1, 1ull << 40, "largest size (64M, 1G, ...)");
       o.integer("--step-factor", args->bench.step_factor, 2, 1024, "size multiplier between rows");
       o.integer("--iters", args->bench.iters, 1, 1000000, "at most this many timed iterations per round");
       o.real("--round-seconds", args->bench.round_s, 0, 3600, "target duration of a timed round", "", true);
       o.integer("--warmup", args->bench.warmup, 0, 1000000, "untimed iterations");
       o.integer("--rounds", args->bench.rounds, 1, 1000,
                 "alternating tierzero/native rounds; medians reported");
       o.choice("--ops", args->bench.ops,
                {"all_gather", "reduce_scatter", "all_reduce", "all_to_all", "broadcast"},
                "collectives to run");
       o.text("--groups", args->bench.groups, "groups to run: tier names, world, world-hier",
              "every tier, world and world-hier (the tier alone on a one-tier topology)")
           ->delimiter(',');
       o.choice("--dtype", args->dtype, {"f32", "bf16"}, "element type");
       o.choice("--format", args->format, {"text", "json"}, "output format");
       o.choice("--shared-memory", args->shared_memory, {"on", "off"},
                "on: ranks of one host run the shared-memory collectives; off: the transport's ring, "
                "pairwise exchange and tree");
       o.choice("--single-copy", args->single_copy, {"on", "off"},
                "on: where the host lets ranks read each other's memory, the all-gather of 2 ranks (and the "
                "all-to-all of --shared-all-to-all in-place) copy each block once, in place; off: always "
                "through staging");
       o.choice("--shared-all-to-all", args->shared_all_to_all, {"auto", "pair-rings", "rounds", "in-place"},
                "the shared-memory all-to-all: staged through a ring per sender and receiver pair, staged in "
                "rounds of the whole group, or in place (where --single-copy on and the host allow it); "
                "auto: pair rings while each rank has a core, rounds on a crowded host");
       o.size_bytes("--shared-slot-bytes", args->shared_slot_bytes, 1, 1ull << 30,
                    "staging buffer per rank of the shared-memory collectives (two per rank; 64K, 1M, ...)");
       o.real("--timeout", args->timeout_s, 0, 86400, "seconds before a collective is reported as hung", "",
              true);
       return [args] { return run_bench_comm(*args); };
     }});

}  // namespace
}  // namespace tz::cli
