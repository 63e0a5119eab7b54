// Real multi-process checks of the communication layer, run by CTest under `mpirun -np k`
// (tests.cmake, k = 1, 2, 3, 4, 6, 8). Modes:
//   (none)        closed-form checks of every collective on the world, a split, and the mesh of a
//                 topology that fits k (frontier-mini at 8, 2 x k/2 for other even k), over every
//                 tier subset, with tiny chunks and staging buffers so the pipelined and
//                 multi-round paths run; bytes per tier checked against the formulas. Exit 0 when
//                 every rank passed.
//   --skip-rank R rank R skips the second collective; the others must fail within the 1 s timeout
//                 with the report, then abort the job (CTest matches the report in the output).
//   --size-check  rank 1 passes a different count under check_collectives; the report names it.
//   --stall-in-setup R  rank R sleeps past the 1 s timeout before its first collective, while the
//                 others set up the shared-memory arena in theirs: they fail and abort the job;
//                 check_no_shm_left.sh then checks that no segment was left in /dev/shm.
//   --throw-in-setup R / --abort-in-setup R  rank R throws (the job is aborted with MPI_Abort) or
//                 calls std::abort() 300 ms into the others' shared-memory set-up, before it maps
//                 the segment; mpirun then kills the ranks waiting in set-up with the name still
//                 linked, and check_no_shm_left.sh checks that their termination unlinked it.
// The closed-form checks run three times: on the shared-memory collectives, on the transport's
// algorithms (ring, pairwise, tree), and on the shared-memory ones under injected delays. The
// pair-ring all-to-all also runs directly over the job's processes, with uneven and empty blocks.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/algorithms.hpp"
#include "comm/mesh.hpp"
#include "comm/shared_arena.hpp"
#include "comm/transport/mpi_transport.hpp"
#include "comm/transport/mpi_world.hpp"
#include "core/bf16.hpp"
#include "core/error.hpp"

