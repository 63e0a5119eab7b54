// `tierzero bench comm` measurements (comm_bench.hpp). Each (group, op, size) is timed for tierzero
// and for the native MPI collective on an MPI communicator holding exactly the same ranks (split with
// the topology's group color and rank), alternating round by round so that machine noise hits both
// alike. All groups of a tier run at once, as they would in training. Without MPI (one process, no
// launcher) the native column is null.
#include "bench/comm_bench.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "comm/transport/mpi_check.hpp"
#include "comm/transport/mpi_world.hpp"
#include "core/bf16.hpp"
#include "core/cpu_features.hpp"
#include "core/error.hpp"
#include "core/timing.hpp"

namespace tz {
namespace {

CollectiveKind kind_of(const std::string& op) {
  for (auto k : {CollectiveKind::all_gather, CollectiveKind::reduce_scatter, CollectiveKind::all_reduce,
                 CollectiveKind::all_to_all, CollectiveKind::broadcast})
    if (collective_name(k) == op) return k;
  fail_input(
      "bench comm: unknown op '{}' (known: all_gather, reduce_scatter, all_reduce, all_to_all, broadcast)",
      op);
}

struct Group {
  std::string name;
  TierSet tiers;
  bool hierarchical;
  int size;
  MPI_Comm native = MPI_COMM_NULL;
};

// MPI types and a bf16 sum for the native side.
struct NativeTypes {
  MPI_Datatype bf16_type = MPI_DATATYPE_NULL;
  MPI_Op bf16_sum = MPI_OP_NULL;

