// plan_collective: the routes and steps it chooses (closed-form payloads by hand), and that running
// a plan on a mesh of threads records exactly the plan's bytes per label in the traffic ledger.
#include "collective/collective_plan.hpp"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "comm/thread_world.hpp"
#include "core/quant_format.hpp"
#include "quant/run_collective.hpp"

namespace tz {
namespace {

// frontier-mini: gcd x2, node x2, system x2 (8 ranks).
Topology mini() {
  return Topology::load("frontier-mini").resolve(8);
}

CollectiveRequest gather(TierSet tiers, std::size_t count,
                         CollectiveAlgo algo = CollectiveAlgo::hierarchical) {
  return {
      .kind = CollectiveKind::all_gather, .tiers = tiers, .count = count, .dtype = DType::f32, .algo = algo};
}

TEST(CollectivePlan, HierarchicalAllGatherGoesOutermostTierFirst) {
  const CollectivePlan p = plan_collective(mini(), gather(0b111, 10));
  EXPECT_EQ(p.route, CollectiveRoute::hierarchical);
  ASSERT_EQ(p.steps.size(), 3u);
  // Pieces of 40 bytes: system gathers 2 of them, node 2 x 2, gcd 2 x 4.
  EXPECT_EQ(p.steps[0].label, "system");
  EXPECT_EQ(p.steps[0].payload_bytes, 80u);
  EXPECT_EQ(p.steps[1].label, "node");
  EXPECT_EQ(p.steps[1].payload_bytes, 160u);
  EXPECT_EQ(p.steps[2].label, "gcd");
  EXPECT_EQ(p.steps[2].payload_bytes, 320u);
  EXPECT_DOUBLE_EQ(p.bytes(), 40.0 + 80.0 + 160.0);  // (f-1) pieces per step: 7 x 40 in all
}

TEST(CollectivePlan, FlatOnlyOverTwoOrMoreActiveTiers) {
  const Topology t = mini();
  const CollectivePlan flat = plan_collective(t, gather(0b111, 10, CollectiveAlgo::flat));
  EXPECT_EQ(flat.route, CollectiveRoute::flat);
  ASSERT_EQ(flat.steps.size(), 1u);
  EXPECT_EQ(flat.steps[0].label, "world");
  EXPECT_EQ(flat.steps[0].tier, 2);  // priced on the outermost tier's link
  EXPECT_EQ(flat.steps[0].group_size, 8);
  EXPECT_EQ(flat.steps[0].payload_bytes, 320u);
  EXPECT_DOUBLE_EQ(flat.bytes(), 280.0);  // the same bytes as the hierarchical composition
  const CollectivePlan one = plan_collective(t, gather(0b010, 10, CollectiveAlgo::flat));
  EXPECT_EQ(one.route, CollectiveRoute::hierarchical);  // one active tier: the same collective either way
  ASSERT_EQ(one.steps.size(), 1u);
  EXPECT_EQ(one.steps[0].label, "node");
}

TEST(CollectivePlan, FanoutOneTiersRunNoStepAndAGroupOfOneIsLocal) {
  const Topology t = Topology::from_json(
      nlohmann::json::parse(R"({"name": "t", "tiers": [{"name": "a", "fanout": 1, "bandwidth_GBps": 1,
        "latency_us": 1}, {"name": "b", "fanout": 3, "bandwidth_GBps": 1, "latency_us": 1}]})"),
      "test");
  const CollectivePlan p = plan_collective(t, gather(0b11, 4));
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].label, "b");
  const CollectivePlan local = plan_collective(t, gather(0b01, 4));
  EXPECT_EQ(local.route, CollectiveRoute::local);
  EXPECT_TRUE(local.steps.empty());
}

TEST(CollectivePlan, AllReduceTailGoesFirstOnTheGroup) {
  // 11 elements over 8 ranks: 3 travel as one all-reduce on the group, 8 as reduce-scatter + all-gather.
  const CollectivePlan p = plan_collective(
      mini(), {.kind = CollectiveKind::all_reduce, .tiers = 0b111, .count = 11, .dtype = DType::f32});
  ASSERT_EQ(p.steps.size(), 7u);
  EXPECT_EQ(p.steps[0].kind, CollectiveKind::all_reduce);
  EXPECT_EQ(p.steps[0].label, "world");
  EXPECT_EQ(p.steps[0].payload_bytes, 12u);
  EXPECT_EQ(p.steps[1].kind, CollectiveKind::reduce_scatter);
  EXPECT_EQ(p.steps[1].label, "gcd");
  EXPECT_EQ(p.steps[3].label, "system");
  EXPECT_EQ(p.steps[4].kind, CollectiveKind::all_gather);
  EXPECT_EQ(p.steps[4].label, "system");
}

