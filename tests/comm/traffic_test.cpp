// Traffic ledger: the algorithmic byte formulas, recording per tier and per kind, and the reports.
#include "comm/traffic.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <map>
#include <string>
#include <thread>

#include "comm/mesh.hpp"
#include "comm/thread_world.hpp"
#include "comm/transport/sim_transport.hpp"
#include "core/error.hpp"

namespace tz {
namespace {

TEST(Traffic, AlgorithmicBytesFormulas) {
  EXPECT_DOUBLE_EQ(algorithmic_bytes(CollectiveKind::all_gather, 800, 4), 600);
  EXPECT_DOUBLE_EQ(algorithmic_bytes(CollectiveKind::reduce_scatter, 800, 4), 600);
  EXPECT_DOUBLE_EQ(algorithmic_bytes(CollectiveKind::all_reduce, 800, 4), 1200);
  EXPECT_DOUBLE_EQ(algorithmic_bytes(CollectiveKind::all_to_all, 900, 3), 600);
  EXPECT_DOUBLE_EQ(algorithmic_bytes(CollectiveKind::broadcast, 900, 3), 900);
  EXPECT_DOUBLE_EQ(algorithmic_bytes(CollectiveKind::barrier, 900, 3), 0);
  EXPECT_DOUBLE_EQ(algorithmic_bytes(CollectiveKind::all_reduce, 900, 1), 0);
}

TEST(Traffic, EveryCollectiveRecordsItsBytes) {
  run_thread_world(4, [](Communicator& comm) {
    std::vector<float> a(40), b(40);
    comm.all_gather(a.data(), b.data(), 10, DType::f32);
    comm.reduce_scatter(a.data(), b.data(), 10, DType::f32);
    comm.all_reduce(a.data(), b.data(), 40, DType::f32);
    comm.all_to_all(a.data(), b.data(), 10, DType::f32);
    comm.broadcast(a.data(), 40, DType::f32, 0);
    comm.barrier().wait();
    const TierTraffic t = comm.ledger().snapshot().at("world");
    EXPECT_EQ(t.ops, 6u);
    EXPECT_DOUBLE_EQ(t.bytes, 120 + 120 + 240 + 120 + 160);
    EXPECT_GT(t.seconds, 0);
    const auto kinds = comm.ledger().snapshot_by_kind();
    ASSERT_EQ(kinds.size(), 6u);
    EXPECT_DOUBLE_EQ(kinds.at("all_gather").bytes, 120);
    EXPECT_DOUBLE_EQ(kinds.at("all_reduce").bytes, 240);
    EXPECT_DOUBLE_EQ(kinds.at("broadcast").bytes, 160);
    for (const auto& [kind, k] : kinds) {
      EXPECT_EQ(k.ops, 1u) << kind;
      EXPECT_GT(k.seconds, 0) << kind;
    }
  });
}

// A communicator runs the algorithm a plan asks for, whatever its options prefer, and the ledger
// counts each; `automatic` (a direct call) follows the options (shared memory by default).
TEST(Traffic, CollectivesRunTheAlgorithmAskedForAndTheLedgerCountsIt) {
  run_thread_world(4, [](Communicator& comm) {
    const int r = comm.rank();
    std::vector<float> in(10), gathered[3];
    for (int i = 0; i < 10; ++i) in[i] = static_cast<float>(r * 100 + i);
    const StepAlgorithm ways[3] = {StepAlgorithm::ring, StepAlgorithm::shared_memory,
                                   StepAlgorithm::automatic};
    for (int w = 0; w < 3; ++w) {
      gathered[w].resize(40);
      comm.all_gather(in.data(), gathered[w].data(), 10, DType::f32, ways[w]).wait();
    }
    EXPECT_EQ(gathered[0], gathered[1]);
    EXPECT_EQ(gathered[0], gathered[2]);
    EXPECT_EQ(gathered[0][35], 305.0f);
    std::vector<float> big(40, 1.0f), shard(10), all(40);
    comm.reduce_scatter(big.data(), shard.data(), 10, DType::f32, StepAlgorithm::ring).wait();
    EXPECT_EQ(shard, std::vector<float>(10, 4.0f));
    comm.all_to_all(big.data(), all.data(), 10, DType::f32, StepAlgorithm::pairwise).wait();
    comm.all_to_all(big.data(), all.data(), 10, DType::f32, StepAlgorithm::shared_memory).wait();
    const std::map<std::string, std::uint64_t> want = {{"world all_gather ring", 1},
                                                       {"world all_gather shared", 2},
                                                       {"world reduce_scatter ring", 1},
                                                       {"world all_to_all pairwise", 1},
                                                       {"world all_to_all shared", 1}};
    EXPECT_EQ(comm.ledger().algorithms(), want);
    EXPECT_EQ(comm.ledger().shared_memory_fallbacks(), 0u);
    // An algorithm the collective does not have is a bug of the caller.
    EXPECT_THROW(comm.all_to_all(big.data(), all.data(), 10, DType::f32, StepAlgorithm::ring), InternalError);
  });
}

// A planned shared-memory step whose ranks cannot map a segment (here: a transport that cannot share
// memory) runs over the transport instead, correctly, and the ledger counts the fallback.
TEST(Traffic, APlannedSharedMemoryStepWithoutSharedMemoryFallsBackCounted) {
  const nlohmann::json doc = {
      {"name", "sim"},
      {"tiers", {{{"name", "link"}, {"fanout", 3}, {"bandwidth_GBps", 10}, {"latency_us", 1}}}}};
  const Topology topo = Topology::from_json(doc, "test").resolve(3);
  auto world = std::make_shared<SimWorld>(topo, SimOptions{});
  run_thread_mesh(
      topo,
      [&](Mesh& mesh) {
        Communicator& comm = mesh.world();
        EXPECT_FALSE(comm.can_share_memory());
        EXPECT_EQ(mesh.shared_memory_tiers(), SharedMemoryTiers{});  // so no plan of this mesh asks
        std::vector<float> in(4, static_cast<float>(comm.rank())), out(12);
        comm.all_gather(in.data(), out.data(), 4, DType::f32, StepAlgorithm::shared_memory).wait();
        EXPECT_EQ(out[0], 0.0f);
        EXPECT_EQ(out[11], 2.0f);
        EXPECT_EQ(comm.ledger().shared_memory_fallbacks(), 1u);
        EXPECT_EQ(comm.ledger().algorithms(),
                  (std::map<std::string, std::uint64_t>{{"world all_gather ring", 1}}));
      },
      {},
      [&](std::vector<std::unique_ptr<Transport>> inner) {
        return make_sim_transports(world, std::move(inner));
      });
}

// A snapshot of both views while another thread records: every record is in both or in neither,
// so the two always hold the same ops and time (two separate snapshots could split a record).
TEST(Traffic, SnapshotBothIsOneInstant) {
  TrafficLedger ledger;
  std::atomic<bool> stop{false};
  std::thread recorder([&] {
    while (!stop.load()) ledger.record("node", CollectiveKind::all_gather, 8, 0.001);
  });
  for (int i = 0; i < 2000; ++i) {
    const TrafficSnapshot snap = ledger.snapshot_both();
    std::uint64_t tier_ops = 0, kind_ops = 0;
    for (const auto& [tier, t] : snap.by_tier) tier_ops += t.ops;
    for (const auto& [kind, k] : snap.by_kind) kind_ops += k.ops;
    ASSERT_EQ(tier_ops, kind_ops) << "snapshot " << i;
  }
  stop = true;
  recorder.join();
}

TEST(Traffic, SinceAndReports) {
  TrafficLedger ledger;
  ledger.record("node", CollectiveKind::all_gather, 100, 0.5);
  const auto before = ledger.snapshot();
  ledger.record("node", CollectiveKind::reduce_scatter, 50, 0.25);
  ledger.record("gcd", CollectiveKind::all_gather, 10, 0);
  const auto delta = ledger.since(before);
  EXPECT_DOUBLE_EQ(delta.at("node").bytes, 50);
  EXPECT_EQ(delta.at("node").ops, 1u);
  EXPECT_DOUBLE_EQ(delta.at("gcd").bytes, 10);
  const auto kinds = ledger.snapshot_by_kind();
  EXPECT_DOUBLE_EQ(kinds.at("all_gather").bytes, 110);
  EXPECT_EQ(kinds.at("all_gather").ops, 2u);
  EXPECT_DOUBLE_EQ(kinds.at("reduce_scatter").seconds, 0.25);
  const auto kinds_delta = ledger.since_by_kind({{"all_gather", TierTraffic{100, 1, 0.5}}});
  EXPECT_DOUBLE_EQ(kinds_delta.at("all_gather").bytes, 10);
  EXPECT_DOUBLE_EQ(kinds_delta.at("all_gather").seconds, 0);
  const nlohmann::json j = TrafficLedger::to_json(delta);
  EXPECT_DOUBLE_EQ(j["node"]["bytes"].get<double>(), 50);
  EXPECT_DOUBLE_EQ(j["node"]["GBps"].get<double>(), 50 / 0.25 / 1e9);
  const std::string table = TrafficLedger::format(delta);
  EXPECT_NE(table.find("node"), std::string::npos);
  EXPECT_NE(table.find("gcd"), std::string::npos);
  ledger.reset();
  EXPECT_TRUE(ledger.snapshot().empty());
  EXPECT_TRUE(ledger.snapshot_by_kind().empty());
}

}  // namespace
}  // namespace tz