  static void bf16_add(void* in, void* inout, int* len, MPI_Datatype*) {
    auto* a = static_cast<const bf16*>(in);
    auto* b = static_cast<bf16*>(inout);
    for (int i = 0; i < *len; ++i) b[i] = to_bf16(to_float(a[i]) + to_float(b[i]));
  }
  NativeTypes() {
    TZ_MPI_CHECK(MPI_Type_contiguous(2, MPI_BYTE, &bf16_type));
    TZ_MPI_CHECK(MPI_Type_commit(&bf16_type));
    TZ_MPI_CHECK(MPI_Op_create(&bf16_add, 1, &bf16_sum));
  }
  ~NativeTypes() {
    MPI_Op_free(&bf16_sum);
    MPI_Type_free(&bf16_type);
  }
  MPI_Datatype type(DType d) const { return d == DType::f32 ? MPI_FLOAT : bf16_type; }
  MPI_Op sum(DType d) const { return d == DType::f32 ? MPI_SUM : bf16_sum; }
};

double bus_factor(CollectiveKind kind, int p) {
  return p <= 1 ? 0 : algorithmic_bytes(kind, 1.0, p);
}

}  // namespace

nlohmann::json run_comm_bench(Mesh& mesh, const CommBenchOptions& options) {
  if (options.dtype != DType::f32 && options.dtype != DType::bf16)
    fail_input("bench comm: --dtype must be f32 or bf16, not {}", dtype_name(options.dtype));
  if (options.min_bytes == 0 || options.max_bytes < options.min_bytes || options.step_factor < 2)
    fail_input("bench comm: need 0 < --min-bytes <= --max-bytes and --step-factor >= 2 (got {}, {}, {})",
               options.min_bytes, options.max_bytes, options.step_factor);
  std::vector<CollectiveKind> kinds;
  for (const auto& op : options.ops) kinds.push_back(kind_of(op));

  const Topology& topo = mesh.topology();
  const int world_rank = mesh.world().rank();
  const TierSet all = tiers_up_to(topo.num_tiers() - 1);
  std::vector<Group> groups;
  for (int t = 0; t < topo.num_tiers(); ++t) groups.push_back({topo.tier(t).name, tier_bit(t), false, 0});
  groups.push_back({"world", all, false, 0});
  groups.push_back({"world-hier", all, true, 0});
  if (!options.groups.empty()) {
    std::vector<Group> chosen;
    for (const auto& name : options.groups) {
      auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.name == name; });
      if (it == groups.end())
        fail_input("bench comm: unknown group '{}' (known: tier names, world, world-hier)", name);
      chosen.push_back(*it);
    }
    groups = chosen;
  }
  const bool native = mpi_active();
  std::unique_ptr<NativeTypes> types;
  if (native) types = std::make_unique<NativeTypes>();
  for (Group& g : groups) {
    g.size = mesh.group_size(g.tiers);
    mesh.group(g.tiers);  // create tierzero's communicator now, on every rank together
    if (native)
      TZ_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, topo.group_color(world_rank, g.tiers),
                                  topo.group_rank(world_rank, g.tiers), &g.native));
  }

  const std::size_t esz = dtype_bytes(options.dtype);
  // One send and one receive buffer of the largest size, touched once and reused for every size.
  std::vector<std::byte> send(options.max_bytes + 64 * esz), recv(options.max_bytes + 64 * esz);
  if (options.dtype == DType::f32) {
    std::fill_n(reinterpret_cast<float*>(send.data()), send.size() / 4, 0.5f);
  } else {
    std::fill_n(reinterpret_cast<bf16*>(send.data()), send.size() / 2, to_bf16(0.5f));
  }
  std::memset(recv.data(), 0, recv.size());

  auto sync = [&] {
    if (native)
      TZ_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    else
      mesh.world().barrier().wait();
  };
  auto slowest = [&](double seconds) {
    if (native) TZ_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    return seconds;
  };
  // CPU seconds this rank used per call: its process's CPU time (every thread: the caller, the
  // communicator's progress thread, polling and copies alike) over the timed calls, divided by the
  // ranks the process holds; averaged over the world's ranks under MPI.
  const int ranks_in_process = native ? 1 : mesh.world().size();
  auto mean_over_ranks = [&](double x) {
    if (native) {
      TZ_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
      x /= mesh.world().size();
    }
    return x;
  };
  struct PerCall {
    double seconds = 0, cpu_s = 0;
  };
  auto time_per_iter = [&](const std::function<void()>& fn, int iters) {
    sync();
    const double cpu0 = process_cpu_seconds();
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) fn();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count() / iters;
    const double cpu_s = (process_cpu_seconds() - cpu0) / iters / ranks_in_process;
    return PerCall{slowest(seconds), mean_over_ranks(cpu_s)};
  };

  nlohmann::json results = nlohmann::json::array();
  for (const Group& g : groups) {
    Communicator& comm = mesh.group(g.tiers);
    const int p = g.size;
    for (CollectiveKind kind : kinds) {
      const bool hier_ok = kind == CollectiveKind::all_gather || kind == CollectiveKind::reduce_scatter ||
                           kind == CollectiveKind::all_reduce;
      if (g.hierarchical && !hier_ok) continue;
      const bool per_rank_blocks = kind != CollectiveKind::all_reduce && kind != CollectiveKind::broadcast;
      for (std::size_t size = options.min_bytes; size <= options.max_bytes; size *= options.step_factor) {
        const std::size_t unit = per_rank_blocks ? esz * p : esz;
        const std::size_t total = size / unit * unit;
        const std::size_t count = per_rank_blocks ? total / unit : total / esz;  // Communicator's count
        void* s = send.data();
        void* r = recv.data();
        std::function<void()> ours, theirs;
        switch (kind) {
          case CollectiveKind::all_gather:
            ours = [&, s, r, count] {
              (g.hierarchical ? mesh.all_gather(g.tiers, s, r, count, options.dtype)
                              : comm.all_gather(s, r, count, options.dtype))
                  .wait();
            };
            theirs = [&, s, r, count] {
              const int n = static_cast<int>(count);
              TZ_MPI_CHECK(MPI_Allgather(s, n, types->type(options.dtype), r, n, types->type(options.dtype),
                                         g.native));
            };
            break;
          case CollectiveKind::reduce_scatter:
            ours = [&, s, r, count] {
              (g.hierarchical ? mesh.reduce_scatter(g.tiers, s, r, count, options.dtype)
                              : comm.reduce_scatter(s, r, count, options.dtype))
                  .wait();
            };
            theirs = [&, s, r, count] {
              TZ_MPI_CHECK(MPI_Reduce_scatter_block(s, r, static_cast<int>(count), types->type(options.dtype),
                                                    types->sum(options.dtype), g.native));
            };
            break;
          case CollectiveKind::all_reduce:
            ours = [&, s, r, count] {
              (g.hierarchical ? mesh.all_reduce(g.tiers, s, r, count, options.dtype)
                              : comm.all_reduce(s, r, count, options.dtype))
                  .wait();
            };
            theirs = [&, s, r, count] {
              TZ_MPI_CHECK(MPI_Allreduce(s, r, static_cast<int>(count), types->type(options.dtype),
                                         types->sum(options.dtype), g.native));
            };
            break;
          case CollectiveKind::all_to_all:
            ours = [&, s, r, count] { comm.all_to_all(s, r, count, options.dtype).wait(); };
            theirs = [&, s, r, count] {
              const int n = static_cast<int>(count);
              TZ_MPI_CHECK(
                  MPI_Alltoall(s, n, types->type(options.dtype), r, n, types->type(options.dtype), g.native));
            };
            break;
          case CollectiveKind::broadcast:
            ours = [&, r, count] { comm.broadcast(r, count, options.dtype, 0).wait(); };
            theirs = [&, r, count] {
              TZ_MPI_CHECK(MPI_Bcast(r, static_cast<int>(count), types->type(options.dtype), 0, g.native));
            };
            break;
          case CollectiveKind::barrier:
            break;
        }
        // Iterations per round from the warmup's (slowest rank's) time, so that each round takes
        // about options.round_s: the same count on every rank, as collectives require.
        auto warm_and_pick = [&](const std::function<void()>& fn) {
          double per_iter = time_per_iter(fn, 1).seconds;
          for (int w = 1; w < options.warmup && per_iter * w < options.round_s; ++w)
            per_iter = time_per_iter(fn, 1).seconds;
          return std::clamp(static_cast<int>(options.round_s / std::max(per_iter, 1e-9)), 1, options.iters);
        };
        const int iters_ours = warm_and_pick(ours);
        const int iters_theirs = native ? warm_and_pick(theirs) : 0;
        std::vector<double> t_ours, t_theirs, cpu_ours, cpu_theirs;
        for (int round = 0; round < options.rounds; ++round) {
          const PerCall o = time_per_iter(ours, iters_ours);
          t_ours.push_back(o.seconds);
          cpu_ours.push_back(o.cpu_s);
          // A side slower than 1 s per iteration (Open MPI's reduce-scatter at 64 MiB) is timed once.
          if (native && (round == 0 || t_theirs.front() < 1.0)) {
            const PerCall n = time_per_iter(theirs, iters_theirs);
            t_theirs.push_back(n.seconds);
            cpu_theirs.push_back(n.cpu_s);
          }
        }
        auto figures = [&](double seconds, double cpu_s) {
          const double algbw = seconds > 0 ? double(total) / seconds / 1e9 : 0;
          return nlohmann::json{{"time_us", seconds * 1e6},
                                {"algbw_GBps", algbw},
                                {"busbw_GBps", algbw * bus_factor(kind, p)},
                                {"cpu_us", cpu_s * 1e6}};
        };
        nlohmann::json row = {{"group", g.name},
                              {"group_size", p},
                              {"algorithm", g.hierarchical ? "hierarchical" : "flat"},
                              {"op", std::string(collective_name(kind))},
                              {"size_bytes", total},
                              {"count", count},
                              {"iters", iters_ours},
                              {"native_iters", iters_theirs},
                              {"tierzero", figures(median(t_ours), median(cpu_ours))},
                              {"native", nullptr},
                              {"ratio", nullptr}};
        if (native) {
          row["native"] = figures(median(t_theirs), median(cpu_theirs));
          const double tn = median(t_theirs), to = median(t_ours);
          row["ratio"] = to > 0 ? tn / to : 0.0;  // > 1: tierzero is faster (busbw ratio)
        }
        results.push_back(row);
      }
      if (world_rank == 0) fmt::print(stderr, "bench comm: {} {} done\n", g.name, collective_name(kind));
    }
  }
  for (Group& g : groups)
    if (g.native != MPI_COMM_NULL) MPI_Comm_free(&g.native);

  return nlohmann::json{
      {"topology", topo.name()},
      {"world_size", mesh.world().size()},
      {"dtype", std::string(dtype_name(options.dtype))},
      {"cpu", cpu_description()},
      {"native_library", native ? "Open MPI (MPI_Allgather, MPI_Reduce_scatter_block, MPI_Allreduce, "
                                  "MPI_Alltoall, MPI_Bcast)"
                                : "none (no MPI launcher)"},
      {"results", results}};
}