namespace tz {
namespace {

int g_failures = 0;

#define EXPECT(cond, ...)                                                                                \
  do {                                                                                                   \
    if (!(cond)) {                                                                                       \
      ++g_failures;                                                                                      \
      fmt::print(stderr, "FAILED {}:{}: {}: {}\n", __FILE__, __LINE__, #cond, fmt::format(__VA_ARGS__)); \
    }                                                                                                    \
  } while (0)

void check_world(Communicator& comm) {
  const int p = comm.size(), r = comm.rank();
  for (std::size_t count : {0, 1, 7, 1000}) {
    std::vector<float> send(count * p), recv(count * p, -1.f);
    for (std::size_t i = 0; i < count; ++i) send[i] = float(r * 1000 + int(i));
    comm.all_gather(send.data(), recv.data(), count, DType::f32).wait();
    for (int q = 0; q < p; ++q)
      for (std::size_t i = 0; i < count; ++i)
        EXPECT(recv[q * count + i] == float(q * 1000 + int(i)), "all_gather rank {} block {} i {}", r, q, i);

    for (std::size_t j = 0; j < send.size(); ++j) send[j] = float(r + int(j));
    std::vector<float> shard(count, -1.f);
    comm.reduce_scatter(send.data(), shard.data(), count, DType::f32).wait();
    for (std::size_t i = 0; i < count; ++i)
      EXPECT(shard[i] == float(p * (p - 1) / 2 + p * int(r * count + i)), "reduce_scatter rank {} i {}", r,
             i);

    const std::size_t n = count + 3;  // does not divide p
    std::vector<float> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = float(r) + float(i);
    comm.all_reduce(x.data(), x.data(), n, DType::f32).wait();
    for (std::size_t i = 0; i < n; ++i)
      EXPECT(x[i] == float(p * (p - 1) / 2 + p * int(i)), "all_reduce rank {} i {} got {}", r, i, x[i]);

    std::vector<bf16> h(n), hs(n);
    for (std::size_t i = 0; i < n; ++i) h[i] = to_bf16(float(r + int(i % 7)));
    comm.all_reduce(h.data(), hs.data(), n, DType::bf16).wait();
    for (std::size_t i = 0; i < n; ++i)
      EXPECT(to_float(hs[i]) == float(p * (p - 1) / 2 + p * int(i % 7)), "bf16 all_reduce rank {} i {}", r,
             i);

    for (int j = 0; j < p; ++j)
      for (std::size_t i = 0; i < count; ++i) send[j * count + i] = float(r * 100 + j * 10) + float(i);
    comm.all_to_all(send.data(), recv.data(), count, DType::f32).wait();
    for (int q = 0; q < p; ++q)
      for (std::size_t i = 0; i < count; ++i)
        EXPECT(recv[q * count + i] == float(q * 100 + r * 10) + float(i), "all_to_all rank {} from {}", r, q);

    for (int root = 0; root < p; ++root) {
      std::vector<float> b(count, r == root ? float(root + 1) : -1.f);
      comm.broadcast(b.data(), count, DType::f32, root).wait();
      for (std::size_t i = 0; i < count; ++i)
        EXPECT(b[i] == float(root + 1), "broadcast root {} rank {}", root, r);
    }
    comm.barrier().wait();
  }
  auto sub = comm.split(r % 2, r, "parity");
  float v = float(r);
  sub->all_reduce(&v, &v, 1, DType::f32).wait();
  float expected = 0;
  for (int q = r % 2; q < p; q += 2) expected += float(q);
  EXPECT(v == expected, "split all_reduce rank {}: {} vs {}", r, v, expected);
}

// The pair-ring all-to-all between this job's processes (one host) over 256-byte staging buffers:
// uneven blocks, about one in four empty, several times a ring long; several calls in a row and
// one after a round-based all-to-all on the same arena. Each block must equal what its sender wrote.
void check_pair_rings_uneven() {
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  auto transport = make_mpi_transport(dup);
  Workspace ws;
  const std::string group = "pair-rings";
  Collective c(*transport, ws, "all_to_all", group, 1, 60, 1 << 20);
  const int p = c.size(), r = c.rank();
  auto arena = SharedArena::open(c, 256, false, p);
  EXPECT(arena != nullptr, "rank {}: no arena", r);
  if (arena == nullptr) return;
  auto bytes = [](int i, int j, int rep) -> std::size_t {
    return (3 * i + j + rep) % 4 == 0 ? 0 : static_cast<std::size_t>(i * 131 + j * 17 + rep * 59) % 1500;
  };
  auto value = [](int from, int to, std::size_t k, int rep) {
    return static_cast<unsigned char>(from * 31 + to * 71 + k * 13 + rep * 5 + k / 256);
  };
  for (int rep = 0; rep < 6; ++rep) {
    std::vector<std::size_t> so(p + 1, 0), ro(p + 1, 0);
    std::size_t largest = 0;
    for (int j = 0; j < p; ++j) {
      so[j + 1] = so[j] + bytes(r, j, rep);
      ro[j + 1] = ro[j] + bytes(j, r, rep);
      for (int i = 0; i < p; ++i) largest = std::max(largest, bytes(i, j, rep));
    }
    std::vector<std::byte> send(so[p]), recv(ro[p], std::byte{0xEE});
    for (int j = 0; j < p; ++j)
      for (std::size_t k = 0; k < so[j + 1] - so[j]; ++k) send[so[j] + k] = std::byte(value(r, j, k, rep));
    if (rep == 3) all_to_all_shared(c, *arena, send.data(), so, recv.data(), ro, largest);
    all_to_all_pair_rings(c, *arena, send.data(), so, recv.data(), ro);
    for (int i = 0; i < p; ++i)
      for (std::size_t k = 0; k < ro[i + 1] - ro[i]; ++k)
        if (recv[ro[i] + k] != std::byte(value(i, r, k, rep))) {
          EXPECT(false, "pair-ring all_to_all rank {} from {} byte {} rep {}", r, i, k, rep);
          return;
        }
  }
}

void check_mesh(const Topology& topo, std::unique_ptr<Communicator> world) {
  Mesh mesh(topo, std::move(world));
  const int all = (1 << topo.num_tiers()) - 1;
  const int r = mesh.world().rank();
  for (int tiers = 0; tiers <= all; ++tiers) {
    const std::size_t count = 3;
    const int g = mesh.group_size(tiers), me = mesh.shard_index(tiers);
    std::vector<float> shard(count), full(g * count, -1.f);
    for (std::size_t i = 0; i < count; ++i) shard[i] = float(me * 100 + int(i));
    mesh.ledger().reset();
    mesh.all_gather(tiers, shard.data(), full.data(), count, DType::f32).wait();
    for (int s = 0; s < g; ++s)
      for (std::size_t i = 0; i < count; ++i)
        EXPECT(full[s * count + i] == float(s * 100 + int(i)), "mesh all_gather tiers {} rank {} shard {}",
               tiers, r, s);
    const auto traffic = mesh.ledger().snapshot();
    double span = count * 4;
    for (int t = topo.num_tiers() - 1; t >= 0; --t) {
      if (!(tiers & tier_bit(t))) continue;
      span *= topo.tier(t).fanout;
      const double expected = algorithmic_bytes(CollectiveKind::all_gather, span, topo.tier(t).fanout);
      // A tier of fan-out 1 moves nothing and runs no step, so it may have no ledger entry at all.
      const double absent = topo.tier(t).fanout == 1 ? 0 : -1;
      const double got = traffic.count(topo.tier(t).name) ? traffic.at(topo.tier(t).name).bytes : absent;
      EXPECT(got == expected, "mesh all_gather tiers {} tier {} bytes {} vs {}", tiers, topo.tier(t).name,
             got, expected);
    }
    std::vector<float> red(count, -1.f);
    for (std::size_t j = 0; j < full.size(); ++j) full[j] = float(r) + float(j);
    mesh.reduce_scatter(tiers, full.data(), red.data(), count, DType::f32).wait();
    float rank_sum = 0;
    for (int q : topo.group_ranks(r, tiers)) rank_sum += float(q);
    for (std::size_t i = 0; i < count; ++i)
      EXPECT(red[i] == rank_sum + float(g * int(me * count + i)), "mesh reduce_scatter tiers {} rank {}",
             tiers, r);
    std::vector<float> x(11, float(r));
    mesh.all_reduce(tiers, x.data(), x.data(), x.size(), DType::f32).wait();
    for (float y : x) EXPECT(y == rank_sum, "mesh all_reduce tiers {} rank {}", tiers, r);
  }
}

Topology topology_for(int p) {
  if (p == 8) return Topology::load("frontier-mini");
  if (p % 2 == 0)
    return Topology::from_json(nlohmann::json::parse(R"({"name": "two-tier", "tiers": [
      {"name": "inner", "fanout": 2, "bandwidth_GBps": 100, "latency_us": 1},
      {"name": "outer", "fanout": "auto", "bandwidth_GBps": 10, "latency_us": 5}]})"),
                               "test")
        .resolve(p);
  return Topology::load("flat").resolve(p);
}

int run(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  CommOptions opts;
  opts.chunk_bytes = 64;  // many chunks even for small messages
  opts.timeout_s = 60;
  if (mode == "--skip-rank") {
    const int skip = std::stoi(argv[2]);
    opts.timeout_s = 1;
    auto world = make_mpi_world(opts);
    std::vector<float> in(4, 1.f), out(4 * world->size());
    world->all_gather(in.data(), out.data(), 4, DType::f32).wait();
    if (world->rank() == skip) {
      std::this_thread::sleep_for(std::chrono::seconds(20));  // the others abort the job before this ends
      return 1;
    }
    world->all_gather(in.data(), out.data(), 4, DType::f32).wait();
    return 1;  // not reached: the wait above throws
  }
  if (mode == "--stall-in-setup") {
    const int stall = std::stoi(argv[2]);
    opts.timeout_s = 1;
    auto world = make_mpi_world(opts);
    if (world->rank() == stall) {
      std::this_thread::sleep_for(std::chrono::seconds(20));  // the others abort the job before this ends
      return 1;
    }
    std::vector<float> x(1000, 1.f);
    world->broadcast(x.data(), x.size(), DType::f32, 0).wait();  // the first shared-memory collective
    return 1;                                                    // not reached: the set-up times out
  }
  if (mode == "--throw-in-setup" || mode == "--abort-in-setup") {
    const int failing = std::stoi(argv[2]);
    auto world = make_mpi_world(opts);
    if (world->rank() == failing) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the others are in set-up
      if (mode == "--abort-in-setup") std::abort();
      throw InputError(fmt::format("rank {} fails during the shared-memory set-up", failing));
    }
    std::vector<float> x(1000, 1.f);
    world->broadcast(x.data(), x.size(), DType::f32, 0).wait();  // the first shared-memory collective
    return 1;                                                    // not reached: the job is killed
  }
  if (mode == "--size-check") {
    opts.check_collectives = true;
    auto world = make_mpi_world(opts);
    std::vector<float> x(8, 1.f);
    world->all_reduce(x.data(), x.data(), world->rank() == 1 ? 6 : 5, DType::f32).wait();
    return 1;  // not reached
  }
  opts.shared_slot_bytes = 256;  // the shared-memory collectives take several rounds at count 1000
  auto world = make_mpi_world(opts);
  // Every rank of these tests runs on this host: the world counts them all, and its splits keep it.
  EXPECT(world->options().ranks_on_host == world->size(), "ranks_on_host {} of {} ranks",
         world->options().ranks_on_host, world->size());
  EXPECT(world->split(world->rank() % 2, world->rank(), "half")->options().ranks_on_host == world->size(),
         "a split's ranks_on_host");
  check_world(*world);
  check_pair_rings_uneven();
  CommOptions transport = opts;
  transport.shared_memory_all_gather = transport.shared_memory_all_to_all =
      transport.shared_memory_broadcast = transport.shared_memory_reduce_scatter = false;
  check_world(*make_mpi_world(transport));
  CommOptions delayed = opts;
  delayed.delay_injection = {.seed = 9, .max_us = 300};
  check_world(*make_mpi_world(delayed));
  const int p = world->size();
  check_mesh(topology_for(p), make_mpi_world(opts));
  float failures = float(g_failures);
  world->all_reduce(&failures, &failures, 1, DType::f32).wait();
  if (world->rank() == 0) fmt::print("mpi collectives on {} ranks: {}\n", p, failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace tz

int main(int argc, char** argv) {
  tz::MpiSession session(&argc, &argv);
  try {
    return tz::run(argc, argv);
  } catch (const std::exception& e) {
    return tz::abort_world(e.what(), 3);
  }
}