TEST(CollectivePlan, ScalarsAreAllReducedWholeOnEachTier) {
  const CollectivePlan p =
      plan_collective(mini(), {.kind = CollectiveKind::all_reduce,
                               .tiers = 0b101,
                               .count = 1,
                               .dtype = DType::f64,
                               .algo = CollectiveAlgo::flat,  // ignored: a scalar cannot be split
                               .whole_per_tier = true});
  EXPECT_EQ(p.route, CollectiveRoute::per_tier);
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].label, "gcd");
  EXPECT_EQ(p.steps[1].label, "system");
  EXPECT_EQ(p.steps[1].payload_bytes, 8u);
}

TEST(CollectivePlan, QuantizedGatherMovesCodesAndQgzFallsBackHierarchically) {
  const Topology t = mini();
  CollectiveRequest q = gather(0b111, 512);
  q.quant_bits = 8;
  q.quant_block = 256;
  const CollectivePlan qp = plan_collective(t, q);
  EXPECT_EQ(qp.quant, CollectiveQuant::qwz);
  EXPECT_EQ(qp.wire_dtype, DType::u8);
  EXPECT_EQ(qp.wire_count, 2u * 260u);
  const CollectiveRequest g{.kind = CollectiveKind::reduce_scatter,
                            .tiers = 0b111,
                            .count = 1024,
                            .dtype = DType::f32,
                            .algo = CollectiveAlgo::flat,
                            .quant_bits = 4,
                            .quant_block = 256};
  const CollectivePlan gp = plan_collective(t, g);
  EXPECT_EQ(gp.quant, CollectiveQuant::qgz);
  ASSERT_EQ(gp.steps.size(), 3u);
  EXPECT_EQ(gp.steps[0].kind, CollectiveKind::all_to_all);
  // gcd: 8192 elements in 2 slices of 4096 = 16 blocks of 256 at 132 bytes each.
  EXPECT_EQ(gp.steps[0].payload_bytes, 2u * 16u * 132u);
  CollectiveRequest tiny = g;
  tiny.count = 3;  // 24 elements in slices of 12, 6, 3: a 132-byte block is no smaller than 12 floats
  const CollectivePlan fp = plan_collective(t, tiny);
  EXPECT_EQ(fp.quant, CollectiveQuant::qgz_fallback);
  EXPECT_EQ(fp.route, CollectiveRoute::hierarchical);  // qgZ stays hierarchical even with flat collectives
  EXPECT_EQ(fp.steps.size(), 3u);
}

// Running any plan on a mesh records exactly its steps' bytes under their labels.
TEST(CollectivePlan, LedgerOfARunEqualsThePlan) {
  const Topology t = mini();
  std::vector<CollectiveRequest> requests = {gather(0b111, 6), gather(0b111, 6, CollectiveAlgo::flat),
                                             gather(0b011, 5, CollectiveAlgo::flat)};
  requests.push_back(
      {.kind = CollectiveKind::reduce_scatter, .tiers = 0b110, .count = 7, .dtype = DType::f32});
  requests.push_back({.kind = CollectiveKind::all_reduce, .tiers = 0b111, .count = 13, .dtype = DType::f32});
  requests.push_back({.kind = CollectiveKind::all_reduce,
                      .tiers = 0b111,
                      .count = 16,
                      .dtype = DType::f32,
                      .algo = CollectiveAlgo::flat});
  requests.push_back({.kind = CollectiveKind::all_reduce,
                      .tiers = 0b111,
                      .count = 1,
                      .dtype = DType::f64,
                      .whole_per_tier = true});
  CollectiveRequest qwz = gather(0b111, 300);
  qwz.quant_bits = 8;
  qwz.quant_block = 64;
  requests.push_back(qwz);
  requests.push_back({.kind = CollectiveKind::reduce_scatter,
                      .tiers = 0b111,
                      .count = 512,
                      .dtype = DType::f32,
                      .quant_bits = 4,
                      .quant_block = 64});
  for (const auto& req : requests) {
    const CollectivePlan plan = plan_collective(t, req);
    std::map<std::string, double> expected;
    for (const auto& s : plan.steps) expected[s.label] += s.bytes;
    run_thread_mesh(t, [&](Mesh& mesh) {
      const std::size_t g = static_cast<std::size_t>(mesh.group_size(req.tiers));
      const std::size_t in = req.kind == CollectiveKind::reduce_scatter ? req.count * g : req.count;
      const std::size_t out = req.kind == CollectiveKind::all_gather ? req.count * g : req.count;
      std::vector<std::byte> send(in * dtype_bytes(req.dtype)), recv(out * dtype_bytes(req.dtype));
      mesh.prepare(plan, req.tiers);
      mesh.ledger().reset();
      run_collective(mesh, req, send.data(), recv.data()).wait();
      const auto ledger = mesh.ledger().snapshot();
      for (const auto& [label, bytes] : expected) {
        ASSERT_TRUE(ledger.count(label)) << label;
        EXPECT_DOUBLE_EQ(ledger.at(label).bytes, bytes) << label;
      }
      for (const auto& [label, traffic] : ledger) {
        if (!expected.count(label)) {
          EXPECT_EQ(traffic.bytes, 0) << label;
        }
      }
      // And every step ran the algorithm the mesh's plan chose for it (threads: shared memory for
      // every step).
      std::map<std::string, std::uint64_t> want;
      for (const auto& s : plan_collective(t, mesh.with_shared_memory(req)).steps)
        ++want[step_algorithm_key(s.label, s.kind, s.algorithm)];
      EXPECT_EQ(mesh.ledger().algorithms(), want);
      EXPECT_EQ(mesh.ledger().shared_memory_fallbacks(), 0u);
    });
  }
}