std::string format_comm_bench(const nlohmann::json& doc) {
  std::string out = fmt::format("# tierzero bench comm: topology {}, {} ranks, dtype {}; native = {}\n",
                                doc["topology"].get<std::string>(), doc["world_size"].get<int>(),
                                doc["dtype"].get<std::string>(), doc["native_library"].get<std::string>());
  out += fmt::format("# {}\n", doc["cpu"].get<std::string>());
  out +=
      "# size = one rank's full tensor; busbw = algbw x (p-1)/p (all_reduce 2(p-1)/p, broadcast 1); "
      "ratio = tierzero busbw / native busbw\n";
  std::string current;
  for (const auto& row : doc["results"]) {
    const std::string key = row["group"].get<std::string>() + "/" + row["op"].get<std::string>();
    if (key != current) {
      current = key;
      out += fmt::format("\n## group {} ({} ranks, {}), {}\n", row["group"].get<std::string>(),
                         row["group_size"].get<int>(), row["algorithm"].get<std::string>(),
                         row["op"].get<std::string>());
      out += fmt::format("{:>12} {:>10} | {:>11} {:>8} {:>8} | {:>11} {:>8} {:>8} | {:>6}\n", "size_bytes",
                         "count", "tz_time_us", "algbw", "busbw", "mpi_time_us", "algbw", "busbw", "ratio");
    }
    const auto& t = row["tierzero"];
    out += fmt::format("{:>12} {:>10} | {:>11.1f} {:>8.3f} {:>8.3f} |", row["size_bytes"].get<std::size_t>(),
                       row["count"].get<std::size_t>(), t["time_us"].get<double>(),
                       t["algbw_GBps"].get<double>(), t["busbw_GBps"].get<double>());
    if (row["native"].is_null()) {
      out += fmt::format(" {:>11} {:>8} {:>8} | {:>6}\n", "n/a", "", "", "");
    } else {
      const auto& n = row["native"];
      out += fmt::format(" {:>11.1f} {:>8.3f} {:>8.3f} | {:>6.2f}\n", n["time_us"].get<double>(),
                         n["algbw_GBps"].get<double>(), n["busbw_GBps"].get<double>(),
                         row["ratio"].get<double>());
    }
  }
  return out;
}

}  // namespace tz
