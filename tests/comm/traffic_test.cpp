// Traffic ledger: the algorithmic byte formulas, recording per tier and per kind, and the reports.
#include "comm/traffic.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <thread>

#include "comm/thread_world.hpp"

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