TEST(CollectivePlan, EachStepRunsSharedMemoryWhereItsGroupSharesMemory) {
  const Topology t = mini();
  // gcd and node share a host, the system tier does not: hierarchical steps on gcd and node go
  // through shared memory, the system's over the transport; a flat step only when all its tiers do.
  const SharedMemoryTiers host{.all_gather = 0b011, .reduce_scatter = 0b011, .all_to_all = 0b011};
  CollectiveRequest ag = gather(0b111, 10);
  ag.shared_memory = host;
  const CollectivePlan p = plan_collective(t, ag);
  ASSERT_EQ(p.steps.size(), 3u);
  EXPECT_EQ(p.steps[0].algorithm, StepAlgorithm::ring);  // system, outermost first
  EXPECT_EQ(p.steps[1].algorithm, StepAlgorithm::shared_memory);
  EXPECT_EQ(p.steps[2].algorithm, StepAlgorithm::shared_memory);
  CollectiveRequest flat_in = gather(0b011, 10, CollectiveAlgo::flat),
                    flat_out = gather(0b111, 10, CollectiveAlgo::flat);
  flat_in.shared_memory = flat_out.shared_memory = host;
  EXPECT_EQ(plan_collective(t, flat_in).steps.at(0).algorithm, StepAlgorithm::shared_memory);
  EXPECT_EQ(plan_collective(t, flat_out).steps.at(0).algorithm, StepAlgorithm::ring);
  // The all-reduce: its tail all-reduce is a ring, its reduce-scatter and all-gather steps follow
  // their tiers; a kind switched off (all_gather = 0) runs over the transport everywhere.
  CollectiveRequest ar{.kind = CollectiveKind::all_reduce, .tiers = 0b011, .count = 13, .dtype = DType::f32};
  ar.shared_memory = {.all_gather = 0, .reduce_scatter = 0b011};
  for (const TierStep& s : plan_collective(t, ar).steps) {
    const StepAlgorithm want =
        s.kind == CollectiveKind::reduce_scatter ? StepAlgorithm::shared_memory : StepAlgorithm::ring;
    EXPECT_EQ(s.algorithm, want) << collective_name(s.kind) << " on " << s.label;
  }
  // qgZ's all-to-all steps: shared inside the host, pairwise across it.
  CollectiveRequest qgz{.kind = CollectiveKind::reduce_scatter,
                        .tiers = 0b111,
                        .count = 512,
                        .dtype = DType::f32,
                        .quant_bits = 4,
                        .quant_block = 64};
  qgz.shared_memory = host;
  const CollectivePlan q = plan_collective(t, qgz);
  ASSERT_EQ(q.steps.size(), 3u);
  EXPECT_EQ(q.steps[0].algorithm, StepAlgorithm::shared_memory);  // gcd, innermost first
  EXPECT_EQ(q.steps[1].algorithm, StepAlgorithm::shared_memory);
  EXPECT_EQ(q.steps[2].algorithm, StepAlgorithm::pairwise);
  // Without shared-memory tiers (a cluster's prediction), every step goes over the transport.
  for (const TierStep& s : plan_collective(t, gather(0b111, 10)).steps)
    EXPECT_EQ(s.algorithm, StepAlgorithm::ring);
}

}  // namespace
}  // namespace tz
